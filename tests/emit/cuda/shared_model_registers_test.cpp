// Every group of every strategy's plan (unfused, elementwise, tvm, xla,
// inductor, cost) of every shared model (batch 1, h200, sm_90) through NVRTC
// with registers reported, and the register/spill table of the largest
// groups of each model (results/cuda-registers.md).
// Opt-in (thousands of NVRTC compilations): FUSEPLAN_SLOW_TESTS=1 runs the
// check; FUSEPLAN_REGISTERS_TABLE=FILE.md also writes the table, rewritten
// after every model; FUSEPLAN_MODELS=SUBSTRING limits the models (several:
// comma-separated substrings); FUSEPLAN_STRATEGIES=a,b limits the strategies;
// FUSEPLAN_REGISTERS_ORACLE=1 also searches the cost plan again under
// --measure-registers semantics (NVRTC oracle; slow on transformers).
// Sources are canonical (a group formed alike by several strategies compiles
// once). Groups holding an opaque primitive (graph breaks) are skipped with
// cuda::kOpaqueNote; every other group compiles.
#ifdef FUSEPLAN_HAVE_CUDA
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>

#include "emit/cpu/cpp_printer.h"
#include "emit/cuda/cuda_backend.h"
#include "support/files.h"
#include "graph/import.h"
#include "search/strategy.h"
#include "tests/cuda_util.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {

std::string md_escape(std::string s) {
  s = cpu::comment_escape(s);
  for (auto& c : s)
    if (c == '|' || c == '`' || c == '\n') c = '/';
  return s;
}

std::string md_name(std::string s) {
  s = md_escape(std::move(s));
  if (s.size() > 48) s = s.substr(0, 45) + "...";
  return s;
}

std::string f0(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.0f", x);
  return b;
}

std::vector<std::string> split_env(const char* name, std::vector<std::string> dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string w; std::getline(ss, w, ',');)
    if (!w.empty()) out.push_back(w);
  return out;
}

