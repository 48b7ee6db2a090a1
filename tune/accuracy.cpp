#include "tune/accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/files.h"
#include "profiling/cpu_profiler.h"
#include "exec/cpu_run.h"
#include "support/format.h"
#include "support/stats.h"
#include "search/strategy.h"

extern char** environ;

namespace fuseplan {

namespace {
std::string f(double v, int prec = 2) { return fixed_text(v, prec); }
std::string g4(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
// The model at its bound dims, e.g. "bias_relu.onnxtxt C=64 N=1": a group
// key names the same group at every size, so the dims tell sizes apart.
std::string model_at_dims(const MeasurementRecord& r) {
  std::string s = r.model;
  for (const auto& [name, v] : r.dims) s += " " + name + "=" + std::to_string(v);
  return s;
}

// Records of the same (model, dims, group_key), in first-seen order of the keys.
std::vector<std::vector<const MeasurementRecord*>> by_group(const std::vector<MeasurementRecord>& records) {
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  std::vector<std::vector<const MeasurementRecord*>> groups;
  for (const auto& r : records) {
    auto key =
        std::make_pair(model_at_dims(r), r.group_key.empty() ? r.plan_id + "#" + std::to_string(r.group) : r.group_key);
    auto [it, fresh] = index.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(&r);
  }
  return groups;
}
}  // namespace

std::vector<MeasurementRecord> dedupe_records(const std::vector<MeasurementRecord>& records) {
  std::vector<MeasurementRecord> out;
  for (const auto& v : by_group(records)) {
    MeasurementRecord r = *v.front();
    std::vector<double> meds;
    for (auto* p : v) {
      meds.push_back(p->median_us);
      if (p->min_us > 0 && (p->min_us < r.min_us || !(r.min_us > 0))) r.min_us = p->min_us;
    }
    r.median_us = median(meds);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<MeasurementRecord> merge_runs(const std::vector<std::vector<MeasurementRecord>>& runs) {
  std::vector<MeasurementRecord> all;
  for (const auto& run : runs)
    for (auto& r : dedupe_records(run)) all.push_back(std::move(r));
  std::vector<MeasurementRecord> out;
  for (const auto& v : by_group(all)) {
    MeasurementRecord r = *v.front();
    std::vector<double> meds, mins;
    for (auto* p : v) {
      meds.push_back(p->median_us);
      if (p->min_us > 0) mins.push_back(p->min_us);
    }
    r.median_us = median(meds);
    r.min_us = median(mins);
    out.push_back(std::move(r));
  }
  return out;
}

Score score(const std::vector<MeasurementRecord>& rs, const DeviceSpec& d, TimeStatistic s) {
  std::vector<double> p, m;
  for (const auto& r : rs) {
    p.push_back(predict_us(r.features, d));
    m.push_back(measured_us(r, s));
  }
  return {static_cast<int>(rs.size()), mape_pct(p, m), spearman(p, m)};
}

ClosedLoop closed_loop(const Graph& g, const std::string& model_file, const DeviceSpec& prior,
                       const DeviceSpec& calibrated, const std::string& strategy, const ProfileOptions& o,
                       int rounds) {
  ClosedLoop c;
  c.model = model_file;
  c.strategy = strategy;
  Plan a = search(g, prior, strategy), b = search(g, calibrated, strategy);
  c.kernels_prior = static_cast<int>(a.groups.size());
  c.kernels_calibrated = static_cast<int>(b.groups.size());
  c.plan_prior = plan_id(g, a);
  c.plan_calibrated = plan_id(g, b);
  c.predicted_prior_us = a.totals.predicted_us;
  c.predicted_calibrated_us = b.totals.predicted_us;
  // What differs: groups (by key) only in one plan.
  std::set<std::string> ka, kb;
  for (const auto& grp : a.groups) ka.insert(group_key(g, grp));
  for (const auto& grp : b.groups) kb.insert(group_key(g, grp));
  int only_a = 0, only_b = 0;
  for (const auto& k : ka) only_a += !kb.count(k);
  for (const auto& k : kb) only_b += !ka.count(k);
  c.differences = std::to_string(only_a) + " of " + std::to_string(ka.size()) + " uncalibrated groups replaced by " +
                  std::to_string(only_b) + " different groups";
  CpuProfiler prof;
  std::vector<double> ta, tb;
  for (int r = 0; r < std::max(rounds, 1); ++r) {
    ta.push_back(prof.profile(g, a, prior, o).total_us);
    tb.push_back(prof.profile(g, b, calibrated, o).total_us);
  }
  auto spread = [](const std::vector<double>& v) {
    double med = median(v);
    return med > 0 ? 100 * (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / med : 0;
  };
  c.measured_prior_us = median(ta);
  c.measured_calibrated_us = median(tb);
  c.measured_prior_spread_pct = spread(ta);
  c.measured_calibrated_spread_pct = spread(tb);
  return c;
}

std::string scatter_plot_svg(const std::string& path, const std::vector<double>& measured,
                             const std::vector<double>& before, const std::vector<double>& after,
                             const std::string& title) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec) / ("fuseplan-accuracy-" + std::to_string(::getpid()));
  fs::create_directories(tmp, ec);
  // gnuplot writes into the scratch folder, its messages into a log there;
  // the plot reaches `path` whole (write_file_atomic) or not at all.
  const fs::path dat = tmp / "points.dat", gp = tmp / "plot.gp", svg = tmp / "plot.svg", log = tmp / "gnuplot.log";
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{tmp};
  double lo = 1e300, hi = 0;
  {
    std::ofstream d(dat);
    d << "# measured_us before_us after_us\n";
    for (std::size_t i = 0; i < measured.size(); ++i) {
      d << measured[i] << " " << before[i] << " " << after[i] << "\n";
      for (double v : {measured[i], before[i], after[i]})
        if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  if (!(hi > 0)) return "no positive points to plot";
  lo = std::pow(10, std::floor(std::log10(lo))), hi = std::pow(10, std::ceil(std::log10(hi)));
  std::string esc_title = title;
  std::replace(esc_title.begin(), esc_title.end(), '"', '\'');
  {
    std::ofstream s(gp);
    s << "set terminal svg size 720,640 dynamic background '#ffffff'\n"
      << "set output \"" << svg.string() << "\"\n"
      << "set logscale xy\nset grid\nset key top left\n"
      << "set xrange [" << lo << ":" << hi << "]\nset yrange [" << lo << ":" << hi << "]\n"
      << "set xlabel 'measured time per group (us)'\nset ylabel 'predicted time per group (us)'\n"
      << "set title \"" << esc_title << "\"\n"
      << "plot x title 'predicted = measured' lc rgb '#888888', "
      << "'" << dat.string() << "' using 1:2 title 'before calibration' pt 6 lc rgb '#d62728', "
      << "'" << dat.string() << "' using 1:3 title 'after calibration' pt 7 ps 0.6 lc rgb '#1f77b4'\n";
  }
  std::string prog = "gnuplot", script = gp.string();
  std::vector<char*> argv = {prog.data(), script.data(), nullptr};
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&io, 1, 2);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "gnuplot", &io, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&io);
  if (spawned != 0) return "gnuplot not found (install gnuplot-nox)";
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream l(log);
    std::string first;
    std::getline(l, first);
    while (first.empty() && std::getline(l, first)) {}
    return "gnuplot failed (exit " + std::to_string(WEXITSTATUS(status)) + ")" + (first.empty() ? "" : ": " + first);
  }
  write_file_atomic(path, read_file(svg.string()));
  return "";
}

AccuracyResult accuracy_report(const AccuracyInputs& in) {
  AccuracyResult res;
  std::set<std::string> hold(in.holdout.begin(), in.holdout.end());
  std::vector<MeasurementRecord> train, test;
  std::set<std::string> train_models, test_models;
  for (const auto& r : in.records) {
    if (hold.count(r.model)) test.push_back(r), test_models.insert(r.model);
    else train.push_back(r), train_models.insert(r.model);
  }
  if (test.empty()) throw Error("no measurements of the held-out models (--holdout names model files as recorded)");
  std::vector<CalibrationSample> samples;
  for (const auto& r : train) samples.push_back(to_sample(r, in.statistic));
  res.fit = calibrate(in.prior, samples, in.calibration);
  const DeviceSpec& cal = res.fit.device;
  res.before_train = score(train, in.prior, in.statistic);
  res.after_train = score(train, cal, in.statistic);
  res.before_holdout = score(test, in.prior, in.statistic);
  res.after_holdout = score(test, cal, in.statistic);

  std::ostringstream csv;
  csv << "split,model,group_key,kind,label,measured_us,predicted_before_us,predicted_after_us\n";
  auto csv_field = [](const std::string& x) {  // RFC 4180 quoting
    std::string q = "\"";
    for (char ch : x) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const auto* split : {&train, &test})
    for (const auto& r : *split)
      csv << (split == &test ? "held-out," : "training,") << csv_field(r.model) << ',' << r.group_key << ',' << r.kind << ','
          << csv_field(r.label) << ',' << g4(measured_us(r, in.statistic)) << ',' << g4(predict_us(r.features, in.prior))
          << ',' << g4(predict_us(r.features, cal)) << '\n';
  res.groups_csv = csv.str();

  std::vector<double> meas, before, after;
  for (const auto& r : test) {
    meas.push_back(measured_us(r, in.statistic));
    before.push_back(predict_us(r.features, in.prior));
    after.push_back(predict_us(r.features, cal));
  }
  if (!in.plot_path.empty())
    res.plot_error = scatter_plot_svg(in.plot_path, meas, before, after,
                                      "held-out groups on " + in.prior.name + ": predicted vs measured");

  std::ostringstream md;
  auto join = [](const std::set<std::string>& s) {
    std::string o;
    for (const auto& x : s) o += (o.empty() ? "" : ", ") + x;
    return o;
  };
  md << "# Cost-model accuracy on " << in.prior.name << "\n\n"
     << "Generated by `fuseplan accuracy` from " << in.records.size()
     << " measured fusion groups (deduplicated by model, dims and group; CPU backend, " << to_string(in.statistic)
     << " of repetitions; each measurement file is one run, and a group measured in several runs takes the "
        "median over them). "
     << "Calibration is fitted on the training models only and scored on the held-out models "
     << "(method: docs/calibration.md).\n\n"
     << "- training models (" << train.size() << " groups): " << join(train_models) << "\n"
     << "- held-out models (" << test.size() << " groups): " << join(test_models) << "\n";
  for (const auto& f : in.measurement_files) md << "- measurements: `" << f << "`\n";
  for (const auto& n : in.notes) md << "- " << n << "\n";
  md << "\n## Scores\n\n| split | groups | MAPE before | MAPE after | Spearman before | Spearman after |\n"
     << "|---|---|---|---|---|---|\n";
  md << "| training (in-sample) | " << res.after_train.n << " | " << f(res.before_train.mape_pct, 1) << "% | "
     << f(res.after_train.mape_pct, 1) << "% | " << f(res.before_train.spearman, 3) << " | "
     << f(res.after_train.spearman, 3) << " |\n";
  md << "| **held-out** | " << res.after_holdout.n << " | " << f(res.before_holdout.mape_pct, 1) << "% | **"
     << f(res.after_holdout.mape_pct, 1) << "%** | " << f(res.before_holdout.spearman, 3) << " | **"
     << f(res.after_holdout.spearman, 3) << "** |\n\n";
  // Issue 32's targets for held-out groups after calibration.
  constexpr double kTargetSpearman = 0.97, kTargetMapePct = 12;
  md << "Targets (held-out): Spearman ≥ " << kTargetSpearman << " — "
     << (res.after_holdout.spearman >= kTargetSpearman ? "met" : "**not met**") << "; MAPE ≤ " << kTargetMapePct
     << "% — " << (res.after_holdout.mape_pct <= kTargetMapePct ? "met" : "**not met**") << ".\n\n";
  if (!in.plot_path.empty()) {
    if (res.plot_error.empty())
      md << "![held-out groups, predicted vs measured, log-log](" << std::filesystem::path(in.plot_path).filename().string()
         << ")\n\n";
    else
      md << "(no plot: " << res.plot_error << ")\n\n";
  }
  md << "## Fitted parameters (training models)\n\n"
     << res.fit.measurements << " groups, " << res.fit.memory_bound << " memory-bound and " << res.fit.compute_bound
     << " compute-bound " << (res.fit.converged ? "at convergence after " : "in the best of ") << res.fit.iterations
     << " regime assignment round(s)" << (res.fit.converged ? "" : " (a few groups near t_mem = t_compute kept alternating)")
     << "; rms relative residual "
     << f(100 * res.fit.rms_relative_residual, 1) << "%.\n\n| parameter | prior | fitted | ± std. error | support | note |\n|---|---|---|---|---|---|\n";
  for (const auto& p : res.fit.parameters)
    md << "| " << p.name << " | " << g4(p.prior) << " | " << g4(p.value) << " | "
       << (p.held ? std::string("—") : g4(p.std_error)) << " | " << p.support << " | " << p.note << " |\n";
  // Held-out, per model and per group kind.
  auto by = [&](const char* title, const char* column, auto key) {
    md << "\n## Held-out error by " << title << "\n\n| " << column
       << " | groups | MAPE before | MAPE after | median of measured us |\n|---|---|---|---|---|\n";
    std::map<std::string, std::vector<MeasurementRecord>> parts;
    for (const auto& r : test) parts[key(r)].push_back(r);
    for (const auto& [k, rs] : parts) {
      std::vector<double> ms;
      for (const auto& r : rs) ms.push_back(measured_us(r, in.statistic));
      md << "| " << k << " | " << rs.size() << " | " << f(score(rs, in.prior, in.statistic).mape_pct, 1) << "% | "
         << f(score(rs, cal, in.statistic).mape_pct, 1) << "% | " << f(median(ms), 1) << " |\n";
    }
  };
  by("model", "model and dims", model_at_dims);
  by("group kind", "kind", [](const MeasurementRecord& r) { return r.kind; });
  // By measured time: a relative error is only as good as the timer. On the
  // development VM the clock advances in 10 ns steps and a read costs
  // 20-40 ns, so below 0.05 us (5 steps) it says more about the timer than
  // about the model. Reported, not filtered: every group counts above.
  by("measured time", "measured us", [&](const MeasurementRecord& r) {
    const double t = measured_us(r, in.statistic);
    return std::string(t < 0.05 ? "[0, 0.05)" : t < 0.1 ? "[0.05, 0.1)" : t < 1 ? "[0.1, 1)" : t < 10 ? "[1, 10)"
                       : t < 100 ? "[10, 100)" : "[100, inf)");
  });
  if (!in.loops.empty()) {
    md << "\n## Closed loop: search with the calibrated device\n\n"
       << "| model | strategy | kernels (prior → calibrated) | predicted us (each on its device) | measured us prior plan | measured us calibrated plan | change |\n"
       << "|---|---|---|---|---|---|---|\n";
    for (const auto& c : in.loops) {
      md << "| " << c.model << " | " << c.strategy << " | " << c.kernels_prior << " → " << c.kernels_calibrated << " | "
         << f(c.predicted_prior_us, 0) << " → " << f(c.predicted_calibrated_us, 0) << " | " << f(c.measured_prior_us, 0)
         << " (spread " << f(c.measured_prior_spread_pct, 0) << "%) | " << f(c.measured_calibrated_us, 0) << " (spread "
         << f(c.measured_calibrated_spread_pct, 0) << "%) | "
         << (c.plan_prior == c.plan_calibrated
                 ? std::string("same plan")
                 : f(100 * (c.measured_calibrated_us - c.measured_prior_us) / c.measured_prior_us, 1) + "%; " +
                       c.differences)
         << " |\n";
    }
  }
  md << "\n## Held-out groups\n\n| model | strategy | group | kind | level | contraction calls | measured us | before us | after us | error after |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < test.size(); ++i) {
    const auto& r = test[i];
    md << "| " << r.model << " | " << r.strategy << " | " << r.group << " | " << r.kind << " | "
       << memory_level(r.features.bytes_read + r.features.bytes_written, in.prior) << " | " << f(r.features.contraction_calls, 0)
       << " | " << f(meas[i], 1) << " | "
       << f(before[i], 1) << " | " << f(after[i], 1) << " | " << f(100 * (after[i] - meas[i]) / meas[i], 0) << "% |\n";
  }
  res.markdown = md.str();
  return res;
}

}  // namespace fuseplan
