// Register-pressure estimate: accumulators, live values, spills, occupancy,
// row residency of multipass groups.
#include <gtest/gtest.h>

#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"
#include "tests/costmodel/cost_test_util.h"

namespace fuseplan {
namespace {

using costmodel_detail::estimate_registers;
using costmodel_detail::GroupView;
using testing::GraphBuilder;
using testing::h100;
using testing::make_group;

TEST(Registers, Tile128x128Over256ThreadsNeeds64Accumulators) {
  GraphBuilder b;
  NodeId a = b.input("a", {2048, 1024});
  NodeId w = b.weight("w", {1024, 2048});
  NodeId mm = b.op("mm", "MatMul", OpClass::contraction, {2048, 2048}, {a, w});
  NodeId y = b.op("y", "Relu", OpClass::elementwise, {2048, 2048}, {mm});
  Graph g = b.finish({y});
  Group grp = make_group(g, {"mm", "y"});
  auto r = estimate_registers(GroupView(g, grp), h100());
  EXPECT_EQ(r.accumulator_regs, 64);
  EXPECT_GE(r.regs, 64 + 10);
  EXPECT_LE(r.regs, 255);
  EXPECT_DOUBLE_EQ(r.threads, 2048.0 * 2048 / (128 * 128) * 256);  // 256 threads per tile
  EXPECT_EQ(cost(g, grp, h100()).regs_per_thread, r.regs);
}

TEST(Registers, FusedBiasReluHoldsThreeValuesOfFourElements) {
  GraphBuilder b;
  NodeId x = b.input("x", {4096, 1024});
  NodeId bias = b.weight("bias", {1024});
  NodeId t = b.op("t", "Add", OpClass::broadcast, {4096, 1024}, {x, bias});
  NodeId y = b.op("y", "Relu", OpClass::elementwise, {4096, 1024}, {t});
  Graph g = b.finish({y});
  GroupCost c = cost(g, make_group(g, {"t", "y"}), h100());
  // x, bias, t live at the Add (3 values × 4 f32 elements) + 10 address registers.
  EXPECT_EQ(c.regs_per_thread, 3 * 4 + 10);
  EXPECT_DOUBLE_EQ(c.occupancy, 1.0);
}

// x feeds k Exps that a chain of Adds sums: all k values are live at once.
Graph fanout(int k, int64_t s) {
  GraphBuilder b;
  NodeId x = b.input("x", {s});
  std::vector<NodeId> us;
  for (int i = 0; i < k; ++i) us.push_back(b.op("u" + std::to_string(i), "Exp", OpClass::elementwise, {s}, {x}));
  NodeId acc = us[0];
  for (int i = 1; i < k; ++i) acc = b.op("s" + std::to_string(i), "Add", OpClass::elementwise, {s}, {acc, us[i]});
  return b.finish({acc});
}

Group whole(const Graph& g) {
  std::vector<NodeId> ns;
  for (NodeId n : g.topo_order())
    if (g.node(n).op_class != OpClass::source) ns.push_back(n);
  return make_group(g, ns);
}

TEST(Registers, AboveTheLimitSpillsAndCostsMore) {
  constexpr int64_t S = 1 << 20;
  Graph g = fanout(80, S);
  Group grp = whole(g);
  DeviceSpec d = h100();
  GroupCost spilled = cost(g, grp, d);
  ASSERT_GT(spilled.regs_per_thread, 255);
  // (regs − 255) × 4 B × (store + load) × threads (S / 4 elements per thread) × spill_penalty.
  EXPECT_DOUBLE_EQ(spilled.spill_bytes, (spilled.regs_per_thread - 255) * 4.0 * 2 * (S / 4) * d.spill_penalty);
  EXPECT_DOUBLE_EQ(spilled.bytes(), 2.0 * S * 4 + spilled.spill_bytes);
  // The same group where the limit holds it: no spill, faster.
  DeviceSpec roomy = d;
  roomy.gpu->max_regs_per_thread = 1024;
  GroupCost fits = cost(g, grp, roomy);
  EXPECT_EQ(fits.spill_bytes, 0);
  EXPECT_GT(spilled.predicted_us, fits.predicted_us);
  // A smaller fan-out stays under the limit.
  Graph g2 = fanout(20, S);
  EXPECT_LE(cost(g2, whole(g2), d).regs_per_thread, 255);
  EXPECT_EQ(cost(g2, whole(g2), d).spill_bytes, 0);
}

TEST(Registers, LowOccupancyLowersBandwidth) {
  constexpr int64_t S = 1 << 20;
  Graph g = fanout(30, S);  // ~ 4 × 31 + 10 registers: one 256-thread block per SM
  GroupCost c = cost(g, whole(g), h100());
  ASSERT_GT(c.regs_per_thread, 128);
  ASSERT_LE(c.regs_per_thread, 255);
  EXPECT_DOUBLE_EQ(c.occupancy, 256.0 / 2048);
  // Bandwidth falls linearly below 50% occupancy: × 0.125 / 0.5.
  EXPECT_NEAR(c.t_mem_us, c.bytes() / (3350 * 0.85 * 1e3 * 0.25), 1e-9);
}

TEST(Registers, CpuSpillsAboveSixteenVectorRegistersToL1) {
  DeviceSpec d = testing::cpu_spec();
  constexpr int64_t S = 1 << 14;  // 64 KiB tensors: working set in L1 or L2
  Graph ok = fanout(8, S);
  EXPECT_EQ(cost(ok, whole(ok), d).spill_bytes, 0);
  Graph g = fanout(30, S);
  GroupCost c = cost(g, whole(g), d);
  ASSERT_GT(c.regs_per_thread, 16);
  EXPECT_DOUBLE_EQ(c.spill_bytes, (c.regs_per_thread - 16) * 32.0 * 2 * (S / 8));
  // 128 KiB in and out: fits the 8 × 48 KiB of L1; the input is a graph
  // input, read at DRAM (50 GB/s); spills at L1.
  const double bytes = S * 4.0;
  EXPECT_DOUBLE_EQ(c.t_mem_us, bytes / (2000 * 1e3) + bytes / (50 * 1e3) + c.spill_bytes / (2000 * 1e3));
}

TEST(RowResident, FourMiBRowFitsNoGpuButAThousandFloatsDo) {
  for (const DeviceSpec& d : testing::all_gpus()) {
    EXPECT_FALSE(fits_row_resident(4.0 * 1024 * 1024, d)) << d.name;
    EXPECT_TRUE(fits_row_resident(1024 * 4.0, d)) << d.name;
  }
  for (const std::string& name : list_devices()) {
    DeviceSpec d = load_device(name);
    if (!d.is_gpu()) continue;
    EXPECT_FALSE(fits_row_resident(4.0 * 1024 * 1024, d)) << name;
    EXPECT_TRUE(fits_row_resident(1024 * 4.0, d)) << name;
  }
}

Graph softmax(int64_t rows, int64_t cols) {
  GraphBuilder b;
  NodeId x = b.input("x", {rows, cols});
  std::map<std::string, AttrValue> ax{{"axes", std::vector<int64_t>{1}}};
  NodeId mx = b.op("max", "ReduceMax", OpClass::reduction, {rows, 1}, {x}, ax);
  NodeId sub = b.op("sub", "Sub", OpClass::broadcast, {rows, cols}, {x, mx});
  NodeId ex = b.op("exp", "Exp", OpClass::elementwise, {rows, cols}, {sub});
  NodeId sum = b.op("sum", "ReduceSum", OpClass::reduction, {rows, 1}, {ex}, ax);
  NodeId y = b.op("y", "Div", OpClass::broadcast, {rows, cols}, {ex, sum});
  return b.finish({y});
}

TEST(RowResident, MultipassRowInRegistersOrSharedMemory) {
  DeviceSpec d = h100();
  Graph g = softmax(4096, 1024);
  auto r = estimate_registers(GroupView(g, whole(g)), d);
  EXPECT_EQ(r.smem_bytes, 0);
  EXPECT_GE(r.extra_regs, 1024 / 256);  // 4 row elements per thread
  EXPECT_LT(r.regs, 64);
  EXPECT_DOUBLE_EQ(r.threads, 4096.0 * 256);  // one block per row
  // 48K floats: 192 row registers per thread > 128: staged in shared memory,
  // one block per SM by shared memory.
  Graph wide = softmax(64, 49152);
  auto rw = estimate_registers(GroupView(wide, whole(wide)), d);
  EXPECT_DOUBLE_EQ(rw.smem_bytes, 49152 * 4.0);
  EXPECT_DOUBLE_EQ(rw.occupancy, 256.0 / 2048);
  EXPECT_TRUE(fits_row_resident(49152 * 4.0, d));
}

}  // namespace
}  // namespace fuseplan
