// One focused test per blocker code: the decision a legality predicate or the
// plan's decision log gives, on small inline graphs (ONNX text syntax).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "costmodel/device.h"
#include "graph/import.h"
#include "search/gain.h"
#include "search/legality.h"
#include "search/pricing.h"
#include "search/strategy.h"

namespace fuseplan {
namespace {

Graph text(const std::string& body, ImportOptions o = {}) {
  return import_onnx_text("<ir_version: 8, opset_import: [\"\" : 17]>\n" + body, o, "t");
}

const DeviceSpec& h100() {
  static DeviceSpec d = load_device("h100-sxm");
  return d;
}

std::vector<NodeId> ids(const Graph& g, std::initializer_list<const char*> names) {
  std::vector<NodeId> v;
  for (auto n : names) v.push_back(g.at(n));
  return v;
}

const DecisionRecord* find(const Plan& p, const std::string& prod, const std::string& cons) {
  for (const auto& r : p.decisions)
    if (r.producer == prod && r.consumer == cons) return &r;
  return nullptr;
}

TEST(Blockers, LayoutMismatchForATransposeMovingTheFastestAxis) {
  Graph g = text("t (float[64, 32] x) => (float[32, 64] y) { r = Relu(x)\n y = Transpose<perm = [1, 0]>(r) }");
  auto d = can_fuse_edge(g, g.at("r"), g.at("y"));
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.blocker, Blocker::layout_mismatch);
  EXPECT_NE(d.reason.find("'y'"), std::string::npos);
}

// A Transpose read as a MatMul's B operand on a CPU is passed to oneDNN as
// a strided view (graph/view.h), so the CPU device lets it join the MatMul's
// kernel; a GPU device, and a Transpose the MatMul reads as A, still refuse.
TEST(Blockers, ATransposeReadAsMatMulBJoinsItOnACpuOnly) {
  Graph g = text(
      "t (float[2, 8, 16] x, float[2, 8, 16] q) => (float[2, 8, 8] y, float[2, 8, 8] z) { r = Relu(x)\n"
      " kt = Transpose<perm = [0, 2, 1]>(r)\n y = MatMul(q, kt)\n qt = Transpose<perm = [0, 2, 1]>(q)\n"
      " z = MatMul(r, qt) }");
  const DeviceSpec cpu = load_device("host-cpu-reference");
  EXPECT_TRUE(can_merge_vertical(g, ids(g, {"kt"}), ids(g, {"y"}), cpu).ok());
  EXPECT_EQ(can_merge_vertical(g, ids(g, {"kt"}), ids(g, {"y"}), h100()).blocker, Blocker::layout_mismatch);
  EXPECT_EQ(can_fuse_edge(g, g.at("kt"), g.at("y")).blocker, Blocker::layout_mismatch);  // the edge alone, any device
  // qt is z's B but transposes a model input: still passed as a view only
  // where its source is a buffer; the join itself is legal.
  EXPECT_TRUE(can_merge_vertical(g, ids(g, {"qt"}), ids(g, {"z"}), cpu).ok());
  // As A (z = MatMul(kt', ...)): no view, so the layout rule holds.
  Graph a = text(
      "t (float[2, 8, 16] x, float[2, 8, 8] w) => (float[2, 16, 8] y) { r = Relu(x)\n"
      " rt = Transpose<perm = [0, 2, 1]>(r)\n y = MatMul(rt, w) }");
  EXPECT_EQ(can_merge_vertical(a, ids(a, {"rt"}), ids(a, {"y"}), cpu).blocker, Blocker::layout_mismatch);
}

TEST(Blockers, IndirectAccessOnGatherDataButNotOnItsIndex) {
  Graph g = text(
      "t (float[100, 8] table, int64[16] idx) => (float[16, 8] y) { act = Relu(table)\n one = Constant<value = "
      "int64 {1}>()\n i1 = Add(idx, one)\n y = Gather<axis = 0>(act, i1) }");
  EXPECT_EQ(can_fuse_edge(g, g.at("act"), g.at("y")).blocker, Blocker::indirect_access);
  EXPECT_TRUE(can_fuse_edge(g, g.at("i1"), g.at("y")).ok());
}

TEST(Blockers, ReadersOfAScatterNeverShareItsKernel) {
  Graph g = text(
      "t (float[8, 4] data, int64[2, 1] idx, float[2, 4] upd) => (float[8, 4] y) { s = ScatterND(data, idx, upd)\n"
      " y = Relu(s) }");
  auto d = can_fuse_edge(g, g.at("s"), g.at("y"));
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.blocker, Blocker::indirect_access);
}

