// Calibration: fit a device's effective cost-model parameters to measured
// group times by (non-negative, relative-error weighted) least squares. The
// parameters and their design-matrix columns come from the table of cost
// terms (costmodel/terms.h); a sample is priced with the same price().
// Regime assignment and the refusal rules: docs/calibration.md.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "costmodel/features.h"
#include "costmodel/terms.h"
#include "support/error.h"

namespace fuseplan {

/// One measured group.
struct CalibrationSample {
  CostFeatures features;
  double measured_us = 0;  // median of repetitions
  std::string tag;         // e.g. "model#plan#group" (error messages)
};

/// One fitted (or held) parameter in the device's own units.
struct FittedParameter {
  std::string name;        // "launch_us", "caches[L2].bw_GBps", "e_contraction", ...
  double prior = 0;        // value in the input device
  double value = 0;        // fitted value (= prior when held)
  double std_error = 0;    // from the residual variance and (JᵀJ)⁻¹ (delta method); 0 when held
  int support = 0;         // measurements whose regime exercises it
  bool held = false;       // not fitted: too little support, or asked to hold
  std::string note;        // why held, or "at bound"
};

struct CalibrationOptions {
  int min_support = 3;       // measurements a parameter needs to be fitted (else held at its prior)
  int max_iterations = 30;   // regime re-assignment rounds
  double max_condition = 1e10;  // of the column-scaled normal matrix; above = rank-deficient
  double max_relative_se = 0.5;  // a fitted parameter less certain than this is unidentifiable
  std::vector<std::string> hold; // parameter names kept at their prior (e.g. "caches[L1].bw_GBps")
};

struct CalibrationResult {
  DeviceSpec device;                      // the calibrated device (calibrated = true, sources updated)
  std::vector<FittedParameter> parameters;
  int measurements = 0;
  int iterations = 0;
  bool converged = true;                  // false: regimes still alternated after max_iterations (best round kept)
  int memory_bound = 0, compute_bound = 0;  // regimes at convergence
  double rms_relative_residual = 0;       // sqrt(RSS / n) of (pred - meas) / meas
  double overlap = 0;                     // DeviceSpec::overlap of the fit (a grid value, or the prior's when held)
};

/// A fit refused because of one parameter the measurements do not identify
/// (rank-deficient column, estimate at its bound 0, or standard error above
/// max_relative_se); `parameter` names it as CalibrationOptions::hold does.
class DegenerateParameter : public Error {
 public:
  DegenerateParameter(const std::string& what, std::string parameter) : Error(what), parameter(std::move(parameter)) {}
  std::string parameter;
};

/// The names of the parameters calibrate() fits on `d` (what
/// CalibrationOptions::hold may name): "launch_us", "caches[L1].bw_GBps", ...
/// calibrate() ignores other hold names (a list may span CPU and GPU
/// devices); the CLI's --hold refuses them against this list.
std::vector<std::string> calibration_parameter_names(const DeviceSpec& d);

/// The name of the device calibrate() fits from a prior named `name`:
/// "<name>-calibrated" (a calibrated prior keeps its name).
std::string calibrated_name(const std::string& name);
/// `name` without a trailing "-calibrated": the device it was fitted from.
std::string uncalibrated_name(const std::string& name);

/// Fits `prior`'s effective parameters to the samples. Parameters no
/// measurement exercises (support < min_support) or named in `hold` keep
/// their prior. Throws Error (one line naming the cause or the parameter)
/// when the fit is degenerate: too few measurements, a rank-deficient
/// design, a parameter estimated at its physical bound 0 (infinite bandwidth
/// or throughput) or with a standard error above max_relative_se of its value
/// (those three throw DegenerateParameter).
CalibrationResult calibrate(const DeviceSpec& prior, const std::vector<CalibrationSample>& samples,
                            const CalibrationOptions& o = {});

}  // namespace fuseplan
