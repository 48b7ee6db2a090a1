// A fused pair really makes one pass: the emitted function of bias+relu
// loads the input buffer once, never touches the intermediate, and moves
// half the bytes of the unfused pair (read x + write y vs. read x, write t,
// read t, write y).
#include <gtest/gtest.h>

#include <string>

#include "tests/builder.h"
#include "emit/cpu/cpp_printer.h"
#include "emit/cpu/cpu_backend.h"

namespace fuseplan {
namespace {

using test::Builder;
using test::hand_plan;
using test::unfused_plan;

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

/// The text of `extern "C" void fp_group_<i>(...)` up to the next function.
std::string function_text(const std::string& src, int i) {
  std::string head = "void fp_group_" + std::to_string(i) + "(";
  std::size_t a = src.find(head);
  EXPECT_NE(a, std::string::npos) << head;
  if (a == std::string::npos) return "";
  std::size_t b = src.find("extern \"C\"", a);
  return src.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

/// Bytes a kernel plan moves: each loaded and stored buffer once.
int64_t bytes_moved(const Graph& g, const KernelPlan& k) {
  int64_t b = 0;
  for (NodeId n : k.loads) b += g.node(n).out.bytes();
  for (NodeId n : k.stores) b += g.node(n).out.bytes();
  return b;
}

TEST(CpuOnePass, FusedBiasReluReadsItsInputOnce) {
  Builder b;
  auto x = b.input("x", {256, 1024});
  auto bias = b.weight("bias", {1024});
  auto t = b.op("t", "Add", OpClass::broadcast, {x, bias}, {256, 1024});
  auto y = b.op("y", "Relu", OpClass::elementwise, {t}, {256, 1024});
  auto& g = b.done({y});
  const std::string X = "t" + std::to_string(x) + "[", T = "t" + std::to_string(t), Y = "t" + std::to_string(y) + "[";

  Plan fused = hand_plan(g, {{t, y}});
  auto kp = cpu::kernel_plans(g, fused);
  ASSERT_EQ(kp.size(), 1u);
  std::string fn = function_text(cpu::print_cpp(g, kp), 0);
  EXPECT_EQ(count(fn, X), 1) << fn;  // one load of x per output element, in one loop nest
  EXPECT_EQ(count(fn, Y), 1) << fn;  // one store of y
  EXPECT_EQ(count(fn, T + "["), 0) << fn;  // the intermediate never reaches memory
  EXPECT_EQ(count(fn, "for ("), 2) << fn;  // one loop nest over the 2-D output
  EXPECT_EQ(kp[0].stores, std::vector<NodeId>{y});

  Plan unfused = unfused_plan(g);
  auto ku = cpu::kernel_plans(g, unfused);
  ASSERT_EQ(ku.size(), 2u);
  std::string src = cpu::print_cpp(g, ku);
  EXPECT_EQ(count(function_text(src, 0), T + "["), 1);  // t written by the first kernel
  EXPECT_EQ(count(function_text(src, 1), T + "["), 1);  // and read back by the second

  int64_t tensor = g.node(x).out.bytes(), fb = bytes_moved(g, kp[0]);
  int64_t ub = bytes_moved(g, ku[0]) + bytes_moved(g, ku[1]);
  EXPECT_EQ(fb, 2 * tensor + g.node(bias).out.bytes());
  EXPECT_EQ(ub, 4 * tensor + g.node(bias).out.bytes());
}

}  // namespace
}  // namespace fuseplan