TEST(Blockers, ScanRecurrenceOnCumSum) {
  Graph g = text(
      "t (float[64, 32] x) => (float[64, 32] y) { e = Exp(x)\n ax = Constant<value = int64 {1}>()\n y = CumSum(e, ax) }");
  EXPECT_EQ(can_fuse_edge(g, g.at("e"), g.at("y")).blocker, Blocker::scan_recurrence);
}

TEST(Blockers, GraphOutputIsFusedButItsWriteStays) {
  Graph g = text("t (float[64, 32] x) => (float[64, 32] t, float[64, 32] y) { t = Relu(x)\n y = Exp(t) }");
  Plan p = search(g, h100(), "cost");
  const auto* r = find(p, "t", "y");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->action, Action::fused);
  EXPECT_EQ(r->blocker, Blocker::graph_output);
  EXPECT_EQ(p.totals.kernels, 1);
}

TEST(Blockers, MultiConsumerProducerIsDuplicatedWhenCheap) {
  Graph g = text(
      "t (float[256, 128] x, float[128] b) => (float[1, 128] c, float[256, 1] r) { p = Add(x, b)\n"
      " a0 = Constant<value = int64[1] {0}>()\n a1 = Constant<value = int64[1] {1}>()\n"
      " c = ReduceSum<keepdims = 1>(p, a0)\n r = ReduceSum<keepdims = 1>(p, a1) }");
  Plan p = search(g, h100(), "cost");
  int dup = 0, fused = 0;
  for (const auto& r : p.decisions)
    if (r.producer == "p") {
      if (r.action == Action::duplicated) {
        EXPECT_EQ(r.blocker, Blocker::multi_consumer);
      }
      dup += r.action == Action::duplicated;
      fused += r.action == Action::fused;
    }
  EXPECT_EQ(dup, 1);  // homed with one reduction, recomputed in the other
  EXPECT_EQ(fused, 1);
  EXPECT_EQ(p.totals.kernels, 2);
}

TEST(Blockers, ControlFlowOnIf) {
  Graph g = text(
      "t (bool cond, float[8, 4] x) => (float[8, 4] y) { b = If(cond) <then_branch = g1 () => (float[8, 4] o1) { o1 "
      "= Relu(x) }, else_branch = g2 () => (float[8, 4] o2) { o2 = Sigmoid(x) }>\n y = Exp(b) }");
  EXPECT_EQ(can_fuse_edge(g, g.at("b"), g.at("y")).blocker, Blocker::control_flow);
}

TEST(Blockers, GraphBreakOnAnUnknownOp) {
  Graph g = text("t (float[8, 4] x) => (float[8, 4] y) { a = Relu(x)\n b = MysteryOp(a)\n y = Exp(b) }");
  EXPECT_EQ(can_fuse_edge(g, g.at("a"), g.at("b")).blocker, Blocker::graph_break);
  EXPECT_FALSE(g.warnings.empty());
}

TEST(Blockers, ReductionBarrierWhenTheRowFitsNoBlock) {
  ImportOptions o;
  o.dims = {{"N", 16}, {"C", 1048576}};
  Graph g = text("t (float[N, C] x) => (float[N, C] y) { y = Softmax<axis = -1>(x) }", o);
  // max -> sub broadcasts a reduced 4 MiB row back: no block holds it.
  auto d = can_merge_vertical(g, ids(g, {"y/max"}), ids(g, {"y/sub"}), h100());
  EXPECT_EQ(d.blocker, Blocker::reduction_barrier);
}

TEST(Blockers, ReductionBarrierForAReductionEpilogueOfAContraction) {
  Graph g = text(
      "t (float[64, 32] a, float[32, 16] b) => (float[64, 1] y) { m = MatMul(a, b)\n ax = Constant<value = int64[1] "
      "{1}>()\n y = ReduceSum<keepdims = 1>(m, ax) }");
  EXPECT_EQ(can_merge_vertical(g, ids(g, {"m"}), ids(g, {"y"}), h100()).blocker, Blocker::reduction_barrier);
}

