// Runs plans on a GPU and compares with the CPU reference executor; skips
// with one line where no CUDA device is present.
#include <gtest/gtest.h>

#include "profiling/cuda_run.h"
#include "profiling/tensor_data.h"
#include "tests/cuda/cuda_util.h"

namespace fuseplan {
namespace {

#define REQUIRE_GPU()                                                      \
  do {                                                                     \
    CudaDeviceStatus st = cuda_device_status();                            \
    if (!st.available) GTEST_SKIP() << "no CUDA device: " << st.reason;    \
  } while (0)

TEST(GpuRun, FusedAndUnfusedSoftmaxAreBitIdenticalAndCloseToReference) {
  REQUIRE_GPU();
  Graph g = cudatest::model(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x) => (float[N, C] y) {
  y = Softmax<axis = -1>(x)
})", {{"N", 256}, {"C", 1024}});
  DeviceSpec d = load_device("h200");
  auto src = make_source_data(g);
  Plan fused = cudatest::one_group(g, d);
  std::vector<std::vector<NodeId>> parts;
  for (NodeId n : cudatest::computed(g)) parts.push_back({n});
  Plan unfused = make_plan(g, d, parts, "unfused");
  auto a = run_plan_cuda(g, fused, d, src);
  auto b = run_plan_cuda(g, unfused, d, src);
  for (auto& [name, t] : a.outputs) EXPECT_EQ(t.data, b.outputs.at(name).data) << name;
  // Block-reduction order vs the CPU's sequential sum: a few float32 ulps per
  // element over a 1024-long row (bound justified in docs/cuda.md).
  EXPECT_LT(a.max_rel_error, 1e-5);
}

TEST(GpuRun, DeviceStatusNeverThrows) {
  CudaDeviceStatus st = cuda_device_status();
  if (!st.available) {
    EXPECT_FALSE(st.reason.empty());
  }
}

}  // namespace
}  // namespace fuseplan
