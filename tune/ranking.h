// Whole plans ranked as they run (issue 32 item 6): for one model × batch,
// every distinct plan's predicted time against its measured times, the rank
// correlation between the two, and whether the cost model's own plan
// measured best or within the noise of the best.
#pragma once

#include <string>
#include <vector>

namespace fuseplan {

/// One distinct partition of a model × batch. `strategies` names every
/// strategy that produced it ("tvm,xla"); predicted_us is the cost model's
/// whole-plan time (µs); measured_us its whole-plan times from interleaved
/// rounds (µs, PlanMeasurer::interleave).
struct RankedPlan {
  std::string strategies;
  double predicted_us = 0;
  std::vector<double> measured_us;
};

/// The ranking of one model × batch.
struct Ranking {
  int plans = 0;                // distinct plans ranked
  double spearman = 0;          // predicted vs measured medians; NaN with fewer than 3 plans
  int predicted_best = -1;      // index of the lowest predicted time
  int measured_best = -1;       // index of the lowest measured median (ours on an equal median)
  int ours = -1;                // the plan `ours` produced, -1 if none did
  /// Ours against the measured best: "best" (it is), "tied" (separate()
  /// cannot tell them apart: interquartile ranges overlap) or "behind".
  std::string verdict;
  double behind_pct = 0;        // (median(ours) / median(best) − 1) · 100, ≥ 0
};

/// Ranks `plans` (at least one, each with ≥ 1 measured time). `ours` is the
/// strategy whose plan is judged (default the cost model's). An empty list
/// or an unmeasured plan is the caller's bug: InternalError.
Ranking rank_plans(const std::vector<RankedPlan>& plans, const std::string& ours = "cost");

}  // namespace fuseplan
