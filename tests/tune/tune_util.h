// Small models written to a fresh temp directory for the tune tests.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "support/files.h"
#include "tests/scoped_env.h"

namespace fuseplan::test {

/// A fresh empty directory under the system temp dir, unique per test.
inline std::string fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("fuseplan-tune-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

/// Writes `text` as dir/name and returns the path.
inline std::string write_model(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  write_file_atomic(path, text);
  return path;
}

/// Two outputs sharing a producer: tiny, every strategy runs it in milliseconds.
inline const char* kTinyModel = R"(<ir_version: 8, opset_import: ["" : 17]>
tiny (float[N, 64] x, float[N, 64] y) => (float[N, 64] a, float[N, 64] b) {
  t = Exp(x)
  u = Add(t, y)
  a = Relu(u)
  b = Mul(t, y)
})";

}  // namespace fuseplan::test
