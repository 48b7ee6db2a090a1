// Decompositions, folding and small inline graphs (docs/ir.md).
#include <gtest/gtest.h>

#include <limits>

#include "test_util.h"

namespace fuseplan {
namespace {
using test::import_text;
using test::opts;

std::vector<OpClass> classes_in_topo(const Graph& g) {
  std::vector<OpClass> out;
  for (NodeId v : g.topo_order())
    if (g.node(v).op_class != OpClass::source) out.push_back(g.node(v).op_class);
  return out;
}

TEST(Decompose, SoftmaxIsFivePrimitives) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
sm (float[N, C] x) => (float[N, C] y) { y = Softmax<axis = -1>(x) })", opts(4, {{"C", 32}}));
  EXPECT_EQ(test::num_prims(g), 5);
  EXPECT_EQ(classes_in_topo(g), (std::vector<OpClass>{OpClass::reduction, OpClass::broadcast, OpClass::elementwise,
                                                      OpClass::reduction, OpClass::broadcast}));
  const Primitive& y = g.node(g.at("y"));
  EXPECT_EQ(y.op, "Div");
  EXPECT_EQ(y.origin, "y");
  EXPECT_EQ(y.onnx_op, "Softmax");
  EXPECT_EQ(g.node(g.at("y/max")).attr_ints("axes"), (std::vector<int64_t>{1}));
  EXPECT_EQ(g.node(g.at("y/max")).out.shape, (std::vector<int64_t>{4, 1}));
}

TEST(Decompose, LayerNormIsNinePrimitives) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
ln (float[B, 8, 16] x, float[16] s, float[16] b) => (float[B, 8, 16] y) { y = LayerNormalization<axis = -1, epsilon = 0.001>(x, s, b) })",
                        opts(2));
  EXPECT_EQ(test::num_prims(g), 9);
  EXPECT_EQ(test::count_class(g, OpClass::reduction), 2);
  EXPECT_EQ(g.node(g.at("y")).op, "Add");
  NodeId veps = g.at("y/veps");
  auto ops = g.operands(veps);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(g.node(ops[1]).source, SourceKind::constant);
  ASSERT_EQ(g.node(ops[1]).data.f32.size(), 1u);
  EXPECT_FLOAT_EQ(g.node(ops[1]).data.f32[0], 0.001f);
}

TEST(Decompose, BatchNormIsTwoPrimitivesWithFoldedWeights) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 15]>
bn (float[N, 2, 4, 4] x) => (float[N, 2, 4, 4] y)
<float[2] s = {2.0, 1.0}, float[2] b = {0.0, 1.0}, float[2] m = {1.0, 0.0}, float[2] v = {3.0, 3.0}> {
  y = BatchNormalization<epsilon = 1.0>(x, s, b, m, v) })",
                        opts(1));
  EXPECT_EQ(test::num_prims(g), 2);
  const Primitive& se = g.node(g.at("y/scale_eff"));
  EXPECT_EQ(se.out.shape, (std::vector<int64_t>{2, 1, 1}));
  ASSERT_EQ(se.data.f32.size(), 2u);
  EXPECT_FLOAT_EQ(se.data.f32[0], 1.0f);  // 2/sqrt(3+1)
  EXPECT_FLOAT_EQ(se.data.f32[1], 0.5f);  // 1/sqrt(3+1)
  const Primitive& sh = g.node(g.at("y/shift_eff"));
  ASSERT_EQ(sh.data.f32.size(), 2u);
  EXPECT_FLOAT_EQ(sh.data.f32[0], -1.0f);  // 0 - 1*1
  EXPECT_FLOAT_EQ(sh.data.f32[1], 1.0f);
}

