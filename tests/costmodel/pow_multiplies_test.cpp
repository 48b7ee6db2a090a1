// Pow with an immediate exponent 2 or 3 is multiplies (graph/op_attrs.h
// pow_multiplies): the cost model prices it as 1 or 2 FLOPs per element and
// no libm call; any other exponent, or one fed at run time, stays a
// transcendental Pow (20 FLOP-equivalents, graph/op_traits.cpp).
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

constexpr int64_t N = 128, C = 3072;
constexpr double NC = static_cast<double>(N * C);

TEST(PowMultiplies, ImmediateTwoAndThreeOnly) {
  GraphBuilder b;
  NodeId x = b.input("x", {N, C});
  NodeId two = b.constant("two", {}, {2.0f});
  NodeId three = b.constant("three", {1}, {3.0f});
  NodeId half = b.constant("half", {}, {2.5f});
  NodeId w = b.weight("w", {1});  // fed at run time: its value is not known
  NodeId p2 = b.op("p2", "Pow", OpClass::broadcast, {N, C}, {x, two});
  NodeId p3 = b.op("p3", "Pow", OpClass::broadcast, {N, C}, {x, three});
  NodeId p25 = b.op("p25", "Pow", OpClass::broadcast, {N, C}, {x, half});
  NodeId pw = b.op("pw", "Pow", OpClass::broadcast, {N, C}, {x, w});
  NodeId base2 = b.op("base2", "Pow", OpClass::broadcast, {N, C}, {two, x});  // 2^x: the base is the immediate
  NodeId m = b.op("m", "Mul", OpClass::broadcast, {N, C}, {x, three});
  Graph g = b.finish({p2, p3, p25, pw, base2, m});
  EXPECT_EQ(pow_multiplies(g, p2), 1);
  EXPECT_EQ(pow_multiplies(g, p3), 2);
  EXPECT_EQ(pow_multiplies(g, p25), 0);
  EXPECT_EQ(pow_multiplies(g, pw), 0);
  EXPECT_EQ(pow_multiplies(g, base2), 0);
  EXPECT_EQ(pow_multiplies(g, m), 0);

  // Hand-computed FLOPs: x^3 is two multiplies per element, no libm
  // routine; x^2.5 is Pow's 20 FLOP-equivalents and the pow routine.
  const CostFeatures f3 = cost_features(g, make_group(g, {"p3"}), h100());
  EXPECT_DOUBLE_EQ(f3.flops_other, 2 * NC);
  EXPECT_TRUE(f3.transcendental_elems.empty());
  EXPECT_DOUBLE_EQ(f3.flops_transcendental, 0);
  EXPECT_DOUBLE_EQ(f3.libm_routines, 0);
  EXPECT_DOUBLE_EQ(cost_features(g, make_group(g, {"p2"}), h100()).flops_other, NC);
  const CostFeatures f25 = cost_features(g, make_group(g, {"p25"}), h100());
  EXPECT_DOUBLE_EQ(f25.flops_other, 20 * NC);
  EXPECT_DOUBLE_EQ(f25.transcendental_elems.at("Pow"), NC);
  EXPECT_DOUBLE_EQ(f25.libm_routines, 1);
  EXPECT_DOUBLE_EQ(cost_features(g, make_group(g, {"pw"}), h100()).flops_other, 20 * NC);
}

}  // namespace
}  // namespace fuseplan
