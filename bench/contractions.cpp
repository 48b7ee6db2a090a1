// Each contraction class through fuseplan against a direct oneDNN call of the
// same shape, interleaved in one run, printed as a markdown table.
//  fuseplan: the unfused plan of a one-op model run by exec/cpu_run.h (the
//            emitted kernel calling exec/onednn.h: primitive lookup, the
//            activation reorders around blocked convolutions, the call);
//  oneDNN:   the same primitive descriptor created directly, executed on
//            tensors already in its preferred layouts (no reorders), the
//            best case a library user gets.
// Usage: bench_contractions [--threads N] [--rounds K]
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
};

std::string dims(const memory::dims& d) {
  std::string s;
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s;
}

std::string model_text(const Case& c) {
  std::string t = "<ir_version: 8, opset_import: [\"\" : 17]>\nm (float[" + dims(c.x) + "] x, float[" + dims(c.w) +
                  "] w) => (float[" + dims(c.y) + "] y) {\n";
  if (c.conv) {
    const std::string k = std::to_string(c.w[2]), p = std::to_string(c.pad), s = std::to_string(c.stride);
    t += "  y = Conv <kernel_shape = [" + k + ", " + k + "], pads = [" + p + ", " + p + ", " + p + ", " + p +
         "], strides = [" + s + ", " + s + "], group = " + std::to_string(c.group) + "> (x, w)\n";
  } else {
    t += "  y = MatMul(x, w)\n";
  }
  return t + "}\n";
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
struct Direct {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  std::string impl;
  explicit Direct(const Case& c) {
    auto any = [](const memory::dims& d) { return memory::desc(d, memory::data_type::f32, memory::format_tag::any); };
    if (c.conv) {
      memory::dims wd = c.w;
      if (c.group > 1) wd = {c.group, c.w[0] / c.group, c.w[1], c.w[2], c.w[3]};
      dnnl::convolution_forward::primitive_desc pd(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          any(c.x), any(wd), any(c.y), {c.stride, c.stride}, {0, 0}, {c.pad, c.pad},
                                          {c.pad, c.pad}),
          eng);
      prim = dnnl::convolution_forward(pd);
      args = {{DNNL_ARG_SRC, memory(pd.src_desc(), eng)},
              {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), eng)},
              {DNNL_ARG_DST, memory(pd.dst_desc(), eng)}};
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
    for (auto& [k, m] : args) {
      float* p = static_cast<float*>(m.get_data_handle());
      std::fill(p, p + m.get_desc().get_size() / sizeof(float), 0.25f);
    }
  }
  double time_us() {
    auto t0 = std::chrono::steady_clock::now();
    prim.execute(strm, args);
    strm.wait();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
};


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
      tf.push_back(res.measured_us);
      td.push_back(median(ds));
      ratio.push_back(td.back() / tf.back());
    }
    const double f = flops(c), mf = median(tf), md = median(td);
    std::cout << "| " << c.name << " | " << d.impl << " | " << fixed_text(md, 1) << " | " << fixed_text(f / md * 1e-3, 1)
              << " | " << fixed_text(mf, 1) << " | " << fixed_text(f / mf * 1e-3, 1) << " | "
              << fixed_text(100 * median(ratio), 0) << "% |\n"
              << std::flush;
  }
  std::cout << "\nload average at end: " << load_averages() << "\n";
  return 0;
}