TEST(Decompose, GemmBecomesMatMulAndAdd) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 13]>
gm (float[N, 8] a, float[16, 8] w, float[16] c) => (float[N, 16] y) { y = Gemm<transB = 1>(a, w, c) })",
                        opts(3));
  EXPECT_EQ(test::num_prims(g), 2);
  const Primitive& mm = g.node(g.at("y/mm"));
  EXPECT_EQ(mm.op, "MatMul");
  EXPECT_EQ(mm.attr_int("transB", 0), 1);
  EXPECT_EQ(mm.out.shape, (std::vector<int64_t>{3, 16}));
  EXPECT_EQ(mm.op_class, OpClass::contraction);
  EXPECT_EQ(g.node(g.at("y")).op, "Add");
  // alpha != 1 adds one Mul; no C and alpha 1 is a lone MatMul
  Graph g2 = import_text(R"(<ir_version: 8, opset_import: ["" : 13]>
gm (float[4, 8] a, float[8, 16] w) => (float[4, 16] y) { y = Gemm<alpha = 2.0>(a, w) })");
  EXPECT_EQ(test::num_prims(g2), 2);
  Graph g3 = import_text(R"(<ir_version: 8, opset_import: ["" : 13]>
gm (float[4, 8] a, float[8, 16] w) => (float[4, 16] y) { y = Gemm(a, w) })");
  EXPECT_EQ(test::num_prims(g3), 1);
  EXPECT_EQ(g3.node(g3.at("y")).op, "MatMul");
}

TEST(Decompose, GeluSplitReduceL2AndVariadic) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 20]>
m (float[N, 6] x, float[N, 6] z) => (float[N, 6] y, float[N, 1] l2, float[N, 2] a, float[N, 4] b, float[N, 6] s) {
  y = Gelu(x)
  l2 = ReduceL2<keepdims = 1>(x, ax)
  a, b = Split<axis = 1>(z, sizes)
  sizes = Constant<value = int64[2] {2, 4}>()
  s = Sum(x, z, y)
  ax = Constant<value = int64[1] {1}>()
})", opts(2));
  EXPECT_EQ(test::num_prims(g), 5 + 3 + 2 + 2);  // gelu 5, reduce-l2 3, two slices, two adds
  EXPECT_EQ(g.node(g.at("y")).op, "Mul");
  EXPECT_EQ(g.node(g.at("y/erf")).op, "Erf");
  EXPECT_EQ(g.node(g.at("l2")).op, "Sqrt");
  EXPECT_EQ(g.node(g.at("b")).op, "Slice");
  EXPECT_EQ(g.node(g.at("b")).attr_ints("starts"), (std::vector<int64_t>{2}));
  EXPECT_EQ(g.node(g.at("b")).out.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(g.node(g.at("s")).op, "Add");
}

TEST(Fold, ShapeChainBecomesReshapeAttribute) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 13]>
f (float[N, 4, 6] x) => (float[N, 24] y) {
  s = Shape(x)
  i0 = Constant<value = int64 {0}>()
  d0 = Gather<axis = 0>(s, i0)
  u = Unsqueeze(d0, ax)
  ax = Constant<value = int64[1] {0}>()
  m1 = Constant<value = int64[1] {-1}>()
  shp = Concat<axis = 0>(u, m1)
  y = Reshape(x, shp)
})", opts(5));
  EXPECT_EQ(test::num_prims(g), 1);
  const Primitive& y = g.node(g.at("y"));
  EXPECT_EQ(y.op, "Reshape");
  EXPECT_EQ(y.op_class, OpClass::reshape);
  EXPECT_EQ(y.out.shape, (std::vector<int64_t>{5, 24}));
  EXPECT_EQ(g.operands(g.at("y")).size(), 1u);
  EXPECT_EQ(g.size(), 2u);  // input + reshape: folded nodes and unused constants leave nothing
}

