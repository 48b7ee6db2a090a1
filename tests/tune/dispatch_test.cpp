// Dispatch: identical plans of neighbouring tuned sizes merge; between
// different plans the boundary sits at the predicted crossover; sizes below
// the first tuned size get the first plan, beyond the last the last plan.
#include <gtest/gtest.h>

#include "tune/dispatch.h"

namespace fuseplan {
namespace {

// Plans named by their JSON text; predicted µs linear in the batch size:
// A is cheap to launch but scales badly, B the other way round, C in between.
double linear_model(const std::string& plan, int64_t b) {
  if (plan == "A") return 10 + 1.0 * b;   // A <= B while b <= 40
  if (plan == "B") return 30 + 0.5 * b;   // B < C while b < 200
  return 130 + 0.0 * b;                   // C
}

std::vector<DispatchInput> tuned(std::vector<std::pair<int64_t, std::string>> at) {
  std::vector<DispatchInput> out;
  for (auto& [b, p] : at) out.push_back({b, "plan-b" + std::to_string(b) + ".json", p, p});
  return out;
}

TEST(Dispatch, MergesIdenticalPlansAndSplitsAtThePredictedCrossover) {
  Dispatch d = build_dispatch(tuned({{1, "A"}, {8, "A"}, {64, "B"}}), linear_model);
  ASSERT_EQ(d.ranges.size(), 2u);
  EXPECT_EQ(d.ranges[0].min_batch, 1);
  EXPECT_EQ(d.ranges[0].max_batch, 39);  // at 40 B is predicted no slower (50 <= 50)
  EXPECT_EQ(d.ranges[0].tuned_at, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(d.ranges[0].boundary, "predicted crossover");
  EXPECT_EQ(d.ranges[1].min_batch, 40);
  EXPECT_EQ(d.ranges[1].max_batch, -1);
}

TEST(Dispatch, PicksThePlanForSizesBetweenAndBeyondTheTunedOnes) {
  Dispatch d = build_dispatch(tuned({{1, "A"}, {8, "A"}, {64, "B"}, {512, "C"}}), linear_model);
  ASSERT_EQ(d.ranges.size(), 3u);
  EXPECT_EQ(dispatch_pick(d, 1).plan, "plan-b1.json");
  EXPECT_EQ(dispatch_pick(d, 5).plan, "plan-b1.json");    // between two identical tuned plans
  EXPECT_EQ(dispatch_pick(d, 39).plan, "plan-b1.json");   // just before the A/B crossover
  EXPECT_EQ(dispatch_pick(d, 40).plan, "plan-b64.json");  // at it
  EXPECT_EQ(dispatch_pick(d, 199).plan, "plan-b64.json");  // B 129.5 < C 130
  EXPECT_EQ(dispatch_pick(d, 200).plan, "plan-b512.json"); // C 130 <= B 130
  EXPECT_EQ(dispatch_pick(d, 100000).plan, "plan-b512.json");  // beyond the largest: the last plan
}

TEST(Dispatch, BoundaryAtTheTunedSizeWhenPredictionsNeverCross) {
  // The measured choice at 64 (B) beats A although A is predicted faster everywhere.
  auto a_always = [](const std::string& p, int64_t b) { return p == "A" ? 1.0 * b : 2.0 * b; };
  Dispatch d = build_dispatch(tuned({{1, "A"}, {64, "B"}}), a_always);
  ASSERT_EQ(d.ranges.size(), 2u);
  EXPECT_EQ(d.ranges[0].max_batch, 63);
  EXPECT_EQ(d.ranges[0].boundary, "tuned size");
  EXPECT_EQ(dispatch_pick(d, 64).plan, "plan-b64.json");
}

TEST(Dispatch, RoundTripsThroughJson) {
  Dispatch d = build_dispatch(tuned({{1, "A"}, {64, "B"}}), linear_model);
  d.model_path = "m.onnxtxt";
  d.device = "host-cpu-reference";
  d.strategy = "cost";
  Dispatch back = dispatch_from_json(dispatch_to_json(d));
  EXPECT_EQ(dispatch_to_json(back), dispatch_to_json(d));
  EXPECT_EQ(dispatch_pick(back, 1000).plan, "plan-b64.json");
  EXPECT_THROW(dispatch_from_json("{\"schema\": \"other\"}"), Error);
}

}  // namespace
}  // namespace fuseplan