TEST(Blockers, CycleThroughAThirdKernel) {
  // a -> t1 -> t2 -> y and a -> y: merging {a} with {y} while the transposes
  // stay apart would make the kernels depend on each other.
  Graph g = text(
      "t (float[64, 32] x) => (float[64, 32] y) { a = Exp(x)\n t1 = Transpose<perm = [1, 0]>(a)\n t2 = "
      "Transpose<perm = [1, 0]>(t1)\n y = Add(a, t2) }");
  auto d = can_merge_vertical(g, ids(g, {"a"}), ids(g, {"y"}), h100());
  EXPECT_EQ(d.blocker, Blocker::cycle);
}

TEST(Blockers, TwoContractionsInOneKernel) {
  Graph g = text(
      "t (float[64, 32] a, float[32, 16] b, float[16, 8] c) => (float[64, 8] y) { m = MatMul(a, b)\n y = MatMul(m, c) }");
  const auto d = can_merge_vertical(g, ids(g, {"m"}), ids(g, {"y"}), h100());
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.blocker, Blocker::two_contractions);
  EXPECT_NE(d.reason.find("both groups hold a contraction (m, y)"), std::string::npos);
}

TEST(Blockers, EpilogueNotElementwiseWhenTheConsumerGroupTransposes) {
  // {r, t} as one group: r is an elementwise epilogue of m, t is not.
  Graph g = text(
      "t (float[64, 32] a, float[32, 16] b) => (float[16, 64] y) { m = MatMul(a, b)\n r = Relu(m)\n"
      " y = Transpose<perm = [1, 0]>(r) }");
  const auto d = can_merge_vertical(g, ids(g, {"m"}), ids(g, {"r", "y"}), h100());
  EXPECT_FALSE(d.ok());
  EXPECT_EQ(d.blocker, Blocker::epilogue_not_elementwise);
  EXPECT_NE(d.reason.find("'y' (layout) is not an elementwise epilogue of contraction 'm'"), std::string::npos);
  EXPECT_TRUE(can_merge_vertical(g, ids(g, {"m"}), ids(g, {"r"}), h100()).ok());
}

TEST(Blockers, ContractionBroadcastWhenAConsumerBroadcastsAContraction) {
  Graph g = text(
      "t (float[1, 32] a, float[32, 16] b, float[64, 16] z) => (float[64, 16] y) { m = MatMul(a, b)\n y = Add(m, z) }");
  const auto d = can_merge_vertical(g, ids(g, {"m"}), ids(g, {"y"}), h100());
  EXPECT_EQ(d.blocker, Blocker::contraction_broadcast);
  EXPECT_NE(d.reason.find("(1024 > 16 elements)"), std::string::npos);
}

TEST(Blockers, PrologueNotCheapForAReductionFeedingAContraction) {
  Graph g = text(
      "t (float[64, 32, 8] x, float[32, 16] b) => (float[64, 16] y) { ax = Constant<value = int64[1] {2}>()\n"
      " s = ReduceSum<keepdims = 0>(x, ax)\n y = MatMul(s, b) }");
  const auto d = can_merge_vertical(g, ids(g, {"s"}), ids(g, {"y"}), h100());
  EXPECT_EQ(d.blocker, Blocker::prologue_not_cheap);
  EXPECT_NE(d.reason.find("'s' (reduction) is not a cheap prologue of contraction 'y'"), std::string::npos);
}

TEST(Blockers, ExpensiveBroadcastOfAGather) {
  // The gathered row (8 elements) broadcast to 64 x 8: the gather would run per copy.
  Graph g = text(
      "t (float[100, 8] table, int64[1] idx, float[64, 8] z) => (float[64, 8] y) { r = Gather<axis = 0>(table, idx)\n"
      " y = Add(r, z) }");
  EXPECT_TRUE(can_fuse_edge(g, g.at("r"), g.at("y")).ok());
  const auto d = can_merge_vertical(g, ids(g, {"r"}), ids(g, {"y"}), h100());
  EXPECT_EQ(d.blocker, Blocker::expensive_broadcast);
  EXPECT_NE(d.reason.find("consumer broadcasts 'r' to a larger shape"), std::string::npos);
}

TEST(Blockers, HorizontalContractionIsLaunchedByTheLibrary) {
  Graph g = text(
      "t (float[64, 32] a, float[32, 16] b, float[64, 16] x) => (float[64, 16] m, float[64, 16] r) { m = MatMul(a, b)\n"
      " r = Relu(x) }");
  const auto d = can_merge_horizontal(g, ids(g, {"m"}), ids(g, {"r"}), true);
  EXPECT_EQ(d.blocker, Blocker::horizontal_contraction);
  EXPECT_EQ(d.reason, "'m' || 'r': contraction 'm' is launched by the GEMM library");
}

