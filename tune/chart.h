// Bar chart of measured times (one cluster per model × batch, one bar per
// strategy) rendered to SVG by gnuplot (run by argument vector, no shell).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fuseplan {

struct ChartCluster {
  std::string label;                        // e.g. "resnet50_bottleneck b=8"
  std::map<std::string, double> values_us;  // strategy -> measured µs (absent = not measured)
};

/// Writes `svg_path` (atomically: gnuplot writes a temp file that is renamed;
/// its script and data go to a temp directory removed afterwards). `series`
/// orders the bars. Throws Error when gnuplot is missing or fails.
void write_bar_chart_svg(const std::string& svg_path, const std::string& title, const std::vector<std::string>& series,
                         const std::vector<ChartCluster>& clusters);

}  // namespace fuseplan
