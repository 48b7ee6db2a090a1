#include "tune/tune.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "emit/cpu/compiler.h"
#include "support/files.h"
#include "graph/import.h"
#include "tune/measure.h"
#include "tune/outputs.h"
#include "support/outputs.h"

namespace fuseplan {

std::string plan_file_name(int64_t batch) { return "plan-b" + std::to_string(batch) + ".json"; }

BatchReport batch_report(const BatchTune& b, const std::string& strategy) {
  BatchReport r;
  r.batch = b.batch;
  r.tuned = {"tuned (" + strategy + ")", b.plan.totals.kernels, b.plan.totals.bytes, b.plan.totals.predicted_us,
             b.measured ? b.run.measured_us : -1};
  r.rounds = b.rounds;
  r.converged = b.converged;
  r.note = b.note;
  for (const auto& p : b.peers)
    r.peers.push_back({p.strategy, p.plan.totals.kernels, p.plan.totals.bytes, p.plan.totals.predicted_us,
                       p.measured_us});
  return r;
}

namespace {

// Thrown between phases when the caller asked to stop; the batch in flight is
// dropped. Within a phase a compile or measurement throws cpu::Cancelled.
struct Stopped {};

class Tuner {
 public:
  Tuner(const TuneModel& m, const DeviceSpec& d, const TuneOptions& o, const TuneProgress& p, const TuneStop& s)
      : model_(m), device_(d), opts_(o), progress_(p), stop_(s), measurer_(o.run) {}

  BatchTune run_batch(int64_t batch, int index, int count) {
    ev_ = {"import", batch, index, count, 0, opts_.measure ? opts_.rounds : 0, 0, ""};
    step("import", "");
    ImportOptions io;
    io.batch = batch;
    io.dims = model_.dims;
    BatchTune b;
    b.batch = batch;
    b.graph = std::make_shared<const Graph>(import_model(model_.path, io));
    const Graph& g = *b.graph;
    // Measurements are cached per graph, not per batch size: a model whose
    // batch dim is fixed in the file imports the same graph at every --batch,
    // and the same plan on the same graph is the same program.
    const std::string scope = model_.path + "@" + graph_signature(g);
    step("search", "");
    Plan plan = finish(search(g, device_, opts_.strategy, opts_.search), batch);
    b.device = device_;
    b.plan = plan;
    b.rounds = 1;
    measure_ = opts_.measure;
    if (measure_) {
      if (const auto opaque = first_opaque(g)) {
        // The CPU backend cannot run it: this batch size is tuned on predictions.
        measure_ = false;
        b.note = "not measured: the CPU backend cannot execute opaque primitive '" + g.node(*opaque).name + "' (op " +
                 g.node(*opaque).op + "); plans chosen on predictions only";
      }
    }
    if (measure_) measure_rounds(b, plan, scope);
    done_steps_ = (index) * steps_per_batch() + steps_per_batch() - 1;
    if (opts_.peers) peers(b, scope);
    return b;
  }

  int steps_per_batch() const { return (opts_.measure ? opts_.rounds : 1) + (opts_.peers ? 1 : 0); }
  int done_steps_ = 0, total_steps_ = 1;

 private:
  void step(const std::string& phase, const std::string& detail) {
    if (stop_ && stop_()) throw Stopped{};
    ev_.phase = phase;
    ev_.detail = detail;
    ev_.fraction = std::min(1.0, static_cast<double>(done_steps_) / total_steps_);
    if (progress_) progress_(ev_);
  }

  Plan finish(Plan p, int64_t batch) const {
    p.model_path = model_.path;
    p.model_sha256 = model_.sha256;
    p.dims = model_.dims;
    p.dims["batch"] = batch;
    return p;
  }

