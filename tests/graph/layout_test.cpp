// The CPU backend's layout assignment (graph/layout.h): which tensors stay
// blocked (nChw8c / nChw16c) between convolutions, and the bits each Conv is
// called with.
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
  Layouts l = assign_layouts(g, 8);
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
  Graph g = import_text(library_reader());
  Layouts l = assign_layouts(g, 8);
  for (const char* n : {"c1/conv", "c1", "r1"}) EXPECT_FALSE(blocked(g, l, n)) << n;
  EXPECT_TRUE(blocked(g, l, "c2"));
  EXPECT_EQ(l.conv_bits(g, g.at("c1/conv"), false), 0);
  EXPECT_EQ(l.conv_bits(g, g.at("c2"), false), kConvBlockedPrimitive | kConvYBlocked);
}

TEST(Layouts, PartialChannelBlocksStayPlain) {
  Graph g = import_text(residual(12));  // 12 channels: not whole blocks of 8
  Layouts l = assign_layouts(g, 8);
  EXPECT_EQ(l.count(), 0);
  EXPECT_EQ(l.conv_bits(g, g.at("c1/conv"), false), 0);
}

TEST(Layouts, ASpatialBroadcastOperandKeepsItsOpPlain) {
  // s = Add(c2, sp) with sp [1,1,10,10] is no blocked elementwise op: s and
  // r2 are plain, s reads blocked c2 through its offset expression.
  Graph g = import_text(residual(16, "sp"));
  Layouts l = assign_layouts(g, 8);
  EXPECT_TRUE(blocked(g, l, "r1"));
  EXPECT_TRUE(blocked(g, l, "c2"));
  EXPECT_FALSE(blocked(g, l, "s"));
  EXPECT_FALSE(blocked(g, l, "r2"));
}

TEST(Layouts, GraphOutputsArePlain) {
  Graph g = import_text(graph_outputs());
  Layouts l = assign_layouts(g, 8);
  EXPECT_TRUE(blocked(g, l, "c"));  // y (a graph output) reads it through its offset expression
  EXPECT_FALSE(blocked(g, l, "y"));
  EXPECT_TRUE(blocked(g, l, "d"));
  EXPECT_TRUE(blocked(g, l, "e"));
  EXPECT_FALSE(blocked(g, l, "z"));
  EXPECT_EQ(l.conv_bits(g, g.at("z"), false), kConvBlockedPrimitive | kConvXBlocked);
}

TEST(Layouts, SixteenChannelBlocksNeedWholeBlocksOfSixteen) {
  // The AVX-512 block: the same sets as with 8 where C = 16, the calls say
  // nChw16c (kConvBlock16); C = 24 fills blocks of 8 but not of 16.
  Graph g = import_text(residual(16));
  Layouts l = assign_layouts(g, 16);
  EXPECT_EQ(l.block, 16);
  EXPECT_EQ(l.format(), "nChw16c");
  EXPECT_EQ(l.count(), 7);
  EXPECT_EQ(l.conv_bits(g, g.at("c2/conv"), false),
            kConvBlockedPrimitive | kConvXBlocked | kConvYBlocked | kConvBlock16);
  // The reference's plain buffers: the same blocked primitive, in blocks of 16.
  EXPECT_EQ(l.conv_bits(g, g.at("c2/conv"), true), kConvBlockedPrimitive | kConvBlock16);
  EXPECT_EQ(assign_layouts(g, 8).format(), "nChw8c");

  Graph g24 = import_text(residual(24));
  EXPECT_EQ(assign_layouts(g24, 8).count(), 7);
  const Layouts l24 = assign_layouts(g24, 16);
  EXPECT_EQ(l24.count(), 0);
  EXPECT_EQ(l24.conv_bits(g24, g24.at("c1/conv"), false), 0);
  EXPECT_EQ(l24.reorders(g24, g24.at("c2/conv")), kReorderX | kReorderY);
}

}  // namespace
}  // namespace fuseplan
