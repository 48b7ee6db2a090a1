// Probe of the contraction library's throughput per class (probe/contraction.h).
#include "probe/contraction.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "exec/onednn.h"
#include "graph/layout.h"

namespace fuseplan {

namespace {

using C = ContractionClass;

double product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), 1.0, [](double p, int64_t x) { return p * static_cast<double>(x); });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Uniform in [-1, 1) from a fixed LCG: every page written, no denormals.
std::vector<float> filled(double n, uint32_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

// Calls until at least kMinCalls and kMinSeconds (at most kMaxCalls) after
// kWarmup calls; the medians of the primitive's and the call's µs.
constexpr int kWarmup = 2, kMinCalls = 7, kMaxCalls = 201;
constexpr double kMinSeconds = 0.02;

template <class Call>
ShapeTiming time_calls(Call&& call) {
  for (int i = 0; i < kWarmup; ++i) call();
  std::vector<double> prim, whole;
  const auto start = std::chrono::steady_clock::now();
  while (static_cast<int>(whole.size()) < kMaxCalls) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const auto t1 = std::chrono::steady_clock::now();
    whole.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    prim.push_back(onednn_last_primitive_us());
    if (static_cast<int>(whole.size()) >= kMinCalls && std::chrono::duration<double>(t1 - start).count() >= kMinSeconds)
      break;
  }
  return {median(prim), median(whole)};
}

ShapeTiming time_shape(const ProbeShape& s, uint32_t seed) {
  const fprt::ContractionLibrary& lib = onednn_contractions();
  const std::vector<int64_t> y = probe_shape_output(s);
  std::vector<float> a = filled(product(s.a), seed), b = filled(product(s.b), seed + 1), out(product(y));
  if (s.conv) {
    const int64_t strides[2] = {s.stride, s.stride}, pads[4] = {s.pad, s.pad, s.pad, s.pad}, dil[2] = {1, 1};
    return time_calls([&] {
      // The blocked primitive in the host's block, as convolutions between
      // blocked tensors run (graph/layout.h); the probe times the
      // primitive, not the reorders.
      lib.conv(a.data(), s.a.data(), b.data(), s.b.data(), out.data(), y.data(), 2, strides, pads, dil, s.group, 0, 1,
               kConvBlockedPrimitive | (host_channel_block() == 16 ? kConvBlock16 : 0));
    });
  }
  const int b_const = s.cls == C::matmul_batched ? 0 : 1;  // weights, except attention's second operand
  return time_calls([&] {
    lib.matmul(a.data(), s.a.data(), static_cast<int>(s.a.size()), b.data(), s.b.data(), static_cast<int>(s.b.size()),
               out.data(), y.data(), static_cast<int>(y.size()), 0, 0, b_const);
  });
}

}  // namespace

