// Helpers shared by the graph tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <unistd.h>

#include "graph/graph.h"
#include "graph/import.h"

namespace fuseplan::test {

inline std::string shared_dir() { return FUSEPLAN_SHARED_DIR; }
inline std::string models_dir() { return shared_dir() + "/models/onnx"; }

/// Non-source primitives.
inline int64_t num_prims(const Graph& g) {
  int64_t n = 0;
  for (NodeId v = 0; v < g.size(); ++v) n += g.node(v).op_class != OpClass::source;
  return n;
}

inline int64_t count_class(const Graph& g, OpClass c) {
  int64_t n = 0;
  for (NodeId v = 0; v < g.size(); ++v) n += g.node(v).op_class == c;
  return n;
}

inline ImportOptions opts(std::optional<int64_t> batch, std::map<std::string, int64_t> dims = {}) {
  ImportOptions o;
  o.batch = batch;
  o.dims = std::move(dims);
  return o;
}

inline Graph import_text(const std::string& text, ImportOptions o = {}) { return import_onnx_text(text, o, "t"); }

/// A scratch directory removed at destruction.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("fuseplan_graph_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::string p = (path / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

}  // namespace fuseplan::test
