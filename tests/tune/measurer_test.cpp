// tune's PlanMeasurer: runs a plan once per scope and partition (cached), with
// the caller's run options, so --repeat and --min-time reach every measurement.
#include <gtest/gtest.h>

#include "graph/import.h"
#include "support/stats.h"
#include "tune/measure.h"
#include "search/strategy.h"
#include "tune_util.h"

namespace fuseplan {
namespace {

TEST(TunePlanMeasurer, MinTimeReachesTheRunAndTheRunIsCachedPerPartition) {
  ImportOptions io;
  io.dims = {{"N", 4}};
  Graph g = import_onnx_text(test::kTinyModel, io, "tiny");
  Plan plan = search(g, load_device("host-cpu-reference"), "unfused");
  RunOptions o;
  o.repeat = 2;
  o.min_time_s = 0.05;
  PlanMeasurer m(o);
  const RunResult& r = m.measure(g, plan, "tiny@b4");
  ASSERT_FALSE(r.groups.empty());
  EXPECT_GT(r.groups.front().samples_us.size(), 2u);  // repeated past --repeat until 0.05 s
  m.measure(g, plan, "tiny@b4");
  EXPECT_EQ(m.runs(), 1);
  o.min_time_s = 0;
  PlanMeasurer exact(o);
  EXPECT_EQ(exact.measure(g, plan, "tiny@b4").groups.front().samples_us.size(), 2u);
}

// separate(): one series is faster only when its interquartile range lies
// wholly below the other's. a = {10, 11, 12, 13, 14}: p25 11, p75 13.
TEST(TuneSeparate, InterquartileRangesMustNotOverlap) {
  const std::vector<double> a = {14, 10, 12, 11, 13};
  EXPECT_DOUBLE_EQ(quantile(a, 0.25), 11);
  EXPECT_DOUBLE_EQ(quantile(a, 0.75), 13);
  EXPECT_DOUBLE_EQ(quantile({1, 2}, 0.5), 1.5);
  EXPECT_EQ(separate(a, {13.5, 14, 15, 16, 17}), Verdict::first_faster);   // b: p25 14 > 13
  EXPECT_EQ(separate({13.5, 14, 15, 16, 17}, a), Verdict::second_faster);
  EXPECT_EQ(separate(a, {12.5, 13, 15, 16, 17}), Verdict::tie);            // b: p25 13, not above 13
  EXPECT_EQ(separate(a, a), Verdict::tie);
  EXPECT_EQ(separate({1, 2}, {10, 11, 12}), Verdict::tie);                 // too few runs to tell
}

// duel(): fresh interleaved runs (never the cache), at least min_rounds
// each, at most max_rounds; a plan against itself is a tie unless the
// noise separates it, and the summary names both medians and the load.
TEST(TunePlanMeasurer, DuelRunsBothPlansInTurnAndReportsTheVerdict) {
  ImportOptions io;
  io.dims = {{"N", 4}};
  Graph g = import_onnx_text(test::kTinyModel, io, "tiny");
  Plan a = search(g, load_device("host-cpu-reference"), "unfused"), b = search(g, load_device("host-cpu-reference"), "cost");
  RunOptions o;
  o.repeat = 2;
  PlanMeasurer m(o);
  const Duel d = m.duel(g, a, b, 3, 4);
  EXPECT_GE(d.a_us.size(), 3u);
  EXPECT_LE(d.a_us.size(), 4u);
  EXPECT_EQ(d.a_us.size(), d.b_us.size());
  EXPECT_EQ(m.runs(), static_cast<int>(2 * d.a_us.size()));
  EXPECT_EQ(d.verdict, separate(d.a_us, d.b_us));
  for (double t : d.a_us) EXPECT_GT(t, 0);
  EXPECT_NE(d.summary().find("interleaved rounds"), std::string::npos) << d.summary();
  EXPECT_GE(d.load_before, 0);
}

// interleave(): every plan once per round, in order; min_rounds first, then
// rounds until `settled` says so, at most max_rounds.
TEST(TunePlanMeasurer, InterleaveRunsEveryPlanPerRoundUntilSettled) {
  ImportOptions io;
  io.dims = {{"N", 4}};
  Graph g = import_onnx_text(test::kTinyModel, io, "tiny");
  const DeviceSpec d = load_device("host-cpu-reference");
  Plan a = search(g, d, "unfused"), b = search(g, d, "cost"), c = search(g, d, "xla");
  RunOptions o;
  o.repeat = 1;
  PlanMeasurer m(o);
  int asked = 0;
  const Interleaved s = m.interleave(g, {&a, &b, &c}, 2, 5, [&](const Interleaved& x) {
    ++asked;
    return x.rounds() == 3;  // settled after the third round
  });
  ASSERT_EQ(s.us.size(), 3u);
  for (const auto& series : s.us) EXPECT_EQ(series.size(), 3u);
  EXPECT_EQ(asked, 2);  // asked after rounds 2 and 3, never before min_rounds
  EXPECT_EQ(m.runs(), 9);
  const Interleaved all = m.interleave(g, {&a, &b}, 1, 2);  // no predicate: max_rounds
  EXPECT_EQ(all.rounds(), 2);
  EXPECT_EQ(m.runs(), 13);
}

}  // namespace
}  // namespace fuseplan
