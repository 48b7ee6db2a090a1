// The oneDNN contraction library (exec/onednn.h) against direct loops in
// double precision: every Conv/ConvTranspose/MatMul variant the IR allows
// (grouped, depthwise, strided, dilated, asymmetric pads, 1-3 spatial dims,
// output padding, broadcast batches, transposes, 1-D operands), and the
// constant-weight copy's lifetime.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "exec/onednn.h"
#include "graph/layout.h"

namespace fuseplan {
namespace {

std::vector<float> random_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}
int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "element " << i;
}

struct ConvCase {
  std::vector<int64_t> x, w, strides, pads, dil;
  int64_t group;
  bool transposed;
  std::vector<int64_t> output_padding = {};
};

// Output spatial size (ONNX): Conv floor((in + pb + pe - span) / s) + 1;
// ConvTranspose s (in - 1) + output_padding + span - pb - pe.
std::vector<int64_t> out_shape(const ConvCase& c) {
  const int sr = static_cast<int>(c.x.size()) - 2;
  std::vector<int64_t> y = {c.x[0], c.transposed ? c.w[1] * c.group : c.w[0]};
  for (int i = 0; i < sr; ++i) {
    const int64_t span = (c.w[2 + i] - 1) * c.dil[i] + 1;
    const int64_t op = c.output_padding.empty() ? 0 : c.output_padding[i];
    y.push_back(c.transposed ? c.strides[i] * (c.x[2 + i] - 1) + op + span - c.pads[i] - c.pads[sr + i]
                             : (c.x[2 + i] + c.pads[i] + c.pads[sr + i] - span) / c.strides[i] + 1);
  }
  return y;
}

// Direct loops, padded to 3 spatial dims.
std::vector<double> conv_direct(const ConvCase& c, const std::vector<float>& x, const std::vector<float>& w,
                                const std::vector<int64_t>& ys) {
  const int sr = static_cast<int>(c.x.size()) - 2;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1}, pb[3] = {0, 0, 0},
          dl[3] = {1, 1, 1};
  for (int i = 0; i < sr; ++i) {
    const int o = 3 - sr + i;
    in[o] = c.x[2 + i], out[o] = ys[2 + i], k[o] = c.w[2 + i], st[o] = c.strides[i], pb[o] = c.pads[i],
    dl[o] = c.dil[i];
  }
  const int64_t N = c.x[0], C = c.x[1], M = ys[1], Cg = C / c.group, Mg = M / c.group;
  std::vector<double> y(static_cast<std::size_t>(numel(ys)), 0.0);
  auto X = [&](int64_t n, int64_t ch, int64_t a, int64_t b, int64_t e) {
    return double(x[(((n * C + ch) * in[0] + a) * in[1] + b) * in[2] + e]);
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < c.group; ++g)
      for (int64_t m = 0; m < Mg; ++m)
        for (int64_t ci = 0; ci < Cg; ++ci)
          for (int64_t ka = 0; ka < k[0]; ++ka)
            for (int64_t kb = 0; kb < k[1]; ++kb)
              for (int64_t ke = 0; ke < k[2]; ++ke) {
                const double wv = c.transposed
                                      ? w[((((g * Cg + ci) * Mg + m) * k[0] + ka) * k[1] + kb) * k[2] + ke]
                                      : w[((((g * Mg + m) * Cg + ci) * k[0] + ka) * k[1] + kb) * k[2] + ke];
                if (!c.transposed) {
                  for (int64_t a = 0; a < out[0]; ++a)
                    for (int64_t b = 0; b < out[1]; ++b)
                      for (int64_t e = 0; e < out[2]; ++e) {
                        const int64_t i0 = a * st[0] - pb[0] + ka * dl[0], i1 = b * st[1] - pb[1] + kb * dl[1],
                                      i2 = e * st[2] - pb[2] + ke * dl[2];
                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2]) continue;
                        y[(((n * M + g * Mg + m) * out[0] + a) * out[1] + b) * out[2] + e] +=
                            X(n, g * Cg + ci, i0, i1, i2) * wv;
                      }
                } else {
                  for (int64_t a = 0; a < in[0]; ++a)
                    for (int64_t b = 0; b < in[1]; ++b)
                      for (int64_t e = 0; e < in[2]; ++e) {
                        const int64_t o0 = a * st[0] - pb[0] + ka * dl[0], o1 = b * st[1] - pb[1] + kb * dl[1],
                                      o2 = e * st[2] - pb[2] + ke * dl[2];
                        if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 || o2 >= out[2]) continue;
                        y[(((n * M + g * Mg + m) * out[0] + o0) * out[1] + o1) * out[2] + o2] +=
                            X(n, g * Cg + ci, a, b, e) * wv;
                      }
                }
              }
  return y;
}

