// fuseplan accuracy --device D MEASUREMENTS... --holdout MODEL,... [-o report.md]
// [--closed-loop MODEL...]: predicted vs measured before and after
// calibration on a held-out split, scatter plot, closed-loop check.
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/common.h"
#include "support/files.h"
#include "tune/accuracy.h"
#include "profiling/measurement.h"

namespace fuseplan::cli {

namespace {
struct AccuracyArgs {
  std::string device = "host-cpu";
  std::vector<std::string> files;
  std::vector<std::string> holdout;
  std::string out = "results/cost-model-accuracy.md";
  std::vector<std::string> loop_models;
  std::string loop_strategy = "cost";
  std::optional<int64_t> batch;
  std::vector<std::string> dim_args;
  int rounds = 3;
  std::vector<std::string> hold;
  std::vector<std::string> notes;
  std::string statistic = "median";
  std::string groups_csv;
  ProfileOptions opts;
};

void run_accuracy(const AccuracyArgs& a) {
  AccuracyInputs in;
  in.prior = load_device_arg(a.device);
  check_hold(in.prior, a.hold);
  parse_dims(a.dim_args);  // a malformed or repeated --dim fails before any work
  check_dims_known(a.loop_models, a.batch, a.dim_args);
  std::vector<std::vector<MeasurementRecord>> runs;  // one file is one run
  for (const auto& f : a.files) {
    runs.push_back(read_records(f, in.prior.name));
    in.measurement_files.push_back(f);
  }
  in.records = merge_runs(runs);
  in.holdout = a.holdout;
  in.calibration.hold = a.hold;
  in.statistic = time_statistic_from_string(a.statistic);
  in.notes = a.notes;
  if (in.holdout.empty()) {  // every third model, sorted
    std::set<std::string> models;
    for (const auto& r : in.records) models.insert(r.model);
    int i = 0;
    for (const auto& m : models)
      if (i++ % 3 == 2) in.holdout.push_back(m);
  }
  // Everything that can fail is checked before the first file or directory
  // is made: the closed-loop models load and the training split fits.
  namespace fs = std::filesystem;
  const std::string plot_path =
      (fs::path(a.out).parent_path() / (fs::path(a.out).stem().string() + ".svg")).string();
  std::vector<std::string> inputs = a.files;
  inputs.push_back(a.device);
  inputs.insert(inputs.end(), a.loop_models.begin(), a.loop_models.end());
  for (const auto& out : {a.out, a.groups_csv, plot_path})
    if (!out.empty()) check_output_file(out, inputs);
  std::vector<LoadedModel> loop_models;
  for (const auto& path : a.loop_models)
    loop_models.push_back(load_model(ModelArgs::one_of(path, a.batch, a.dim_args, a.loop_models.size())));
  // The training split fitted once for the closed loop (the report refits
  // the same way); in.plot_path is still empty: no plot.
  const AccuracyResult pre = accuracy_report(in);
  for (std::size_t i = 0; i < a.loop_models.size(); ++i) {
    const std::string& path = a.loop_models[i];
    in.loops.push_back(closed_loop(loop_models[i].graph, fs::path(path).filename().string(), in.prior,
                                   pre.fit.device, a.loop_strategy, a.opts, a.rounds));
    std::cerr << "fuseplan: closed loop " << path << ": measured " << fmt(in.loops.back().measured_prior_us, 0)
              << " us (prior plan) vs " << fmt(in.loops.back().measured_calibrated_us, 0) << " us (calibrated plan)\n";
  }
  in.plot_path = plot_path;
  AccuracyResult res = accuracy_report(in);
  write_file_atomic(a.out, res.markdown);
  if (!a.groups_csv.empty()) write_file_atomic(a.groups_csv, res.groups_csv);
  std::cout << "held-out (" << res.after_holdout.n << " groups): MAPE " << fmt(res.before_holdout.mape_pct, 1) << "% -> "
            << fmt(res.after_holdout.mape_pct, 1) << "%, Spearman " << fmt(res.before_holdout.spearman, 3) << " -> "
            << fmt(res.after_holdout.spearman, 3) << "\n"
            << "training (" << res.after_train.n << " groups): MAPE " << fmt(res.before_train.mape_pct, 1) << "% -> "
            << fmt(res.after_train.mape_pct, 1) << "%, Spearman " << fmt(res.before_train.spearman, 3) << " -> "
            << fmt(res.after_train.spearman, 3) << "\n";
  if (!res.plot_error.empty()) std::cerr << "fuseplan: no plot: " << res.plot_error << "\n";
  std::cout << "wrote " << a.out << (res.plot_error.empty() ? " and " + in.plot_path : "") << "\n";
}
}  // namespace

void add_accuracy(CLI::App& app) {
  auto a = std::make_shared<AccuracyArgs>();
  auto* cmd = app.add_subcommand("accuracy", "cost-model accuracy report: predicted vs measured, before/after calibration, held-out split");
  cmd->add_option("measurements", a->files,
                  "measurement files (JSONL from fuseplan measure); each file is one run, and a group "
                  "measured in several runs gets the median over them")
      ->required();
  cmd->add_option("--device", a->device, std::string("the uncalibrated ") + kDeviceHelp)->capture_default_str();
  cmd->add_option("--holdout", a->holdout, "model files scored but not fitted (default: every third model)")->delimiter(',');
  cmd->add_option("-o,--output", a->out, "report to write (the plot goes next to it as .svg)")
      ->capture_default_str()
      ->check(file_name());
  cmd->add_option("--closed-loop", a->loop_models, "models to search with both devices and measure both plans");
  cmd->add_option("--strategy", a->loop_strategy, "strategy of the closed loop")->capture_default_str();
  cmd->add_option("--batch", a->batch, std::string("closed loop: ") + kBatchHelp)->check(batch_value());
  cmd->add_option("--dim", a->dim_args, "closed loop: bind a named symbolic dim, NAME=VALUE (each NAME once)")
      ->check(dim_value());
  cmd->add_option("--rounds", a->rounds, "closed loop: alternate measurements of the two plans this many times")
      ->capture_default_str()
      ->check(integer_in(1, 1000000));
  cmd->add_option("--repeat", a->opts.repeat, "closed loop: timed repetitions per measurement")
      ->capture_default_str()
      ->check(integer_in(1, 1000000));
  cmd->add_option("--hold", a->hold, "keep these parameters at their prior (as fuseplan calibrate --hold)")->delimiter(',');
  cmd->add_option("--statistic", a->statistic, "measured time to fit and score: median or min of the repetitions")
      ->capture_default_str();
  cmd->add_option("--groups-csv", a->groups_csv,
                  "also write every scored group (split, model, group, measured and predicted us before/after) as CSV");
  cmd->add_option("--note", a->notes, "a line for the report's header (repeatable), e.g. the measurement conditions");
  cmd->callback([a] { run_accuracy(*a); });
}

}  // namespace fuseplan::cli
