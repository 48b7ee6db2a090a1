// A nested reduction group (search/nested_reduction.h) is one CUDA launch:
// one block per output element of the outer reduction, every thread looping
// over its row around the inner block reduction; NVRTC compiles it for sm_90
// and sm_80 with no GPU present. Running it: tests/exec/cuda_run_test.cpp.
#ifdef FUSEPLAN_HAVE_CUDA
#include <gtest/gtest.h>

#include "emit/cuda/cuda_backend.h"
#include "tests/cuda_util.h"

namespace fuseplan {
namespace {

using cudatest::model;
using cudatest::one_group;
using cudatest::opts;

DeviceSpec h100() { return load_device("h100-sxm"); }

const char* kSumThenMax = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[8, 16, 32] x) => (float[8, 16] s, float[8] y) {
  ax = Constant<value = int64[1] {-1}>()
  s = ReduceSum<keepdims = 0>(x, ax)
  y = ReduceMax<axes = [-1], keepdims = 0>(s)
})";

const char* kThreeLevels = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[4, 6, 8, 300] x) => (float[4] y) {
  three = Constant<value = int64[1] {3}>()
  sq = Mul(x, x)
  s = ReduceSum<keepdims = 0>(sq, three)
  r = Sqrt(s)
  mx = ReduceMax<axes = [2], keepdims = 0>(r)
  y = ReduceMean<axes = [1], keepdims = 0>(mx)
})";

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

void expect_compiles(const Graph& g, const Plan& plan) {
  for (const char* arch : {"sm_90", "sm_80"}) {
    auto t = cuda::measure_plan(g, plan, h100(), opts(arch), nullptr, nullptr, false, cuda::LibraryOptions::none());
    ASSERT_EQ(t.size(), 1u);
    ASSERT_EQ(t[0].measured.size(), 1u) << arch;
    EXPECT_GT(t[0].measured[0].regs_per_thread, 0) << arch;
  }
}

TEST(CudaNestedReduction, SumThenMaxIsOneBlockReduceLaunchStoringTheIntermediateOnce) {
  Graph g = model(kSumThenMax);
  Plan plan = one_group(g, h100());
  ASSERT_EQ(plan.groups.size(), 1u);
  auto src = cuda::plan_sources(g, plan, h100(), false, cuda::LibraryOptions::none());
  ASSERT_EQ(src[0].launches.size(), 1u) << src[0].source;
  EXPECT_EQ(src[0].launches[0].shape, "block-reduce");
  EXPECT_EQ(src[0].launches[0].grid, 8);  // one block per output of y
  const std::string& s = src[0].source;
  const std::string S = std::to_string(g.at("s"));
  EXPECT_EQ(count(s, "// nested ReduceSum 's'"), 1) << s;
  // y loops over its row in every thread; s strides over its row inside.
  EXPECT_EQ(count(s, "for (int64_t r = 0; r < 16; ++r)"), 1) << s;
  EXPECT_EQ(count(s, "for (int64_t r" + S + " = threadIdx.x; r" + S + " < 32; r" + S + " += blockDim.x)"), 1) << s;
  EXPECT_EQ(count(s, "if (r % blockDim.x == threadIdx.x) acc"), 1) << s;
  EXPECT_EQ(count(s, "fprt::block_reduce<float>"), 2) << s;
  EXPECT_EQ(count(s, "if (threadIdx.x == 0) t" + S + "["), 1) << s;  // s is a graph output
  expect_compiles(g, plan);
}

TEST(CudaNestedReduction, ThreeLevelsWithPrologueAndLevelOpsCompile) {
  Graph g = model(kThreeLevels);
  Plan plan = one_group(g, h100());
  ASSERT_EQ(plan.groups.size(), 1u);
  auto src = cuda::plan_sources(g, plan, h100(), false, cuda::LibraryOptions::none());
  ASSERT_EQ(src[0].launches.size(), 1u) << src[0].source;
  EXPECT_EQ(src[0].launches[0].grid, 4);
  EXPECT_EQ(count(src[0].source, "fprt::block_reduce<float>"), 3) << src[0].source;
  expect_compiles(g, plan);
}

}  // namespace
}  // namespace fuseplan
#endif
