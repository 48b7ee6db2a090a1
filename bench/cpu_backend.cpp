// CPU backend benchmarks, printed as markdown tables:
//  (a) float32 bias+relu at N*C = 2^24: fused vs unfused kernels measured in
//      one run, with a STREAM-style triad (probe/probe.h) in the same run;
//  (b) shared models at the given batches: measured time per strategy
//      (median over --repeat rounds of the whole plan's time; each round runs
//      every strategy once, so load changes hit all strategies alike) and the
//      speedup of `cost` over each;
//  (c) contraction epilogue in the contraction call vs as loop stages (conv+bias+
//      relu, matmul+bias+gelu), interleaved in one run.
// Usage: bench_cpu_backend [--part a|b|c] [--models F1,F2] [--batches 1,8]
//                          [--repeat K] [--threads N]
// Not a Google Benchmark fixture: run_plan times each kernel itself (median of
// K), and table (b) runs one model per process so a caller can bound it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "costmodel/device.h"
#include "emit/cpu/cpp_printer.h"
#include "graph/import.h"
#include "exec/cpu_run.h"
#include "probe/probe.h"
#include "search/strategy.h"
#include "support/format.h"
#include "support/stats.h"
#include "../tests/shared_models.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;

struct Args {
  std::string part = "ab";
  std::vector<std::string> models;  // empty = every shared model
  std::vector<int64_t> batches = {1, 8};
  int repeat = 5;
  int threads = 0;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}


std::string fmt(double v, int prec) { return fixed_text(v, prec); }

