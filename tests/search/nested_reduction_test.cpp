// Nested reductions (search/nested_reduction.h): a reduction of a reduction
// whose inner rows lie inside one output element of the outer one is one
// kernel, priced as one pass over the input; every other pair of reductions
// of different rows is still refused with reduction_barrier.
#include <gtest/gtest.h>

#include <algorithm>

#include "costmodel/device.h"
#include "costmodel/features.h"
#include "emit/plan_json.h"
#include "graph/import.h"
#include "search/legality.h"
#include "search/nested_reduction.h"
#include "search/strategy.h"

namespace fuseplan {
namespace {

Graph text(const std::string& body) {
  return import_onnx_text("<ir_version: 8, opset_import: [\"\" : 17]>\n" + body, {}, "t");
}

const DeviceSpec& cpu() {
  static DeviceSpec d = load_device("host-cpu-reference");
  return d;
}

const DeviceSpec& h100() {
  static DeviceSpec d = load_device("h100-sxm");
  return d;
}

std::vector<NodeId> ids(const Graph& g, std::initializer_list<const char*> names) {
  std::vector<NodeId> v;
  for (auto n : names) v.push_back(g.at(n));
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<NodeId> sorted(std::vector<NodeId> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// x[8, 16, 32] -> ReduceSum over the last axis -> ReduceMax over the next.
const char* kSumThenMax =
    "t (float[8, 16, 32] x) => (float[8] y) { ax = Constant<value = int64[1] {-1}>()\n"
    " s = ReduceSum<keepdims = 0>(x, ax)\n y = ReduceMax<axes = [-1], keepdims = 0>(s) }";

TEST(NestedReductions, SumOverTheLastAxisThenMaxOverTheNextIsLegal) {
  Graph g = text(kSumThenMax);
  const FusionDecision d = can_merge_vertical(g, ids(g, {"s"}), ids(g, {"y"}), cpu());
  EXPECT_TRUE(d.ok()) << d.reason;
  EXPECT_EQ(d.blocker, Blocker::none);
  ReductionNest nest;
  ASSERT_TRUE(can_nest_reductions(g, ids(g, {"s", "y"}), &nest).ok());
  EXPECT_EQ(nest.chain, (std::vector<NodeId>{g.at("s"), g.at("y")}));
  EXPECT_EQ(nest.inner, std::vector<NodeId>{g.at("s")});
}

TEST(NestedReductions, CostXlaAndInductorPutBothReductionsInOneKernel) {
  Graph g = text(kSumThenMax);
  for (const DeviceSpec* d : {&cpu(), &h100()})
    for (const char* strategy : {"cost", "xla", "inductor"}) {
      Plan p = search(g, *d, strategy);
      ASSERT_EQ(p.groups.size(), 1u) << strategy << " on " << d->name;
      EXPECT_EQ(sorted(p.groups[0].nodes), ids(g, {"s", "y"})) << strategy;
      EXPECT_EQ(p.groups[0].kind, GroupKind::reduction) << strategy;
      EXPECT_EQ(p.groups[0].materialised, std::vector<NodeId>{g.at("y")}) << strategy;
    }
}

TEST(NestedReductions, FusedGroupReadsTheInputOnceWritesTheOuterResultAndKeepsItsFlops) {
  Graph g = text(kSumThenMax);
  Plan p = search(g, cpu(), "cost");
  ASSERT_EQ(p.groups.size(), 1u);
  const CostFeatures f = cost_features(g, p.groups[0], cpu());
  EXPECT_EQ(f.bytes_read, 8 * 16 * 32 * 4);  // x, once
  EXPECT_EQ(f.bytes_written, 8 * 4);         // y; the sums stay in registers
  EXPECT_EQ(p.costs[0].bytes_read, 8 * 16 * 32 * 4);
  EXPECT_EQ(p.costs[0].bytes_written, 8 * 4);
  // FLOPs and serial steps are those of the two reductions apart.
  Plan u = search(g, cpu(), "unfused");
  ASSERT_EQ(u.groups.size(), 2u);
  CostFeatures sum;
  for (const Group& grp : u.groups) {
    const CostFeatures x = cost_features(g, grp, cpu());
    sum.flops_other += x.flops_other;
    sum.reduction_steps += x.reduction_steps;
    sum.select_steps += x.select_steps;
  }
  EXPECT_EQ(f.flops_other, 8 * 16 * 32 + 8 * 16);  // one op per reduced element
  EXPECT_EQ(f.flops_other, sum.flops_other);
  EXPECT_EQ(f.reduction_steps, sum.reduction_steps);
  EXPECT_EQ(f.select_steps, 8 * (16 / 16 + 4));  // rows of 16 in 16 lanes (graph/op_attrs.h reduce_lanes), 4 fold steps
  EXPECT_EQ(f.select_steps, sum.select_steps);
  EXPECT_LT(p.totals.predicted_us, u.totals.predicted_us);
  // The unfused plan's log keeps the edge legal, no longer a barrier.
  for (const DecisionRecord& r : u.decisions)
    if (r.producer == "s" && r.consumer == "y") {
      EXPECT_EQ(r.action, Action::kept);
      EXPECT_NE(r.blocker, Blocker::reduction_barrier) << r.reason;
      EXPECT_GT(r.delta_us, 0);
    }
}

TEST(NestedReductions, AnIntermediateReadOutsideTheGroupIsWrittenByTheFusedKernel) {
  Graph g = text(
      "t (float[8, 16, 32] x) => (float[8, 16] s, float[8] y) { ax = Constant<value = int64[1] {-1}>()\n"
      " s = ReduceSum<keepdims = 0>(x, ax)\n y = ReduceMax<axes = [-1], keepdims = 0>(s) }");
  Plan p = search(g, cpu(), "cost");
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(sorted(p.groups[0].materialised), ids(g, {"s", "y"}));
  const CostFeatures f = cost_features(g, p.groups[0], cpu());
  EXPECT_EQ(f.bytes_read, 8 * 16 * 32 * 4);
  EXPECT_EQ(f.bytes_written, 8 * 16 * 4 + 8 * 4);
}

TEST(NestedReductions, MeanKeepdimsThenSumOverTheNextAxisWithPrologueAndEpilogueIsOneKernel) {
  Graph g = text(
      "t (float[8, 16, 32] x) => (float[8, 1, 1] y) { one = Constant<value = int64[1] {1}>()\n"
      " sq = Mul(x, x)\n m = ReduceMean<axes = [-1], keepdims = 1>(sq)\n r = Sqrt(m)\n"
      " s = ReduceSum<keepdims = 1>(r, one)\n y = Neg(s) }");
  ReductionNest nest;
  ASSERT_TRUE(can_nest_reductions(g, ids(g, {"sq", "m", "r", "s", "y"}), &nest).ok());
  EXPECT_EQ(nest.chain, (std::vector<NodeId>{g.at("m"), g.at("s")}));
  EXPECT_EQ(sorted(nest.inner), ids(g, {"m", "r"}));
  Plan p = search(g, cpu(), "cost");
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(sorted(p.groups[0].nodes), ids(g, {"sq", "m", "r", "s", "y"}));
  EXPECT_EQ(p.costs[0].bytes_read, 8 * 16 * 32 * 4);
  EXPECT_EQ(p.costs[0].bytes_written, 8 * 4);
}

TEST(NestedReductions, ThreeLevelsNest) {
  Graph g = text(
      "t (float[4, 6, 8, 16] x) => (float[4] y) { three = Constant<value = int64[1] {3}>()\n"
      " a = ReduceSum<keepdims = 0>(x, three)\n"
      " b = ReduceMax<axes = [2], keepdims = 0>(a)\n y = ReduceMean<axes = [1], keepdims = 0>(b) }");
  ReductionNest nest;
  ASSERT_TRUE(can_nest_reductions(g, ids(g, {"a", "b", "y"}), &nest).ok());
  EXPECT_EQ(nest.chain, (std::vector<NodeId>{g.at("a"), g.at("b"), g.at("y")}));
  EXPECT_TRUE(can_merge_vertical(g, ids(g, {"a", "b"}), ids(g, {"y"}), cpu()).ok());
}

TEST(NestedReductions, SiblingReductionsOfDifferentRowsAreStillABarrier) {
  Graph g = text(
      "t (float[8, 16, 32] x) => (float[8, 16] a, float[8, 32] b) { p = Exp(x)\n"
      " ax = Constant<value = int64[1] {-1}>()\n a = ReduceSum<keepdims = 0>(p, ax)\n"
      " b = ReduceMax<axes = [1], keepdims = 0>(p) }");
  const FusionDecision d = can_merge_vertical(g, ids(g, {"p", "a"}), ids(g, {"b"}), cpu());
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.blocker, Blocker::reduction_barrier);
  EXPECT_NE(d.reason.find("reductions 'a' and 'b' reduce different rows and neither reads the other's result"),
            std::string::npos)
      << d.reason;
}

TEST(NestedReductions, RowsThatDoNotLieContiguouslyInsideTheOuterOutputAreABarrier) {
  // The sum reduces axis 1 of x; the max then axis 2 of x: a row of the sum
  // strides across the max's rows.
  Graph g = text(
      "t (float[8, 16, 32] x) => (float[8] y) { one = Constant<value = int64[1] {1}>()\n"
      " s = ReduceSum<keepdims = 0>(x, one)\n"
      " y = ReduceMax<axes = [1], keepdims = 0>(s) }");
  const FusionDecision d = can_merge_vertical(g, ids(g, {"s"}), ids(g, {"y"}), cpu());
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.blocker, Blocker::reduction_barrier);
  EXPECT_NE(d.reason.find("'s' -> 'y': 's' reduces axes [1] of [8, 16, 32] and 'y' axes [1] of its result [8, 32]: "
                          "the rows of 's' do not lie contiguously inside one output element of 'y'"),
            std::string::npos)
      << d.reason;
}

TEST(NestedReductions, AReductionReadBackAtTheRowShapeDoesNotNest) {
  // m is broadcast back over x's rows (a softmax's max) before the sum over
  // another axis: the rows differ and m's result is not read per element.
  Graph g = text(
      "t (float[8, 16, 32] x) => (float[8, 32] y) { m = ReduceMax<axes = [-1], keepdims = 1>(x)\n"
      " d = Sub(x, m)\n one = Constant<value = int64[1] {1}>()\n y = ReduceSum<keepdims = 0>(d, one) }");
  const FusionDecision dec = can_merge_vertical(g, ids(g, {"m"}), ids(g, {"d", "y"}), cpu());
  EXPECT_FALSE(dec.ok());
  EXPECT_EQ(dec.blocker, Blocker::reduction_barrier);
  EXPECT_NE(dec.reason.find("'d' (Sub f32[8,16,32]) reads the result of 'm' f32[8,16,1] other than per element at its "
                            "shape, so 'm' cannot nest in 'y', which reduces different rows"),
            std::string::npos)
      << dec.reason;
}

TEST(NestedReductions, TheOuterResultReadBackAtALargerShapeIsABarrier) {
  Graph g = text(
      "t (float[8, 16, 32] x, float[8, 4] z) => (float[8, 4] y) { ax = Constant<value = int64[1] {-1}>()\n"
      " s = ReduceSum<keepdims = 0>(x, ax)\n"
      " m = ReduceMax<axes = [-1], keepdims = 1>(s)\n y = Add(m, z) }");
  EXPECT_TRUE(can_merge_vertical(g, ids(g, {"s"}), ids(g, {"m"}), cpu()).ok());
  const FusionDecision d = can_merge_vertical(g, ids(g, {"s"}), ids(g, {"m", "y"}), cpu());
  EXPECT_EQ(d.blocker, Blocker::reduction_barrier);
  EXPECT_NE(d.reason.find("'y' reads the result of nested reduction 'm' back at a larger shape (32 > 8 elements)"),
            std::string::npos)
      << d.reason;
}

TEST(NestedReductions, TwoReductionsNestedInOneAreABarrier) {
  Graph g = text(
      "t (float[8, 16, 32] x) => (float[8] y) { ax = Constant<value = int64[1] {-1}>()\n"
      " a = ReduceSum<keepdims = 0>(x, ax)\n"
      " b = ReduceMax<axes = [-1], keepdims = 0>(x)\n r = Div(a, b)\n y = ReduceMax<axes = [-1], keepdims = 0>(r) }");
  const FusionDecision d = can_merge_vertical(g, ids(g, {"a", "b", "r"}), ids(g, {"y"}), cpu());
  EXPECT_EQ(d.blocker, Blocker::reduction_barrier);
  EXPECT_NE(d.reason.find("'y' reads 2 reductions of rows different from its own: one reduction nests per level"),
            std::string::npos)
      << d.reason;
}

TEST(NestedReductions, PlanWithANestedGroupLoadsBackIdentically) {
  Graph g = text(kSumThenMax);
  Plan p = search(g, cpu(), "cost");
  p.totals.search_ms = 0;
  const std::string json = plan_to_json(g, p);
  Plan back = load_plan(json, g, cpu());
  ASSERT_EQ(back.groups.size(), 1u);
  EXPECT_EQ(sorted(back.groups[0].nodes), ids(g, {"s", "y"}));
  back.totals.search_ms = 0;
  EXPECT_EQ(plan_to_json(g, back), json);
}

}  // namespace
}  // namespace fuseplan
