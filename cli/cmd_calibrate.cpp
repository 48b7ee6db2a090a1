// fuseplan calibrate --device D MEASUREMENTS... -o D.calibrated.json: fits
// the device's effective parameters to measured groups (costmodel/calibrate.h)
// and writes the calibrated device; refuses a degenerate fit.
#include <iostream>

#include "cli/common.h"
#include "support/files.h"
#include "tune/accuracy.h"
#include "profiling/measurement.h"
#include "probe/probe.h"

namespace fuseplan::cli {

namespace {
struct CalibrateArgs {
  std::string device = "host-cpu";
  std::vector<std::string> files;
  std::string out;
  int min_support = 3;
  std::vector<std::string> hold;
  std::string statistic = "median";
};

void run_calibrate(const CalibrateArgs& a) {
  std::vector<std::string> inputs = a.files;
  inputs.push_back(a.device);
  check_output_file(a.out, inputs);
  const DeviceSpec prior = load_device_arg(a.device);
  check_hold(prior, a.hold);
  std::vector<std::vector<MeasurementRecord>> runs;  // one file is one run
  for (const auto& f : a.files) runs.push_back(read_records(f, prior.name));
  std::vector<MeasurementRecord> all = merge_runs(runs);
  const TimeStatistic stat = time_statistic_from_string(a.statistic);
  std::vector<CalibrationSample> samples;
  for (const auto& r : all) samples.push_back(to_sample(r, stat));
  CalibrationOptions o;
  o.min_support = a.min_support;
  o.hold = a.hold;
  CalibrationResult res = calibrate(prior, samples, o);
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : res.parameters)
    rows.push_back({p.name, fmt(p.prior, 4), fmt(p.value, 4), p.held ? "held" : "± " + fmt(p.std_error, 4),
                    std::to_string(p.support), p.note});
  std::cout << format_table({"parameter", "prior", "fitted", "std. error", "support", "note"}, rows);
  Score before = score(all, prior, stat), after = score(all, res.device, stat);
  std::cout << res.measurements << " groups (" << res.memory_bound << " memory-bound, " << res.compute_bound
            << " compute-bound), " << res.iterations << " round(s)" << (res.converged ? "" : " (regimes did not settle; best round kept)")
            << "; in-sample MAPE " << fmt(before.mape_pct, 1)
            << "% -> " << fmt(after.mape_pct, 1) << "%, Spearman " << fmt(before.spearman, 3) << " -> "
            << fmt(after.spearman, 3) << "\n";
  write_device_file(res.device, a.out);
  std::cout << "wrote " << a.out << "\n";
}
}  // namespace

void add_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "fit a device's cost-model parameters to measurement records");
  cmd->add_option("measurements", a->files,
                  "measurement files (JSONL from fuseplan measure); each file is one run, and a group "
                  "measured in several runs gets the median over them")
      ->required();
  cmd->add_option("--device", a->device, std::string("the ") + kDeviceHelp + " to calibrate")->capture_default_str();
  cmd->add_option("-o,--output", a->out, "calibrated device JSON to write")->required()->check(file_name());
  cmd->add_option("--min-support", a->min_support, "measurements a parameter needs to be fitted (else held at its prior)")
      ->capture_default_str();
  cmd->add_option("--hold", a->hold, "keep these parameters at their prior (e.g. caches[L1].bw_GBps)")->delimiter(',');
  cmd->add_option("--statistic", a->statistic, "measured time to fit: median or min of the repetitions")
      ->capture_default_str();
  cmd->callback([a] { run_calibrate(*a); });
}

}  // namespace fuseplan::cli
