// The GPU run's timing step (tests/gpu/run.sh): the device-to-device copy
// bandwidth ceiling, then every shared model at batch 1 and 64, every
// strategy's plan run on the GPU (CUDA events, median of 20 after 2
// warm-ups), outputs compared bit for bit with the unfused plan, each fused
// memory-bound kernel's achieved bandwidth against the copy ceiling, and
// whether `cost` is the fastest strategy. Writes Markdown to
// $FUSEPLAN_GPU_RESULTS after every model (a timeout keeps what was done).
// Skips with one line without a GPU or without FUSEPLAN_GPU_RESULTS.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "support/files.h"
#include "graph/import.h"
#include "exec/cuda_run.h"
#include "exec/tensor_data.h"
#include "search/strategy.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {

std::string env(const char* k, const std::string& dflt = "") {
  const char* v = std::getenv(k);
  return v && *v ? v : dflt;
}

std::string f1(double x, int dec = 1) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", dec, x);
  return b;
}

// The device config of the GPU present (FUSEPLAN_GPU_DEVICE overrides).
std::string device_config(const std::string& gpu_name) {
  std::string e = env("FUSEPLAN_GPU_DEVICE");
  if (!e.empty()) return e;
  for (auto [needle, cfg] : {std::pair{"H200", "h200"}, {"H100", "h100-sxm"}, {"A100", "a100-80gb"}, {"L4", "l4"},
                             {"4090", "rtx4090"}, {"V100", "v100"}})
    if (gpu_name.find(needle) != std::string::npos) return cfg;
  return "h100-sxm";
}

struct Row {
  std::string strategy, mode = "emitted", note;
  int64_t kernels = 0, launches = 0;
  double us = -1, rel_err = -1;
  bool identical = true;
};

struct BwRow {
  std::string where;  // model b<batch> strategy g<id>
  std::string kind;
  double bytes = 0, us = 0, gbps = 0, frac = 0;
};

struct Doc {
  std::string device, gpu;
  double copy_gbps = 0;
  std::vector<std::string> sections;  // per model x batch
  std::vector<BwRow> bw;
  int cost_fastest = 0, cost_compared = 0;
  std::vector<std::string> cost_not_fastest;
  std::vector<std::string> skipped;

  std::string render() const {
    std::ostringstream os;
    os << "# GPU results: " << gpu << " (device config " << device << ")\n\n";
    os << "Written by tests/gpu/run.sh (test_gpu GpuBench). Times: CUDA events, median of 20 after 2 warm-ups (5 after 1 for "
          "plans above 0.5 TFLOP), one stream, no CUDA graph. NVRTC -fmad=false. Mode `cublaslt+cudnn` (the default, "
          "emit/cuda/lowering.h) runs contraction groups as cuBLASLt GEMM / cuDNN conv + emitted prologue/epilogue "
          "kernels (shapes the libraries refuse: the emitted fallback); mode `emitted` (--library none) runs the "
          "canonical per-element GEMM/conv kernels (docs/cuda.md), not tensor-core tiles; `...+fused-epilogue` also "
          "uses cuBLASLt's BIAS/RELU/GELU epilogues.\n\n";
    os << "## Bandwidth ceiling\n\ncuMemcpyDtoD of 1 GiB: **" << f1(copy_gbps) << " GB/s** (read + write).\n\n";
    int pass = 0;
    for (const auto& b : bw) pass += b.frac >= 0.85;
    os << "## Targets\n\n";
    os << "- fused memory-bound kernels (>= 2 primitives, predicted memory-bound, >= 64 MiB moved, so launch and event overhead stay small) at >= 85% of the "
          "copy bandwidth: **"
       << pass << " of " << bw.size() << "**\n";
    os << "- `cost` fastest strategy (within 3% of the best median): **" << cost_fastest << " of " << cost_compared
       << "** model x batch runs";
    if (!cost_not_fastest.empty()) {
      os << "; not fastest:";
      for (const auto& s : cost_not_fastest) os << " " << s << ";";
    }
    os << "\n\n";
    if (!bw.empty()) {
      std::vector<BwRow> sorted = bw;
      std::sort(sorted.begin(), sorted.end(), [](const BwRow& a, const BwRow& b) { return a.frac > b.frac; });
      os << "## Fused memory-bound kernels vs copy bandwidth\n\n| kernel | kind | MB moved | us | GB/s | of copy |\n"
            "|---|---|---|---|---|---|\n";
      const std::size_t n = sorted.size();
      for (std::size_t i = 0; i < n; ++i) {
        if (n > 60 && i == 30) os << "| ... " << n - 60 << " more ... | | | | | |\n";
        if (n > 60 && i >= 30 && i < n - 30) continue;
        const auto& b = sorted[i];
        os << "| " << b.where << " | " << b.kind << " | " << f1(b.bytes / 1e6) << " | " << f1(b.us, 2) << " | "
           << f1(b.gbps) << " | " << f1(100 * b.frac) << "% |\n";
      }
      os << "\n";
    }
    os << "## Plans per model, strategy and batch\n\n";
    for (const auto& s : sections) os << s << "\n";
    if (!skipped.empty()) {
      os << "## Not timed\n\n";
      for (const auto& s : skipped) os << "- " << s << "\n";
    }
    return os.str();
  }
};

