// Every case of ../shared/cases/expected.json holds with the `cost` strategy
// on the H100 SXM config: groups, separations, materialisation, duplication,
// blockers, kernel counts and bytes.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "costmodel/device.h"
#include "graph/import.h"
#include "search/strategy.h"

namespace fuseplan {
namespace {

const std::string kCases = std::string(FUSEPLAN_SHARED_DIR) + "/cases";

nlohmann::json expected() {
  std::ifstream in(kCases + "/expected.json");
  return nlohmann::json::parse(in);
}

/// Indices of the plan's groups that hold primitive `name`.
std::vector<int> holders(const Graph& g, const Plan& p, const std::string& name) {
  const NodeId n = g.at(name);
  std::vector<int> out;
  for (const auto& grp : p.groups)
    if (grp.contains(n)) out.push_back(grp.id);
  return out;
}

bool is_materialised(const Graph& g, const Plan& p, const std::string& name) {
  const NodeId n = g.at(name);
  for (const auto& grp : p.groups)
    for (NodeId m : grp.materialised)
      if (m == n) return true;
  return false;
}

class ExpectedCase : public ::testing::TestWithParam<int> {};

TEST_P(ExpectedCase, CostStrategyReachesTheExpectedDecisions) {
  const auto c = expected()["cases"][GetParam()];
  ImportOptions o;
  for (auto& [k, v] : c["dims"].items()) o.dims[k] = v.get<int64_t>();
  const std::string file = c["file"];
  SCOPED_TRACE(file + " " + c["dims"].dump());
  Graph g = import_model(kCases + "/" + file, o);
  const DeviceSpec d = load_device("h100-sxm");
  const Plan plan = search(g, d, "cost");
  const Plan unfused = search(g, d, "unfused");

  if (c.contains("same_group"))
    for (const auto& set : c["same_group"]) {
      std::vector<int> common = holders(g, plan, set[0]);
      for (const auto& name : set) {
        auto h = holders(g, plan, name);
        std::vector<int> keep;
        for (int x : common)
          if (std::find(h.begin(), h.end(), x) != h.end()) keep.push_back(x);
        common = keep;
      }
      EXPECT_FALSE(common.empty()) << "expected one kernel holding " << set.dump();
    }
  if (c.contains("separate"))
    for (const auto& pair : c["separate"]) {
      auto a = holders(g, plan, pair[0]), b = holders(g, plan, pair[1]);
      for (int x : a) EXPECT_EQ(std::find(b.begin(), b.end(), x), b.end()) << pair.dump() << " share kernel " << x;
    }
  if (c.contains("max_kernels")) {
    EXPECT_LE(plan.totals.kernels, c["max_kernels"].get<int64_t>());
  }
  if (c.contains("min_kernels")) {
    EXPECT_GE(plan.totals.kernels, c["min_kernels"].get<int64_t>());
  }
  if (c.contains("materialised"))
    for (const auto& n : c["materialised"]) {
      EXPECT_TRUE(is_materialised(g, plan, n)) << n;
    }
  if (c.contains("not_materialised"))
    for (const auto& n : c["not_materialised"]) {
      EXPECT_FALSE(is_materialised(g, plan, n)) << n;
    }
  if (c.contains("duplicated"))
    for (const auto& n : c["duplicated"]) {
      EXPECT_GT(holders(g, plan, n).size(), 1u) << n;
    }
  if (c.contains("computed_once"))
    for (const auto& n : c["computed_once"]) {
      EXPECT_EQ(holders(g, plan, n).size(), 1u) << n;
    }
  if (c.contains("blockers"))
    for (const auto& b : c["blockers"]) {
      bool found = false;
      for (const auto& r : plan.decisions)
        found |= r.producer == b["producer"] && r.consumer == b["consumer"] && to_string(r.blocker) == b["code"];
      EXPECT_TRUE(found) << "no decision " << b.dump();
    }
  if (c.contains("blocker_codes"))
    for (const auto& code : c["blocker_codes"]) {
      bool found = false;
      for (const auto& r : plan.decisions) found |= to_string(r.blocker) == code;
      EXPECT_TRUE(found) << "no decision with blocker " << code;
    }
  if (c.contains("bytes")) {
    const auto& b = c["bytes"];
    if (b.contains("unfused")) {
      EXPECT_EQ(unfused.totals.bytes, b["unfused"].get<double>());
    }
    if (b.contains("planned")) {
      EXPECT_EQ(plan.totals.bytes, b["planned"].get<double>());
    }
    if (b.contains("planned_at_most")) {
      EXPECT_LE(plan.totals.bytes, b["planned_at_most"].get<double>());
    }
  }
  if (c.contains("predicted_time_vs_unfused_at_most")) {
    EXPECT_LE(plan.totals.predicted_us / unfused.totals.predicted_us,
              c["predicted_time_vs_unfused_at_most"].get<double>());
  }
}

INSTANTIATE_TEST_SUITE_P(SharedCases, ExpectedCase, ::testing::Range(0, 13));

TEST(ExpectedCases, ThereAreThirteen) { EXPECT_EQ(expected()["cases"].size(), 13u); }

}  // namespace
}  // namespace fuseplan
