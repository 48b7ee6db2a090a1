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
  // c1 still runs the blocked primitive, on plain buffers: reordered in and out.
  EXPECT_EQ(l.conv_bits(g, g.at("c1/conv"), false), kConvBlockedPrimitive);
  EXPECT_EQ(l.reorders(g, g.at("c1/conv")), kReorderX | kReorderY);
  EXPECT_EQ(l.conv_bits(g, g.at("c2"), false), kConvBlockedPrimitive | kConvYBlocked);
}

TEST(Layouts, ConvsBetweenPlainTensorsRunBlockedWhereOneDnnHasTheKernel) {
  // One-op models: x and y are graph tensors, stored NCHW.
  auto one_conv = [](const std::string& x, const std::string& w, const std::string& y, const std::string& attrs) {
    return "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[" + x + "] x, float[" + w + "] w) => (float[" + y +
           "] y) {\n  y = Conv<" + attrs + ">(x, w)\n}";
  };
  const int both = kConvBlockedPrimitive | kConvBlock16;
  struct Case {
    std::string x, w, y, attrs;
    int bits, reorders;
  };
  const Case cases[] = {
      // Depthwise 3x3: blocked, both sides reordered (NCHW <-> nChw16c).
      {"1, 32, 8, 8", "32, 1, 3, 3", "1, 32, 8, 8", "kernel_shape = [3, 3], pads = [1, 1, 1, 1], group = 32", both,
       kReorderX | kReorderY},
      // Stem: 3 input channels read as NCHW, only y reordered.
      {"1, 3, 16, 16", "16, 3, 7, 7", "1, 16, 5, 5", "kernel_shape = [7, 7], strides = [2, 2]", both, kReorderY},
      // 4 channels per group: no blocked-16 kernel, `any`.
      {"1, 32, 8, 8", "32, 4, 3, 3", "1, 32, 8, 8", "kernel_shape = [3, 3], pads = [1, 1, 1, 1], group = 8", 0,
       kReorderX | kReorderY},
      // 1x1 over 28x28: oneDNN's gemm convolution on NCHW, no reorder.
      {"1, 32, 28, 28", "64, 32, 1, 1", "1, 64, 28, 28", "kernel_shape = [1, 1]", 0, 0},
  };
  for (const Case& c : cases) {
    Graph g = import_text(one_conv(c.x, c.w, c.y, c.attrs));
    const Layouts l = assign_layouts(g, 16);
    EXPECT_EQ(l.count(), 0);
    EXPECT_EQ(l.conv_bits(g, g.at("y"), false), c.bits) << c.attrs;
    EXPECT_EQ(l.conv_bits(g, g.at("y"), true), c.bits) << c.attrs;  // the reference: the same primitive
    EXPECT_EQ(l.reorders(g, g.at("y")), c.reorders) << c.attrs;
  }
  EXPECT_EQ(conv_blocking(3, 16, 1, 16), ConvBlocking::y_only);
  EXPECT_EQ(conv_blocking(24, 16, 1, 16), ConvBlocking::none);
  EXPECT_EQ(conv_blocking(144, 144, 144, 16), ConvBlocking::both);
  EXPECT_EQ(conv_blocking(128, 128, 32, 16), ConvBlocking::none);
  EXPECT_EQ(conv_blocking(128, 128, 4, 16), ConvBlocking::both);
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
