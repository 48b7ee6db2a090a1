// Scalar constants are immediates (graph/op_attrs.h is_immediate): the CPU
// printer compiles each one into the kernels that read it as an exact
// literal of its dtype (emit/kernel_plan.h immediate_literal) instead of
// loading its buffer, and the outputs stay bit-identical to the reference
// executor, which reads the buffer exec/ fills from the same value.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>

#include "emit/cpu/cpu_backend.h"
#include "emit/kernel_plan.h"
#include "exec/cpu_run.h"
#include "tests/builder.h"

namespace fuseplan {
namespace {

using test::Builder;
using test::hand_plan;
using test::unfused_plan;

NodeId scalar(Builder& b, const std::string& name, DType t, double v, std::vector<int64_t> shape = {}) {
  Primitive p;
  p.name = name;
  p.op = "Constant";
  p.op_class = OpClass::source;
  p.source = SourceKind::constant;
  p.out = {t, std::move(shape)};
  if (t == DType::f32 || t == DType::f64) p.data.f32 = {static_cast<float>(v)};
  else p.data.i64 = {static_cast<int64_t>(v)};
  return b.g.add_node(p);
}

NodeId scalar_bits(Builder& b, const std::string& name, uint32_t bits) {
  const NodeId n = scalar(b, name, DType::f32, 0);
  b.g.node_mut(n).data.f32 = {std::bit_cast<float>(bits)};
  return n;
}

struct Immediates {
  Graph* g = nullptr;
  std::vector<NodeId> consts, computed;
};

// Every dtype the executors hold, read by elementwise and broadcast ops; the
// float ones include a value with no short decimal form, -0, -inf and a NaN
// with a payload (a Where copies its bits to the output).
Immediates immediates_graph(Builder& b) {
  constexpr int64_t R = 16, C = 100;
  Immediates m;
  auto op = [&](const std::string& name, const std::string& o, OpClass cls, std::vector<NodeId> ins, DType t,
                std::map<std::string, AttrValue> attrs = {}) {
    const NodeId n = b.op(name, o, cls, std::move(ins), {R, C}, std::move(attrs), t);
    m.computed.push_back(n);
    return n;
  };
  auto to = [](int64_t onnx) { return std::map<std::string, AttrValue>{{"to", onnx}}; };
  const NodeId x = b.input("x", {R, C});
  const NodeId k = scalar(b, "k", DType::f32, 0.1);
  const NodeId nan = scalar_bits(b, "nan", 0x7fc01234u);
  const NodeId ninf = scalar(b, "ninf", DType::f32, -std::numeric_limits<double>::infinity(), {1});
  const NodeId nz = scalar(b, "nz", DType::f32, -0.0, {1, 1});
  const NodeId hundred = scalar(b, "hundred", DType::f32, 100);
  const NodeId d = scalar(b, "d", DType::f64, 0.1);
  const NodeId i = scalar(b, "i", DType::i64, -7);
  const NodeId i32 = scalar(b, "i32", DType::i32, -2147483648.0);
  const NodeId i8 = scalar(b, "i8", DType::i8, -3);
  const NodeId u8 = scalar(b, "u8", DType::u8, 200);
  const NodeId t = scalar(b, "t", DType::boolean, 1);
  m.consts = {k, nan, ninf, nz, hundred, d, i, i32, i8, u8, t};
  const NodeId gt = op("gt", "Greater", OpClass::broadcast, {x, k}, DType::boolean);
  const NodeId w = op("w", "Where", OpClass::broadcast, {gt, nan, x}, DType::f32);
  const NodeId mk = op("mk", "Mul", OpClass::broadcast, {w, k}, DType::f32);
  const NodeId mx = op("mx", "Max", OpClass::broadcast, {mk, ninf}, DType::f32);
  const NodeId y = op("y", "Add", OpClass::broadcast, {mx, nz}, DType::f32);
  const NodeId xd = op("xd", "Cast", OpClass::elementwise, {x}, DType::f64, to(11));
  const NodeId yd = op("yd", "Mul", OpClass::broadcast, {xd, d}, DType::f64);
  const NodeId xs = op("xs", "Mul", OpClass::broadcast, {x, hundred}, DType::f32);
  const NodeId xi = op("xi", "Cast", OpClass::elementwise, {xs}, DType::i64, to(7));
  const NodeId yi = op("yi", "Add", OpClass::broadcast, {xi, i}, DType::i64);
  const NodeId x32 = op("x32", "Cast", OpClass::elementwise, {xs}, DType::i32, to(6));
  const NodeId y32 = op("y32", "Max", OpClass::broadcast, {x32, i32}, DType::i32);
  const NodeId x8 = op("x8", "Cast", OpClass::elementwise, {xs}, DType::i8, to(3));
  const NodeId y8 = op("y8", "Add", OpClass::broadcast, {x8, i8}, DType::i8);
  const NodeId r = op("r", "Relu", OpClass::elementwise, {xs}, DType::f32);
  const NodeId xu = op("xu", "Cast", OpClass::elementwise, {r}, DType::u8, to(2));
  const NodeId yu = op("yu", "Max", OpClass::broadcast, {xu, u8}, DType::u8);
  const NodeId yb = op("yb", "And", OpClass::broadcast, {gt, t}, DType::boolean);
  m.g = &b.done({y, yd, yi, y32, y8, yu, yb});
  return m;
}

void expect_identical(const Graph& g, const Plan& plan, const std::string& what) {
  RunOptions o;
  o.verify = true;
  o.repeat = 1;
  const RunResult r = run_plan(g, plan, o);
  EXPECT_TRUE(r.verified) << what;
  EXPECT_TRUE(r.ok) << what << ": " << verify_message(r);
}

TEST(CpuImmediates, LiteralsAreExactForEveryDtype) {
  Builder b;
  const Immediates m = immediates_graph(b);
  const Graph& g = *m.g;
  auto lit = [&](const char* name) { return immediate_literal(g.node(g.at(name))); };
  EXPECT_EQ(lit("k"), "(0x1.99999ap-4f)");  // 0.1f, every bit
  EXPECT_EQ(lit("nan"), "fprt::f32_bits(0x7fc01234u)");
  EXPECT_EQ(lit("ninf"), "fprt::f32_bits(0xff800000u)");
  EXPECT_EQ(lit("nz"), "(-0x0p+0f)");
  EXPECT_EQ(lit("d"), "(0x1.99999ap-4)");  // the f32 value the model's data holds, as a double
  EXPECT_EQ(lit("i"), "(int64_t)(-7LL)");
  EXPECT_EQ(lit("i32"), "(int32_t)(-2147483648LL)");
  EXPECT_EQ(lit("i8"), "(int8_t)(-3LL)");
  EXPECT_EQ(lit("u8"), "(uint8_t)(200LL)");
  EXPECT_EQ(lit("t"), "true");
}

TEST(CpuImmediates, KernelsCompileScalarConstantsInAndStayBitIdentical) {
  Builder b;
  const Immediates m = immediates_graph(b);
  const Graph& g = *m.g;
  const Plan unfused = unfused_plan(g);
  const Plan fused = hand_plan(g, {m.computed});
  for (const Plan* p : {&unfused, &fused}) {
    const std::string what = p == &unfused ? "unfused" : "fused";
    for (const Group& grp : p->groups) {
      const KernelPlan kp = plan_kernel(g, grp);
      for (NodeId c : m.consts) EXPECT_EQ(std::count(kp.loads.begin(), kp.loads.end(), c), 0) << what;
    }
    const std::string src = cpu::plan_source(g, *p);
    // No kernel takes a constant's buffer: each is a literal.
    for (NodeId c : m.consts) EXPECT_EQ(src.find("*)b[" + std::to_string(c) + "];"), std::string::npos) << g.node(c).name;
    for (const char* l : {"(0x1.99999ap-4f)", "fprt::f32_bits(0x7fc01234u)", "fprt::f32_bits(0xff800000u)",
                          "(-0x0p+0f)", "(0x1.99999ap-4)", "(int64_t)(-7LL)", "(int32_t)(-2147483648LL)",
                          "(int8_t)(-3LL)", "(uint8_t)(200LL)"})
      EXPECT_NE(src.find(l), std::string::npos) << what << ": " << l;
    expect_identical(g, *p, what);
  }
}

// A library routine reads whole buffers: a scalar constant a MatMul reads
// stays a load of that kernel; the epilogue that reads it too gets the
// literal.
TEST(CpuImmediates, AScalarReadByALibraryRoutineStaysABuffer) {
  Builder b;
  const NodeId x = b.input("x", {8, 1});
  const NodeId s = scalar(b, "s", DType::f32, 3, {1, 1});
  const NodeId mm = b.op("mm", "MatMul", OpClass::contraction, {x, s}, {8, 1});
  const NodeId y = b.op("y", "Add", OpClass::broadcast, {mm, s}, {8, 1});
  Graph& g = b.done({y});
  const Plan fused = hand_plan(g, {{mm, y}});
  const KernelPlan kp = plan_kernel(g, fused.groups[0]);
  EXPECT_EQ(std::count(kp.loads.begin(), kp.loads.end(), s), 1);
  EXPECT_EQ(kp.immediates.count(s), 1u);
  EXPECT_NE(cpu::plan_source(g, fused).find("(0x1.8p+1f)"), std::string::npos);
  expect_identical(g, fused, "fused");
  expect_identical(g, unfused_plan(g), "unfused");
}

}  // namespace
}  // namespace fuseplan
