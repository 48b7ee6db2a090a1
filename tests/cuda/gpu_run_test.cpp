// Runs plans on a GPU and compares with the CPU reference executor; skips
// with one line where no CUDA device is present.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "emit/files.h"
#include "profiling/cuda_run.h"
#include "search/strategy.h"
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

// Times the unfused and cost plans of every example at batch 1 and 64 and
// writes a Markdown table to $FUSEPLAN_GPU_RESULTS (results/gpu/run_gpu_checks.sh).
TEST(GpuRun, TimesFusedAndUnfusedPlansOfEveryExample) {
  REQUIRE_GPU();
  const char* out = std::getenv("FUSEPLAN_GPU_RESULTS");
  std::string md = "| model | batch | strategy | kernels | launches | median us | max rel err vs CPU |\n|---|---|---|---|---|---|---|\n";
  DeviceSpec d = load_device("h200");
  for (const char* f : {"bert_base_layer", "gpt2_block", "resnet50_bottleneck", "mobilenetv2_inverted_residual",
                        "vit_block"})
    for (int64_t batch : {1, 64}) {
      ImportOptions o;
      o.batch = batch;
      o.dims["S"] = 128;
      Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/" + f + ".onnxtxt", o);
      auto src = make_source_data(g);
      std::map<std::string, Tensor> first;
      for (const char* s : {"unfused", "cost"}) {
        Plan plan = search(g, d, s);
        auto r = run_plan_cuda(g, plan, d, src);
        if (first.empty()) first = r.outputs;
        else
          for (auto& [name, t] : r.outputs) EXPECT_EQ(t.data, first.at(name).data) << f << " " << s << " " << name;
        md += std::string("| ") + f + " | " + std::to_string(batch) + " | " + s + " | " +
              std::to_string(plan.groups.size()) + " | " + std::to_string(r.launches) + " | " +
              std::to_string(r.median_us) + " | " + std::to_string(r.max_rel_error) + " |\n";
      }
    }
  if (out) write_file_atomic(out, "# GPU timings (" + cuda_device_status().name + ")\n\n" + md);
}

TEST(GpuRun, DeviceStatusNeverThrows) {
  CudaDeviceStatus st = cuda_device_status();
  if (!st.available) {
    EXPECT_FALSE(st.reason.empty());
  }
}

}  // namespace
}  // namespace fuseplan
