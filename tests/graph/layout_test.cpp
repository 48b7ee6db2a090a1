// The CPU backend's layout assignment (graph/layout.h): which tensors stay
// nChw8c between convolutions, and the bits each Conv is called with.
#include <gtest/gtest.h>

#include "graph/layout.h"
#include "tests/graph/test_util.h"
#include "tests/layout_graphs.h"

namespace fuseplan {
namespace {

using test::import_text;
using namespace layout_graphs;

bool blocked(const Graph& g, const Layouts& l, const char* name) { return l.is_blocked(g.at(name)); }

TEST(Layouts, ConvChainsAndTheirElementwiseOpsAreBlocked) {
  Graph g = import_text(residual(16));
  Layouts l = assign_layouts(g);
  // Conv outputs, bias Adds (per-channel operand), the Relus and the
  // residual Add form one set; GlobalAveragePool (a reduction, emitted)
  // reads r2 through its offset expression. x is a graph input.
  const NodeId c1 = g.at("c1/conv"), c2 = g.at("c2/conv");
  for (const char* n : {"c1/conv", "c1", "r1", "c2/conv", "c2", "s", "r2"}) EXPECT_TRUE(blocked(g, l, n)) << n;
  EXPECT_FALSE(blocked(g, l, "x"));
  EXPECT_FALSE(blocked(g, l, "y"));
  EXPECT_EQ(l.count(), 7);
  EXPECT_EQ(l.conv_bits(g, c1, false), kConvBlockedPrimitive | kConvYBlocked);
  EXPECT_EQ(l.conv_bits(g, c2, false), kConvBlockedPrimitive | kConvXBlocked | kConvYBlocked);
  // The reference executor runs the same primitive on plain buffers.
  EXPECT_EQ(l.conv_bits(g, c1, true), kConvBlockedPrimitive);
}

TEST(Layouts, ALibraryReaderKeepsItsSetPlain) {
  // r1 is read by MaxPool (fprt::pool takes NCHW): c1, its bias Add and r1
  // stay plain; c2 reads plain r1 and writes blocked.
  Graph g = import_text(kLibraryReader);
  Layouts l = assign_layouts(g);
  for (const char* n : {"c1/conv", "c1", "r1"}) EXPECT_FALSE(blocked(g, l, n)) << n;
  EXPECT_TRUE(blocked(g, l, "c2"));
  EXPECT_EQ(l.conv_bits(g, g.at("c1/conv"), false), 0);
  EXPECT_EQ(l.conv_bits(g, g.at("c2"), false), kConvBlockedPrimitive | kConvYBlocked);
}

TEST(Layouts, PartialChannelBlocksStayPlain) {
  Graph g = import_text(residual(12));  // 12 channels: not whole blocks of 8
  Layouts l = assign_layouts(g);
  EXPECT_EQ(l.count(), 0);
  EXPECT_EQ(l.conv_bits(g, g.at("c1/conv"), false), 0);
}

TEST(Layouts, ASpatialBroadcastOperandKeepsItsOpPlain) {
  // s = Add(c2, sp) with sp [1,1,10,10] is no blocked elementwise op: s and
  // r2 are plain, s reads blocked c2 through its offset expression.
  Graph g = import_text(residual(16, "sp"));
  Layouts l = assign_layouts(g);
  EXPECT_TRUE(blocked(g, l, "r1"));
  EXPECT_TRUE(blocked(g, l, "c2"));
  EXPECT_FALSE(blocked(g, l, "s"));
  EXPECT_FALSE(blocked(g, l, "r2"));
}

TEST(Layouts, GraphOutputsArePlain) {
  Graph g = import_text(kGraphOutputs);
  Layouts l = assign_layouts(g);
  EXPECT_TRUE(blocked(g, l, "c"));  // y (a graph output) reads it through its offset expression
  EXPECT_FALSE(blocked(g, l, "y"));
  EXPECT_TRUE(blocked(g, l, "d"));
  EXPECT_TRUE(blocked(g, l, "e"));
  EXPECT_FALSE(blocked(g, l, "z"));
  EXPECT_EQ(l.conv_bits(g, g.at("z"), false), kConvBlockedPrimitive | kConvXBlocked);
}

}  // namespace
}  // namespace fuseplan
