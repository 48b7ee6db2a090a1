// rank_plans(): the rank correlation of predicted against measured whole-plan
// times, the measured best, and the cost plan's verdict against it.
#include "tune/ranking.h"

#include <cmath>

#include <gtest/gtest.h>

#include "support/error.h"

namespace fuseplan {
namespace {

TEST(Ranking, AgreeingOrderIsSpearmanOneAndOursBest) {
  const Ranking r = rank_plans({{"unfused", 300, {310, 312, 309}},
                                {"tvm,xla", 200, {220, 221, 219}},
                                {"cost", 100, {150, 149, 151}}});
  EXPECT_EQ(r.plans, 3);
  EXPECT_DOUBLE_EQ(r.spearman, 1.0);
  EXPECT_EQ(r.predicted_best, 2);
  EXPECT_EQ(r.measured_best, 2);
  EXPECT_EQ(r.ours, 2);
  EXPECT_EQ(r.verdict, "best");
  EXPECT_DOUBLE_EQ(r.behind_pct, 0);
}

TEST(Ranking, OursBehindOrTiedByTheInterquartileRanges) {
  // Measured order reversed: predicted ranks 1,2,3 against measured 3,2,1.
  const Ranking behind = rank_plans({{"cost", 100, {330, 331, 332}},
                                     {"xla", 200, {320, 321, 322}},
                                     {"unfused", 300, {300, 301, 302}}});
  EXPECT_DOUBLE_EQ(behind.spearman, -1.0);
  EXPECT_EQ(behind.measured_best, 2);
  EXPECT_EQ(behind.verdict, "behind");
  EXPECT_NEAR(behind.behind_pct, (331.0 / 301.0 - 1) * 100, 1e-9);
  // Overlapping ranges: cost's median 1% above the best, a tie.
  const Ranking tied = rank_plans({{"unfused", 300, {300, 310, 320}}, {"cost", 100, {303, 304, 318}}});
  EXPECT_EQ(tied.measured_best, 1);  // median 304 < 310
  const Ranking tied2 = rank_plans({{"unfused", 300, {300, 302, 320}}, {"cost", 100, {298, 305, 318}}});
  EXPECT_EQ(tied2.measured_best, 0);
  EXPECT_EQ(tied2.verdict, "tied");
  EXPECT_NEAR(tied2.behind_pct, (305.0 / 302.0 - 1) * 100, 1e-9);
  EXPECT_TRUE(std::isnan(tied2.spearman));  // two plans: no rank correlation
}

// Regression: a plan listed before ours with the same median made ours
// "tied" at 0% behind (CI's compare --rounds on a tiny model, µs medians).
TEST(Ranking, AnEqualMedianIsOursBest) {
  const Ranking r = rank_plans({{"unfused", 300, {12, 13, 14}}, {"cost", 100, {11, 13, 15}}, {"xla", 200, {13, 13, 13}}});
  EXPECT_EQ(r.measured_best, 1);
  EXPECT_EQ(r.verdict, "best");
  EXPECT_DOUBLE_EQ(r.behind_pct, 0);
}

TEST(Ranking, NoCostPlanHasNoVerdict) {
  const Ranking r = rank_plans({{"unfused", 300, {300}}, {"xla", 100, {200}}, {"tvm", 200, {250}}});
  EXPECT_EQ(r.ours, -1);
  EXPECT_EQ(r.verdict, "");
  EXPECT_DOUBLE_EQ(r.spearman, 1.0);
  EXPECT_THROW(rank_plans({}), InternalError);
  EXPECT_THROW(rank_plans({{"cost", 1, {}}}), InternalError);
}

}  // namespace
}  // namespace fuseplan
