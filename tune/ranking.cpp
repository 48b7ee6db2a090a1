#include "tune/ranking.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "support/error.h"
#include "support/stats.h"
#include "tune/measure.h"

namespace fuseplan {

namespace {
bool names(const std::string& list, const std::string& strategy) {
  std::istringstream in(list);
  for (std::string s; std::getline(in, s, ',');)
    if (s == strategy) return true;
  return false;
}
}  // namespace

Ranking rank_plans(const std::vector<RankedPlan>& plans, const std::string& ours) {
  FUSEPLAN_ASSERT(!plans.empty(), "no plans to rank");
  Ranking r;
  r.plans = static_cast<int>(plans.size());
  std::vector<double> pred, meas;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    FUSEPLAN_ASSERT(!plans[i].measured_us.empty(), "plan '" + plans[i].strategies + "' was not measured");
    pred.push_back(plans[i].predicted_us);
    meas.push_back(median(plans[i].measured_us));
    const int k = static_cast<int>(i);
    if (r.predicted_best < 0 || pred[i] < pred[r.predicted_best]) r.predicted_best = k;
    if (r.measured_best < 0 || meas[i] < meas[r.measured_best]) r.measured_best = k;
    if (names(plans[i].strategies, ours)) r.ours = k;
  }
  // No plan strictly faster than ours: ours is the best (an equal median,
  // common at microsecond resolution, is not a loss).
  if (r.ours >= 0 && meas[r.ours] == meas[r.measured_best]) r.measured_best = r.ours;
  r.spearman = plans.size() >= 3 ? spearman(pred, meas) : std::numeric_limits<double>::quiet_NaN();
  if (r.ours >= 0) {
    r.behind_pct = (meas[r.ours] / meas[r.measured_best] - 1) * 100;
    r.verdict = r.ours == r.measured_best ? "best"
                : separate(plans[r.ours].measured_us, plans[r.measured_best].measured_us) == Verdict::tie ? "tied"
                                                                                                          : "behind";
  }
  return r;
}

}  // namespace fuseplan
