// Group helpers: kind names, membership, external inputs, kind inference.
#include <gtest/gtest.h>

#include "costmodel/group.h"
#include "tests/costmodel/cost_test_util.h"

namespace fuseplan {
namespace {

using testing::GraphBuilder;

TEST(GroupKinds, NamesRoundTripAndUnknownThrows) {
  for (GroupKind k : {GroupKind::single, GroupKind::loop, GroupKind::reduction, GroupKind::contraction,
                      GroupKind::horizontal, GroupKind::multipass})
    EXPECT_EQ(group_kind_from_string(to_string(k)), k);
  EXPECT_EQ(to_string(GroupKind::multipass), "multipass");
  EXPECT_THROW(group_kind_from_string("vertical"), Error);
}

struct Nets {
  Graph g;
  NodeId x, bias, sq, t, y, s, r, mm;
};

Nets build() {
  GraphBuilder b;
  Nets n;
  n.x = b.input("x", {64, 32});
  n.bias = b.weight("bias", {32});
  n.sq = b.op("sq", "Mul", OpClass::elementwise, {64, 32}, {n.x, n.x});
  n.t = b.op("t", "Add", OpClass::broadcast, {64, 32}, {n.sq, n.bias});
  n.y = b.op("y", "Relu", OpClass::elementwise, {64, 32}, {n.t});
  n.s = b.op("s", "ReduceSum", OpClass::reduction, {64, 1}, {n.y}, {{"axes", std::vector<int64_t>{1}}});
  n.r = b.op("r", "Sqrt", OpClass::elementwise, {64, 1}, {n.s});
  NodeId w = b.weight("w", {1, 8});
  n.mm = b.op("mm", "MatMul", OpClass::contraction, {64, 8}, {n.r, w});
  n.g = b.finish({n.mm});
  return n;
}

TEST(GroupInputs, DistinctExternalProducersAscending) {
  Nets n = build();
  Group grp;
  grp.nodes = {n.sq, n.t, n.y};
  EXPECT_TRUE(grp.contains(n.t));
  EXPECT_FALSE(grp.contains(n.s));
  EXPECT_EQ(group_inputs(n.g, grp), (std::vector<NodeId>{n.x, n.bias}));  // x read twice counts once
  grp.nodes = {n.s, n.r};
  EXPECT_EQ(group_inputs(n.g, grp), (std::vector<NodeId>{n.y}));
}

TEST(GroupKinds, InferredFromTheNodes) {
  Nets n = build();
  EXPECT_EQ(infer_group_kind(n.g, {n.t}), GroupKind::single);
  EXPECT_EQ(infer_group_kind(n.g, {n.sq, n.t, n.y}), GroupKind::loop);
  EXPECT_EQ(infer_group_kind(n.g, {n.y, n.s, n.r}), GroupKind::reduction);
  EXPECT_EQ(infer_group_kind(n.g, {n.r, n.mm}), GroupKind::contraction);
}

TEST(GroupKinds, SoftmaxAndLayerNormAreMultipass) {
  GraphBuilder b;
  std::map<std::string, AttrValue> ax{{"axes", std::vector<int64_t>{1}}};
  NodeId x = b.input("x", {8, 16});
  // softmax
  NodeId mx = b.op("max", "ReduceMax", OpClass::reduction, {8, 1}, {x}, ax);
  NodeId sub = b.op("sub", "Sub", OpClass::broadcast, {8, 16}, {x, mx});
  NodeId ex = b.op("exp", "Exp", OpClass::elementwise, {8, 16}, {sub});
  NodeId sum = b.op("sum", "ReduceSum", OpClass::reduction, {8, 1}, {ex}, ax);
  NodeId y = b.op("y", "Div", OpClass::broadcast, {8, 16}, {ex, sum});
  // layer norm (without the mean: d = x - c, var of d², norm = d / sqrt(var + eps))
  NodeId eps = b.weight("eps", {});
  NodeId d = b.op("d", "Sub", OpClass::elementwise, {8, 16}, {x, x});
  NodeId dd = b.op("dd", "Mul", OpClass::elementwise, {8, 16}, {d, d});
  NodeId var = b.op("var", "ReduceMean", OpClass::reduction, {8, 1}, {dd}, ax);
  NodeId ve = b.op("ve", "Add", OpClass::broadcast, {8, 1}, {var, eps});
  NodeId sd = b.op("sd", "Sqrt", OpClass::elementwise, {8, 1}, {ve});
  NodeId nm = b.op("nm", "Div", OpClass::broadcast, {8, 16}, {d, sd});
  Graph g = b.finish({y, nm});
  EXPECT_EQ(infer_group_kind(g, {mx, sub, ex, sum, y}), GroupKind::multipass);
  EXPECT_EQ(infer_group_kind(g, {ex, sum, y}), GroupKind::multipass);
  EXPECT_EQ(infer_group_kind(g, {d, dd, var, ve, sd, nm}), GroupKind::multipass);
  EXPECT_EQ(infer_group_kind(g, {dd, var, ve, sd}), GroupKind::reduction);  // epilogue only
}

}  // namespace
}  // namespace fuseplan
