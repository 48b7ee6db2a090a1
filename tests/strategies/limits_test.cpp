// The limits every strategy keeps: --max-group-size (primitives per group,
// duplicated copies included) in every strategy, --time-limit over the whole
// of `optimal` (regions, candidate enumeration and pricing, model building,
// CBC), and work linear in the primitives on long chains.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "costmodel/compile_time.h"
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
      if (s != "unfused") {
        EXPECT_LE(p.totals.kernels, 300 / 2 + 2);  // it still fuses, up to the cap
      }
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

// With no limit, `xla` fused a chain into one growing group and repriced it
// at every step: quadratic (10^4 primitives 16 s, 10^5 past the test's
// timeout). The compile-time budget of a kernel (780 primitives on a CPU
// device, costmodel/compile_time.h) bounds each step's work, so the pass is
// linear.
TEST(Limits, XlaFinishesALongChainWithinTheCompileTimeBudget) {
  const Graph g = chain(100000);
  const DeviceSpec d = load_device("host-cpu-reference");
  ASSERT_EQ(compile_time_max_primitives(d), 780u);
  const auto t0 = std::chrono::steady_clock::now();
  const Plan p = search(g, d, "xla");
  EXPECT_LE(largest_group(p), 780u);
  EXPECT_GE(p.totals.kernels, (100000 + 779) / 780);
  EXPECT_LT(p.totals.kernels, 100000 / 64);
  EXPECT_LT(seconds_since(t0), 60.0);  // ~15 s on the shared 2-core host; quadratic, it took most of an hour
}

/// The decisions of `p` on edges between two kernels.
std::vector<DecisionRecord> cuts(const Plan& p) {
  std::vector<DecisionRecord> out;
  for (const auto& r : p.decisions)
    if (r.action == Action::kept || r.action == Action::blocked) out.push_back(r);
  return out;
}

// No arbitrary group-size split: a straight chain of 250 cheap elementwise
// ops (cut at 128 primitives before) is one kernel by default, on a CPU and
// a GPU device, in every strategy whose own model does not cap it lower
// (`inductor` 64, `optimal` 6).
TEST(Limits, AChainOf250ElementwiseOpsIsOneKernelByDefault) {
  const Graph g = chain(250);
  for (const DeviceSpec& d : {load_device("host-cpu-reference"), testing::h100()})
    for (const char* s : {"cost", "xla", "elementwise", "tvm"}) {
      SCOPED_TRACE(d.name + " / " + s);
      const Plan p = search(g, d, s);
      EXPECT_EQ(p.totals.kernels, 1);
      EXPECT_EQ(p.max_group_size, 0);
      EXPECT_TRUE(cuts(p).empty());
    }
}

// The user's --max-group-size still caps every kernel, and each cut it makes
// is a `group_size` blocker naming it (the merge was predicted faster).
TEST(Limits, AUserCapCutIsAGroupSizeBlockerNamingTheCap) {
  const Graph g = chain(250);
  SearchOptions o;
  o.max_group_size = 100;
  for (const char* s : {"cost", "xla", "elementwise"}) {
    SCOPED_TRACE(s);
    const Plan p = search(g, load_device("host-cpu-reference"), s, o);
    EXPECT_EQ(p.max_group_size, 100);
    EXPECT_LE(largest_group(p), 100u);
    EXPECT_GE(p.totals.kernels, 3);
    const auto c = cuts(p);
    EXPECT_EQ(c.size(), static_cast<std::size_t>(p.totals.kernels - 1));  // a chain: one edge between neighbours
    for (const auto& r : c) {
      EXPECT_EQ(r.action, Action::blocked) << r.producer << " -> " << r.consumer;
      EXPECT_EQ(r.blocker, Blocker::group_size) << r.reason;
      EXPECT_GT(r.delta_us, 0) << r.reason;
      EXPECT_NE(r.reason.find("over the user's --max-group-size 100"), std::string::npos) << r.reason;
    }
  }
}

// Past the compile-time budget a chain is cut there, and the decision log
// says so: `compile_time`, with the estimate and the budget.
TEST(Limits, AChainPastTheCompileTimeBudgetIsCutWithACompileTimeBlocker) {
  const Graph g = chain(1000);
  const DeviceSpec d = load_device("host-cpu-reference");
  for (const char* s : {"cost", "xla", "elementwise"}) {
    SCOPED_TRACE(s);
    const Plan p = search(g, d, s);
    EXPECT_LE(largest_group(p), 780u);
    EXPECT_EQ(p.totals.kernels, 2);  // 1000 primitives: two kernels within 780 each
    const auto c = cuts(p);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].action, Action::blocked);
    EXPECT_EQ(c[0].blocker, Blocker::compile_time) << c[0].reason;
    // 1000 primitives: 5.2e-4·1000 + 1.54e-7·1000² = 0.674 s.
    EXPECT_NE(c[0].reason.find("makes a kernel of 1000 primitives: ~0.67 s to compile with GCC"), std::string::npos)
        << c[0].reason;
    EXPECT_NE(c[0].reason.find("over the 0.50 s budget per kernel (780 primitives on host-cpu-reference)"), std::string::npos)
        << c[0].reason;
  }
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
