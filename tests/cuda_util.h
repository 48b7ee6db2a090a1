// Shared helpers of the CUDA backend tests: inline ONNX text models, plans
// from explicit partitions, a private NVRTC cache directory per test binary.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <map>

#include <unistd.h>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "emit/cuda/nvrtc.h"
#include "graph/import.h"
#include "search/plan.h"

namespace fuseplan::cudatest {

inline Graph model(const std::string& text, std::map<std::string, int64_t> dims = {}) {
  ImportOptions o;
  o.dims = std::move(dims);
  return import_onnx_text(text, o, "test");
}

/// Every non-source primitive, topological order.
inline std::vector<NodeId> computed(const Graph& g) {
  std::vector<NodeId> ns;
  for (NodeId n : g.topo_order())
    if (g.node(n).op_class != OpClass::source) ns.push_back(n);
  return ns;
}

/// The plan with all primitives in one group.
inline Plan one_group(const Graph& g, const DeviceSpec& d) { return make_plan(g, d, {computed(g)}, "test"); }

inline std::string test_cache_dir() {
  static std::string dir = [] {
    auto p = std::filesystem::temp_directory_path() / ("fuseplan-cuda-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p.string();
  }();
  return dir;
}

inline cuda::NvrtcOptions opts(const std::string& arch = "sm_90") {
  cuda::NvrtcOptions o;
  o.arch = arch;
  o.cache_dir = test_cache_dir();
  return o;
}

}  // namespace fuseplan::cudatest
