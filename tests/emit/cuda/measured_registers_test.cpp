// Measured registers feed the search (`fuseplan search --measure-registers`):
// the cost model's ResourceOracle hook, the NVRTC oracle of emit/cuda, and a
// constructed group whose register estimate and NVRTC measurement disagree
// enough to change a fusion decision.
//
// The construction: 8 independent, launch-bound elementwise "fans" on
// [1, 64] tensors, y_i = (sigmoid(x_i) + tanh(x_i) + exp(x_i) + |x_i| - x_i +
// relu(x_i) + floor(x_i) + ceil(x_i)) * x_i, the eight unary results computed
// first (ONNX text order) so the estimate holds them all live. After vertical
// fusion each fan is one loop kernel; the horizontal pass then merges
// launch-bound kernels into one launch while check_resources allows it. The
// estimate sums the live registers of every branch (10 address + 8 x 40 =
// 330 > 255 per thread), so without the oracle the merge is refused for
// register_pressure at 6 branches and the plan keeps two kernels. The emitted
// horizontal kernel dispatches one branch per block (docs/cuda.md), so ptxas
// allocates about one branch's registers (27 with NVRTC 13.0 for sm_90): with
// the oracle all eight branches share one launch.
#ifdef FUSEPLAN_HAVE_CUDA
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "emit/cuda/cuda_backend.h"
#include "support/files.h"
#include "emit/plan_json.h"
#include "search/legality.h"
#include "search/strategy.h"
#include "tests/cuda_util.h"