  // Measure, recalibrate, search again until the plan repeats; keep the best measured.
  void measure_rounds(BatchTune& b, Plan plan, const std::string& scope) {
    const Graph& g = *b.graph;
    std::vector<std::string> seen;
    double best_us = -1;
    for (int round = 1; round <= opts_.rounds; ++round) {
      ev_.round = round;
      step("measure", std::to_string(plan.totals.kernels) + " kernels, predicted " + us(plan.totals.predicted_us));
      const int runs_before = measurer_.runs();
      const RunResult& run = measurer_.measure(g, plan, scope);
      const bool fresh = measurer_.runs() > runs_before;
      seen.push_back(partition_key(g, plan));
      b.rounds = round;
      if (best_us < 0 || run.measured_us < best_us) {
        best_us = run.measured_us;
        b.plan = plan;
        b.run = run;
        b.measured = true;
      }
      if (fresh) {
        add_calibration_samples(g, plan, run, device_, scope + "#b" + std::to_string(b.batch) + "#r" +
                                                           std::to_string(round), samples_);
        step("recalibrate", "measured " + us(run.measured_us) + " (predicted " + us(run.predicted_us) + ")");
        Recalibration rc = recalibrate(device_, samples_);
        b.note = rc.note;
        if (rc.fitted) device_ = rc.device;
      } else {
        // Nothing new to fit: its kernels are already among the samples.
        b.note = "measurement reused: this plan on this graph (identical at an earlier batch size) was measured "
                 "already; device unchanged";
      }
      ++done_steps_;
      step("search", b.note);
      Plan next = finish(search(g, device_, opts_.strategy, opts_.search), b.batch);
      const std::string key = partition_key(g, next);
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        b.converged = true;
        break;
      }
      b.converged = false;
      plan = std::move(next);
    }
    // Every plan of this batch size is reported on the device as calibrated now.
    b.device = device_;
    b.plan = reprice(g, b.plan, device_);
    b.run.predicted_us = b.plan.totals.predicted_us;
    for (auto& gt : b.run.groups)
      if (static_cast<std::size_t>(gt.group) < b.plan.costs.size()) gt.predicted_us = b.plan.costs[gt.group].predicted_us;
  }

  void peers(BatchTune& b, const std::string& scope) {
    const Graph& g = *b.graph;
    ev_.round = 0;
    SearchOptions so = opts_.search;
    so.time_limit_s = opts_.peer_time_limit_s;
    for (const auto& name : strategy_names()) {
      step("peers", name);
      PeerResult p{name, finish(search(g, b.device, name, so), b.batch), -1};
      if (measure_) p.measured_us = measurer_.measure(g, p.plan, scope).measured_us;
      b.peers.push_back(std::move(p));
    }
    if (measure_ && b.measured) {
      // Tune keeps the best measured plan, whichever strategy found it, but
      // switches only on a difference it can tell apart: the fastest peer by
      // one run, if faster than the kept plan's run, meets it head to head.
      const std::string kept = partition_key(g, b.plan);
      const PeerResult* best = nullptr;
      for (const auto& p : b.peers)
        if (p.measured_us > 0 && p.measured_us < b.run.measured_us && partition_key(g, p.plan) != kept &&
            (!best || p.measured_us < best->measured_us))
          best = &p;
      if (best) {
        step("peers", "head to head: the tuned plan against the " + best->strategy + " plan");
        const Duel d = measurer_.duel(g, b.plan, best->plan);
        if (d.verdict == Verdict::second_faster) {
          b.note += "; kept the " + best->strategy + " plan: tuned vs " + best->strategy + " " + d.summary();
          b.plan = best->plan;
          b.run = measurer_.measure(g, best->plan, scope);
          b.run.predicted_us = b.plan.totals.predicted_us;
        } else {
          b.note += "; kept the tuned plan: tuned vs " + best->strategy + " " + d.summary();
        }
      }
      // "Faster than unfused" is a claim tune makes only head to head.
      for (const auto& p : b.peers)
        if (p.strategy == "unfused" && partition_key(g, p.plan) != partition_key(g, b.plan)) {
          step("peers", "head to head: the kept plan against the unfused plan");
          b.vs_unfused = measurer_.duel(g, b.plan, p.plan);
          b.note += "; kept vs unfused " + b.vs_unfused->summary();
        }
    }
    std::stable_sort(b.peers.begin(), b.peers.end(),
                     [](const PeerResult& x, const PeerResult& y) { return x.strategy == "unfused" && y.strategy != "unfused"; });
  }

  // The graph's identity for the measurement cache: every primitive's name,
  // op and output type.
  static std::string graph_signature(const Graph& g) {
    std::string s;
    for (NodeId n = 0; n < g.size(); ++n) {
      const auto& p = g.node(n);
      s += p.name + "|" + p.op + "|" + p.out.str() + "\n";
    }
    return sha256_hex(s).substr(0, 16);
  }