TEST(Blockers, IterationSpaceForHorizontalGroupsOfDifferentLargeShapes) {
  Graph g = text(
      "t (float[2048, 1024] x, float[4096, 1024] z) => (float[2048, 1024] a, float[4096, 1024] b) { a = Relu(x)\n b "
      "= Relu(z) }");
  EXPECT_EQ(can_merge_horizontal(g, ids(g, {"a"}), ids(g, {"b"}), true).blocker, Blocker::iteration_space);
  // Below 2^20 elements each, block-index dispatch launches both.
  Graph small = text(
      "t (float[256, 1024] x, float[512, 1024] z) => (float[256, 1024] a, float[512, 1024] b) { a = Relu(x)\n b "
      "= Relu(z) }");
  EXPECT_TRUE(can_merge_horizontal(small, ids(small, {"a"}), ids(small, {"b"}), true).ok());
}

TEST(Blockers, RegisterPressureForAHorizontalGroupOfManyBranches) {
  std::string sig = "t (", outs, body;
  for (int i = 0; i < 64; ++i) {
    sig += std::string(i ? ", " : "") + "float[4096] x" + std::to_string(i);
    outs += std::string(i ? ", " : "") + "float[4096] y" + std::to_string(i);
    body += " y" + std::to_string(i) + " = Sigmoid(x" + std::to_string(i) + ")\n";
  }
  Graph g = text(sig + ") => (" + outs + ") {\n" + body + "}");
  std::vector<NodeId> all;
  for (int i = 0; i < 64; ++i) all.push_back(g.at("y" + std::to_string(i)));
  const GroupCost c = price_set(g, h100(), all);
  EXPECT_EQ(check_resources(c, h100(), "64 branches").blocker, Blocker::register_pressure);
  // ... which is why the cost strategy launches them as a few horizontal kernels, not one.
  Plan p = search(g, h100(), "cost");
  EXPECT_GT(p.totals.kernels, 1);
  EXPECT_LE(p.totals.kernels, 4);
}

TEST(Blockers, SharedMemoryForTwoResidentRowsInOneBlock) {
  ImportOptions o;
  o.dims = {{"N", 16}, {"C", 32768}};  // 128 KiB rows: each fits a block's shared memory, two do not
  Graph g = text(
      "t (float[N, C] x, float[N, C] z) => (float[N, C] a, float[N, C] b) { a = Softmax<axis = -1>(x)\n b = "
      "Softmax<axis = -1>(z) }",
      o);
  std::vector<NodeId> sa, sb;
  for (NodeId n = 0; n < g.size(); ++n) {
    if (g.node(n).origin == "a" && g.node(n).op_class != OpClass::source) sa.push_back(n);
    if (g.node(n).origin == "b" && g.node(n).op_class != OpClass::source) sb.push_back(n);
  }
  EXPECT_TRUE(fits_row_resident(32768 * 4, h100()));
  EXPECT_EQ(can_merge_horizontal(g, sa, sb, true, &h100()).blocker, Blocker::shared_memory);
}

TEST(Blockers, UnprofitableWhenAPrologueWouldBeRecomputedPerTile) {
  // Exp fused into the GEMM's A operand is recomputed once per output tile
  // column (N/128 = 64 times): more FLOPs than the saved round trip is worth.
  Graph g = text(
      "t (float[4096, 4096] a, float[4096, 8192] b) => (float[4096, 8192] y) { e = Exp(a)\n y = MatMul(e, b) }");
  Plan p = search(g, h100(), "cost");
  const auto* r = find(p, "e", "y");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->action, Action::kept);
  EXPECT_EQ(r->blocker, Blocker::unprofitable);
  EXPECT_LT(r->delta_us, 0);
}

