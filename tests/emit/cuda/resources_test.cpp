// ptxas resource parsing, spills of a register-heavy kernel, the estimate vs
// measured table, the NVRTC cache, and model names that try to escape comments.
#ifdef FUSEPLAN_HAVE_CUDA
#include <gtest/gtest.h>

#include <filesystem>

#include "emit/cuda/cuda_backend.h"
#include "tests/cuda_util.h"

namespace fuseplan {
namespace {

using cudatest::model;
using cudatest::one_group;
using cudatest::opts;

DeviceSpec h100() { return load_device("h100-sxm"); }

TEST(Ptxas, ParsesRegistersSpillsStackAndSmemPerEntry) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'fp_g0_k0' for 'sm_90'\n"
      "ptxas info    : Function properties for fp_g0_k0\n"
      "ptxas         .     24 bytes stack frame, 20 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem\n"
      "ptxas info    : Compiling entry function 'fp_g0_k1' for 'sm_90'\n"
      "ptxas info    : Function properties for fp_g0_k1\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n";
  auto ks = cuda::parse_ptxas_log(log);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].kernel, "fp_g0_k0");
  EXPECT_EQ(ks[0].regs_per_thread, 32);
  EXPECT_EQ(ks[0].stack_frame_bytes, 24);
  EXPECT_EQ(ks[0].spill_store_bytes, 20);
  EXPECT_EQ(ks[0].spill_load_bytes, 16);
  EXPECT_EQ(ks[0].smem_bytes, 1024);
  EXPECT_EQ(ks[1].regs_per_thread, 8);
  EXPECT_EQ(ks[1].spill_bytes(), 0);
}

const char* kChain = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x, float[N, C] z) => (float[N, C] y) {
  t = Mul(x, z)
  u = Sigmoid(t)
  y = Add(u, x)
})";

TEST(NvrtcResources, SmallElementwiseGroupHasRegistersAndNoSpills) {
  Graph g = model(kChain, {{"N", 64}, {"C", 256}});
  auto t = cuda::measure_plan(g, one_group(g, h100()), h100(), opts());
  ASSERT_EQ(t.size(), 1u);
  EXPECT_GT(t[0].regs_measured(), 0);
  EXPECT_LE(t[0].regs_measured(), 64);
  EXPECT_EQ(t[0].spill_bytes_measured(), 0);
}

// A horizontal group of 48 softmax rows (each holds a block reduction and
// row scratch) compiled under a 24-register cap: ptxas must spill, and the
// table keeps the cost model's estimate next to the measurement.
TEST(NvrtcResources, RegisterHeavyKernelSpillsAndTableRecordsBoth) {
  const char* src = R"(
extern "C" __global__ void heavy(const float* __restrict__ a, float* __restrict__ y) {
  float l[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) l[i] = a[i * blockDim.x + threadIdx.x];
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 96; ++i) s = s + l[i] * l[95 - i] + l[(i * 7) % 96];
  y[threadIdx.x] = s;
})";
  cuda::NvrtcOptions o = opts();
  o.max_regs = 24;
  auto r = cuda::compile_cuda(src, "heavy", o);
  ASSERT_NE(r.find("heavy"), nullptr);
  EXPECT_GT(r.find("heavy")->spill_bytes(), 0) << r.log;

  Graph g = model(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x) => (float[N, C] y) {
  g = Constant<value = float[1] {1.0}>()
  b = Constant<value = float[1] {0.0}>()
  y = LayerNormalization<axis = -1, epsilon = 1e-5>(x, g, b)
})", {{"N", 64}, {"C", 512}});
  Plan plan = one_group(g, h100());
  cuda::NvrtcOptions capped = opts();
  capped.max_regs = 16;
  auto t = cuda::measure_plan(g, plan, h100(), capped);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].regs_estimate, plan.costs[0].regs_per_thread);
  EXPECT_GT(t[0].regs_measured(), 0);
  std::string md = cuda::resources_markdown(t, h100(), capped);
  EXPECT_NE(md.find("regs est."), std::string::npos);
  EXPECT_NE(md.find("| " + std::to_string(t[0].regs_estimate) + " | " + std::to_string(t[0].regs_measured()) + " |"),
            std::string::npos)
      << md;
  std::string js = cuda::resources_json(t, h100(), capped);
  EXPECT_NE(js.find("\"regs_measured\""), std::string::npos);
  EXPECT_NE(js.find("\"spill_bytes_measured\""), std::string::npos);
}

TEST(NvrtcCache, SecondCompileHitsTheCacheWithTheSameTable) {
  Graph g = model(kChain, {{"N", 32}, {"C", 128}});
  auto src = cuda::plan_sources(g, one_group(g, h100()), h100());
  cuda::NvrtcOptions o = opts();
  o.cache_dir = cudatest::test_cache_dir() + "/cache-test";
  std::filesystem::remove_all(o.cache_dir);
  auto a = cuda::compile_cuda(src[0].source, "g0", o);
  auto b = cuda::compile_cuda(src[0].source, "g0", o);
  EXPECT_FALSE(a.cache_hit);
  EXPECT_TRUE(b.cache_hit);
  EXPECT_EQ(a.cubin, b.cubin);
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  EXPECT_EQ(a.kernels[0].regs_per_thread, b.kernels[0].regs_per_thread);
  EXPECT_TRUE(std::filesystem::exists(o.cache_dir + "/nvrtc/" + a.hash + ".cubin"));
}

TEST(NvrtcErrors, BadSourceIsOneLineWithLogPath) {
  cuda::NvrtcOptions o = opts();
  try {
    cuda::compile_cuda("extern \"C\" __global__ void k() { undefined_thing(); }", "broken", o);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string w = e.what();
    EXPECT_EQ(w.find('\n'), std::string::npos) << w;
    EXPECT_NE(w.find("log: "), std::string::npos) << w;
  }
}

TEST(CudaInjection, ModelNamesCannotEscapeComments) {
  Graph g = model(kChain, {{"N", 8}, {"C", 8}});
  const std::string evil = "x */ }\n#error boom\n\"); system(\"rm -rf /\"); /*";
  for (NodeId n = 0; n < g.size(); ++n) g.node_mut(n).name = evil + std::to_string(n);
  g.name = evil;
  auto src = cuda::plan_sources(g, one_group(g, h100()), h100());
  EXPECT_EQ(src[0].source.find("*/ }"), std::string::npos);
  EXPECT_EQ(src[0].source.find("system(\""), std::string::npos);
  EXPECT_EQ(src[0].source.find("\n#error"), std::string::npos);  // "#" may stay inside a comment line
  auto r = cuda::compile_cuda(src[0].source, "evil", opts());
  EXPECT_FALSE(r.kernels.empty());
}

}  // namespace
}  // namespace fuseplan
#endif
