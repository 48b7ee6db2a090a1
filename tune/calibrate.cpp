#include "tune/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "support/stats.h"

namespace fuseplan {

void add_calibration_samples(const Graph& g, const Plan& plan, const RunResult& run, const DeviceSpec& d,
                             const std::string& tag, std::vector<CalibrationSample>& samples) {
  for (const auto& gt : run.groups) {
    if (gt.group < 0 || static_cast<std::size_t>(gt.group) >= plan.groups.size() || gt.measured_us <= 0) continue;
    samples.push_back({cost_features(g, plan.groups[gt.group], d), gt.measured_us,
                       tag + "#g" + std::to_string(gt.group)});
  }
}

namespace {
// MAPE (%) of `d`'s predictions over `samples`.
double mape_on(const std::vector<CalibrationSample>& samples, const DeviceSpec& d) {
  std::vector<double> p, m;
  for (const auto& x : samples) {
    p.push_back(predict_us(x.features, d));
    m.push_back(x.measured_us);
  }
  return mape_pct(p, m);
}
}  // namespace

Recalibration recalibrate(const DeviceSpec& prior, const std::vector<CalibrationSample>& samples) {
  Recalibration r{prior, false, "", {}};
  // Fewer measured kernels than this cannot support any fitted parameter
  // (CalibrationOptions::min_support per parameter, plus residual degrees of
  // freedom) and a held-out check; tune waits for more instead of asking for
  // a degenerate fit.
  constexpr std::size_t kMinSamples = 8;
  if (samples.size() < kMinSamples) {
    r.note = "recalibration deferred, prior kept: " + std::to_string(samples.size()) + " measured kernels so far (need " +
             std::to_string(kMinSamples) + ")";
    return r;
  }
  // Every kHoldOutEvery-th sample (in measurement order, so every plan and
  // batch size measured so far contributes) is held out: the fit is kept
  // only if it predicts those better than the prior does.
  constexpr std::size_t kHoldOutEvery = 4;
  std::vector<CalibrationSample> fit, held_out;
  for (std::size_t i = 0; i < samples.size(); ++i)
    (i % kHoldOutEvery == kHoldOutEvery - 1 ? held_out : fit).push_back(samples[i]);
  // A parameter these measurements do not identify (e.g. compute efficiency
  // when every measured group is memory-bound) keeps its prior and the rest
  // is refitted, as `fuseplan calibrate --hold P` would; each retry holds one
  // more parameter, so the loop ends.
  CalibrationOptions o;
  for (;;) {
    try {
      CalibrationResult c = calibrate(prior, fit, o);
      const double before = mape_on(held_out, prior), after = mape_on(held_out, c.device);
      char buf[240];
      std::snprintf(buf, sizeof buf,
                    "fitted on %d groups (rms relative residual %.1f%%); on the %zu held-out groups MAPE %.1f%% -> %.1f%%",
                    c.measurements, 100 * c.rms_relative_residual, held_out.size(), before, after);
      if (!(after < before)) {
        r.note = std::string("recalibration rejected, prior kept: it predicts the held-out groups no better; ") + buf;
        return r;
      }
      r.device = c.device;
      r.fitted = true;
      r.note = std::string("recalibrated: ") + buf;
      if (!o.hold.empty()) {
        r.note += "; held at prior (not identified by these kernels):";
        for (const auto& h : o.hold) r.note += " " + h;
      }
      r.held = o.hold;
      return r;
    } catch (const DegenerateParameter& e) {
      if (std::find(o.hold.begin(), o.hold.end(), e.parameter) != o.hold.end()) {
        r.note = std::string("recalibration refused, prior kept: ") + e.what();
        return r;
      }
      o.hold.push_back(e.parameter);
    } catch (const Error& e) {
      r.note = std::string("recalibration refused, prior kept: ") + e.what();
      return r;
    }
  }
}

}  // namespace fuseplan