// Regression (clang UBSan, float-cast-overflow): a folded float result kept
// an int64 view made by a plain cast, undefined for -inf; and an int64 Neg or
// Abs of INT64_MIN overflowed. Float results keep their double, integer
// Neg/Abs wrap as the kernels do.
TEST(Fold, InfinitiesAndInt64MinFoldWithoutOverflow) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
f (float[4] x, int64[1] n) => (float[4] y, int64[1] z, int64[1] w) {
  a = Constant<value = float {-1.0}>()
  b = Constant<value = float {0.0}>()
  c = Div(a, b)
  y = Add(x, c)
  m = Constant<value = int64[1] {-9223372036854775808}>()
  k = Neg(m)
  j = Abs(m)
  z = Add(n, k)
  w = Add(n, j)
})", opts(1));
  auto constant_operand = [&](const char* name) -> const Primitive& {
    return g.node(g.operands(g.at(name))[1]);
  };
  ASSERT_EQ(constant_operand("y").data.f32.size(), 1u);
  EXPECT_EQ(constant_operand("y").data.f32[0], -std::numeric_limits<float>::infinity());
  for (const char* out : {"z", "w"}) {
    ASSERT_EQ(constant_operand(out).data.i64.size(), 1u) << out;
    EXPECT_EQ(constant_operand(out).data.i64[0], std::numeric_limits<int64_t>::min()) << out;
  }
}

TEST(Fold, ReduceAxesInputBecomesAttribute) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 18]>
r (float[N, 8] x) => (float[N, 1] y) {
  a = Constant<value = int64[1] {-1}>()
  y = ReduceMean<keepdims = 1>(x, a)
})", opts(2));
  const Primitive& y = g.node(g.at("y"));
  EXPECT_EQ(y.attr_ints("axes"), (std::vector<int64_t>{1}));
  EXPECT_EQ(g.operands(g.at("y")).size(), 1u);
  EXPECT_EQ(y.op_class, OpClass::reduction);
}

TEST(Classify, TransposeLayoutVsInjectiveAndOpaque) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
t (float[2, 3, 4] x, float[10, 4] tab, int64[5] idx) => (float[3, 2, 4] a, float[4, 3, 2] b, float[5, 4] c, float[2, 3, 4] d) {
  a = Transpose<perm = [1, 0, 2]>(x)
  b = Transpose(x)
  c = Gather<axis = 0>(tab, idx)
  d = com.example.Foo(x)
})");
  EXPECT_EQ(g.node(g.at("a")).op_class, OpClass::injective);
  EXPECT_EQ(g.node(g.at("b")).op_class, OpClass::layout);
  EXPECT_EQ(g.node(g.at("c")).op_class, OpClass::gather);
  EXPECT_EQ(g.node(g.at("d")).op_class, OpClass::opaque);
  EXPECT_EQ(g.node(g.at("d")).op, "com.example:Foo");
  ASSERT_EQ(g.warnings.size(), 1u);
}

TEST(Dims, BatchAndNamedDims) {
  std::string m = R"(<ir_version: 8, opset_import: ["" : 17]>
d (float[batch, seq, 8] x) => (float[batch, seq, 8] y) { y = Relu(x) })";
  Graph g = import_text(m, opts(7, {{"seq", 11}}));
  EXPECT_EQ(g.node(g.at("y")).out.shape, (std::vector<int64_t>{7, 11, 8}));
  Graph g2 = import_text(m, opts(7, {{"seq", 11}, {"batch", 3}}));  // dims win
  EXPECT_EQ(g2.node(g2.at("y")).out.shape, (std::vector<int64_t>{3, 11, 8}));
}

TEST(Opaque, DataDependentRegionWarnsWithCount) {
  Graph g = import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
nz (float[4, 4] x) => (float[4, 4] y, int64[2, K] z) {
  nz = NonZero(x)
  t = Transpose(nz)
  z = Relu(nz)
  y = Relu(x)
})");
  EXPECT_FALSE(g.node(g.at("z")).out.known);
  EXPECT_EQ(g.node(g.at("z")).op_class, OpClass::opaque);
  EXPECT_TRUE(g.node(g.at("y")).out.known);
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("3 primitives"), std::string::npos) << g.warnings[0];
}

}  // namespace
}  // namespace fuseplan
