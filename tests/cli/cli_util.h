// Running the fuseplan executable from the CLI tests: its exit code and
// output, refusals (one line "fuseplan: error: ...", exit code 2), and the
// small models the tests share.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/files.h"

namespace fuseplan::test {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::stringstream ss(err);
    for (std::string l; std::getline(ss, l);) lines.push_back(l);
    return lines;
  }
};

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// A fresh empty directory, unique per test.
inline std::string fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("fuseplan-cli-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

/// Runs fuseplan with `args` in `cwd`, `env` prefixed ("PATH=..."), stdin empty.
/// FUSEPLAN_NO_HOST_PROBE=1 comes first (tests use the reference devices and
/// never probe the machine: probe/host_device.h); `env` may override it.
inline Result fuseplan(const std::vector<std::string>& args, const std::string& cwd = ".", const std::string& env = "") {
  const std::string tmp = fresh_dir("run");
  std::string cmd = "cd " + quote(cwd) + " && FUSEPLAN_NO_HOST_PROBE=1 " + env + (env.empty() ? "" : " ") +
                    quote(FUSEPLAN_BINARY);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " </dev/null >" + quote(tmp + "/out") + " 2>" + quote(tmp + "/err");
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(tmp + "/out");
  r.err = slurp(tmp + "/err");
  fs::remove_all(tmp);
  return r;
}

/// Exit code 2 and exactly one stderr line starting "fuseplan: error: "
/// that contains `what`.
inline void expect_refused(const Result& r, const std::string& what) {
  EXPECT_EQ(r.code, 2) << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("fuseplan: error: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(what), std::string::npos) << lines[0];
}

inline std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  write_file_atomic(dir + "/" + name, text);
  return dir + "/" + name;
}

// gpt2_block's inputs: x[N, S, 4] and a causal mask [S, S].
inline const char* kMasked = R"(<ir_version: 8, opset_import: ["" : 17]>
masked (float[N, S, 4] x, float[S, S] mask) => (float[N, S, 4] y) {
  r = ReduceMax <axes = [1]> (mask)
  y = Add(x, r)
})";

inline const char* kTiny = R"(<ir_version: 8, opset_import: ["" : 17]>
tiny (float[N, 64] x, float[N, 64] y) => (float[N, 64] a) {
  t = Exp(x)
  a = Add(t, y)
})";

}  // namespace fuseplan::test