int threads_used(const Args& a) {
  if (a.threads > 0) return a.threads;
  if (const char* e = std::getenv("OMP_NUM_THREADS")) return std::max(1, std::atoi(e));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// ------------------------------------------------------------------ (a)
void part_a(const Args& a) {
  constexpr int64_t N = 16384, C = 1024;  // N*C = 2^24
  fs::path p = fs::temp_directory_path() / "fuseplan_bench_bias_relu.onnxtxt";
  {
    std::ofstream f(p);
    f << "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      << "bias_relu (float[" << N << ", " << C << "] x, float[" << C << "] b) => (float[" << N << ", " << C
      << "] y) {\n  t = Add(x, b)\n  y = Relu(t)\n}\n";
  }
  Graph g = import_model(p.string(), {});
  const DeviceSpec dev = load_device("host-cpu-reference");
  Plan unfused = search(g, dev, "unfused"), fused = search(g, dev, "elementwise");
  const int nt = threads_used(a);
  const double mib = 1024.0 * 1024.0, tensor = 4.0 * N * C;
  // Interleaved rounds: unfused, fused and the triad run back to back in
  // every round, so a change in the other jobs' load hits all three; the
  // ratios are taken per round (same load), then the median over rounds.
  const int rounds = std::max(a.repeat, 11);
  std::vector<double> tu, tf, tri, speed, frac;
  bool ok_u = true, ok_f = true;
  std::size_t ku = 0, kf = 0;
  for (int r = 0; r <= rounds; ++r) {
    RunOptions o;
    o.repeat = 1;
    o.warmup = 1;
    o.threads = a.threads;
    o.verify = r == 0;
    RunResult ru = run_plan(g, unfused, o), rf = run_plan(g, fused, o);
    double triad = stream_triad_GBps(static_cast<std::size_t>(3 * tensor), nt, 3);
    ok_u = ok_u && ru.ok;
    ok_f = ok_f && rf.ok;
    ku = ru.groups.size();
    kf = rf.groups.size();
    if (r == 0) continue;  // compile, verify, page faults
    tu.push_back(ru.measured_us);
    tf.push_back(rf.measured_us);
    tri.push_back(triad);
    speed.push_back(ru.measured_us / rf.measured_us);
    frac.push_back(2 * tensor / (rf.measured_us * 1e-6) / 1e9 / triad);
  }
  auto gbps = [&](double bytes, double us) { return bytes / (us * 1e-6) / 1e9; };
  double mu = median(tu), mf = median(tf);
  double bu = *std::min_element(tu.begin(), tu.end()), bf = *std::min_element(tf.begin(), tf.end());
  double mt = median(tri), bt = *std::max_element(tri.begin(), tri.end());
  std::cout << "### (a) bias+relu, float32 [" << N << ", " << C << "] (N*C = 2^24, " << fmt(tensor / mib, 0)
            << " MiB per tensor), " << nt << " threads, " << rounds << " interleaved rounds; load average "
            << load_averages() << "\n\n"
            << "| variant | kernels | median ms | best ms | bytes counted (MiB) | GB/s at median | GB/s at best | verify |\n"
            << "|---|---|---|---|---|---|---|---|\n"
            << "| unfused (Add; Relu) | " << ku << " | " << fmt(mu / 1e3, 2) << " | " << fmt(bu / 1e3, 2) << " | "
            << fmt(4 * tensor / mib, 0) << " | " << fmt(gbps(4 * tensor, mu), 1) << " | " << fmt(gbps(4 * tensor, bu), 1)
            << " | " << (ok_u ? "bit-identical" : "MISMATCH") << " |\n"
            << "| fused (Add+Relu) | " << kf << " | " << fmt(mf / 1e3, 2) << " | " << fmt(bf / 1e3, 2) << " | "
            << fmt(2 * tensor / mib, 0) << " | " << fmt(gbps(2 * tensor, mf), 1) << " | " << fmt(gbps(2 * tensor, bf), 1)
            << " | " << (ok_f ? "bit-identical" : "MISMATCH") << " |\n"
            << "| STREAM triad (probe: 3 x 64 MiB, best of 3 samples per round) | | | | 192 | " << fmt(mt, 1) << " | "
            << fmt(bt, 1) << " | |\n\n"
            << "fused speedup, median of per-round ratios: **" << fmt(median(speed), 2)
            << "x** (target >= 1.6x; ratio of medians " << fmt(mu / mf, 2) << "x, of bests " << fmt(bu / bf, 2)
            << "x)\n\nfused kernel bandwidth / triad bandwidth, median of per-round ratios: **"
            << fmt(100 * median(frac), 0) << "%** (target >= 70%; best fused vs best triad: "
            << fmt(100 * gbps(2 * tensor, bf) / bt, 0) << "%). Bytes counted as STREAM does: 2 tensors fused, 4 unfused, "
            << "3 arrays triad (write-allocate traffic not counted on either side).\n\n";
}

// ------------------------------------------------------------------ (c)
void part_c(const Args& a) {
  struct Case {
    std::string name, text, strategy;
  };
  std::vector<Case> cases = {
      {"conv 3x3 64->64 + bias + relu, [8,64,56,56]",
       "<ir_version: 8, opset_import: [\"\" : 17]>\n"
       "cbr (float[8, 64, 56, 56] x, float[64, 64, 3, 3] w, float[64] b) => (float[8, 64, 56, 56] y) {\n"
       "  c = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, w, b)\n  y = Relu(c)\n}\n",
       "tvm"},
      {"conv 1x1 32->32 + bias + relu, [8,32,112,112] (memory-bound)",
       "<ir_version: 8, opset_import: [\"\" : 17]>\n"
       "cbr1 (float[8, 32, 112, 112] x, float[32, 32, 1, 1] w, float[32] b) => (float[8, 32, 112, 112] y) {\n"
       "  c = Conv <kernel_shape = [1, 1]> (x, w, b)\n  y = Relu(c)\n}\n",
       "tvm"},
      {"matmul [2048,768]x[768,3072] + bias + gelu",
       "<ir_version: 8, opset_import: [\"\" : 20]>\n"
       "mbg (float[2048, 768] x, float[768, 3072] w, float[3072] b) => (float[2048, 3072] y) {\n"
       "  m = MatMul(x, w)\n  t = Add(m, b)\n  y = Gelu(t)\n}\n",
       "tvm"},
  };
  const DeviceSpec dev = load_device("host-cpu-reference");
  const int nt = threads_used(a);
  std::cout << "### (c) contraction epilogue in the call vs as loop stages, " << nt
            << " threads, median of " << std::max(a.repeat, 7) << " interleaved rounds; load average "
            << load_averages() << "\n\n"
            << "| case | groups | loop stages, median ms | in the call, median ms | speedup: median of per-round ratios "
               "(ratio of medians) | verify |\n|---|---|---|---|---|---|\n";
  for (const Case& c : cases) {
    fs::path p = fs::temp_directory_path() / "fuseplan_bench_epilogue.onnxtxt";
    {
      std::ofstream f(p);
      f << c.text;
    }
    Graph g = import_model(p.string(), {});
    Plan plan = search(g, dev, c.strategy);
    std::vector<double> t[2], ratio;
    bool ok = true;
    int rounds = std::max(a.repeat, 7);
    for (int round = 0; round <= rounds; ++round)
      for (int tile = 0; tile < 2; ++tile) {
        cpu::set_tile_epilogue(tile == 1);
        RunOptions o;
        o.repeat = 1;
        o.threads = a.threads;
        o.verify = round == 0;
        RunResult r = run_plan(g, plan, o);
        ok = ok && r.ok;
        if (round > 0) t[tile].push_back(r.measured_us / 1e3);
        if (round > 0 && tile == 1) ratio.push_back(t[0].back() / t[1].back());
      }
    cpu::set_tile_epilogue(true);
    double before = median(t[0]), after = median(t[1]);
    std::cout << "| " << c.name << " | " << plan.groups.size() << " | " << fmt(before, 2) << " | " << fmt(after, 2)
              << " | " << fmt(median(ratio), 2) << "x (" << fmt(before / after, 2) << "x) | "
              << (ok ? "bit-identical" : "MISMATCH") << " |\n"
              << std::flush;
  }
  std::cout << "\nload average at end: " << load_averages() << "\n\n";
}

// ------------------------------------------------------------------ (b)
const std::vector<std::string> kTableStrategies = {"unfused", "elementwise", "tvm", "xla", "inductor", "cost"};

std::string first_opaque(const Graph& g) {
  for (NodeId n = 0; n < g.size(); ++n)
    if (g.node(n).op_class == OpClass::opaque) return g.node(n).op;
  return "";
}

void part_b(const Args& a) {
  std::vector<std::string> registered = strategy_names(), strategies;
  for (const auto& s : kTableStrategies)
    if (std::find(registered.begin(), registered.end(), s) != registered.end()) strategies.push_back(s);
  const DeviceSpec dev = load_device("host-cpu-reference");
  std::vector<std::string> models = a.models.empty() ? test::shared_model_files() : a.models;
  for (const auto& file : models) {
    for (int64_t batch : a.batches) {
      auto t0 = std::chrono::steady_clock::now();
      ImportOptions io;
      io.batch = batch;
      io.dims = test::model_dims(file);
      std::string row = "| " + file + " | " + std::to_string(batch) + " |";
      try {
        Graph g = import_model((fs::path(test::shared_models_dir()) / file).string(), io);
        std::string opaque = first_opaque(g);
        if (!opaque.empty()) {
          std::cout << row << " skipped: opaque primitive " << opaque << " |\n" << std::flush;
          break;
        }
        std::vector<Plan> plans;
        for (const auto& s : strategies) {
          SearchOptions so;
          so.time_limit_s = 10;
          plans.push_back(search(g, dev, s, so));
        }
        // Round 0 compiles (cached) and warms up; then every round runs each
        // strategy once, in turn, so load changes hit all strategies alike.
        std::vector<std::vector<double>> samples(strategies.size());
        for (int round = 0; round <= a.repeat; ++round)
          for (std::size_t i = 0; i < strategies.size(); ++i) {
            RunOptions o;
            o.repeat = 1;
            o.warmup = 1;
            o.threads = a.threads;
            RunResult r = run_plan(g, plans[i], o);
            if (round > 0) samples[i].push_back(r.measured_us / 1e3);
            else
              std::cerr << file << " b" << batch << " " << strategies[i] << ": "
                        << (r.cache_hit ? "cached" : "compiled in " + fmt(r.compile_ms / 1e3, 1) + " s") << "\n";
          }
        std::vector<double> ms;
        for (std::size_t i = 0; i < strategies.size(); ++i) {
          ms.push_back(median(samples[i]));
          row += " " + fmt(ms.back(), 2) + " (" + std::to_string(plans[i].groups.size()) + ") |";
          std::cerr << file << " b" << batch << " " << strategies[i] << ": " << fmt(ms.back(), 2) << " ms\n";
        }
        double cost = ms.back();
        for (std::size_t i = 0; i + 1 < ms.size(); ++i) row += " " + fmt(ms[i] / cost, 2) + "x |";
      } catch (const std::exception& e) {
        row += " error: " + std::string(e.what()).substr(0, 160) + " |";
      }
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cout << row << " " << fmt(el, 0) << " | " << load_averages() << " |\n" << std::flush;
    }
  }
}

void header_b(const Args& a) {
  std::vector<std::string> registered = strategy_names();
  std::string h = "| model | batch |", sep = "|---|---|";
  std::vector<std::string> strategies;
  for (const auto& s : kTableStrategies)
    if (std::find(registered.begin(), registered.end(), s) != registered.end()) strategies.push_back(s);
  for (const auto& s : strategies) h += " " + s + " ms (kernels) |", sep += "---|";
  for (std::size_t i = 0; i + 1 < strategies.size(); ++i) h += " cost vs " + strategies[i] + " |", sep += "---|";
  std::cout << "### (b) shared models, time per strategy (median of " << a.repeat
            << " interleaved rounds), " << threads_used(a) << " threads\n\n"
            << h << " wall s | load avg at end |\n" << sep << "---|---|\n";
}

}  // namespace
}  // namespace fuseplan

int main(int argc, char** argv) {
  using namespace fuseplan;
  Args a;
  bool header_only = false, no_header = false;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::cerr << k << " needs a value\n"; std::exit(2); }
      return argv[++i];
    };
    if (k == "--part") a.part = next();
    else if (k == "--models") a.models = split(next());
    else if (k == "--batches") { a.batches.clear(); for (auto& b : split(next())) a.batches.push_back(std::stoll(b)); }
    else if (k == "--repeat") a.repeat = std::stoi(next());
    else if (k == "--threads") a.threads = std::stoi(next());
    else if (k == "--header-only") header_only = true;
    else if (k == "--no-header") no_header = true;
    else { std::cerr << "unknown option " << k << "\n"; return 2; }
  }
  set_passive_wait_policy();
  try {
    if (a.part.find('a') != std::string::npos) part_a(a);
    if (a.part.find('c') != std::string::npos) part_c(a);
    if (a.part.find('b') != std::string::npos) {
      if (!no_header) header_b(a);
      if (!header_only) part_b(a);
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
