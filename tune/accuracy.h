// Cost-model accuracy: predicted against measured per group, before and
// after calibration, with a held-out split by model, a log-log scatter plot
// (gnuplot, argument vector, no shell) and the Markdown report
// results/cost-model-accuracy.md (`fuseplan accuracy`).
#pragma once

#include <string>
#include <vector>

#include "costmodel/calibrate.h"
#include "profiling/measurement.h"
#include "profiling/profiler.h"

namespace fuseplan {

/// One record per (model, group_key): the same group measured in several
/// plans becomes one sample with the median of their medians and the
/// minimum of their minima.
std::vector<MeasurementRecord> dedupe_records(const std::vector<MeasurementRecord>& records);
/// Several runs of the same models (runs[i]: the records of one run, e.g.
/// one measurement file): each run deduplicated as above, then one record
/// per (model, group_key) whose median_us and min_us are the medians over the
/// runs that measured it (a run caught in an odd machine state moves no
/// group on its own once there are three runs). Keeps first-seen order.
std::vector<MeasurementRecord> merge_runs(const std::vector<std::vector<MeasurementRecord>>& runs);

struct Score {
  int n = 0;
  double mape_pct = 0;
  double spearman = 0;
};
Score score(const std::vector<MeasurementRecord>& rs, const DeviceSpec& d, TimeStatistic s = TimeStatistic::median);

/// Closed loop: the same strategy searched with the prior and the calibrated
/// device, both plans measured on the CPU backend.
struct ClosedLoop {
  std::string model, strategy;
  int kernels_prior = 0, kernels_calibrated = 0;
  std::string plan_prior, plan_calibrated;   // plan ids
  double predicted_prior_us = 0, predicted_calibrated_us = 0;  // each under its own device
  double measured_prior_us = 0, measured_calibrated_us = 0;    // Σ group medians
  double measured_prior_spread_pct = 0, measured_calibrated_spread_pct = 0;  // over whole-plan repetitions
  std::string differences;                   // one line: what the calibrated search chose differently
};
/// Runs the loop on one model: searches, then measures the two plans
/// alternately `rounds` times (median of the per-round totals) to share the load.
ClosedLoop closed_loop(const Graph& g, const std::string& model_file, const DeviceSpec& prior,
                       const DeviceSpec& calibrated, const std::string& strategy, const ProfileOptions& o, int rounds);

struct AccuracyInputs {
  std::vector<MeasurementRecord> records;    // deduped
  std::vector<std::string> holdout;          // model files scored only
  DeviceSpec prior;
  CalibrationOptions calibration;            // --hold, --min-support
  TimeStatistic statistic = TimeStatistic::median;  // measured time fitted and scored (both splits alike)
  std::vector<std::string> measurement_files;
  std::string plot_path;                     // SVG; "" = no plot
  std::vector<ClosedLoop> loops;
  std::vector<std::string> notes;            // extra lines for the report
};
struct AccuracyResult {
  Score before_train, after_train, before_holdout, after_holdout;
  CalibrationResult fit;                     // fitted on the training models
  std::string markdown;
  /// One row per scored group: split, model, group_key, kind, label,
  /// measured_us, predicted_before_us, predicted_after_us (CSV with header).
  std::string groups_csv;
  std::string plot_error;                    // why no plot ("" when written)
};
/// Fits on the non-held-out models, scores both splits, draws the plot and
/// renders the report. Throws Error when the training fit is degenerate.
AccuracyResult accuracy_report(const AccuracyInputs& in);

/// Writes a log-log predicted-vs-measured SVG with gnuplot. Returns "" or
/// the reason it could not (gnuplot missing or failing).
std::string scatter_plot_svg(const std::string& path, const std::vector<double>& measured,
                             const std::vector<double>& before, const std::vector<double>& after,
                             const std::string& title);

}  // namespace fuseplan