// Resources: a kernel's compile time (costmodel/compile_time.h: 780
// primitives within the 0.5 s budget on a CPU device, 2896 on a GPU device)
// and the user's --max-group-size, whichever is smaller, named as such.
TEST(Blockers, CompileTimeAndGroupSizeCapAKernelsPrimitives) {
  const DeviceSpec cpu = load_device("host-cpu-reference");
  EXPECT_EQ(max_group_primitives(cpu, 0), 780u);
  EXPECT_EQ(max_group_primitives(h100(), 0), 2896u);
  EXPECT_EQ(max_group_primitives(cpu, 100), 100u);
  EXPECT_EQ(max_group_primitives(cpu, 5000), 780u);
  EXPECT_TRUE(check_group_size(780, cpu, 0, "x").ok());
  const FusionDecision over = check_group_size(781, cpu, 0, "merging 'a' and 'b'");
  EXPECT_EQ(over.blocker, Blocker::compile_time);
  // 5.2e-4·781 + 1.54e-7·781² = 0.500054 s
  EXPECT_EQ(over.reason, "merging 'a' and 'b' makes a kernel of 781 primitives: ~0.50 s to compile with GCC 12 (CPU "
                         "backend flags), over the 0.50 s budget per kernel (780 primitives on host-cpu-reference)");
  EXPECT_TRUE(check_group_size(2896, h100(), 0, "x").ok());
  EXPECT_EQ(check_group_size(2897, h100(), 0, "x").blocker, Blocker::compile_time);
  const FusionDecision user = check_group_size(101, cpu, 100, "merging 'a' and 'b'");
  EXPECT_EQ(user.blocker, Blocker::group_size);
  EXPECT_EQ(user.reason, "merging 'a' and 'b' makes a kernel of 101 primitives, over the user's --max-group-size 100");
  EXPECT_TRUE(check_group_size(100, cpu, 100, "x").ok());
  // A user cap above the budget: the budget binds.
  EXPECT_EQ(check_group_size(781, cpu, 5000, "x").blocker, Blocker::compile_time);
}

TEST(Blockers, EveryCodeHasAName) {
  for (int b = 0; b <= static_cast<int>(Blocker::unprofitable); ++b)
    EXPECT_EQ(blocker_from_string(to_string(static_cast<Blocker>(b))), static_cast<Blocker>(b));
  EXPECT_THROW(blocker_from_string("nope"), Error);
  EXPECT_EQ(to_string(Blocker::two_contractions), "two_contractions");
  EXPECT_EQ(to_string(Blocker::iteration_space), "iteration_space");
}

// docs/blockers.md documents every code (a row whose first cell is the code).
TEST(Blockers, EveryCodeIsDocumented) {
  std::ifstream in(std::string(FUSEPLAN_SOURCE_DIR) + "/docs/blockers.md");
  ASSERT_TRUE(in) << "docs/blockers.md";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (int b = 1; b <= static_cast<int>(Blocker::unprofitable); ++b) {
    const std::string row = "| `" + std::string(to_string(static_cast<Blocker>(b))) + "` |";
    EXPECT_NE(doc.find(row), std::string::npos) << row;
  }
}

}  // namespace
}  // namespace fuseplan

namespace fuseplan {
namespace {

// Regression: on the CPU device every contraction group is estimated above
// the 16 AVX2 vector registers; refusing them as register_pressure would
// keep every conv + batch-norm + ReLU epilogue apart (TVM fuses them). CPU spills are priced, not forbidden.
TEST(Blockers, CpuRegisterEstimateIsACostNotALimit) {
  ImportOptions o;
  o.batch = 1;
  Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/resnet50_bottleneck.onnxtxt", o);
  const DeviceSpec cpu = load_device("host-cpu-reference");
  GroupCost big;
  big.regs_per_thread = 200;
  EXPECT_TRUE(check_resources(big, cpu, "x").ok());
  DeviceSpec gpu = make_gpu_device();
  gpu.gpu->max_regs_per_thread = 128;
  EXPECT_EQ(check_resources(big, gpu, "x").blocker, Blocker::register_pressure);
  const Plan cost = search(g, cpu, "cost"), tvm = search(g, cpu, "tvm");
  EXPECT_LE(cost.totals.predicted_us, tvm.totals.predicted_us);
  // Each conv keeps its batch-norm + ReLU epilogue (the registers of the
  // library call are not the epilogue's).
  auto group_of = [&](const std::string& name) {
    for (std::size_t i = 0; i < cost.groups.size(); ++i)
      for (NodeId n : cost.groups[i].nodes)
        if (g.node(n).name == name) return static_cast<int>(i);
    return -1;
  };
  for (const char* conv : {"c1", "c2"}) {
    const std::string k = std::string(conv).substr(1);
    EXPECT_EQ(group_of(conv), group_of("r" + k)) << conv;
    EXPECT_EQ(group_of(conv), group_of("bn" + k)) << conv;
  }
}

}  // namespace
}  // namespace fuseplan

