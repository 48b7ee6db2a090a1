// NVRTC compiles the emitted source of every group kind for sm_90 and sm_80
// with no GPU present, and ptxas reports registers for every kernel.
#ifdef FUSEPLAN_HAVE_CUDA
#include <gtest/gtest.h>

#include <bit>

#include "costmodel/cost.h"
#include "emit/cuda/cuda_backend.h"
#include "tests/builder.h"
#include "tests/cuda_util.h"

namespace fuseplan {
namespace {

using cudatest::model;
using cudatest::one_group;
using cudatest::opts;

DeviceSpec h100() { return load_device("h100-sxm"); }

const char* kBiasRelu = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x, float[C] b) => (float[N, C] y) {
  t = Add(x, b)
  y = Relu(t)
})";
const char* kElementwise = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x, float[N, C] z) => (float[N, C] y) {
  t = Mul(x, z)
  u = Sigmoid(t)
  y = Add(u, x)
})";
const char* kSoftmax = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x) => (float[N, C] y) {
  y = Softmax<axis = -1>(x)
})";
const char* kLayerNorm = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x, float[C] g, float[C] b) => (float[N, C] y) {
  y = LayerNormalization<axis = -1, epsilon = 1e-5>(x, g, b)
})";
const char* kRowReduce = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x) => (float[N] y) {
  axes = Constant<value = int64[1] {1}>()
  sq = Mul(x, x)
  s = ReduceSum<keepdims = 0>(sq, axes)
  y = Sqrt(s)
})";
const char* kColumnReduce = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x) => (float[C] y) {
  axes = Constant<value = int64[1] {0}>()
  e = Exp(x)
  y = ReduceSum<keepdims = 0>(e, axes)
})";
const char* kGemmBiasRelu = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, 256] x, float[256, 128] w, float[128] b) => (float[N, 128] y) {
  mm = MatMul(x, w)
  t = Add(mm, b)
  y = Relu(t)
})";
const char* kConvRelu = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, 16, 14, 14] x, float[32, 16, 3, 3] w) => (float[N, 32, 7, 7] y) {
  c = Conv<pads = [1, 1, 1, 1], strides = [2, 2]>(x, w)
  y = Relu(c)
})";
const char* kPool = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, 8, 16, 16] x) => (float[N, 8, 8, 8] y) {
  p = MaxPool<kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]>(x)
  y = Relu(p)
})";

// The emitted kernels (--library none: GEMM and conv included, as the
// fallback runs them); the library route's kernels: library_lowering_test.cpp.
void expect_compiles(const Graph& g, const Plan& plan, const std::string& arch) {
  auto t = cuda::measure_plan(g, plan, h100(), opts(arch), nullptr, nullptr, false, cuda::LibraryOptions::none());
  ASSERT_EQ(t.size(), plan.groups.size());
  for (const auto& r : t) {
    ASSERT_FALSE(r.measured.empty());
    for (const auto& k : r.measured) EXPECT_GT(k.regs_per_thread, 0) << k.kernel << " " << arch;
  }
}

struct KindCase {
  const char* name;
  const char* text;
  GroupKind kind;
  const char* shape;  // launch shape of the first kernel
};

class EveryGroupKind : public ::testing::TestWithParam<KindCase> {};

