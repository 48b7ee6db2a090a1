// The reference executor on hand-computed small cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/builder.h"
#include "emit/cpu/runtime.h"
#include "exec/reference.h"

namespace fuseplan {
namespace {

using test::Builder;
using V = std::vector<int64_t>;

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get(i));
  return v;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

std::vector<Tensor> run(Graph& g) { return run_reference(g, make_source_data(g)); }

TEST(Reference, SoftmaxOfOneTwoThree) {
  Builder b;
  auto x = b.weight("x", {1, 3}, {1, 2, 3});
  auto mx = b.op("y/max", "ReduceMax", OpClass::reduction, {x}, {1, 1}, {{"axes", V{1}}, {"keepdims", int64_t{1}}});
  auto sub = b.op("y/sub", "Sub", OpClass::broadcast, {x, mx}, {1, 3});
  auto ex = b.op("y/exp", "Exp", OpClass::elementwise, {sub}, {1, 3});
  auto sum = b.op("y/sum", "ReduceSum", OpClass::reduction, {ex}, {1, 1}, {{"axes", V{1}}, {"keepdims", int64_t{1}}});
  auto y = b.op("y", "Div", OpClass::broadcast, {ex, sum}, {1, 3});
  auto& g = b.done({y});
  expect_near(values(run(g)[y]), {0.09003057, 0.24472847, 0.66524096}, 1e-7);
}

// The canonical reduction order (graph/op_attrs.h reduce_lanes). A row of
// 32 (a multiple of 16) sums in 16 lanes: lane 0 holds 1e8 and -1e8 (0),
// lanes 1-15 hold two ones each (2), folded: 30 exactly. A row of 24 sums
// one by one: 1e8 absorbs each of the 11 ones that follow it (its ULP is
// 8), -1e8 cancels it, and the last 11 ones give 11. Max in lanes is the
// max, and a NaN in any lane reaches the result. The emitted kernels return
// the same bits (tests/emit/cpu).
TEST(Reference, ReductionsFoldInSixteenLanesWhereTheRowAllows) {
  auto row = [](int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n), 1.0f);
    v[0] = 1e8f;
    v[static_cast<std::size_t>(n / 2)] = -1e8f;
    return v;
  };
  Builder b;
  auto x32 = b.weight("x32", {1, 32}, row(32));
  auto x24 = b.weight("x24", {1, 24}, row(24));
  const std::map<std::string, AttrValue> last = {{"axes", V{1}}, {"keepdims", int64_t{0}}};
  auto s32 = b.op("s32", "ReduceSum", OpClass::reduction, {x32}, {1}, last);
  auto m32 = b.op("m32", "ReduceMean", OpClass::reduction, {x32}, {1}, last);
  auto s24 = b.op("s24", "ReduceSum", OpClass::reduction, {x24}, {1}, last);
  auto mx32 = b.op("mx32", "ReduceMax", OpClass::reduction, {x32}, {1}, last);
  std::vector<float> with_nan = row(32);
  with_nan[5] = std::nanf("");  // lane 5: the fold carries it to lane 0
  auto n32 = b.op("n32", "ReduceMax", OpClass::reduction, {b.weight("xn", {1, 32}, with_nan)}, {1}, last);
  auto& g = b.done({s32, m32, s24, mx32, n32});
  const std::vector<Tensor> t = run(g);
  EXPECT_EQ(t[s32].get(0), 30.0);
  EXPECT_EQ(t[m32].get(0), static_cast<double>(30.0f / 32.0f));
  EXPECT_EQ(t[s24].get(0), 11.0);
  EXPECT_EQ(t[mx32].get(0), 1e8);
  EXPECT_TRUE(std::isnan(t[n32].get(0)));
}

TEST(Reference, LayerNormOfFourValues) {
  Builder b;
  auto x = b.weight("x", {1, 4}, {1, 2, 3, 4});
  auto eps = b.weight("eps", {}, {0.0f});
  auto mean = b.op("m", "ReduceMean", OpClass::reduction, {x}, {1, 1}, {{"axes", V{1}}});
  auto d = b.op("d", "Sub", OpClass::broadcast, {x, mean}, {1, 4});
  auto sq = b.op("sq", "Mul", OpClass::elementwise, {d, d}, {1, 4});
  auto var = b.op("var", "ReduceMean", OpClass::reduction, {sq}, {1, 1}, {{"axes", V{1}}});
  auto ve = b.op("ve", "Add", OpClass::broadcast, {var, eps}, {1, 1});
  auto sd = b.op("sd", "Sqrt", OpClass::elementwise, {ve}, {1, 1});
  auto y = b.op("y", "Div", OpClass::broadcast, {d, sd}, {1, 4});
  auto& g = b.done({y});
  double s = std::sqrt(1.25);
  expect_near(values(run(g)[y]), {-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s}, 1e-6);
}