namespace fuseplan {
namespace {

// A change predicted within the tie margin (kTieFraction of the changed
// groups' time) is decided by the bytes it writes; beyond it, by time. The
// rule is antisymmetric: a change and its reverse are never both taken.
TEST(TieOnTime, FewerBytesWrittenDecidesWithinTheMargin) {
  // After 6891 us: the margin is 6.891 us.
  EXPECT_EQ(ranked_gain(-0.509, 1572864, 6891), 2 * kMinGainUs);  // BERT's FFN GEMM + GELU: taken
  EXPECT_EQ(ranked_gain(0.509, -1572864, 6891), 0.0);             // its reverse: not taken
  EXPECT_EQ(ranked_gain(-7.0, 1572864, 6891), -7.0);               // beyond the margin: time decides
  EXPECT_EQ(ranked_gain(7.0, -1572864, 6891), 7.0);
  EXPECT_EQ(ranked_gain(-0.5, 0, 6891), 0.0);  // a tie that writes no fewer bytes: not taken
  // Tiny groups: the margin is kMinGainUs, as before.
  EXPECT_EQ(ranked_gain(2e-6, -64, 1e-4), 2e-6);
  EXPECT_TRUE(std::isnan(ranked_gain(std::nan(""), 64, 1)));
  for (double g : {-10.0, -1.0, -0.01, 0.0, 0.01, 1.0, 10.0})
    for (double b : {-1e6, 0.0, 1e6})
      EXPECT_FALSE(ranked_gain(g, b, 1000) > kMinGainUs && ranked_gain(-g, -b, 1000) > kMinGainUs) << g << " " << b;
}

// Regression (issue 32, activation bytes): on the probed Zen 4 device BERT's
// FFN GEMM with its Erf GELU as the epilogue is predicted within the tie
// margin of the two kernels apart; the cost plan fuses them (1.5 MiB per
// layer not written; measured 134 us faster per FFN on one Zen 4 thread).
TEST(TieOnTime, TheCostPlanFusesBertsGeluIntoItsFfnGemm) {
  ImportOptions o;
  o.batch = 1;
  o.dims = {{"S", 128}};
  Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/bert_base_layer.onnxtxt", o);
  const DeviceSpec d = load_device("host-zen4-1thread");
  // The premise: apart and fused are a tie on time, and fused writes less.
  const std::vector<NodeId> mm = {g.at("ff1_mm")};
  const GroupCost gemm = price_set(g, d, mm);
  std::vector<NodeId> gelu_nodes, both = mm;
  for (const char* n : {"ff1", "g_div", "g_erf", "g_add", "g_mul", "gelu"}) gelu_nodes.push_back(g.at(n));
  both.insert(both.end(), gelu_nodes.begin(), gelu_nodes.end());
  const GroupCost gelu = price_set(g, d, gelu_nodes), fused = price_set(g, d, both);
  const double gain = gemm.predicted_us + gelu.predicted_us - fused.predicted_us;
  ASSERT_LE(std::abs(gain), kTieFraction * fused.predicted_us) << "no longer a tie on this device: " << gain << " us";
  EXPECT_LT(fused.bytes_written, gemm.bytes_written + gelu.bytes_written);
  const Plan cost = search(g, d, "cost");
  int home = -1;
  for (const auto& grp : cost.groups)
    if (grp.contains(g.at("ff1_mm"))) home = grp.id;
  ASSERT_GE(home, 0);
  EXPECT_TRUE(cost.groups[home].contains(g.at("gelu")));
}

// Regression (issue 32, ranking): in the MobileNetV2 inverted residual at
// batch 8 the `optimal` plan put the depthwise conv's bias and ReLU6 before
// the projection conv as a prologue, predicted exactly as fast as the cost
// plan's epilogue, and measured 11% slower (14.0 against 12.7 ms on one Zen 4
// thread): the CPU kernel computes a prologue into 14 MB of scratch and the
// conv reads it back. Priced so, both plans keep them as the depthwise conv's
// epilogue.
TEST(LibraryOperands, TheDepthwiseBiasAndReluStayItsEpilogueNotTheNextConvsPrologue) {
  ImportOptions o;
  o.batch = 8;
  Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/mobilenetv2_inverted_residual.onnxtxt", o);
  const DeviceSpec d = load_device("host-zen4-1thread");
  for (const char* strategy : {"cost", "optimal"}) {
    const Plan p = search(g, d, strategy);
    for (const auto& grp : p.groups)
      if (grp.contains(g.at("r2"))) {
        EXPECT_TRUE(grp.contains(g.at("d"))) << strategy;
        EXPECT_FALSE(grp.contains(g.at("p"))) << strategy;
      }
  }
}

}  // namespace
}  // namespace fuseplan