bool has_opaque(const Graph& g) {
  for (NodeId n = 0; n < g.size(); ++n)
    if (g.node(n).op_class == OpClass::opaque) return true;
  return false;
}

TEST(GpuBench, SharedModelsPerStrategyAtBatch1And64) {
  CudaDeviceStatus st = cuda_device_status();
  if (!st.available) GTEST_SKIP() << "no CUDA device: " << st.reason;
  const std::string out = env("FUSEPLAN_GPU_RESULTS");
  if (out.empty()) GTEST_SKIP() << "set FUSEPLAN_GPU_RESULTS=FILE.md to time the shared models (tests/gpu/run.sh)";
  const double budget_s = std::stod(env("FUSEPLAN_GPU_BUDGET_S", "240"));
  const double ilp_s = std::stod(env("FUSEPLAN_GPU_ILP_S", "1"));
  const std::string only = env("FUSEPLAN_GPU_MODELS");  // comma-separated substrings
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  Doc doc;
  doc.gpu = st.name;
  doc.device = device_config(st.name);
  const DeviceSpec d = load_device(doc.device);
  doc.copy_gbps = cuda_copy_bandwidth_GBps(int64_t{1} << 30, 20);
  std::printf("copy bandwidth %.1f GB/s\n", doc.copy_gbps);
  write_file_atomic(out, doc.render());

  for (const std::string& file : test::shared_model_files()) {
    if (!only.empty()) {
      bool hit = false;
      std::stringstream ss(only);
      for (std::string w; std::getline(ss, w, ',');) hit = hit || (!w.empty() && file.find(w) != std::string::npos);
      if (!hit) continue;
    }
    for (int64_t batch : {1, 64}) {
      const std::string label = file + " b" + std::to_string(batch);
      if (elapsed() > budget_s) {
        doc.skipped.push_back(label + ": time budget (" + f1(budget_s, 0) + " s) spent");
        continue;
      }
      Graph g;
      try {
        ImportOptions io;
        io.batch = batch;
        io.dims = test::model_dims(file);
        g = import_model(test::shared_models_dir() + "/" + file, io);
      } catch (const std::exception& e) {
        doc.skipped.push_back(label + ": import: " + e.what());
        continue;
      }
      if (has_opaque(g)) {
        doc.skipped.push_back(label + ": holds opaque primitives (graph break), not emitted");
        continue;
      }
      const auto src = make_source_data(g);
      std::vector<Row> rows;
      // Every strategy under the default options (emit/cuda/lowering.h:
      // cuBLASLt GEMM / cuDNN conv + emitted prologue/epilogue kernels;
      // bit-identical to each other), then unfused and cost with every
      // GEMM/conv emitted (--library none; bit-identical to each other), and
      // cost with cuBLASLt's fused epilogues (compared by tolerance).
      struct Variant {
        std::string strategy;
        cuda::LibraryOptions lib;
      };
      const cuda::LibraryOptions lib;  // the default
      const cuda::LibraryOptions emitted = cuda::LibraryOptions::none();
      cuda::LibraryOptions lib_fe = lib;
      lib_fe.fused_epilogue = true;
      std::vector<Variant> variants;
      for (const std::string& s : strategy_names()) variants.push_back({s, lib});
      variants.push_back({"unfused", emitted});
      variants.push_back({"cost", emitted});
      variants.push_back({"cost", lib_fe});
      std::map<std::string, std::map<std::string, Tensor>> base;  // per mode: the first (unfused) outputs
      for (const Variant& v : variants) {
        const std::string& s = v.strategy;
        Row row;
        row.strategy = s;
        row.mode = v.lib.str();
        if (elapsed() > budget_s + 45) {
          row.note = "not run: time budget spent";
          rows.push_back(row);
          continue;
        }
        try {
          SearchOptions so;
          so.time_limit_s = ilp_s;
          Plan plan = search(g, d, s, so);
          row.kernels = plan.totals.kernels;
          CudaRunOptions ro;
          ro.library = v.lib;
          ro.time_groups = v.lib.str() == lib.str();
          ro.verify = s == "unfused" && batch == 1 && plan.totals.flops < 2e9;
          if (plan.totals.flops > 5e11 && !v.lib.any()) {  // the canonical per-element GEMM/conv: fewer repetitions
            ro.warmup = 1;
            ro.repeat = 5;
          }
          CudaRunResult r = run_plan_cuda(g, plan, d, src, ro);
          row.us = r.median_us;
          row.launches = r.launches;
          if (ro.verify) row.rel_err = r.max_rel_error;
          if (v.lib.any()) row.note = std::to_string(r.library_calls) + " library calls";
          if (v.lib.fused_epilogue) {  // other rounding: the largest relative difference to unfused +lib
            double worst = 0;
            for (auto& [name, t] : r.outputs)
              if (base.count(lib.str())) worst = std::max(worst, max_relative_error(t, base.at(lib.str()).at(name)));
            row.note += "; max rel diff to unfused " + lib.str() + ": " + f1(worst * 1e6, 3) + "e-6";
          } else if (!base.count(row.mode)) {
            base[row.mode] = r.outputs;
          } else {
            for (auto& [name, t] : r.outputs)
              if (t.data != base[row.mode].at(name).data) row.identical = false;
            EXPECT_TRUE(row.identical) << label << " " << s << " " << row.mode
                                       << ": outputs differ from the unfused plan";
          }
          for (std::size_t i = 0; i < plan.groups.size() && i < r.group_median_us.size(); ++i) {
            const GroupCost& c = plan.costs[i];
            if (plan.groups[i].nodes.size() < 2 || c.bound != "memory" || c.bytes() < 64.0 * (1 << 20)) continue;
            BwRow b;
            b.where = label + " " + s + " g" + std::to_string(i);
            b.kind = std::string(to_string(plan.groups[i].kind));
            b.bytes = c.bytes();
            b.us = r.group_median_us[i];
            b.gbps = b.us > 0 ? b.bytes / (b.us * 1e3) : 0;
            b.frac = doc.copy_gbps > 0 ? b.gbps / doc.copy_gbps : 0;
            doc.bw.push_back(b);
          }
        } catch (const std::exception& e) {
          std::string w = e.what();
          row.note = w.substr(0, 160);
        }
        rows.push_back(row);
        std::printf("%s %s %s: %s\n", label.c_str(), s.c_str(), row.mode.c_str(),
                    row.us >= 0 ? f1(row.us, 1).c_str() : row.note.c_str());
        std::fflush(stdout);
      }
      // "fastest" and cost-fastest compare the strategies under the default
      // options; emitted rows compare with unfused emitted.
      double best = -1, unfused = -1, cost = -1, unfused_emitted = -1;
      for (const auto& r : rows)
        if (r.us >= 0) {
          if (r.mode == emitted.str() && r.strategy == "unfused") unfused_emitted = r.us;
          if (r.mode != lib.str()) continue;
          if (best < 0 || r.us < best) best = r.us;
          if (r.strategy == "unfused") unfused = r.us;
          if (r.strategy == "cost") cost = r.us;
        }
      std::ostringstream os;
      os << "### " << label << "\n\n| strategy | kernels | mode | launches (+ library calls) | median us | vs unfused (same mode) | "
            "identical to unfused (same mode) | max rel err vs CPU | note |\n|---|---|---|---|---|---|---|---|---|\n";
      for (const auto& r : rows) {
        const double ref = r.mode == emitted.str() ? unfused_emitted : unfused;
        os << "| " << r.strategy << (r.us >= 0 && r.us == best && r.mode == lib.str() ? " **(fastest)**" : "") << " | "
           << r.kernels << " | " << r.mode << " | " << r.launches << " | " << (r.us >= 0 ? f1(r.us, 1) : "-") << " | "
           << (r.us > 0 && ref > 0 ? f1(ref / r.us, 2) + "x" : "-") << " | "
           << (r.us < 0 ? "-" : r.mode.find("fused-epilogue") != std::string::npos ? "n/a (tolerance)"
                              : r.identical                                      ? "yes"
                                                                                  : "**no**")
           << " | "
           << (r.rel_err >= 0 ? f1(r.rel_err * 1e6, 3) + "e-6" : "-") << " | " << r.note << " |\n";
      }
      doc.sections.push_back(os.str());
      if (cost >= 0 && best > 0) {
        ++doc.cost_compared;
        if (cost <= best * 1.03) ++doc.cost_fastest;
        else doc.cost_not_fastest.push_back(label + " (cost " + f1(cost) + " us, best " + f1(best) + " us)");
      }
      write_file_atomic(out, doc.render());
    }
  }
  write_file_atomic(out, doc.render());
  std::printf("wrote %s (%.0f s)\n", out.c_str(), elapsed());
}

}  // namespace
}  // namespace fuseplan
