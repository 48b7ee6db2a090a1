// Files of a tune run (docs/tune.md): per batch size the plan JSON, its DOT
// and SVG and the Chrome trace of the measured kernels; for the run the
// summary, the diff and the dispatch table. All written atomically.
#pragma once

#include <string>
#include <vector>

#include "tune/tune.h"

namespace fuseplan {

/// plan-b<B>.json, plan-b<B>.dot, plan-b<B>.svg (when rendering and `dot`
/// is present), trace-b<B>.json (when measured). Returns the paths written.
/// The SVG is auxiliary: when `dot` fails, a stale plan-b<B>.svg is removed,
/// the reason goes to `*svg_error` (one line) and the rest is written; an
/// error writing any other file throws.
std::vector<std::string> write_batch_files(const std::string& dir, const BatchTune& b, bool render_svg,
                                           std::string* svg_error = nullptr);

/// summary.md, diff.md, dispatch.json over the finished batch sizes (and
/// device-calibrated.json when the device was calibrated). Returns the paths.
std::vector<std::string> write_run_reports(const std::string& dir, const TuneModel& model, const TuneOptions& opts,
                                           const std::vector<BatchTune>& done);

}  // namespace fuseplan