TEST_P(EveryGroupKind, CompilesForSm90AndSm80WithRegistersParsed) {
  const KindCase& c = GetParam();
  Graph g = model(c.text, {{"N", 64}, {"C", 256}});
  Plan plan = one_group(g, h100());
  ASSERT_EQ(plan.groups.size(), 1u);
  EXPECT_EQ(plan.groups[0].kind, c.kind);
  auto src = cuda::plan_sources(g, plan, h100(), false, cuda::LibraryOptions::none());
  EXPECT_EQ(src[0].launches.front().shape, c.shape) << src[0].source;
  expect_compiles(g, plan, "sm_90");
  expect_compiles(g, plan, "sm_80");
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, EveryGroupKind,
    ::testing::Values(KindCase{"bias_relu", kBiasRelu, GroupKind::loop, "elem"},
                      KindCase{"elementwise", kElementwise, GroupKind::loop, "elem/vec4"},
                      KindCase{"softmax", kSoftmax, GroupKind::multipass, "row/smem"},
                      KindCase{"layernorm", kLayerNorm, GroupKind::multipass, "row/smem"},
                      KindCase{"row_reduce", kRowReduce, GroupKind::reduction, "block-reduce"},
                      KindCase{"column_reduce", kColumnReduce, GroupKind::reduction, "column-reduce"},
                      KindCase{"gemm_bias_relu", kGemmBiasRelu, GroupKind::contraction, "elem/MatMul"},
                      KindCase{"conv_relu", kConvRelu, GroupKind::contraction, "elem/Conv"},
                      KindCase{"pool_relu", kPool, GroupKind::reduction, "elem/MaxPool"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CudaKernels, ReductionEpilogueStaysInTheReductionKernel) {
  Graph g = model(kRowReduce, {{"N", 64}, {"C", 256}});
  auto src = cuda::plan_sources(g, one_group(g, h100()), h100());
  ASSERT_EQ(src[0].launches.size(), 1u) << src[0].source;
}

TEST(CudaKernels, GemmEpilogueIsOneKernelAndMatchesCublasLtReluBias) {
  Graph g = model(kGemmBiasRelu, {{"N", 64}});
  Plan plan = one_group(g, h100());
  auto src = cuda::plan_sources(g, plan, h100(), false, cuda::LibraryOptions::none());
  EXPECT_EQ(src[0].launches.size(), 1u);
  auto m = cuda::match_cublaslt(g, plan.groups[0]);
  EXPECT_EQ(m.epilogue, "RELU_BIAS");
  EXPECT_EQ(m.remaining, 0);
}

TEST(CudaKernels, HorizontalGroupIsOneLaunchWithBlockDispatch) {
  Graph g = model(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] a, float[N, C] b, float[N] c) => (float[N, C] x, float[N, C] y, float[N] z) {
  x = Relu(a)
  y = Sigmoid(b)
  z = Exp(c)
})", {{"N", 64}, {"C", 256}});
  auto ns = cudatest::computed(g);
  Group grp;
  grp.id = 0;
  grp.kind = GroupKind::horizontal;
  grp.nodes = ns;
  grp.materialised = ns;
  for (NodeId n : ns) grp.branches.push_back({n});
  auto src = cuda::print_cuda_group(g, grp);
  ASSERT_EQ(src.launches.size(), 1u);
  EXPECT_EQ(src.launches[0].shape, "horizontal(3)");
  EXPECT_EQ(src.launches[0].params.size(), 6u);
  auto r = cuda::compile_cuda(src.source, "horizontal", opts());
  ASSERT_NE(r.find(src.launches[0].kernel), nullptr);
  EXPECT_GT(r.find(src.launches[0].kernel)->regs_per_thread, 0);
}

TEST(CudaKernels, EmittedSourceIsDeterministic) {
  Graph g = model(kLayerNorm, {{"N", 64}, {"C", 256}});
  auto a = cuda::plan_sources(g, one_group(g, h100()), h100());
  auto b = cuda::plan_sources(g, one_group(g, h100()), h100());
  EXPECT_EQ(a[0].source, b[0].source);
}

// Linear Resize (2x upsample of H and W, then a Relu epilogue) for every
// coordinate mode: one elem/Resize kernel reading the 4 corners, compiled.
TEST(CudaKernels, LinearResizeCompilesForSm90AndSm80) {
  for (const char* mode : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
    test::Builder b;
    auto x = b.input("x", {1, 3, 5, 6});
    auto y = b.op("y", "Resize", OpClass::injective, {x}, {1, 3, 10, 12},
                  {{"mode", std::string("linear")}, {"scales", std::vector<double>{1, 1, 2, 2}},
                   {"coordinate_transformation_mode", std::string(mode)}});
    auto z = b.op("z", "Relu", OpClass::elementwise, {y}, {1, 3, 10, 12});
    Graph& g = b.done({z});
    Plan plan = make_plan(g, h100(), {{y, z}}, "test");
    auto src = cuda::plan_sources(g, plan, h100());
    ASSERT_EQ(src.size(), 1u);
    bool resize = false;
    for (const auto& l : src[0].launches) resize = resize || l.shape == "elem/Resize";
    EXPECT_TRUE(resize) << src[0].source;
    EXPECT_NE(src[0].source.find("fprt::resize_src("), std::string::npos) << src[0].source;
    expect_compiles(g, plan, "sm_90");
    expect_compiles(g, plan, "sm_80");
  }
}

