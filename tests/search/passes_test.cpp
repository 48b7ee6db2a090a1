// The search's shortcuts give the answers of the long way round:
// is_connected equals "split_branches finds one component", and greedy
// vertical fusion resumed around the groups a refinement changed
// (greedy_vertical_pass_around) ends in the same partition as the full pass.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "graph/synthetic.h"
#include "search/passes.h"
#include "search/pricing.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {

TEST(IsConnected, AgreesWithSplitBranches) {
  const Graph g = synthetic_graph(SyntheticKind::mixed, 1000);
  const auto& topo = g.topo_order();
  std::mt19937 rng(7);
  int connected = 0, disconnected = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    // A window of the topological order, thinned at random: both answers occur.
    const std::size_t len = 1 + rng() % 12, start = rng() % (topo.size() - len);
    std::vector<NodeId> nodes;
    for (std::size_t i = start; i < start + len; ++i)
      if (g.node(topo[i]).op_class != OpClass::source && rng() % 4 != 0) nodes.push_back(topo[i]);
    if (nodes.empty()) continue;
    const bool one = split_branches(g, nodes).size() == 1;
    ASSERT_EQ(is_connected(g, nodes), one) << "trial " << trial;
    (one ? connected : disconnected)++;
  }
  EXPECT_GT(connected, 100);
  EXPECT_GT(disconnected, 100);
}

/// Greedy, refine (recording what it changed), then vertical fusion again
/// both ways on copies of the same state.
void expect_resumed_equals_full(const Graph& g, const DeviceSpec& d, const std::string& what, int& refined) {
  SCOPED_TRACE(what);
  SearchOptions o;
  WorkState ws(g, d);
  greedy_vertical_pass(ws, o, true);
  std::vector<int> changed;
  if (refine_pass(ws, o, &changed) == 0) return;
  ASSERT_FALSE(changed.empty());
  ++refined;
  WorkState full = ws, resumed = ws;
  greedy_vertical_pass(full, o, true);
  greedy_vertical_pass_around(resumed, o, changed, true);
  EXPECT_EQ(resumed.partition(), full.partition());
}

TEST(GreedyResumed, SamePartitionAsTheFullPassAfterRefinement) {
  int refined = 0, graphs = 0;
  for (const char* dev : {"h100-sxm", "host-cpu-reference"}) {
    const DeviceSpec d = load_device(dev);
    for (SyntheticKind k : {SyntheticKind::transformer, SyntheticKind::conv, SyntheticKind::mixed}) {
      expect_resumed_equals_full(synthetic_graph(k, 2000), d, std::string(to_string(k)) + " on " + dev, refined);
      ++graphs;
    }
    for (const auto& file : test::shared_model_files()) {
      for (int64_t batch : {1, 64}) {
        Graph g;
        try {
          g = test::import_shared_model(file, batch);
        } catch (const Error&) {
          continue;  // the model's own tests cover import errors
        }
        expect_resumed_equals_full(g, d, file + " b" + std::to_string(batch) + " on " + dev, refined);
        ++graphs;
      }
    }
  }
  // The comparison must have run where refinement did something.
  std::printf("refinement moved primitives on %d of %d graphs\n", refined, graphs);
  EXPECT_GE(refined, 10);
}

}  // namespace
}  // namespace fuseplan