  static std::optional<NodeId> first_opaque(const Graph& g) {
    for (NodeId n = 0; n < g.size(); ++n)
      if (g.node(n).op_class == OpClass::opaque) return n;
    return std::nullopt;
  }

  static std::string us(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f us", v);
    return buf;
  }

  const TuneModel& model_;
  DeviceSpec device_;
  const TuneOptions& opts_;
  const TuneProgress& progress_;
  const TuneStop& stop_;
  PlanMeasurer measurer_;
  std::vector<CalibrationSample> samples_;
  bool measure_ = false;  // this batch size is measured (opts_.measure and runnable)
  TuneEvent ev_;
};

}  // namespace

TuneResult tune(const TuneModel& model_in, const DeviceSpec& device, const TuneOptions& opts_in, const std::string& dir,
                const TuneProgress& progress, const TuneStop& stop) {
  TuneModel model = model_in;
  if (model.sha256.empty()) model.sha256 = sha256_hex(read_file(model.path));
  TuneOptions opts = opts_in;
  if (opts.rounds < 1) throw Error("--rounds must be at least 1");
  if (opts.run.repeat < 1) throw Error("--repeat must be at least 1");
  for (int64_t b : opts.batches)
    if (b < 1) throw Error("--batch sizes must be positive, got " + std::to_string(b));
  if (opts.batches.empty()) throw Error("tune needs at least one --batch size");
  std::sort(opts.batches.begin(), opts.batches.end());
  opts.batches.erase(std::unique(opts.batches.begin(), opts.batches.end()), opts.batches.end());
  make_strategy(opts.strategy);  // throws naming the known strategies
  // The folder is written whole (support/outputs.h): staged beside `dir`,
  // renamed into place after the last batch size, or after the finished
  // ones when stopped; nothing when none finished.
  StagedDir staged(dir);

  // A stop request also abandons a compile or measurement in flight (the
  // compiler is killed; the run checks between kernel calls), not only the
  // next phase boundary.
  if (stop) opts.run.cancelled = stop;
  TuneResult result;
  Tuner tuner(model, device, opts, progress, stop);
  const int count = static_cast<int>(opts.batches.size());
  std::string no_svg, first_svg_error;  // SVGs dot failed to render, and why (the first)
  tuner.total_steps_ = count * tuner.steps_per_batch();
  for (int i = 0; i < count; ++i) {
    tuner.done_steps_ = i * tuner.steps_per_batch();
    BatchTune b;
    try {
      b = tuner.run_batch(opts.batches[i], i, count);
    } catch (const Stopped&) {
      result.interrupted = true;
      break;
    } catch (const cpu::Cancelled&) {
      result.interrupted = true;
      break;
    }
    if (progress) progress({"write", b.batch, i, count, b.rounds, opts.measure ? opts.rounds : 0,
                            static_cast<double>(i + 1) / count, ""});
    std::string svg_error;
    for (auto& f : write_batch_files(staged.path(), b, opts.render_svg, &svg_error)) result.files.push_back(f);
    if (!svg_error.empty()) {
      no_svg += std::string(no_svg.empty() ? "" : ", ") + "plan-b" + std::to_string(b.batch) + ".svg";
      if (first_svg_error.empty()) first_svg_error = svg_error;
    }
    result.batches.push_back(std::move(b));
    for (auto& f : write_run_reports(staged.path(), model, opts, result.batches))
      if (std::find(result.files.begin(), result.files.end(), f) == result.files.end()) result.files.push_back(f);
  }
  if (!no_svg.empty()) {
    // One line however many plans failed; dot may echo a whole (huge) node name.
    if (first_svg_error.size() > 300) first_svg_error = first_svg_error.substr(0, 300) + "...";
    result.warnings.push_back("no " + no_svg + " (Graphviz failed; the .dot files and everything else are written): " +
                              first_svg_error);
  }
  if (!result.batches.empty()) {
    staged.commit();
    for (auto& f : result.files) f = (std::filesystem::path(dir) / std::filesystem::path(f).filename()).string();
  }
  if (progress && !result.interrupted) progress({"done", 0, count, count, 0, 0, 1, ""});
  return result;
}

}  // namespace fuseplan
