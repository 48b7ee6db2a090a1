// fuseplan tune: per-batch-size autotuning. For each batch size: import the
// model at that size, search; with measurement, run the plan on the CPU
// backend, recalibrate the device from every measurement so far
// (tune/calibrate.h), search again, until the plan stops changing (bounded
// rounds), keeping the best measured plan. Every batch size's files are
// written (atomically) as soon as it finishes, and the reports (summary,
// diff, dispatch) are rewritten after each, so an interrupted run leaves
// complete results for the batch sizes already done. Outputs: docs/tune.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "emit/report_md.h"
#include "exec/cpu_run.h"
#include "tune/calibrate.h"
#include "tune/measure.h"
#include "search/strategy.h"

namespace fuseplan {

/// The model and its non-batch bindings; the batch is bound per tuned size.
struct TuneModel {
  std::string path;
  std::map<std::string, int64_t> dims;  // --dim NAME=V
  std::string sha256;                   // of the file's bytes (filled by tune() when empty)
};

struct TuneOptions {
  std::vector<int64_t> batches;         // tuned in ascending order (duplicates dropped)
  std::string strategy = "cost";
  bool measure = false;
  int rounds = 3;                       // measured rounds per batch size at most
  RunOptions run;                       // repeat, threads (verify is off: tune times, `run --verify` checks)
  SearchOptions search;
  double peer_time_limit_s = 10;        // exact peers (optimal): bounded so tune stays interactive
  bool peers = true;                    // price (and measure) every strategy for the summary
  bool render_svg = true;               // run `dot -Tsvg` on every plan
};

/// Progress of a tune run, for the CLI's progress bar or log lines.
struct TuneEvent {
  std::string phase;     // "import", "search", "measure", "recalibrate", "peers", "write", "done"
  int64_t batch = 0;
  int batch_index = 0, batch_count = 0;
  int round = 0, rounds = 0;
  double fraction = 0;   // of the whole run done, 0..1 (estimate)
  std::string detail;    // one line, e.g. "measured 812.4 us (predicted 640.1 us)"
};
using TuneProgress = std::function<void(const TuneEvent&)>;
/// Polled between phases, every 20 ms while the kernels compile and between
/// kernel calls of a measurement; true = drop the batch size in flight (its
/// compiler is killed) and return what is complete.
using TuneStop = std::function<bool()>;

/// One peer strategy's plan at a batch size.
struct PeerResult {
  std::string strategy;
  Plan plan;
  double measured_us = -1;  // < 0 = not measured
};

/// Everything tune keeps for one batch size.
struct BatchTune {
  int64_t batch = 0;
  std::shared_ptr<const Graph> graph;
  Plan plan;                 // the kept plan: best measured (tuned rounds and measured peers), else the searched one
  RunResult run;             // measurement of `plan` (measure only)
  bool measured = false;
  int rounds = 1;
  bool converged = true;
  std::string note;          // recalibration outcome, one line
  DeviceSpec device;         // device the plan is priced on (calibrated after measurement)
  std::vector<PeerResult> peers;
  /// The kept plan (first) against the unfused plan (second), interleaved
  /// (measure, when the two differ): whether it is faster, and by how much.
  std::optional<Duel> vs_unfused;
};

struct TuneResult {
  std::vector<BatchTune> batches;  // finished batch sizes, ascending
  bool interrupted = false;
  std::vector<std::string> files;  // every file written (paths)
  /// Auxiliary outputs that failed without stopping the run, one line each
  /// (e.g. `dot -Tsvg` failing: no SVG, the DOT and everything else written).
  std::vector<std::string> warnings;
};

/// Runs the whole tune and writes its folder `dir` whole (support/outputs.h
/// StagedDir: staged beside it, renamed into place, replacing an existing
/// `dir`, once the last batch size or, when stopped, the finished ones are
/// written; nothing when none finished). Callers check `dir` first
/// (check_output_dir). `files` then names the files under `dir`. `device` is
/// the prior; with measurement it is recalibrated as measurements accumulate.
TuneResult tune(const TuneModel& model, const DeviceSpec& device, const TuneOptions& opts, const std::string& dir,
                const TuneProgress& progress = {}, const TuneStop& stop = {});

/// Plan file name of a batch size: "plan-b<B>.json".
std::string plan_file_name(int64_t batch);

/// The summary rows of one tuned batch size (report_md input).
BatchReport batch_report(const BatchTune& b, const std::string& strategy);

}  // namespace fuseplan