// A group holding an opaque primitive (graph break) gets no kernels and the
// note; the groups around it still compile.
TEST(CudaKernels, OpaqueGroupIsSkippedWithANoteAndTheOthersCompile) {
  test::Builder b;
  auto x = b.input("x", {64, 256});
  auto r = b.op("r", "Relu", OpClass::elementwise, {x}, {64, 256});
  auto o = b.op("o", "SomeCustomOp", OpClass::opaque, {r}, {64, 256});
  auto s = b.op("s", "Sigmoid", OpClass::elementwise, {o}, {64, 256});
  Graph& g = b.done({s});
  Plan plan = make_plan(g, h100(), {{r}, {o}, {s}}, "test");
  auto src = cuda::plan_sources(g, plan, h100());
  ASSERT_EQ(src.size(), 3u);
  EXPECT_TRUE(src[1].launches.empty());
  EXPECT_NE(src[1].source.find(cuda::kOpaqueNote), std::string::npos);
  std::vector<std::string> cubins;
  auto t = cuda::measure_plan(g, plan, h100(), opts(), &cubins);
  ASSERT_EQ(t.size(), 3u);
  ASSERT_EQ(cubins.size(), 3u);
  EXPECT_EQ(t[1].note, cuda::kOpaqueNote);
  EXPECT_TRUE(t[1].measured.empty());
  EXPECT_TRUE(cubins[1].empty());
  for (int i : {0, 2}) {
    EXPECT_FALSE(t[i].skipped());
    ASSERT_FALSE(t[i].measured.empty());
    EXPECT_GT(t[i].measured[0].regs_per_thread, 0);
    EXPECT_FALSE(cubins[i].empty());
  }
  EXPECT_NE(cuda::resources_markdown(t, h100(), opts()).find(cuda::kOpaqueNote), std::string::npos);
}

// Scalar constants are immediates (graph/op_attrs.h is_immediate): the CUDA
// kernels get exact literals (emit/kernel_plan.h immediate_literal), no
// pointer parameter for the constants, and compile; fused and unfused.
TEST(CudaKernels, ScalarConstantsAreLiteralsNotParameters) {
  test::Builder b;
  auto x = b.input("x", {64, 256});
  auto k = b.weight("k", {}, {0.1f});                                 // an initializer with data
  auto nan = b.weight("nan", {1}, {std::bit_cast<float>(0x7fc01234u)});  // NaN with a payload
  auto i = b.ints("i", {1}, {-7});
  auto gt = b.op("gt", "Greater", OpClass::broadcast, {x, k}, {64, 256}, {}, DType::boolean);
  auto m = b.op("m", "Mul", OpClass::broadcast, {x, k}, {64, 256});
  auto w = b.op("w", "Where", OpClass::broadcast, {gt, nan, m}, {64, 256});
  auto xi = b.op("xi", "Cast", OpClass::elementwise, {x}, {64, 256}, {{"to", int64_t{7}}}, DType::i64);
  auto yi = b.op("yi", "Add", OpClass::broadcast, {xi, i}, {64, 256}, {}, DType::i64);
  Graph& g = b.done({w, yi});
  for (const Plan& plan : {cudatest::one_group(g, h100()), make_plan(g, h100(), {{gt}, {m}, {w}, {xi}, {yi}}, "test")}) {
    auto src = cuda::plan_sources(g, plan, h100());
    std::string all;
    for (const auto& s : src) {
      all += s.source;
      for (const auto& l : s.launches)
        for (NodeId p : l.params) EXPECT_TRUE(p != k && p != nan && p != i) << g.node(p).name << " is a parameter";
    }
    for (const char* lit : {"(0x1.99999ap-4f)", "fprt::f32_bits(0x7fc01234u)", "(int64_t)(-7LL)"})
      EXPECT_NE(all.find(lit), std::string::npos) << lit << "\n" << all;
    expect_compiles(g, plan, "sm_90");
  }
}

}  // namespace
}  // namespace fuseplan
#endif
