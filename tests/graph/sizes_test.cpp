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