const std::vector<ProbeShape>& probe_shapes() {
  static const std::vector<ProbeShape> shapes = {
      {C::conv_1x1, "ResNet-50 layer1 1x1 64->256 at 56x56", true, {1, 64, 56, 56}, {256, 64, 1, 1}},
      {C::conv_1x1, "MobileNetV2 1x1 expand 24->144 at 56x56", true, {1, 24, 56, 56}, {144, 24, 1, 1}},
      {C::conv_1x1, "ResNet-50 layer3 1x1 256->1024 at 14x14", true, {1, 256, 14, 14}, {1024, 256, 1, 1}},
      {C::conv_spatial, "ResNet-50 layer1 3x3 64->64 at 56x56", true, {1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1},
      {C::conv_spatial, "ResNet-50 layer3 3x3 256->256 at 14x14", true, {1, 256, 14, 14}, {256, 256, 3, 3}, 1, 1},
      {C::conv_depthwise, "MobileNetV2 3x3 depthwise 144 at 56x56", true, {1, 144, 56, 56}, {144, 1, 3, 3}, 1, 1, 144},
      {C::conv_depthwise, "MobileNetV2 3x3 depthwise 576 at 14x14", true, {1, 576, 14, 14}, {576, 1, 3, 3}, 1, 1, 576},
      {C::conv_grouped, "ResNeXt-50 32x4d layer2 3x3 256->256 group 32 at 28x28", true, {1, 256, 28, 28},
       {256, 8, 3, 3}, 1, 1, 32},
      {C::gemm_skinny, "BERT-base pooler [1,768] x [768,768]", false, {1, 768}, {768, 768}},
      {C::gemm_skinny, "ResNet-50 fc [1,2048] x [2048,1000]", false, {1, 2048}, {2048, 1000}},
      {C::gemm_square, "BERT-base projection [128,768] x [768,768]", false, {1, 128, 768}, {768, 768}},
      {C::gemm_square, "BERT-base FFN up [128,768] x [768,3072] (B rows padded)", false, {1, 128, 768}, {768, 3072}},
      {C::gemm_square, "BERT-base FFN down [128,3072] x [3072,768]", false, {1, 128, 3072}, {3072, 768}},
      {C::gemm_tall, "BERT-base at 4 x 128 tokens, projection [512,768] x [768,768]", false, {4, 128, 768}, {768, 768}},
      {C::matmul_batched, "BERT-base scores [1,12,128,64] x [1,12,64,128]", false, {1, 12, 128, 64}, {1, 12, 64, 128}},
      {C::matmul_batched, "BERT-base context [1,12,128,128] x [1,12,128,64]", false, {1, 12, 128, 128},
       {1, 12, 128, 64}},
  };
  return shapes;
}

std::vector<int64_t> probe_shape_output(const ProbeShape& s) {
  if (s.conv) {
    auto out = [&](int64_t in, int64_t k) { return (in + 2 * s.pad - k) / s.stride + 1; };
    return {s.a[0], s.b[0], out(s.a[2], s.b[2]), out(s.a[3], s.b[3])};
  }
  std::vector<int64_t> y = s.b.size() > s.a.size() ? s.b : s.a;  // batch dims as the longer operand's (equal here)
  y[y.size() - 2] = s.a[s.a.size() - 2];
  y.back() = s.b.back();
  return y;
}

double probe_shape_flops(const ProbeShape& s) {
  const double out = product(probe_shape_output(s));
  if (s.conv) return 2 * out * static_cast<double>(s.b[1] * s.b[2] * s.b[3]);  // 2 · outputs · (C/group)·kh·kw
  return 2 * out * static_cast<double>(s.a.back());                             // 2 · outputs · K
}

ContractionProbe probe_contractions(int threads) {
  const int saved = contraction_threads();
  set_contraction_threads(threads);
  ContractionProbe r;
  std::array<double, kContractionClassCount> inverse_sum{};  // Σ 1 / GFLOP/s of the class's shapes
  std::array<int, kContractionClassCount> count{};
  const std::vector<ProbeShape>& shapes = probe_shapes();
  try {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const ShapeTiming t = time_shape(shapes[i], 17 + 2 * static_cast<uint32_t>(i));
      r.shapes.push_back(t);
      const int k = static_cast<int>(shapes[i].cls);
      inverse_sum[k] += t.primitive_us / (probe_shape_flops(shapes[i]) * 1e-3);
      ++count[k];
    }
    // The fixed cost of a call as a plan pays it: small MatMuls whose FLOPs
    // take a few ns, eight primitives called in turn (a plan calls each of
    // its contractions once per run, between other kernels), each call's
    // whole time less its FLOPs at the skinny-GEMM rate. The primitive's own
    // fixed cost (oneDNN's execute: argument map, scratchpad, the JIT
    // kernel's entry) is part of it. On a Zen 4 thread: 0.65 us (1.0-1.3
    // while the core's other hyperthread is busy); one hot primitive less
    // its primitive's time gave 0.27 us, and priced the held-out contraction
    // groups of results/calibration-zen4 at 47% MAPE (0.65: 33%).
    const fprt::ContractionLibrary& lib = onednn_contractions();
    struct Tiny {
      int64_t m, k, n;
    };
    constexpr Tiny kTiny[] = {{1, 16, 16}, {16, 32, 32}, {128, 2, 2}, {128, 4, 2}, {64, 16, 8}, {8, 64, 64}, {32, 8, 16}, {4, 4, 4}};
    constexpr int kRounds = 2 + 26;
    const int skinny = static_cast<int>(C::gemm_skinny);
    const double skinny_us_per_flop = count[skinny] > 0 ? inverse_sum[skinny] / count[skinny] * 1e-3 : 0;
    std::vector<std::vector<float>> bufs;
    for (const Tiny& t : kTiny)
      for (int64_t n : {t.m * t.k, t.k * t.n, t.m * t.n}) bufs.push_back(filled(n, static_cast<uint32_t>(bufs.size())));
    std::vector<double> extra;
    for (int rep = 0; rep < kRounds; ++rep)
      for (std::size_t i = 0; i < std::size(kTiny); ++i) {
        const Tiny& t = kTiny[i];
        const int64_t as[2] = {t.m, t.k}, bs[2] = {t.k, t.n}, ys[2] = {t.m, t.n};
        const auto t0 = std::chrono::steady_clock::now();
        lib.matmul(bufs[3 * i].data(), as, 2, bufs[3 * i + 1].data(), bs, 2, bufs[3 * i + 2].data(), ys, 2, 0, 0, 1);
        const double whole = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        if (rep >= 2) extra.push_back(whole - 2.0 * static_cast<double>(t.m * t.k * t.n) * skinny_us_per_flop);
      }
    r.call_us = std::max(0.0, median(extra));
  } catch (...) {
    set_contraction_threads(saved);
    throw;
  }
  set_contraction_threads(saved);
  std::string classes, per_shape;
  for (ContractionClass k : contraction_classes()) {
    const int i = static_cast<int>(k);
    r.GFLOPs[i] = inverse_sum[i] > 0 ? count[i] / inverse_sum[i] : 0;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.1f", classes.empty() ? "" : ", ", std::string(contraction_class_name(k)).c_str(),
                  r.GFLOPs[i]);
    classes += buf;
  }
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "; %s %.1f (call %.1f)", shapes[i].origin,
                  probe_shape_flops(shapes[i]) / r.shapes[i].primitive_us * 1e-3,
                  probe_shape_flops(shapes[i]) / r.shapes[i].call_us * 1e-3);
    per_shape += buf;
  }
  char head[400];
  std::snprintf(head, sizeof head,
                "%s through onednn_contractions() (exec/onednn.h) on %d thread(s), %zu shapes of ResNet-50, "
                "MobileNetV2, ResNeXt-50 and BERT-base (probe/contraction.cpp), random-filled, %d warm-up calls then "
                "median of >= %d calls and >= %.0f ms, the primitive alone (reorders excluded), class = harmonic "
                "mean of its shapes' GFLOP/s, GFLOP/s: ",
                onednn_version().c_str(), threads, shapes.size(), kWarmup, kMinCalls, kMinSeconds * 1e3);
  r.note = head + classes + ". Per shape, GFLOP/s of the primitive (of the whole call, reorders included)" +
           per_shape;
  const OnednnVectors v = onednn_vectors();
  r.lanes = v.fp32_lanes;
  r.lanes_note = "fp32 lanes of " + onednn_version() + "'s vectors: its effective ISA here is " + v.isa +
                 " (dnnl::get_effective_cpu_isa)";
  return r;
}

}  // namespace fuseplan
