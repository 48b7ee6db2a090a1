// `optimal`: equals brute force on a tiny graph, and is never predicted slower
// than the vertical-only heuristics on the shared cases.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "search/legality.h"
#include "tests/strategies/strategy_test_util.h"

namespace fuseplan {
namespace {

using testing::graph;
using testing::h100;

TEST(Optimal, EqualsBruteForceOnTinyChain) {
  Graph g = graph(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, C] x) => (float[N, 1] y) {
  a = Neg(x)
  e = Exp(a)
  ax = Constant<value = int64[1] {1}>()
  s = ReduceSum<keepdims = 1>(e, ax)
  r = Relu(s)
  y = Sqrt(r)
})",
                  {{"N", 4096}, {"C", 1024}});
  const DeviceSpec d = h100();
  std::vector<NodeId> chain;
  for (NodeId n : g.topo_order())
    if (g.node(n).op_class != OpClass::source) chain.push_back(n);
  const std::size_t k = chain.size();
  double best = 1e300;
  for (unsigned mask = 0; mask < (1u << (k - 1)); ++mask) {  // bit i: cut after chain[i]
    std::vector<std::vector<NodeId>> part{{chain[0]}};
    bool legal = true;
    for (std::size_t i = 1; i < k && legal; ++i) {
      if (mask & (1u << (i - 1))) {
        part.push_back({chain[i]});
      } else {
        const NodeId one[1] = {chain[i]};
        legal = can_merge_vertical(g, part.back(), one, d).ok();
        part.back().push_back(chain[i]);
      }
    }
    if (legal) best = std::min(best, make_plan(g, d, part, "brute").totals.predicted_us);
  }
  Plan p = search(g, d, "optimal");
  EXPECT_EQ(p.status.rfind("optimal", 0), 0u) << p.status;
  EXPECT_NEAR(p.totals.predicted_us, best, 1e-9 * best);
}

TEST(Optimal, NeverSlowerThanVerticalHeuristicsOnSharedCases) {
  std::ifstream f(std::string(FUSEPLAN_SHARED_DIR) + "/cases/expected.json");
  if (!f) GTEST_SKIP() << "no shared cases";
  const auto cases = nlohmann::json::parse(f)["cases"];
  const DeviceSpec d = h100();
  int checked = 0;
  for (const auto& c : cases) {
    ImportOptions o;
    for (auto& [k, v] : c["dims"].items()) o.dims[k] = v.get<int64_t>();
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    Graph g = import_model(std::string(FUSEPLAN_SHARED_DIR) + "/cases/" + file, o);
    const Plan opt = search(g, d, "optimal");
    EXPECT_EQ(opt.status.rfind("optimal", 0), 0u) << opt.status;
    // Horizontal groups (inductor, cost) lie outside optimal's candidates: connected groups only.
    for (const char* s : {"unfused", "elementwise", "tvm", "xla"})
      EXPECT_LE(opt.totals.predicted_us, search(g, d, s).totals.predicted_us * (1 + 1e-9)) << s;
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
}  // namespace fuseplan