TEST(SharedModelsNvrtc, EveryGroupOfEveryStrategysPlanCompilesAndRegistersTable) {
  const char* slow = std::getenv("FUSEPLAN_SLOW_TESTS");
  const char* table_path = std::getenv("FUSEPLAN_REGISTERS_TABLE");
  if (!(slow && *slow == '1') && !(table_path && *table_path))
    GTEST_SKIP() << "opt-in: FUSEPLAN_SLOW_TESTS=1 (or FUSEPLAN_REGISTERS_TABLE=FILE.md) compiles every group of "
                    "every strategy's plan of every shared model";
  if (!std::filesystem::exists(test::shared_models_dir())) GTEST_SKIP() << "no shared models";
  const bool with_table = table_path && *table_path;
  const DeviceSpec d = load_device("h200");
  const cuda::NvrtcOptions o = cuda::nvrtc_options(d);  // the user cache: reruns are fast
  const std::vector<std::string> strategies =
      split_env("FUSEPLAN_STRATEGIES", {"unfused", "elementwise", "tvm", "xla", "inductor", "cost"});
  const char* want_oracle = std::getenv("FUSEPLAN_REGISTERS_ORACLE");
  const bool oracle = want_oracle && std::string(want_oracle) == "1";
  std::ostringstream summary, detail;
  summary << "| model | strategy | kernels | groups compiled | NVRTC kernels | max regs NVRTC | groups spilling (NVRTC) "
             "| estimate > 255 | estimate / NVRTC (median) |"
          << (oracle ? " kernels with --measure-registers | NVRTC compiles in that search |" : "") << "\n"
          << "|---|---|---|---|---|---|---|---|---|" << (oracle ? "---|---|" : "") << "\n";
  std::vector<std::string> skipped;
  int compiled_models = 0;
  long total_groups = 0, total_kernels = 0, total_spilling = 0;
  int total_max_regs = 0, max_spill = 0;
  std::vector<std::string> spill_lines;
  std::string total_max_where;
  const auto t0 = std::chrono::steady_clock::now();
  auto write_table = [&] {
    const double mins = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 60;
    std::ostringstream os;
    os << "# NVRTC registers and spills of the shared models' plans, every strategy\n\n"
       << "Device config h200 (sm_90, 255 registers/thread, 256-thread blocks), batch 1, NVRTC "
       << cuda::nvrtc_version() << " with `-fmad=false --ptxas-options=-v`, emitted kernels (no library calls); no "
       << "GPU involved. Strategies: ";
    for (std::size_t i = 0; i < strategies.size(); ++i) os << (i ? ", " : "") << "`" << strategies[i] << "`";
    os << ". Regenerate with\n"
       << "`FUSEPLAN_REGISTERS_TABLE=$PWD/results/cuda-registers.md build-cuda/tests/test_emit "
          "--gtest_filter=SharedModelsNvrtc.*` (tests/emit/cuda/shared_model_registers_test.cpp; knobs in its header).\n\n"
       << "**Totals so far: " << compiled_models << " models, " << total_groups << " groups compiled ("
       << total_kernels << " NVRTC kernels), max " << total_max_regs << " registers (" << md_escape(total_max_where)
       << "), " << total_spilling << " groups spilling**; " << f0(mins) << " min on this machine.\n\n"
       << "\"regs est.\" is the cost model's estimate (costmodel/registers.cpp), \"regs NVRTC\" the most any of the "
          "group's kernels uses; spill est. is the estimated spill traffic of the whole kernel, spill NVRTC the "
          "ptxas per-thread spill stores + loads summed over the group's kernels, compiled as `--library none` "
          "emits them. The last column says what the default library route (emit/cuda/lowering.h, "
          "`cublaslt+cudnn`) runs for the group instead.\n\n"
       << "## Per model and strategy\n\n"
       << summary.str() << "\n## Largest groups of each model (by primitives, over every strategy's plan)\n\n"
       << detail.str();
    if (!spill_lines.empty()) {
      os << "## Groups with ptxas spill bytes\n\n";
      for (const auto& l : spill_lines) os << "- " << md_escape(l) << "\n";
      os << "\n";
    }
    if (!skipped.empty()) {
      os << "## Not compiled\n\n";
      for (const auto& s : skipped) os << "- " << md_escape(s) << "\n";
    }
    write_file_atomic(table_path, os.str());
  };
  const char* only = std::getenv("FUSEPLAN_MODELS");  // optional substring filter
  const cuda::LibraryOptions lib;  // the default, for the last column
  for (const std::string& file : test::shared_model_files()) {
    if (only && *only) {
      bool match = false;
      std::stringstream ss(only);
      for (std::string w; std::getline(ss, w, ',');) match = match || (!w.empty() && file.find(w) != std::string::npos);
      if (!match) continue;
    }
    Graph g;
    try {
      g = test::import_shared_model(file, 1);
    } catch (const std::exception& e) {
      skipped.push_back(file + ": import: " + e.what());
      continue;
    }
    SCOPED_TRACE(file);
    struct Big {
      std::string strategy;
      std::size_t prims = 0;
      double bytes = 0;
      cuda::GroupResources r;
      std::string library;
    };
    std::vector<Big> bigs;
    bool model_ok = true;
    int model_max = 0;
    for (const std::string& strategy : strategies) {
      SearchOptions so;
      so.time_limit_s = 10;
      Plan plan = search(g, d, strategy, so);
      std::vector<cuda::GroupResources> t;
      try {
        // Every group's emitted kernels (GEMM/conv included), as --library none.
        t = cuda::measure_plan(g, plan, d, o, nullptr, nullptr, /*canonical=*/true, cuda::LibraryOptions::none());
      } catch (const Error& e) {
        // A primitive the CUDA backend does not emit yet (docs/cuda.md): named, not hidden.
        skipped.push_back(file + " " + strategy + ": " + std::string(e.what()).substr(0, 200));
        model_ok = false;
        continue;
      }
      ASSERT_EQ(t.size(), plan.groups.size());
      int max_regs = 0, spilling = 0, over = 0, opaque = 0, kernels = 0;
      std::vector<double> ratio;
      for (const auto& r : t) {
        if (r.skipped()) {  // a graph break: cuda::kOpaqueNote, nothing compiled
          ++opaque;
          EXPECT_TRUE(r.launches.empty()) << r.group_id;
          continue;
        }
        ASSERT_FALSE(r.measured.empty()) << file << " " << strategy << " group " << r.group_id;
        for (const auto& k : r.measured) EXPECT_GT(k.regs_per_thread, 0) << k.kernel;
        kernels += static_cast<int>(r.measured.size());
        max_regs = std::max(max_regs, r.regs_measured());
        if (r.regs_measured() > total_max_regs) {
          total_max_regs = r.regs_measured();
          total_max_where = file + " " + strategy + " group " + std::to_string(r.group_id) + " (" + r.kind + ")";
        }
        spilling += r.spill_bytes_measured() > 0;
        max_spill = std::max(max_spill, r.spill_bytes_measured());
        if (r.spill_bytes_measured() > 0) {  // named in the table with the ops it holds
          std::set<std::string> ops;
          for (NodeId n : plan.groups[r.group_id].nodes) ops.insert(g.node(n).op);
          std::string line = file + " " + strategy + " group " + std::to_string(r.group_id) + " (" + r.kind + ", " +
                             std::to_string(plan.groups[r.group_id].nodes.size()) + " primitives): " +
                             std::to_string(r.regs_measured()) + " registers, " +
                             std::to_string(r.spill_bytes_measured()) + " B spill, ops:";
          for (const auto& op : ops) line += " " + op;
          spill_lines.push_back(line);
        }
        over += r.regs_estimate > d.gpu->max_regs_per_thread;
        if (r.regs_measured() > 0) ratio.push_back(static_cast<double>(r.regs_estimate) / r.regs_measured());
        Big b;
        b.strategy = strategy;
        b.prims = plan.groups[r.group_id].nodes.size();
        b.bytes = plan.costs[r.group_id].bytes();
        b.r = r;
        auto lw = cuda::lower_group(g, plan.groups[r.group_id], lib);
        b.library = lw.library() ? lw.why : "-";
        bigs.push_back(std::move(b));
      }
      model_max = std::max(model_max, max_regs);
      total_groups += static_cast<long>(t.size()) - opaque;
      total_kernels += kernels;
      total_spilling += spilling;
      std::sort(ratio.begin(), ratio.end());
      char rat[32];
      std::snprintf(rat, sizeof rat, "%.2f", ratio.empty() ? 0.0 : ratio[ratio.size() / 2]);
      const std::string compiled = std::to_string(t.size() - opaque) +
                                   (opaque ? " (+" + std::to_string(opaque) + " opaque, skipped)" : "");
      summary << "| " << file << " | " << strategy << " | " << plan.totals.kernels << " | " << compiled << " | "
              << kernels << " | " << max_regs << " | " << spilling << " | " << over << " | " << rat << " |";
      if (oracle) {
        if (strategy == "cost") {
          SearchOptions mo;
          auto stats = std::make_shared<cuda::OracleStats>();
          mo.resource_oracle = cuda::nvrtc_resource_oracle(o, stats);
          Plan measured = search(g, d, "cost", mo);
          summary << " " << measured.totals.kernels << " | " << stats->compiled + stats->cache_hits
                  << (stats->failed ? " (" + std::to_string(stats->failed) + " failed)" : "") << " |";
        } else {
          summary << " - | - |";
        }
      }
      summary << "\n";
    }
    if (model_ok) ++compiled_models;
    if (!with_table) continue;
    // The eight largest distinct groups (primitives; ties: more bytes) over every strategy's plan.
    std::stable_sort(bigs.begin(), bigs.end(), [](const Big& a, const Big& b) {
      if (a.prims != b.prims) return a.prims > b.prims;
      return a.bytes > b.bytes;
    });
    detail << "### " << file << "\n\n| strategy | group | kind | prims | last primitive | launches (shape) | regs est. "
              "| regs NVRTC | spill est. (B) | spill NVRTC (B/thread) | stack (B) | smem (B) | library mode |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    std::set<std::string> seen;  // one row per distinct group (several strategies form the same one)
    int rows = 0;
    for (const Big& b : bigs) {
      if (rows == 8) break;
      const auto& r = b.r;
      std::string key = r.kind + "|" + r.last_primitive + "|" + std::to_string(b.prims);
      if (!seen.insert(key).second) continue;
      ++rows;
      int stack = 0, smem = 0;
      std::string shapes;
      for (std::size_t q = 0; q < r.measured.size(); ++q) {
        stack = std::max(stack, r.measured[q].stack_frame_bytes);
        smem = std::max(smem, r.measured[q].smem_bytes);
        if (q < 3) shapes += (q ? ", " : "") + r.launches[q].shape;
        else if (q == 3) shapes += ", ...";
      }
      detail << "| " << b.strategy << " | " << r.group_id << " | " << r.kind << " | " << b.prims << " | `"
             << md_name(r.last_primitive) << "` | " << r.launches.size() << " (" << shapes << ") | "
             << r.regs_estimate << " | " << r.regs_measured() << " | " << f0(r.spill_estimate_bytes) << " | "
             << r.spill_bytes_measured() << " | " << stack << " | " << smem << " | " << md_escape(b.library)
             << " |\n";
    }
    detail << "\n";
    write_table();  // after every model: an interrupted run keeps what it compiled
    std::printf("%s: max regs %d (%ld groups so far)\n", file.c_str(), model_max, total_groups);
    std::fflush(stdout);
  }
  EXPECT_GE(compiled_models, 1);
  // Measured over all 25 models x 6 strategies (results/cuda-registers.md):
  // the emitted kernels use at most 80 registers; the few groups ptxas
  // spills in (t5-encoder) spill 24 B/thread at 32 registers, not from
  // register pressure. Regressions beyond that fail here.
  EXPECT_LE(total_max_regs, 128);
  EXPECT_LE(max_spill, 64);
  if (with_table) write_table();
}

}  // namespace
}  // namespace fuseplan
#endif