TEST(Reference, Conv3x3PaddedOnesKernel) {
  Builder b;
  auto x = b.weight("x", {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto w = b.weight("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  auto y = b.op("y", "Conv", OpClass::contraction, {x, w}, {1, 1, 3, 3},
                {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}});
  auto& g = b.done({y});
  expect_near(values(run(g)[y]), {12, 21, 16, 27, 45, 33, 24, 39, 28});
}

TEST(Reference, MatMulTwoByThreeTimesThreeByTwo) {
  Builder b;
  auto a = b.weight("a", {2, 3}, {1, 2, 3, 4, 5, 6});
  auto w = b.weight("w", {3, 2}, {7, 8, 9, 10, 11, 12});
  auto y = b.op("y", "MatMul", OpClass::contraction, {a, w}, {2, 2});
  auto yt = b.op("yt", "MatMul", OpClass::contraction, {a, a}, {2, 2}, {{"transB", int64_t{1}}});
  auto& g = b.done({y, yt});
  auto v = run(g);
  expect_near(values(v[y]), {58, 64, 139, 154});
  expect_near(values(v[yt]), {14, 32, 32, 77});
}

TEST(Reference, GatherRowsWithNegativeIndex) {
  Builder b;
  auto d = b.weight("d", {3, 2}, {1, 2, 3, 4, 5, 6});
  auto i = b.ints("i", {2}, {2, -3});
  auto y = b.op("y", "Gather", OpClass::gather, {d, i}, {2, 2}, {{"axis", int64_t{0}}});
  auto& g = b.done({y});
  expect_near(values(run(g)[y]), {5, 6, 1, 2});
}

TEST(Reference, CumSumForwardAndExclusiveReverse) {
  Builder b;
  auto x = b.weight("x", {4}, {1, 2, 3, 4});
  auto y = b.op("y", "CumSum", OpClass::scan, {x}, {4}, {{"axis", int64_t{0}}});
  auto z = b.op("z", "CumSum", OpClass::scan, {x}, {4}, {{"axis", int64_t{0}}, {"exclusive", int64_t{1}}, {"reverse", int64_t{1}}});
  auto& g = b.done({y, z});
  auto v = run(g);
  expect_near(values(v[y]), {1, 3, 6, 10});
  expect_near(values(v[z]), {9, 7, 4, 0});
}

TEST(Reference, MaxAndAveragePool2x2) {
  Builder b;
  std::vector<float> in;
  for (int i = 0; i < 16; ++i) in.push_back(static_cast<float>(i));
  auto x = b.weight("x", {1, 1, 4, 4}, in);
  std::map<std::string, AttrValue> a = {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}};
  auto mp = b.op("mp", "MaxPool", OpClass::reduction, {x}, {1, 1, 2, 2}, a);
  auto ap = b.op("ap", "AveragePool", OpClass::reduction, {x}, {1, 1, 2, 2}, a);
  auto gp = b.op("gp", "GlobalAveragePool", OpClass::reduction, {x}, {1, 1, 1, 1});
  auto& g = b.done({mp, ap, gp});
  auto v = run(g);
  expect_near(values(v[mp]), {5, 7, 13, 15});
  expect_near(values(v[ap]), {2.5, 4.5, 10.5, 12.5});
  expect_near(values(v[gp]), {7.5});
}

// fprt::max_/min_ (branch-free: two selects) keep the ONNX
// semantics: a NaN anywhere in a window wins, first or later; of two equal
// zeros the running one is kept, so the window's first zero's sign survives.
TEST(Reference, MaxPoolPropagatesNanAndKeepsTheFirstOfEqualZeros) {
  Builder b;
  const float nan = std::nanf("");
  // Windows (row-major 2x2 blocks of the 4x4 input): {nan, 1, 2, 3},
  // {1, 2, nan, 0}, {-0, 0, -1, -2}, {0, -0, -3, -4}.
  std::vector<float> in = {nan, 1, 1, 2, 2, 3, nan, 0, -0.0f, 0, 0, -0.0f, -1, -2, -3, -4};
  auto x = b.weight("x", {1, 1, 4, 4}, in);
  std::map<std::string, AttrValue> a = {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}};
  auto mp = b.op("mp", "MaxPool", OpClass::reduction, {x}, {1, 1, 2, 2}, a);
  auto& g = b.done({mp});
  std::vector<double> v = values(run(g)[mp]);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 0);
  EXPECT_TRUE(std::signbit(v[2]));
  EXPECT_EQ(v[3], 0);
  EXPECT_FALSE(std::signbit(v[3]));
}

