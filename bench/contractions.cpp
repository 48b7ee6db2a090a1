// Each contraction class through fuseplan against a direct oneDNN call of the
// same shape, interleaved in one run, printed as a markdown table.
//  fuseplan: the unfused plan of a one-op model run by exec/cpu_run.h (the
//            emitted kernel calling exec/onednn.h: primitive lookup, the
//            activation reorders around blocked convolutions, the call);
//  oneDNN:   the same primitive descriptor created directly, executed on
//            tensors already in its preferred layouts (no reorders), the
//            best case a library user gets.
// Then oneDNN's post-ops on the conv classes (post_op_table).
// Usage: bench_contractions [--threads N] [--rounds K]
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/cpu_run.h"
#include "exec/onednn.h"
#include "graph/import.h"
#include "costmodel/device.h"
#include "search/strategy.h"
#include "support/format.h"
#include "support/stats.h"

using namespace fuseplan;
namespace fs = std::filesystem;
using dnnl::memory;

namespace {

struct Case {
  std::string name;
  bool conv;               // else MatMul
  memory::dims x, w, y;    // conv: NCHW, OIHW (grouped: [M, C/g, kh, kw]), NCHW; matmul: [.., M, K], [K, N], [.., M, N]
  int64_t stride = 1, pad = 0, group = 1;
  // Between two 1x1 convs: fuseplan keeps the activations blocked
  // (graph/layout.h), and its column is that conv's group alone, as inside
  // a model; otherwise the one-op model reorders its NCHW input and output.
  bool chain = false;
};

std::string dims(const memory::dims& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s;
}

std::string model_text(const Case& c) {
  // A chain case also takes the two 1x1 convs' weights as inputs.
  const std::string in = std::to_string(c.x[1]), out = std::to_string(c.y[1]);
  const std::string extra = c.chain ? ", float[" + in + ", " + in + ", 1, 1] p, float[" + out + ", " + out + ", 1, 1] q" : "";
  std::string t = "<ir_version: 8, opset_import: [\"\" : 17]>\nm (float[" + dims(c.x) + "] x, float[" + dims(c.w) +
                  "] w" + extra + ") => (float[" + dims(c.y) + "] y) {\n";
  if (!c.conv) return t + "  y = MatMul(x, w)\n}\n";
  const std::string k = std::to_string(c.w[2]), p = std::to_string(c.pad), s = std::to_string(c.stride);
  const std::string conv = "Conv <kernel_shape = [" + k + ", " + k + "], pads = [" + p + ", " + p + ", " + p + ", " + p +
                           "], strides = [" + s + ", " + s + "], group = " + std::to_string(c.group) + ">";
  if (!c.chain) return t + "  y = " + conv + " (x, w)\n}\n";
  return t + "  a = Conv <kernel_shape = [1, 1]> (x, p)\n  y0 = " + conv +
         " (a, w)\n  y = Conv <kernel_shape = [1, 1]> (y0, q)\n}\n";
}

double flops(const Case& c) {
  double f = 2;
  if (c.conv) {
    for (auto d : c.y) f *= d;
    f *= double(c.w[1]) * c.w[2] * c.w[3];
  } else {
    for (auto d : c.y) f *= d;
    f *= c.x.back();
  }
  return f;
}

// A direct oneDNN primitive on its preferred layouts; returns a timer.
// Post-ops of a direct conv (the post-op table): none; a ReLU as
// eltwise_clip(0, inf); a per-channel binary add (a bias) then that clip;
// oneDNN's own bias then the clip.
enum class Post { none, clip, add_clip, bias_clip };

struct Direct {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  std::string impl;
  // blocked: the conv's activations nChw16c where its channels fill
  // 16-channel blocks, as fuseplan runs a conv between blocked tensors
  // (graph/layout.h), else oneDNN's choice.
  explicit Direct(const Case& c, Post post = Post::none, bool blocked = false) {
    auto any = [](const memory::dims& d) { return memory::desc(d, memory::data_type::f32, memory::format_tag::any); };
    const bool b16 = blocked && c.conv && c.x[1] % 16 == 0 && c.y[1] % 16 == 0 &&
                     (c.group == 1 || c.group == c.x[1] || (c.x[1] / c.group) % 16 == 0);
    auto act = [&](const memory::dims& d) {
      return b16 ? memory::desc(d, memory::data_type::f32, memory::format_tag::nChw16c) : any(d);
    };
    if (c.conv) {
      memory::dims wd = c.w;
      if (c.group > 1) wd = {c.group, c.w[0] / c.group, c.w[1], c.w[2], c.w[3]};
      const memory::desc channel({1, c.y[1], 1, 1}, memory::data_type::f32, memory::format_tag::abcd),
          bias({c.y[1]}, memory::data_type::f32, memory::format_tag::a);
      dnnl::post_ops po;
      if (post == Post::add_clip) po.append_binary(dnnl::algorithm::binary_add, channel);
      if (post != Post::none) po.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, 0.f, INFINITY);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::convolution_direct;
      const memory::dims st = {c.stride, c.stride}, pad = {c.pad, c.pad};
      dnnl::convolution_forward::primitive_desc pd(
          post == Post::bias_clip
              ? dnnl::convolution_forward::desc(prop, alg, act(c.x), any(wd), bias, act(c.y), st, {0, 0}, pad, pad)
              : dnnl::convolution_forward::desc(prop, alg, act(c.x), any(wd), act(c.y), st, {0, 0}, pad, pad),
          attr, eng);
      prim = dnnl::convolution_forward(pd);
      args = {{DNNL_ARG_SRC, memory(pd.src_desc(), eng)},
              {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), eng)},
              {DNNL_ARG_DST, memory(pd.dst_desc(), eng)}};
      if (post == Post::add_clip) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = memory(channel, eng);
      if (post == Post::bias_clip) args[DNNL_ARG_BIAS] = memory(bias, eng);
      impl = pd.impl_info_str();
    } else {
      auto plain = [](const memory::dims& d) {
        return memory::desc(d, memory::data_type::f32, d.size() == 2 ? memory::format_tag::ab : memory::format_tag::abc);
      };
      memory::dims x = c.x, y = c.y;
      if (x.size() == 3) x = {x[0] * x[1], x[2]}, y = {y[0] * y[1], y[2]};  // batch folded into M, as fuseplan does
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(plain(x), any(c.w), plain(y)), eng);
      prim = dnnl::matmul(pd);
      args = {{DNNL_ARG_SRC, memory(pd.src_desc(), eng)},
              {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), eng)},
              {DNNL_ARG_DST, memory(pd.dst_desc(), eng)}};
      impl = pd.impl_info_str();
    }
    for (auto& [k, m] : args) {  // pseudo-random values in [-1, 1] per argument, the same in every Direct of a case
      float* p = static_cast<float*>(m.get_data_handle());
      const std::size_t n = m.get_desc().get_size() / sizeof(float);
      for (std::size_t i = 0; i < n; ++i) p[i] = float((i * 2654435761u + unsigned(k) * 40503u) % 2001) / 1000.0f - 1.0f;
    }
  }
  // dst as plain NCHW floats.
  std::vector<float> output() {
    memory& dst = args.at(DNNL_ARG_DST);
    std::vector<float> out(dst.get_desc().get_size() / sizeof(float));
    memory plain(memory::desc(dst.get_desc().dims(), memory::data_type::f32, memory::format_tag::abcd), eng, out.data());
    dnnl::reorder(dst, plain).execute(strm, dst, plain);
    strm.wait();
    return out;
  }
  double time_us() {
    auto t0 = std::chrono::steady_clock::now();
    prim.execute(strm, args);
    strm.wait();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
};


