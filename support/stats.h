// Small statistics shared by the profilers, the calibration and the accuracy
// report: the median of repeated timings, and the two scores the cost model
// is judged by (docs/calibration.md).
#pragma once

#include <string>
#include <vector>

namespace fuseplan {

/// Median of v (the mean of the two middle values for an even count); 0 for
/// an empty v.
double median(std::vector<double> v);
/// The q-quantile of v (0 <= q <= 1), linear between order statistics
/// (numpy's default); 0 for an empty v.
double quantile(std::vector<double> v, double q);
/// The machine's load averages over 1, 5 and 15 minutes as /proc/loadavg
/// prints them ("0.41 0.78 1.02"; "" where it cannot be read), and the
/// 1-minute one as a number (-1 where it cannot be read): every timing is
/// reported with the load it ran under.
std::string load_averages();
double load_average_1min();
/// Mean absolute percentage error (%) of predicted against measured, over the
/// first min(sizes) pairs; 0 for none. measured values must be nonzero.
double mape_pct(const std::vector<double>& predicted, const std::vector<double>& measured);
/// Spearman rank correlation (average ranks for ties); 0 for fewer than 2 points.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace fuseplan