void check_conv(const ConvCase& c, int layout = 0) {
  const std::vector<int64_t> ys = out_shape(c);
  const auto x = random_values(numel(c.x), 1), w = random_values(numel(c.w), 2);
  std::vector<float> y(static_cast<std::size_t>(numel(ys)), -7.0f);
  onednn_contractions().conv(x.data(), c.x.data(), w.data(), c.w.data(), y.data(), ys.data(),
                             static_cast<int>(c.x.size()) - 2, c.strides.data(), c.pads.data(), c.dil.data(), c.group,
                             c.transposed, 1, layout);
  expect_close(y, conv_direct(c, x, w, ys));
}

TEST(OneDnn, ConvVariantsMatchDirectLoops) {
  check_conv({{1, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, false});          // 3x3, same
  check_conv({{2, 8, 7, 7}, {16, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, false});          // 1x1, batch 2
  check_conv({{1, 8, 9, 8}, {16, 8, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, false});          // 1x1 strided
  check_conv({{1, 8, 10, 9}, {8, 2, 3, 3}, {2, 1}, {0, 1, 2, 0}, {1, 1}, 4, false});          // grouped, asym pads
  check_conv({{1, 16, 12, 12}, {16, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 16, false});      // depthwise
  check_conv({{1, 4, 13, 13}, {6, 4, 3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1, false});         // dilated
  check_conv({{2, 3, 17}, {5, 3, 4}, {3}, {1, 2}, {1}, 1, false});                             // 1-D
  check_conv({{1, 2, 5, 6, 7}, {4, 2, 3, 2, 3}, {1, 2, 1}, {1, 0, 1, 1, 1, 0}, {1, 1, 1}, 1, false});  // 3-D
}

TEST(OneDnn, BlockedPrimitiveOnPlainBuffersMatchesDirectLoops) {
  // The bits graph/layout.h gives a conv between NCHW tensors: the blocked
  // primitive, reorders around it; a stem conv reads x as NCHW.
  const int64_t block = host_channel_block();
  const int bits = kConvBlockedPrimitive | (block == 16 ? kConvBlock16 : 0);
  const std::string before = onednn_implementations();
  check_conv({{1, 2 * block, 9, 9}, {2 * block, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2 * block, false}, bits);
  check_conv({{1, 3, 19, 19}, {block, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, false}, bits);
  const std::string created = onednn_implementations().substr(before.size());
  EXPECT_EQ(created.find("ref"), std::string::npos) << created;  // oneDNN's blocked kernels, not its reference
}

TEST(OneDnn, ConvTransposeVariantsMatchDirectLoops) {
  check_conv({{1, 8, 5, 5}, {8, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, true});
  check_conv({{1, 8, 5, 5}, {8, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, true, {1, 1}});  // output_padding
  check_conv({{2, 8, 4, 6}, {8, 3, 2, 3}, {1, 2}, {0, 1, 0, 0}, {1, 1}, 2, true});          // grouped, asym
  check_conv({{1, 4, 7}, {4, 2, 3}, {2}, {0, 0}, {2}, 1, true});                             // 1-D, dilated
}

struct MatMulCase {
  std::vector<int64_t> a, b;
  int transA = 0, transB = 0;
};

void check_matmul(const MatMulCase& c, int b_const) {
  // numpy shapes: promote 1-D, broadcast batch dims.
  std::vector<int64_t> A = c.a, B = c.b;
  const bool a1 = A.size() == 1, b1 = B.size() == 1;
  if (a1) A.insert(A.begin(), 1);
  if (b1) B.push_back(1);
  const int an = static_cast<int>(A.size()), bn = static_cast<int>(B.size());
  const int64_t M = c.transA ? A[an - 1] : A[an - 2], K = c.transA ? A[an - 2] : A[an - 1];
  const int64_t N = c.transB ? B[bn - 2] : B[bn - 1];
  const int nb = std::max(an, bn) - 2;
  std::vector<int64_t> ys, ba(nb, 1), bb(nb, 1);
  for (int d = 0; d < nb; ++d) {
    const int ia = d - (nb - (an - 2)), ib = d - (nb - (bn - 2));
    if (ia >= 0) ba[d] = A[ia];
    if (ib >= 0) bb[d] = B[ib];
    ys.push_back(std::max(ba[d], bb[d]));
  }
  if (!a1) ys.push_back(M);
  if (!b1) ys.push_back(N);
  const auto a = random_values(numel(c.a), 3), b = random_values(numel(c.b), 4);
  std::vector<float> y(static_cast<std::size_t>(numel(ys)), -7.0f);
  onednn_contractions().matmul(a.data(), c.a.data(), static_cast<int>(c.a.size()), b.data(), c.b.data(),
                               static_cast<int>(c.b.size()), y.data(), ys.data(), static_cast<int>(ys.size()),
                               c.transA, c.transB, b_const);
  const int64_t batch = numel(std::vector<int64_t>(ys.begin(), ys.begin() + nb));
  std::vector<double> want(y.size());
  for (int64_t t = 0; t < batch; ++t) {
    int64_t rem = t, oa = 0, ob = 0, sa = M * K, sb = K * N;
    for (int d = nb - 1; d >= 0; --d) {
      const int64_t i = rem % ys[d];
      rem /= ys[d];
      oa += (ba[d] == 1 ? 0 : i) * sa;
      ob += (bb[d] == 1 ? 0 : i) * sb;
      sa *= ba[d];
      sb *= bb[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += double(a[oa + (c.transA ? k * M + i : i * K + k)]) * b[ob + (c.transB ? j * K + k : k * N + j)];
        want[(t * M + i) * N + j] = s;
      }
  }
  expect_close(y, want);
}

TEST(OneDnn, MatMulVariantsMatchDirectLoops) {
  for (int b_const : {0, 1}) {
    check_matmul({{5, 7}, {7, 3}}, b_const);
    check_matmul({{7, 5}, {3, 7}, 1, 1}, b_const);          // both transposed
    check_matmul({{2, 3, 5, 7}, {7, 4}}, b_const);          // weights shared by the batch: folded into M
    check_matmul({{2, 3, 5, 7}, {2, 3, 7, 4}}, b_const);    // equal batches: one batch dim
    check_matmul({{2, 1, 5, 7}, {1, 3, 7, 4}}, b_const);    // both broadcast
    check_matmul({{3, 5, 7}, {2, 1, 7, 4}}, b_const);       // ranks differ
    check_matmul({{2, 7, 5}, {7, 4}, 1, 0}, b_const);       // transposed A with shared B: not folded
    check_matmul({{7}, {7, 4}}, b_const);                   // 1-D A
    check_matmul({{3, 5, 7}, {7}}, b_const);                // 1-D B
    // N a multiple of 1024, M < 512: a constant B's rows are padded (onednn.h).
    check_matmul({{2, 9, 5}, {5, 1024}}, b_const);
    check_matmul({{9, 5}, {2048, 5}, 0, 1}, b_const);       // transposed B
  }
}

TEST(OneDnn, ConstantWeightCopyLastsOneRun) {
  const std::vector<int64_t> xs = {1, 8, 6, 6}, ws = {8, 8, 3, 3}, ys = {1, 8, 6, 6}, st = {1, 1}, pd = {1, 1, 1, 1},
                             dl = {1, 1};
  const auto x = random_values(numel(xs), 5);
  auto w = random_values(numel(ws), 6);
  std::vector<float> y1(static_cast<std::size_t>(numel(ys))), y2 = y1, y3 = y1;
  auto run = [&](std::vector<float>& y) {
    onednn_contractions().conv(x.data(), xs.data(), w.data(), ws.data(), y.data(), ys.data(), 2, st.data(), pd.data(),
                               dl.data(), 1, 0, 1, 0);
  };
  onednn_forget_weights();
  run(y1);
  run(y2);
  EXPECT_EQ(y1, y2);  // the kept copy computes the same bits
  for (float& v : w) v = -v;  // new weights at the same address, every sampled value changed
  onednn_forget_weights();
  run(y3);
  for (std::size_t i = 0; i < y1.size(); ++i) ASSERT_EQ(y3[i], -y1[i]) << i;
  EXPECT_NE(onednn_implementations().find("Conv [1,8,6,6]x[8,8,3,3]"), std::string::npos);
}

// A primitive is created on its shape's first call and bound once; later
// calls of that shape read and write their own buffers, and each constant
// weight address keeps its own reordered copy. Regression for the bound
// memories (exec/onednn.cpp bind): a handle left on a previous call's
// buffer would compute the first call's result again.
TEST(OneDnn, BoundPrimitiveFollowsEachCallsBuffers) {
  const ConvCase c{{1, 16, 6, 6}, {16, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, false};  // reordered in and out
  const std::vector<int64_t> ys = out_shape(c);
  const auto x1 = random_values(numel(c.x), 11), x2 = random_values(numel(c.x), 12);
  const auto w1 = random_values(numel(c.w), 13), w2 = random_values(numel(c.w), 14);
  std::vector<float> y1(static_cast<std::size_t>(numel(ys))), y2 = y1, y3 = y1;
  auto conv = [&](const std::vector<float>& x, const std::vector<float>& w, std::vector<float>& y, int w_const) {
    onednn_contractions().conv(x.data(), c.x.data(), w.data(), c.w.data(), y.data(), ys.data(), 2, c.strides.data(),
                               c.pads.data(), c.dil.data(), 1, 0, w_const, 0);
  };
  for (int w_const : {0, 1}) {
    onednn_forget_weights();
    conv(x1, w1, y1, w_const);
    conv(x2, w2, y2, w_const);
    conv(x1, w1, y3, w_const);
    expect_close(y1, conv_direct(c, x1, w1, ys));
    expect_close(y2, conv_direct(c, x2, w2, ys));
    EXPECT_EQ(y1, y3);
  }
  const std::vector<int64_t> as = {5, 7}, bs = {7, 3}, ms = {5, 3};
  const auto a1 = random_values(35, 15), a2 = random_values(35, 16), b1 = random_values(21, 17), b2 = random_values(21, 18);
  std::vector<float> m1(15), m2(15);
  onednn_contractions().matmul(a1.data(), as.data(), 2, b1.data(), bs.data(), 2, m1.data(), ms.data(), 2, 0, 0, 1);
  onednn_contractions().matmul(a2.data(), as.data(), 2, b2.data(), bs.data(), 2, m2.data(), ms.data(), 2, 0, 0, 1);
  for (const auto& [a, b, m] : {std::tie(a1, b1, m1), std::tie(a2, b2, m2)}) {
    std::vector<double> want(15);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 7; ++k) want[i * 3 + j] += double(a[i * 7 + k]) * b[k * 3 + j];
    expect_close(m, want);
  }
}

}  // namespace
}  // namespace fuseplan