// fprt::exp_ (the CPU backend's Exp) returns std::exp's
// bits for every float: around the -104 switch to +0, at -FLT_MAX (a masked
// softmax position), for NaN and infinities, and on a sweep of bit patterns.
// fprt::pool folds each window row by row over a whole output row; a
// per-output window loop (the definition, written out here) gives the same
// bits for max and average (both count modes), 1-3 spatial dims, strides,
// dilations, asymmetric pads that leave whole windows in the padding, and
// NaNs among the inputs.
TEST(Runtime, PoolEqualsThePerOutputWindowLoop) {
  auto oracle = [](const std::vector<float>& x, const std::vector<int64_t>& xs, const std::vector<int64_t>& ys,
                   const std::vector<int64_t>& k, const std::vector<int64_t>& st, const std::vector<int64_t>& pads,
                   const std::vector<int64_t>& dl, bool is_max, bool include_pad) {
    const int sr = static_cast<int>(k.size());
    int64_t ovol = 1, ivol = 1;
    for (int d = 0; d < sr; ++d) ovol *= ys[2 + d], ivol *= xs[2 + d];
    std::vector<float> y(xs[0] * xs[1] * ovol);
    for (int64_t p = 0; p < xs[0] * xs[1]; ++p)
      for (int64_t o = 0; o < ovol; ++o) {
        std::vector<int64_t> oc(sr);
        for (int64_t d = sr - 1, r = o; d >= 0; --d) oc[d] = r % ys[2 + d], r /= ys[2 + d];
        int64_t kvol = 1;
        for (int d = 0; d < sr; ++d) kvol *= k[d];
        float acc = is_max ? -INFINITY : 0.0f;
        int64_t cnt = 0, full = 0;
        for (int64_t t = 0; t < kvol; ++t) {
          std::vector<int64_t> kc(sr);
          for (int64_t d = sr - 1, r = t; d >= 0; --d) kc[d] = r % k[d], r /= k[d];
          bool inside = true, in_full = true;
          int64_t off = 0;
          for (int d = 0; d < sr; ++d) {
            const int64_t i = oc[d] * st[d] - pads[d] + kc[d] * dl[d];
            in_full = in_full && i < xs[2 + d] + pads[sr + d];
            inside = inside && i >= 0 && i < xs[2 + d];
            off = off * xs[2 + d] + i;
          }
          full += in_full;
          if (!inside) continue;
          acc = is_max ? fprt::max_(acc, x[p * ivol + off]) : acc + x[p * ivol + off];
          ++cnt;
        }
        y[p * ovol + o] = is_max ? acc : acc / float(include_pad ? full : (cnt ? cnt : 1));
      }
    return y;
  };
  struct Case {
    std::vector<int64_t> xs, k, st, pads, dl;
  };
  const Case cases[] = {
      {{1, 3, 112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},  // ResNet-50's stem pool
      {{2, 2, 9, 7}, {2, 3}, {1, 2}, {0, 2, 1, 2}, {1, 1}},
      {{1, 2, 6, 6}, {3, 3}, {2, 2}, {3, 0, 0, 3}, {1, 1}},       // windows wholly in the padding
      {{1, 1, 10, 11}, {2, 2}, {3, 2}, {1, 1, 1, 1}, {2, 3}},     // dilated
      {{2, 3, 17}, {4}, {3}, {2, 1}, {1}},                        // 1-D
      {{1, 2, 4, 5, 6}, {2, 2, 3}, {1, 2, 2}, {1, 0, 1, 0, 1, 1}, {1, 1, 1}},  // 3-D
      // The padded-plane grid (the stem pool and the padding case above take
      // it too): Inception's 3x3 "same" pools, asymmetric pads, 1-D, no
      // pads, stride 3; then a window over the whole plane.
      {{2, 3, 7, 7}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {{1, 2, 6, 5}, {2, 3}, {1, 1}, {0, 2, 1, 0}, {1, 1}},
      {{2, 3, 17}, {3}, {1}, {1, 1}, {1}},
      {{1, 2, 5, 5}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {{1, 2, 11, 11}, {3, 3}, {3, 3}, {1, 1, 1, 1}, {1, 1}},
      {{1, 3, 7, 7}, {7, 7}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
  };
  uint32_t seed = 12345;
  auto rnd = [&] { return (seed = seed * 1664525u + 1013904223u) / 4294967296.0f * 8 - 4; };
  for (const Case& c : cases) {
    const int sr = static_cast<int>(c.k.size());
    std::vector<int64_t> ys = {c.xs[0], c.xs[1]};
    for (int d = 0; d < sr; ++d)
      ys.push_back((c.xs[2 + d] + c.pads[d] + c.pads[sr + d] - ((c.k[d] - 1) * c.dl[d] + 1)) / c.st[d] + 1);
    int64_t n = 1, m = 1;
    for (int64_t v : c.xs) n *= v;
    for (int64_t v : ys) m *= v;
    std::vector<float> x(n);
    for (float& v : x) v = rnd();
    x[n / 3] = NAN;
    x[n / 2] = -0.0f;
    for (int mode = 0; mode < 3; ++mode) {
      SCOPED_TRACE(testing::Message() << "rank " << sr << " mode " << mode);
      std::vector<float> y(m);
      fprt::pool(x.data(), c.xs.data(), y.data(), ys.data(), sr, c.k.data(), c.st.data(), c.pads.data(), c.dl.data(),
                 mode == 0, mode == 2);
      const std::vector<float> want = oracle(x, c.xs, ys, c.k, c.st, c.pads, c.dl, mode == 0, mode == 2);
      ASSERT_EQ(std::memcmp(y.data(), want.data(), m * sizeof(float)), 0);
    }
  }
}

TEST(Reference, ResizeNearestUpsample2x) {
  Builder b;
  auto x = b.weight("x", {1, 1, 2, 2}, {1, 2, 3, 4});
  auto y = b.op("y", "Resize", OpClass::injective, {x}, {1, 1, 4, 4},
                {{"mode", std::string("nearest")}, {"scales", std::vector<double>{1, 1, 2, 2}},
                 {"coordinate_transformation_mode", std::string("asymmetric")}, {"nearest_mode", std::string("floor")}});
  auto& g = b.done({y});
  expect_near(values(run(g)[y]), {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST(Reference, SliceConcatPadTranspose) {
  Builder b;
  auto x = b.weight("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  auto s = b.op("s", "Slice", OpClass::injective, {x}, {2, 2},
                {{"starts", V{1}}, {"ends", V{3}}, {"axes", V{1}}, {"steps", V{1}}});
  auto c = b.op("c", "Concat", OpClass::injective, {x, s}, {2, 5}, {{"axis", int64_t{1}}});
  auto p = b.op("p", "Pad", OpClass::injective, {s}, {2, 4},
                {{"pads", V{0, 1, 0, 1}}, {"mode", std::string("constant")}, {"value", 9.0}});
  auto pr = b.op("pr", "Pad", OpClass::injective, {x}, {2, 5}, {{"pads", V{0, 1, 0, 1}}, {"mode", std::string("reflect")}});
  auto t = b.op("t", "Transpose", OpClass::layout, {x}, {3, 2}, {{"perm", V{1, 0}}});
  auto& g = b.done({c, p, pr, t});
  auto v = run(g);
  expect_near(values(v[c]), {1, 2, 3, 2, 3, 4, 5, 6, 5, 6});
  expect_near(values(v[p]), {9, 2, 3, 9, 9, 5, 6, 9});
  expect_near(values(v[pr]), {2, 1, 2, 3, 2, 5, 4, 5, 6, 5});
  expect_near(values(v[t]), {1, 4, 2, 5, 3, 6});
}

TEST(Reference, OpaquePrimitiveIsRefusedByName) {
  Builder b;
  auto x = b.weight("x", {2}, {1, 2});
  auto y = b.op("nz", "NonZero", OpClass::opaque, {x}, {1, 2}, {}, DType::i64);
  auto& g = b.done({y});
  try {
    run(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "cannot execute opaque primitive 'nz' (op NonZero)");
  }
}

}  // namespace
}  // namespace fuseplan
