// CPU backend benchmarks, printed as the markdown tables of
// results/cpu-backend.md:
//  (a) float32 bias+relu at N*C = 2^24: fused vs unfused kernels measured in
//      one run, with a STREAM-style triad (profiling/probe.h) in the same run;
//  (b) shared models at the given batches: measured time per strategy
//      (sum of per-kernel medians of --repeat runs) and the speedup of `cost`
//      over each.
// Usage: bench_cpu_backend [--part a|b] [--models F1,F2] [--batches 1,8]
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
#include "graph/import.h"
#include "profiling/cpu_run.h"
#include "profiling/probe.h"
#include "search/strategy.h"
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

std::string fmt(double v, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

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
  const DeviceSpec dev = load_device("host-cpu");
  Plan unfused = search(g, dev, "unfused"), fused = search(g, dev, "elementwise");
  RunOptions o;
  o.repeat = std::max(a.repeat, 11);
  o.warmup = 2;
  o.threads = a.threads;
  o.verify = true;
  const int nt = threads_used(a);
  const double mib = 1024.0 * 1024.0, tensor = 4.0 * N * C;
  double triad0 = stream_triad_GBps(static_cast<std::size_t>(3 * tensor), nt);
  RunResult ru = run_plan(g, unfused, o), rf = run_plan(g, fused, o);
  double triad1 = stream_triad_GBps(static_cast<std::size_t>(3 * tensor), nt);
  double triad = std::max(triad0, triad1);
  double tu = ru.measured_us, tf = rf.measured_us;
  double fused_GBps = 2 * tensor / (tf * 1e-6) / 1e9, unfused_GBps = 4 * tensor / (tu * 1e-6) / 1e9;
  std::cout << "### (a) bias+relu, float32 [" << N << ", " << C << "] (N*C = 2^24, " << fmt(tensor / mib, 0)
            << " MiB per tensor), " << nt << " threads, median of " << o.repeat << "\n\n"
            << "| variant | kernels | time (ms) | bytes moved (MiB) | bandwidth (GB/s) | verify |\n"
            << "|---|---|---|---|---|---|\n"
            << "| unfused (Add; Relu) | " << ru.groups.size() << " | " << fmt(tu / 1e3, 2) << " | "
            << fmt(4 * tensor / mib, 0) << " | " << fmt(unfused_GBps, 1) << " | " << (ru.ok ? "bit-identical" : "MISMATCH")
            << " |\n"
            << "| fused (Add+Relu) | " << rf.groups.size() << " | " << fmt(tf / 1e3, 2) << " | "
            << fmt(2 * tensor / mib, 0) << " | " << fmt(fused_GBps, 1) << " | " << (rf.ok ? "bit-identical" : "MISMATCH")
            << " |\n"
            << "| STREAM triad (probe, best of before/after: " << fmt(triad0, 1) << ", " << fmt(triad1, 1)
            << ") | | | | " << fmt(triad, 1) << " | |\n\n"
            << "fused speedup: **" << fmt(tu / tf, 2) << "x** (target >= 1.6x); fused kernel bandwidth: **"
            << fmt(100 * fused_GBps / triad, 0) << "% of triad** (target >= 70%)\n\n";
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
  const DeviceSpec dev = load_device("host-cpu");
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
        std::vector<double> ms;
        for (const auto& s : strategies) {
          SearchOptions so;
          so.time_limit_s = 10;
          Plan plan = search(g, dev, s, so);
          RunOptions o;
          o.repeat = a.repeat;
          o.threads = a.threads;
          RunResult r = run_plan(g, plan, o);
          ms.push_back(r.measured_us / 1e3);
          row += " " + fmt(ms.back(), 2) + " (" + std::to_string(plan.groups.size()) + ") |";
          std::cerr << file << " b" << batch << " " << s << ": " << fmt(ms.back(), 2) << " ms\n";
        }
        double cost = ms.back();
        for (std::size_t i = 0; i + 1 < ms.size(); ++i) row += " " + fmt(ms[i] / cost, 2) + "x |";
      } catch (const std::exception& e) {
        row += " error: " + std::string(e.what()).substr(0, 160) + " |";
      }
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cout << row << " " << fmt(el, 0) << " |\n" << std::flush;
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
  std::cout << "### (b) shared models, time per strategy (sum of per-kernel medians of " << a.repeat << " runs), "
            << threads_used(a) << " threads\n\n"
            << h << " wall s |\n" << sep << "---|\n";
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
