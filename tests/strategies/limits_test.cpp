// The limits every strategy keeps: --max-group-size (primitives per group,
// duplicated copies included) in every strategy, --time-limit over the whole
// of `optimal` (regions, candidate enumeration and pricing, model building,
// CBC), and work linear in the primitives on long chains.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "graph/synthetic.h"
#include "tests/strategies/strategy_test_util.h"

namespace fuseplan {
namespace {

/// A chain of n elementwise primitives (Relu and Neg alternating) on [8, 256].
Graph chain(int n) {
  std::ostringstream t;
  t << "<ir_version: 8, opset_import: [\"\" : 17]>\nchain (float[8, 256] x) => (float[8, 256] y) {\n";
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    const std::string out = i == n - 1 ? "y" : "t" + std::to_string(i);
    t << "  " << out << " = " << (i % 2 ? "Neg" : "Relu") << "(" << prev << ")\n";
    prev = out;
  }
  t << "}\n";
  return testing::graph(t.str());
}

std::size_t largest_group(const Plan& p) {
  std::size_t m = 0;
  for (const auto& grp : p.groups) m = std::max(m, grp.nodes.size());
  return m;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `xla` and the XLA start of `cost` fused a 1000-primitive chain into one
// group whatever the cap; `tvm` (256), `inductor` (64) and `optimal` (6)
// kept only their own limits.
TEST(Limits, EveryStrategyHonoursMaxGroupSizeOnAChain) {
  const Graph g = chain(300);
  const DeviceSpec d = load_device("host-cpu-reference");
  for (int cap : {2, 3}) {
    for (const auto& s : strategy_names()) {
      SCOPED_TRACE(s + " with --max-group-size " + std::to_string(cap));
      SearchOptions o;
      o.max_group_size = cap;
      o.time_limit_s = 20;
      const Plan p = search(g, d, s, o);
      EXPECT_LE(largest_group(p), static_cast<std::size_t>(cap));
      if (s != "unfused") EXPECT_LE(p.totals.kernels, 300 / 2 + 2);  // it still fuses, up to the cap
    }
  }
}

TEST(Limits, EveryStrategyHonoursMaxGroupSizeOnSyntheticModels) {
  const DeviceSpec d = testing::h100();
  for (SyntheticKind kind : {SyntheticKind::transformer, SyntheticKind::conv}) {
    const Graph g = synthetic_graph(kind, 300);
    for (int cap : {2, 5}) {
      for (const auto& s : strategy_names()) {
        SCOPED_TRACE(std::string(to_string(kind)) + ", " + s + " with --max-group-size " + std::to_string(cap));
        SearchOptions o;
        o.max_group_size = cap;
        o.time_limit_s = 1;
        EXPECT_LE(largest_group(search(g, d, s, o)), static_cast<std::size_t>(cap));
      }
    }
  }
}

// With no cap, `xla` fused a chain into one growing group and repriced it at
// every step: quadratic (10^4 primitives 16 s, 10^5 past the test's timeout).
// The default cap bounds each step's work, so the pass is linear.
TEST(Limits, XlaFinishesALongChainWithinTheDefaultCap) {
  const Graph g = chain(100000);
  const auto t0 = std::chrono::steady_clock::now();
  const Plan p = search(g, load_device("host-cpu-reference"), "xla");
  EXPECT_LE(largest_group(p), static_cast<std::size_t>(SearchOptions{}.max_group_size));
  EXPECT_LT(p.totals.kernels, 100000 / 64);
  EXPECT_LT(seconds_since(t0), 60.0);  // a few seconds; quadratic, it took most of an hour
}

// --time-limit bounded only CBC: the candidates of every region were
// enumerated and priced first, the model was built row by row (quadratic in
// the rows), and each region's solve had a 0.5 s floor, so a 10^4 chain with
// a 1 s limit ran past a minute. The limit now covers the whole strategy; the
// regions it leaves unsolved keep their primitives unfused, and the status
// says so.
TEST(Limits, OptimalTimeLimitCoversTheWholeStrategy) {
  const Graph g = chain(10000);
  SearchOptions o;
  o.time_limit_s = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const Plan p = search(g, load_device("host-cpu-reference"), "optimal", o);
  EXPECT_LT(seconds_since(t0), 15.0);  // the limit, the unfused pricing of what is left, make_plan
  EXPECT_EQ(p.status.rfind("time limit 1 s reached", 0), 0u) << p.status;
  EXPECT_TRUE(p.status.find("no proven bound") != std::string::npos || p.status.find("gap ") != std::string::npos)
      << p.status;
  EXPECT_LT(p.totals.kernels, 10000);  // the regions solved in time are fused
}

// Without time pressure the same chain's regions are all solved: the status
// reports them proven (the cuts into 400-primitive regions are heuristic).
TEST(Limits, OptimalSolvesEveryRegionOfAChainWithinItsLimit) {
  const Graph g = chain(1200);
  SearchOptions o;
  o.time_limit_s = 120;
  const Plan p = search(g, load_device("host-cpu-reference"), "optimal", o);
  EXPECT_EQ(p.status.rfind("optimal per region", 0), 0u) << p.status;
  EXPECT_EQ(p.status.find("time limit"), std::string::npos) << p.status;
  EXPECT_LE(largest_group(p), 6u);
}

}  // namespace
}  // namespace fuseplan
