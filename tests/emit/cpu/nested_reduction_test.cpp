// A nested reduction group (search/nested_reduction.h) is one loop nest on
// the CPU: per output element of the outer reduction, a loop over its
// reduced axis around the inner reduction's loop, each in its canonical
// order, so the outputs are bit-identical to the reference and to the
// unfused plan.
#include <gtest/gtest.h>

#include <string>

#include "emit/cpu/cpp_printer.h"
#include "emit/cpu/cpu_backend.h"
#include "emit/kernel_plan.h"
#include "exec/cpu_run.h"
#include "tests/builder.h"

namespace fuseplan {
namespace {

using test::Builder;
using test::hand_plan;
using test::unfused_plan;
using V = std::vector<int64_t>;

std::map<std::string, AttrValue> axes(V a, int64_t keepdims) { return {{"axes", a}, {"keepdims", keepdims}}; }

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

std::string function_text(const std::string& src, int i) {
  const std::size_t a = src.find("void fp_group_" + std::to_string(i) + "(");
  EXPECT_NE(a, std::string::npos);
  if (a == std::string::npos) return "";
  const std::size_t b = src.find("extern \"C\"", a);
  return src.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

RunResult run_verified(const Graph& g, const Plan& plan) {
  RunOptions o;
  o.verify = true;
  o.repeat = 1;
  RunResult r = run_plan(g, plan, o);
  EXPECT_TRUE(r.verified);
  EXPECT_TRUE(r.ok) << verify_message(r);
  return r;
}

// Fused and unfused both equal the reference executor byte for byte (so
// each other), every graph output checked.
void expect_identical(const Graph& g, const Plan& fused) {
  for (const Plan& p : {fused, unfused_plan(g)}) {
    RunResult r = run_verified(g, p);
    ASSERT_EQ(r.outputs.size(), g.graph_outputs().size()) << p.strategy;
    for (const OutputCheck& o : r.outputs) {
      EXPECT_TRUE(o.identical) << p.strategy << " " << o.name;
      EXPECT_EQ(o.mismatches, 0) << p.strategy << " " << o.name;
    }
  }
}

TEST(CpuNestedReduction, SumThenMaxIsOneLoopNestWithoutScratch) {
  Builder b;
  auto x = b.input("x", {8, 16, 32});
  auto s = b.op("s", "ReduceSum", OpClass::reduction, {x}, {8, 16}, axes({2}, 0));
  auto y = b.op("y", "ReduceMax", OpClass::reduction, {s}, {8}, axes({1}, 0));
  auto& g = b.done({y});
  Plan p = hand_plan(g, {{s, y}});
  auto kp = cpu::kernel_plans(g, p);
  ASSERT_EQ(kp.size(), 1u);
  EXPECT_EQ(kp[0].nested, std::set<NodeId>{s});
  EXPECT_EQ(kp[0].nest_outer, std::set<NodeId>{y});
  ASSERT_EQ(kp[0].stages.size(), 1u);
  EXPECT_EQ(kp[0].stages[0].node, y);
  EXPECT_EQ(kp[0].row_dims, 0);
  const std::string fn = function_text(cpu::print_cpp(g, kp), 0);
  const std::string S = std::to_string(s);
  // y's outputs; y's row of 16 in one step of 16 lanes, s's row of 32 in
  // two (graph/op_attrs.h reduce_lanes): a step loop and a lane loop each;
  // and each accumulator's lane initialisation.
  EXPECT_EQ(count(fn, "for (int64_t"), 5) << fn;
  EXPECT_EQ(count(fn, "for (int l = 0; l < 16; ++l)"), 2) << fn;
  EXPECT_EQ(count(fn, "// nested ReduceSum 's'"), 1) << fn;
  EXPECT_EQ(count(fn, "malloc"), 0) << fn;  // s never leaves registers
  EXPECT_EQ(count(fn, "t" + S + "["), 0) << fn;
  EXPECT_EQ(count(fn, "t" + std::to_string(x) + "["), 1) << fn;  // one load of x, in the inner loop
  // The inner loop sits inside the outer one: its accumulator folds into y's.
  const std::size_t outer_loop = fn.find("for (int64_t rl0 = 0; rl0 < 16; ++rl0)");
  const std::size_t inner_loop = fn.find("for (int64_t r" + S + "_0 = 0; r" + S + "_0 < 2; ++r" + S + "_0)");
  const std::size_t fold = fn.find("acc_l[rl0] = fprt::max_(acc_l[rl0], ");
  ASSERT_NE(outer_loop, std::string::npos) << fn;
  ASSERT_NE(inner_loop, std::string::npos) << fn;
  EXPECT_LT(outer_loop, inner_loop);
  EXPECT_LT(inner_loop, fold);
  expect_identical(g, p);
}

TEST(CpuNestedReduction, AnIntermediateReadOutsideIsStoredInsideTheNest) {
  Builder b;
  auto x = b.input("x", {8, 16, 32});
  auto s = b.op("s", "ReduceSum", OpClass::reduction, {x}, {8, 16}, axes({2}, 0));
  auto y = b.op("y", "ReduceMax", OpClass::reduction, {s}, {8}, axes({1}, 0));
  auto& g = b.done({s, y});
  Plan p = hand_plan(g, {{s, y}});
  auto kp = cpu::kernel_plans(g, p);
  EXPECT_TRUE(kp[0].is_nested_store(s));
  EXPECT_EQ(kp[0].stores, (std::vector<NodeId>{s, y}));
  const std::string fn = function_text(cpu::print_cpp(g, kp), 0);
  EXPECT_EQ(count(fn, "t" + std::to_string(s) + "["), 1) << fn;  // one store, where the nest computes it
  EXPECT_EQ(count(fn, "for (int64_t"), 5) << fn;  // as above
  expect_identical(g, p);
}

TEST(CpuNestedReduction, MeanKeepdimsThenSumWithPrologueLevelOpsAndEpilogueIsBitIdentical) {
  Builder b;
  auto x = b.input("x", {8, 16, 32});
  auto bias = b.weight("bias", {16, 1});
  auto sq = b.op("sq", "Mul", OpClass::elementwise, {x, x}, {8, 16, 32});
  auto m = b.op("m", "ReduceMean", OpClass::reduction, {sq}, {8, 16, 1}, axes({2}, 1));
  auto r = b.op("r", "Sqrt", OpClass::elementwise, {m}, {8, 16, 1});
  auto a = b.op("a", "Add", OpClass::broadcast, {r, bias}, {8, 16, 1});
  auto s = b.op("s", "ReduceSum", OpClass::reduction, {a}, {8, 1, 1}, axes({1}, 1));
  auto y = b.op("y", "Neg", OpClass::elementwise, {s}, {8, 1, 1});
  auto& g = b.done({y});
  Plan p = hand_plan(g, {{sq, m, r, a, s, y}});
  auto kp = cpu::kernel_plans(g, p);
  EXPECT_EQ(kp[0].nested, (std::set<NodeId>{m, r, a}));
  EXPECT_EQ(kp[0].row_dims, 0);  // keepdims reductions, yet no resident row
  ASSERT_EQ(kp[0].stages.size(), 2u);  // s, then y (materialised)
  EXPECT_EQ(kp[0].stages[0].node, s);
  expect_identical(g, p);
}

TEST(CpuNestedReduction, ThreeLevelsAreBitIdentical) {
  Builder b;
  auto x = b.input("x", {4, 6, 8, 16});
  auto s = b.op("s", "ReduceSum", OpClass::reduction, {x}, {4, 6, 8}, axes({3}, 0));
  auto mx = b.op("mx", "ReduceMax", OpClass::reduction, {s}, {4, 6}, axes({2}, 0));
  auto y = b.op("y", "ReduceMean", OpClass::reduction, {mx}, {4}, axes({1}, 0));
  auto& g = b.done({mx, y});
  Plan p = hand_plan(g, {{s, mx, y}});
  auto kp = cpu::kernel_plans(g, p);
  EXPECT_EQ(kp[0].nested, (std::set<NodeId>{s, mx}));
  EXPECT_EQ(kp[0].nest_outer, (std::set<NodeId>{mx, y}));
  // y's outputs, y's row of 6 and mx's row of 8 one by one, s's row of 16
  // in one step of 16 lanes (two loops).
  EXPECT_EQ(count(function_text(cpu::print_cpp(g, kp), 0), "for (int64_t"), 5);
  expect_identical(g, p);
}

// A group whose reductions do not nest (a hand-written plan file may hold
// one) still runs, one stage per reduction.
TEST(CpuNestedReduction, ReductionsThatDoNotNestStayStages) {
  Builder b;
  auto x = b.input("x", {8, 16, 32});
  auto e = b.op("e", "Exp", OpClass::elementwise, {x}, {8, 16, 32});
  auto a = b.op("a", "ReduceSum", OpClass::reduction, {e}, {8, 16}, axes({2}, 0));
  auto c = b.op("c", "ReduceMax", OpClass::reduction, {e}, {8, 32}, axes({1}, 0));
  auto& g = b.done({a, c});
  Plan p = hand_plan(g, {{e, a, c}});
  auto kp = cpu::kernel_plans(g, p);
  EXPECT_TRUE(kp[0].nested.empty());
  EXPECT_EQ(kp[0].stages.size(), 2u);
  expect_identical(g, p);
}

}  // namespace
}  // namespace fuseplan
