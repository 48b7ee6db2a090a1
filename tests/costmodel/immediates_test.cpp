// Scalar constants are immediates (graph/op_attrs.h is_immediate): compiled
// into every kernel that reads them inline, so no kernel is charged bytes
// for them. Hand-computed bytes before (4 bytes per reading kernel) and
// after (0).
#include <gtest/gtest.h>

#include "costmodel/cost.h"
#include "costmodel/features.h"
#include "graph/op_attrs.h"
#include "tests/costmodel/cost_test_util.h"

namespace fuseplan {
namespace {

using testing::GraphBuilder;
using testing::h100;
using testing::make_group;
using testing::totals;
using testing::unfused;

constexpr int64_t N = 64, C = 256;
constexpr double NC = static_cast<double>(N * C);

// m = x * s; a = m + w; r = Relu(a); y = r + s. s: a constant f32 scalar
// (an immediate, read by two kernels unfused); w: a one-element weight
// without data (fed at run time: a load).
Graph scaled_chain() {
  GraphBuilder b;
  NodeId x = b.input("x", {N, C});
  NodeId s = b.constant("s", {}, {0.5f});
  NodeId w = b.weight("w", {1});
  NodeId m = b.op("m", "Mul", OpClass::broadcast, {N, C}, {x, s});
  NodeId a = b.op("a", "Add", OpClass::broadcast, {N, C}, {m, w});
  NodeId r = b.op("r", "Relu", OpClass::elementwise, {N, C}, {a});
  NodeId y = b.op("y", "Add", OpClass::broadcast, {N, C}, {r, s});
  return b.finish({y});
}

TEST(Immediates, WhatIsAnImmediate) {
  GraphBuilder b;
  NodeId s = b.constant("s", {}, {0.5f});
  NodeId s11 = b.constant("s11", {1, 1}, {2.0f});
  NodeId two = b.constant("two", {2}, {1.0f, 2.0f});
  NodeId h = b.constant("h", {1}, {1.0f}, DType::f16);  // no executor holds f16
  NodeId empty = b.constant("empty", {1}, {});           // value not known
  NodeId w = b.weight("w", {1});                         // fed at run time
  NodeId in = b.input("in", {});                         // a graph input
  NodeId x = b.input("x", {4, 4});
  NodeId mm = b.op("mm", "MatMul", OpClass::contraction, {4, 4}, {x, x});
  NodeId add = b.op("add", "Add", OpClass::broadcast, {4, 4}, {mm, s});
  Graph g = b.finish({add});
  EXPECT_TRUE(is_immediate(g.node(s)));
  EXPECT_TRUE(is_immediate(g.node(s11)));
  EXPECT_FALSE(is_immediate(g.node(two)));
  EXPECT_FALSE(is_immediate(g.node(h)));
  EXPECT_FALSE(is_immediate(g.node(empty)));
  EXPECT_FALSE(is_immediate(g.node(w)));
  EXPECT_FALSE(is_immediate(g.node(in)));
  EXPECT_TRUE(reads_as_immediate(g.node(add), g.node(s)));
  // A library routine (GEMM, conv, pooling, ...) reads whole buffers.
  EXPECT_FALSE(reads_as_immediate(g.node(mm), g.node(s)));
}

TEST(Immediates, UnfusedKernelsAreChargedNoBytesForAScalarConstant) {
  const Graph g = scaled_chain();
  // m: x 4NC + s 0, writes 4NC; a: m 4NC + w 4, writes 4NC; r: 4NC + 4NC;
  // y: r 4NC + s 0, writes 4NC. Before immediates: + 4 bytes in m and in y.
  EXPECT_DOUBLE_EQ(totals(g, unfused(g), h100()).bytes, 32 * NC + 4);
  const CostFeatures m = cost_features(g, make_group(g, {"m"}), h100());
  EXPECT_DOUBLE_EQ(m.bytes_read, 4 * NC);
  EXPECT_DOUBLE_EQ(m.bytes_read_sources, 4 * NC);  // x
  EXPECT_DOUBLE_EQ(m.sources_read, 1);
  const CostFeatures a = cost_features(g, make_group(g, {"a"}), h100());
  EXPECT_DOUBLE_EQ(a.bytes_read, 4 * NC + 4);  // the weight without data is loaded
  EXPECT_DOUBLE_EQ(a.sources_read, 1);
}

TEST(Immediates, FusedKernelIsChargedNoBytesForAScalarConstant) {
  const Graph g = scaled_chain();
  for (const DeviceSpec& d : {h100(), load_device("host-cpu-reference")}) {
    SCOPED_TRACE(d.name);
    // Reads x 4NC + w 4 (before: + s 4), writes y 4NC.
    const Group grp = make_group(g, {"m", "a", "r", "y"});
    const GroupCost f = cost(g, grp, d);
    EXPECT_DOUBLE_EQ(f.bytes_read, 4 * NC + 4);
    EXPECT_DOUBLE_EQ(f.bytes_written, 4 * NC);
    EXPECT_DOUBLE_EQ(f.bytes(), 8 * NC + 4);
    const CostFeatures ff = cost_features(g, grp, d);
    EXPECT_DOUBLE_EQ(ff.bytes_read_sources, 4 * NC + 4);
    EXPECT_DOUBLE_EQ(ff.sources_read, 2);  // x and w; s is never loaded
    const std::string text = explain_cost(g, grp, d);
    EXPECT_NE(text.find("bytes_read = 65540 (x: 65536, w: 4; immediates s: 0)"), std::string::npos) << text;
  }
}

TEST(Immediates, AScalarReadByALibraryRoutineIsLoaded) {
  GraphBuilder b;
  NodeId x = b.input("x", {1, 1});
  NodeId s = b.constant("s", {1, 1}, {3.0f});
  NodeId mm = b.op("mm", "MatMul", OpClass::contraction, {1, 1}, {x, s});
  NodeId y = b.op("y", "Add", OpClass::broadcast, {1, 1}, {mm, s});
  Graph g = b.finish({y});
  // The GEMM reads s's buffer (4 bytes), the epilogue reads it inline; the
  // kernel loads it once.
  const GroupCost f = cost(g, make_group(g, {"mm", "y"}), h100());
  EXPECT_DOUBLE_EQ(f.bytes_read, 4 + 4);
  EXPECT_DOUBLE_EQ(cost_features(g, make_group(g, {"mm", "y"}), h100()).sources_read, 2);
  // The Add alone reads it as an immediate.
  EXPECT_DOUBLE_EQ(cost(g, make_group(g, {"y"}), h100()).bytes_read, 4);
}

}  // namespace
}  // namespace fuseplan