// Why a conv's epilogue runs in emitted code after the call (docs/numerics.md
// "Contractions"): what oneDNN's post-ops cost inside the call, and whether
// its own bias gives the bits of the conv followed by the bias Add.
void post_op_table(const std::vector<Case>& cases, int rounds) {
  std::cout << "### oneDNN post-ops on each conv class (direct calls on nChw16c activations where the channels fill "
               "16-channel blocks, as fuseplan's conv chains run; median of "
            << rounds
            << " interleaved rounds of 5): µs and the increase over the call without post-ops; oneDNN's bias "
               "against the conv then the bias added\n\n"
            << "| case | impl | none µs | ReLU (eltwise_clip) | per-channel add + ReLU (binary_add) | oneDNN bias + "
               "ReLU | elements where oneDNN's bias differs |\n|---|---|---:|---:|---:|---:|---:|\n";
  for (const Case& c : cases) {
    if (!c.conv || c.chain) continue;
    Direct d[4] = {Direct(c, Post::none, true), Direct(c, Post::clip, true), Direct(c, Post::add_clip, true),
                   Direct(c, Post::bias_clip, true)};
    std::vector<double> t[4];
    for (int r = 0; r < rounds; ++r)
      for (int k = 0; k < 4; ++k) {
        std::vector<double> ts;
        for (int i = 0; i < 5; ++i) ts.push_back(d[k].time_us());
        t[k].push_back(median(ts));
      }
    // Bits: d[0] (no bias) with the bias added after, then clipped, against d[3].
    const std::vector<float> plain = d[0].output(), fused = d[3].output();
    const memory& bias = d[3].args.at(DNNL_ARG_BIAS);
    const float* b = static_cast<const float*>(bias.get_data_handle());
    const int64_t M = c.y[1], hw = c.y[2] * c.y[3];
    std::size_t differ = 0;
    for (std::size_t i = 0; i < plain.size(); ++i) {
      float v = plain[i] + b[(static_cast<int64_t>(i) / hw) % M];
      v = v > 0.f ? v : 0.f;
      differ += std::memcmp(&v, &fused[i], sizeof v) != 0;
    }
    const double base = median(t[0]);
    auto cell = [&](int k) {
      return fixed_text(median(t[k]), 0) + " (+" + fixed_text(100 * (median(t[k]) / base - 1), 0) + "%)";
    };
    std::string impls = d[0].impl;  // where a post-op changed the implementation, all four
    for (int k = 1; k < 4; ++k)
      if (d[k].impl != d[0].impl) impls = d[0].impl + " / " + d[1].impl + " / " + d[2].impl + " / " + d[3].impl;
    std::cout << "| " << c.name << " | " << impls << " | " << fixed_text(base, 0) << " | " << cell(1) << " | "
              << cell(2) << " | " << cell(3) << " | " << differ << " of " << plain.size() << " |\n"
              << std::flush;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, rounds = 9;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
  }
  const std::vector<Case> cases = {
      {"conv 1x1 64->256, 56x56", true, {1, 64, 56, 56}, {256, 64, 1, 1}, {1, 256, 56, 56}},
      {"conv 1x1 256->64, 56x56", true, {1, 256, 56, 56}, {64, 256, 1, 1}, {1, 64, 56, 56}},
      {"conv 3x3 64->64, 56x56", true, {1, 64, 56, 56}, {64, 64, 3, 3}, {1, 64, 56, 56}, 1, 1},
      {"conv 3x3/2 128->128, 56x56", true, {1, 128, 56, 56}, {128, 128, 3, 3}, {1, 128, 28, 28}, 2, 1},
      {"conv 7x7/2 3->64, 224x224 (stem)", true, {1, 3, 224, 224}, {64, 3, 7, 7}, {1, 64, 112, 112}, 2, 3},
      {"depthwise 3x3 144, 56x56", true, {1, 144, 56, 56}, {144, 1, 3, 3}, {1, 144, 56, 56}, 1, 1, 144},
      {"grouped 3x3 g32 128->128, 28x28", true, {1, 128, 28, 28}, {128, 4, 3, 3}, {1, 128, 28, 28}, 1, 1, 32},
      {"conv 3x3 64->64, 56x56, between 1x1 convs", true, {1, 64, 56, 56}, {64, 64, 3, 3}, {1, 64, 56, 56}, 1, 1, 1,
       true},
      {"depthwise 3x3 144, 56x56, between 1x1 convs", true, {1, 144, 56, 56}, {144, 1, 3, 3}, {1, 144, 56, 56}, 1, 1,
       144, true},
      {"grouped 3x3 g32 128->128, 28x28, between 1x1 convs", true, {1, 128, 28, 28}, {128, 4, 3, 3},
       {1, 128, 28, 28}, 1, 1, 32, true},
      {"GEMM square 512x512x512", false, {512, 512}, {512, 512}, {512, 512}},
      {"GEMM tall 4096x768x768", false, {4096, 768}, {768, 768}, {4096, 768}},
      {"GEMM skinny 1x2048x1000", false, {1, 2048}, {2048, 1000}, {1, 1000}},
      {"GEMM batched-A 8x128x768x3072", false, {8, 128, 768}, {768, 3072}, {8, 128, 3072}},
      // GPT-2 small / BERT-base at sequence 128: the fused QKV projection,
      // the FFN's up and down projections.
      {"GEMM QKV 128x768x2304", false, {128, 768}, {768, 2304}, {128, 2304}},
      {"GEMM FFN-up 128x768x3072", false, {128, 768}, {768, 3072}, {128, 3072}},
      {"GEMM FFN-down 128x3072x768", false, {128, 3072}, {3072, 768}, {128, 768}},
  };
  set_contraction_threads(threads);
  std::cout << "### Contractions: fuseplan (unfused plan of a one-op model) against a direct oneDNN call, "
            << onednn_version() << ", " << threads << " thread(s), median of " << rounds
            << " interleaved rounds; load average " << load_averages() << "\n\n"
            << "| case | oneDNN impl | direct µs | direct GFLOP/s | fuseplan µs | fuseplan GFLOP/s | fuseplan / direct "
               "throughput (median of per-round ratios) |\n|---|---|---:|---:|---:|---:|---:|\n";
  for (const Case& c : cases) {
    const fs::path p = fs::temp_directory_path() / "fuseplan_bench_contraction.onnxtxt";
    std::ofstream(p) << model_text(c);
    Graph g = import_model(p.string(), {});
    const Plan plan = search(g, load_device("host-cpu-reference"), "unfused");
    Direct d(c);
    for (int w = 0; w < 3; ++w) d.time_us();
    std::vector<double> tf, td, ratio;
    for (int r = 0; r < rounds; ++r) {
      RunOptions o;
      o.repeat = 5;
      o.threads = threads;
      o.verify = r == 0;
      const RunResult res = run_plan(g, plan, o);
      if (!res.ok) {
        std::cerr << c.name << ": verify failed\n";
        return 1;
      }
      std::vector<double> ds;
      for (int k = 0; k < 5; ++k) ds.push_back(d.time_us());
      double us = res.measured_us;
      if (c.chain)  // the middle conv's group alone
        for (const GroupTiming& gt : res.groups)
          if (gt.label == "y0") us = gt.measured_us;
      tf.push_back(us);
      td.push_back(median(ds));
      ratio.push_back(td.back() / tf.back());
    }
    const double f = flops(c), mf = median(tf), md = median(td);
    std::cout << "| " << c.name << " | " << d.impl << " | " << fixed_text(md, 1) << " | " << fixed_text(f / md * 1e-3, 1)
              << " | " << fixed_text(mf, 1) << " | " << fixed_text(f / mf * 1e-3, 1) << " | "
              << fixed_text(100 * median(ratio), 0) << "% |\n"
              << std::flush;
  }
  std::cout << "\nload average at end: " << load_averages() << "\n\n";
  post_op_table(cases, rounds);
  return 0;
}
