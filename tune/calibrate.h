// Tune's recalibration step: measured groups become calibration samples
// (costmodel/calibrate.h) and one call fits the device to all of them.
#pragma once

#include <string>
#include <vector>

#include "costmodel/calibrate.h"
#include "exec/cpu_run.h"
#include "search/plan.h"

namespace fuseplan {

/// Appends one sample per measured group of `plan` (features priced on `d`).
void add_calibration_samples(const Graph& g, const Plan& plan, const RunResult& run, const DeviceSpec& d,
                             const std::string& tag, std::vector<CalibrationSample>& samples);

struct Recalibration {
  DeviceSpec device;   // the fitted device, or the prior when the fit was refused
  bool fitted = false;
  std::string note;    // one line: "recalibrated: fitted on N groups (...); on the K held-out groups MAPE A% -> B%", or why not
  std::vector<std::string> held;  // parameters kept at their prior because the samples did not identify them
};

/// Fits `prior` to the samples so far except every 4th (in order), which are
/// held out: the fit is kept only if its MAPE on them is below the prior's,
/// else the prior stays and the note says why ("rejected"). A parameter the
/// samples do not identify (DegenerateParameter) is held at its prior and the
/// fit repeated; any other refusal (fewer than 8 samples, too few
/// measurements) keeps the whole prior and says why.
Recalibration recalibrate(const DeviceSpec& prior, const std::vector<CalibrationSample>& samples);

}  // namespace fuseplan