namespace fuseplan {
namespace {

constexpr int kChains = 8;

std::string chains_model() {
  const char* ops[] = {"Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Relu", "Floor", "Ceil"};
  std::string ins, outs, body;
  for (int i = 0; i < kChains; ++i) {
    std::string k = std::to_string(i);
    ins += (i ? ", " : "") + std::string("float[1, 64] x") + k;
    outs += (i ? ", " : "") + std::string("float[1, 64] y") + k;
    for (int j = 0; j < 8; ++j) body += "  v" + k + "_" + std::to_string(j) + " = " + ops[j] + "(x" + k + ")\n";
    body += "  a" + k + "_1 = Add(v" + k + "_0, v" + k + "_1)\n";
    for (int j = 2; j < 8; ++j)
      body += "  a" + k + "_" + std::to_string(j) + " = Add(a" + k + "_" + std::to_string(j - 1) + ", v" + k + "_" +
              std::to_string(j) + ")\n";
    body += "  y" + k + " = Mul(a" + k + "_7, x" + k + ")\n";
  }
  return "<ir_version: 8, opset_import: [\"\" : 17]>\nfans (" + ins + ") => (" + outs + ") {\n" + body + "}\n";
}

const Group* widest_horizontal(const Plan& p, const GroupCost** c) {
  const Group* best = nullptr;
  for (std::size_t i = 0; i < p.groups.size(); ++i)
    if (p.groups[i].kind == GroupKind::horizontal && (!best || p.groups[i].branches.size() > best->branches.size())) {
      best = &p.groups[i];
      *c = &p.costs[i];
    }
  return best;
}

TEST(ResourceOracle, CostUsesTheMeasurementOnlyWhileInstalled) {
  Graph g = cudatest::model(chains_model());
  DeviceSpec d = load_device("h200");
  Plan one = cudatest::one_group(g, d);  // horizontal, all branches
  const Group& h = one.groups.at(0);
  ASSERT_EQ(h.kind, GroupKind::horizontal);
  GroupCost est = cost(g, h, d);
  EXPECT_GT(est.regs_per_thread, d.gpu->max_regs_per_thread);
  EXPECT_EQ(est.regs_estimate, est.regs_per_thread);
  EXPECT_FALSE(est.measured);
  EXPECT_EQ(est.regs_measured, -1);
  EXPECT_FALSE(check_resources(est, d, "h").ok());

  int asked = 0;
  ResourceOracle fake = [&](const Graph&, const Group&, const DeviceSpec&) -> std::optional<MeasuredResources> {
    ++asked;
    return MeasuredResources{40, 0, 0};
  };
  {
    ScopedResourceOracle s(fake);
    GroupCost m = cost(g, h, d, true);
    EXPECT_TRUE(m.measured);
    EXPECT_EQ(m.regs_per_thread, 40);
    EXPECT_EQ(m.regs_measured, 40);
    EXPECT_EQ(m.regs_estimate, est.regs_estimate);
    EXPECT_EQ(m.spill_bytes, 0);
    EXPECT_GT(m.spill_bytes_estimate, 0);
    EXPECT_GT(m.occupancy, est.occupancy);
    EXPECT_TRUE(check_resources(m, d, "h").ok());
    EXPECT_NE(m.breakdown.find("measured; estimate"), std::string::npos) << m.breakdown;
  }
  EXPECT_EQ(asked, 1);
  // A group whose estimate does not constrain it is not measured (bounded
  // compiles), unless every group is asked for (pricing a final plan).
  Group chain;  // one primitive: estimate far below every limit
  chain.nodes = {g.find("v0_0")};
  chain.materialised = chain.nodes;
  chain.kind = GroupKind::single;
  {
    ScopedResourceOracle s(fake);
    EXPECT_FALSE(cost(g, chain, d).measured);
  }
  {
    ScopedResourceOracle s(fake, OracleUse::every_group);
    EXPECT_TRUE(cost(g, chain, d).measured);
  }
  EXPECT_FALSE(cost(g, h, d).measured);  // uninstalled again
  DeviceSpec cpu = load_device("host-cpu-reference");
  ScopedResourceOracle s(fake, OracleUse::every_group);
  EXPECT_FALSE(cost(g, chain, cpu).measured);  // GPU devices only
}

TEST(ResourceOracle, NvrtcMeasurementChangesTheHorizontalFusionDecision) {
  Graph g = cudatest::model(chains_model());
  DeviceSpec d = load_device("h200");
  Plan without = search(g, d, "cost");

  SearchOptions o;
  auto stats = std::make_shared<cuda::OracleStats>();
  o.resource_oracle = cuda::nvrtc_resource_oracle(cudatest::opts(d.arch), stats);
  Plan with = search(g, d, "cost", o);

  // Without the oracle the estimate (sum of branches) blocks the full merge.
  const GroupCost* cw = nullptr;
  const Group* hw = widest_horizontal(without, &cw);
  ASSERT_NE(hw, nullptr);
  EXPECT_GE(without.totals.kernels, 2);
  EXPECT_LT(static_cast<int>(hw->branches.size()), kChains);
  EXPECT_LE(cw->regs_per_thread, d.gpu->max_regs_per_thread);

  // With NVRTC's measurement all chains share one launch.
  EXPECT_EQ(with.totals.kernels, 1) << "without the oracle: " << without.totals.kernels;
  EXPECT_LT(with.totals.kernels, without.totals.kernels);
  EXPECT_LT(with.totals.predicted_us, without.totals.predicted_us);
  const GroupCost* cm = nullptr;
  const Group* hm = widest_horizontal(with, &cm);
  ASSERT_NE(hm, nullptr);
  EXPECT_EQ(static_cast<int>(hm->branches.size()), kChains);
  EXPECT_TRUE(cm->measured);
  EXPECT_GT(cm->regs_estimate, d.gpu->max_regs_per_thread);  // the estimate would block it
  EXPECT_GT(cm->regs_measured, 0);
  EXPECT_LT(cm->regs_measured, 64);  // one branch per block
  EXPECT_EQ(cm->spill_bytes_measured, 0);

  // Bounded: only groups whose estimate constrained them were compiled.
  EXPECT_GE(stats->asked, 1);
  EXPECT_LE(stats->asked, kChains);
  EXPECT_EQ(stats->failed, 0) << stats->first_failure;

  // The plan JSON records estimate and measurement; the loader re-derives costs.
  auto j = nlohmann::json::parse(plan_to_json(g, with));
  const auto& c0 = j["groups"][0]["cost"];
  EXPECT_EQ(c0["resources"], "measured");
  EXPECT_EQ(c0["regs_estimate"].get<int>(), cm->regs_estimate);
  EXPECT_EQ(c0["regs_measured"].get<int>(), cm->regs_measured);
  EXPECT_TRUE(c0.contains("spill_bytes_estimate"));
  EXPECT_TRUE(c0.contains("spill_bytes_measured"));
  Plan back = load_plan(plan_to_json(g, with), g, d);
  EXPECT_EQ(back.groups.size(), with.groups.size());
  auto jw = nlohmann::json::parse(plan_to_json(g, without));
  EXPECT_TRUE(jw["groups"][0]["cost"]["regs_measured"].is_null());
  EXPECT_EQ(jw["groups"][0]["cost"]["resources"], "estimate");
}

TEST(ResourceOracle, PlanWithoutRegisterFieldsStillLoads) {
  Graph g = cudatest::model(chains_model());
  DeviceSpec d = load_device("h200");
  auto j = nlohmann::json::parse(plan_to_json(g, search(g, d, "unfused")));
  for (auto& grp : j["groups"])
    for (const char* k : {"regs_estimate", "regs_measured", "spill_bytes_estimate", "spill_bytes_measured", "resources"})
      grp["cost"].erase(k);
  Plan p = load_plan(j.dump(), g, d);
  EXPECT_EQ(p.groups.size(), static_cast<std::size_t>(16 * kChains));
}

int run_cli(const std::string& args) {
  std::string cmd = "FUSEPLAN_CACHE_DIR='" + cudatest::test_cache_dir() + "' '" + std::string(FUSEPLAN_BINARY) +
                    "' " + args + " > /dev/null 2>&1";
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(ResourceOracle, CliMeasureRegistersChangesThePlan) {
  if (!std::filesystem::exists(FUSEPLAN_BINARY)) GTEST_SKIP() << "no fuseplan binary at " << FUSEPLAN_BINARY;
  auto dir = std::filesystem::path(cudatest::test_cache_dir()) / "cli";
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "chains.onnxtxt").string();
  write_file_atomic(model, chains_model());
  const std::string a = (dir / "est.json").string(), b = (dir / "meas.json").string();
  ASSERT_EQ(run_cli("search '" + model + "' --device h200 -o '" + a + "'"), 0);
  ASSERT_EQ(run_cli("search '" + model + "' --device h200 --measure-registers -o '" + b + "'"), 0);
  auto ja = nlohmann::json::parse(read_file(a)), jb = nlohmann::json::parse(read_file(b));
  EXPECT_GE(ja["totals"]["kernels"].get<int>(), 2);
  EXPECT_EQ(jb["totals"]["kernels"].get<int>(), 1);
  for (const auto& grp : jb["groups"]) {
    EXPECT_EQ(grp["cost"]["resources"], "measured");
    EXPECT_FALSE(grp["cost"]["regs_measured"].is_null());
  }
  for (const auto& grp : ja["groups"]) EXPECT_TRUE(grp["cost"]["regs_measured"].is_null());
  EXPECT_TRUE(std::filesystem::exists(dir / "meas.resources.md"));
  // A CPU device has no NVRTC measurement: one-line error, exit 2.
  EXPECT_EQ(run_cli("search '" + model + "' --device host-cpu-reference --measure-registers"), 2);
}

}  // namespace
}  // namespace fuseplan
#endif
