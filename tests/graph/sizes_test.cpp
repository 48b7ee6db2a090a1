// Graph::numel / Graph::bytes: the per-node sizes finalize() caches for the
// search equal the shapes' own counts, and an overflowing shape still throws.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "graph/graph.h"
#include "graph/synthetic.h"

namespace fuseplan {
namespace {

TEST(GraphSizes, CachedCountsEqualTheShapes) {
  for (SyntheticKind k : {SyntheticKind::transformer, SyntheticKind::conv}) {
    const Graph g = synthetic_graph(k, 1000);
    for (NodeId n = 0; n < g.size(); ++n) {
      ASSERT_EQ(g.numel(n), g.node(n).out.numel()) << g.node(n).name;
      ASSERT_EQ(g.bytes(n), g.node(n).out.bytes()) << g.node(n).name;
    }
  }
}

TEST(GraphSizes, HandComputedAndOverflowing) {
  Graph g;
  Primitive x;
  x.name = "x";
  x.op = "Input";
  x.op_class = OpClass::source;
  x.source = SourceKind::graph_input;
  x.out = {DType::f32, {4, 3, 5}};
  const NodeId a = g.add_node(x);
  Primitive huge = x;
  huge.name = "huge";
  huge.out = {DType::f32, {int64_t{1} << 40, int64_t{1} << 40}};  // 2^80 elements
  const NodeId b = g.add_node(huge);
  Primitive wide = x;
  wide.name = "wide";
  wide.out = {DType::f64, {int64_t{1} << 61}};  // fits int64, its bytes (2^64) do not
  const NodeId c = g.add_node(wide);
  g.finalize();
  EXPECT_EQ(g.numel(a), 60);
  EXPECT_EQ(g.bytes(a), 240);
  EXPECT_THROW(g.numel(b), Error);
  EXPECT_THROW(g.bytes(b), Error);
  EXPECT_EQ(g.numel(c), int64_t{1} << 61);
  EXPECT_THROW(g.bytes(c), Error);
}

}  // namespace
}  // namespace fuseplan

namespace fuseplan {
namespace {

Primitive prim(const std::string& name, const std::string& op, OpClass c, std::vector<int64_t> shape) {
  Primitive p;
  p.name = name;
  p.op = op;
  p.op_class = c;
  if (c == OpClass::source) p.source = SourceKind::graph_input;
  p.out = {DType::f32, std::move(shape)};
  return p;
}

// The contiguous edge arrays list every edge as Boost does (insertion
// order, a repeated read twice, with its operand index), the op-class array
// follows node_mut() until the next finalize(), and an edited graph refuses.
// sq = sub * sub, sub = x - y, not finalized; y's edge is added first.
struct SubSquare {
  Graph g;
  NodeId x, y, sub, sq;
  SubSquare() {
    x = g.add_node(prim("x", "Input", OpClass::source, {8}));
    y = g.add_node(prim("y", "Input", OpClass::source, {8}));
    sub = g.add_node(prim("sub", "Sub", OpClass::elementwise, {8}));
    sq = g.add_node(prim("sq", "Mul", OpClass::elementwise, {8}));
    g.add_use(y, sub, 1);  // added out of operand order on purpose
    g.add_use(x, sub, 0);
    g.add_use(sub, sq, 0);
    g.add_use(sub, sq, 1);  // sub read twice
  }
};

TEST(GraphAdjacency, EdgeArraysListEveryEdgeWithItsOperand) {
  SubSquare s;
  Graph& g = s.g;
  const NodeId x = s.x, y = s.y, sub = s.sub, sq = s.sq;
  EXPECT_THROW(g.in_edges(sub), Error);
  g.finalize();
  auto in = g.in_edges(sub);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].src, y);
  EXPECT_EQ(in[0].operand, 1);
  EXPECT_EQ(in[1].src, x);
  EXPECT_EQ(in[1].operand, 0);
  auto out = g.out_edges(sub);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dst, sq);
  EXPECT_EQ(out[0].operand, 0);
  EXPECT_EQ(out[1].dst, sq);
  EXPECT_EQ(out[1].operand, 1);
  EXPECT_TRUE(g.in_edges(x).empty());
  EXPECT_TRUE(g.out_edges(sq).empty());
  EXPECT_EQ(g.op_class(sq), OpClass::elementwise);
  g.node_mut(sq).op_class = OpClass::reduction;
  EXPECT_EQ(g.op_class(sq), OpClass::reduction);
  g.add_use(x, sq, 2);
  EXPECT_THROW(g.out_edges(x), Error);
}

// operands()/consumers() are cached by finalize(): the cache follows the
// edges (operand order, repeated reads, distinct consumers), a graph edited
// after finalize() refuses to answer from a stale cache, and revision()
// changes with every finalize() and drops to 0 on edits.
TEST(GraphAdjacency, CachedOperandsAndConsumersFollowTheEdges) {
  SubSquare s;
  Graph& g = s.g;
  const NodeId x = s.x, y = s.y, sub = s.sub, sq = s.sq;
  EXPECT_EQ(g.revision(), 0u);
  EXPECT_THROW(g.operands(sub), Error);
  g.finalize();
  const uint64_t r1 = g.revision();
  EXPECT_NE(r1, 0u);
  EXPECT_EQ(g.operands(sub), (std::vector<NodeId>{x, y}));
  EXPECT_EQ(g.operands(sq), (std::vector<NodeId>{sub, sub}));
  EXPECT_EQ(g.consumers(sub), (std::vector<NodeId>{sq}));
  EXPECT_EQ(g.consumers(x), (std::vector<NodeId>{sub}));
  EXPECT_TRUE(g.consumers(sq).empty());

  const NodeId out = g.add_node(prim("out", "Relu", OpClass::elementwise, {8}));
  g.add_use(sq, out, 0);
  EXPECT_EQ(g.revision(), 0u);
  EXPECT_THROW(g.consumers(sq), Error);
  g.finalize();
  EXPECT_NE(g.revision(), 0u);
  EXPECT_NE(g.revision(), r1);
  EXPECT_EQ(g.consumers(sq), (std::vector<NodeId>{out}));

  const Graph copy = g;  // same content, same revision
  EXPECT_EQ(copy.revision(), g.revision());
  g.node_mut(out).op = "Neg";
  EXPECT_EQ(g.revision(), 0u);
}

}  // namespace
}  // namespace fuseplan
