// WorkState's cached group prices follow changes made by other groups: what a
// group must write depends on which groups hold its readers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "graph/import.h"
#include "graph/synthetic.h"
#include "search/legality.h"
#include "search/passes.h"
#include "search/plan.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {

// x -> a = Relu(x) -> b = Exp(a), c = Neg(a); b and c are graph outputs.
Graph fork() {
  return import_onnx_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "f (float[8, 4] x) => (float[8, 4] b, float[8, 4] c) { a = Relu(x)\n b = Exp(a)\n c = Neg(a) }",
      {}, "fork");
}

// Regression: merging the two readers of a duplicated producer left the
// producer's cached price (writing a, 128 bytes) in place although no group
// reads a from memory any more.
TEST(WorkStateCache, ProducerIsRepricedWhenItsReadersMove) {
  const Graph g = fork();
  const DeviceSpec d = load_device("host-cpu-reference");
  WorkState ws(g, d);
  ASSERT_EQ(ws.alive_groups(), (std::vector<int>{0, 1, 2}));  // {a}, {b}, {c}
  const int a = 0, b = 1, c = 2;
  const int readers_b[1] = {b};
  ws.duplicate(a, readers_b);  // b recomputes a; c still reads it
  ASSERT_TRUE(ws.alive(a));
  EXPECT_EQ(ws.cost_of(a).bytes_written, 8 * 4 * 4);
  ws.take_repriced();
  ws.merge(b, c);  // a's readers both in b, which holds a copy
  EXPECT_EQ(ws.take_repriced(), (std::vector<int>{a}));
  EXPECT_EQ(ws.cost_of(a).bytes_written, 0);
  EXPECT_EQ(ws.cost_of(b).bytes_written, 2 * 8 * 4 * 4);  // b and c, the outputs
}

// a -> x1 and x2 -> c with x1, x2 unconnected: a group {x1, x2} sits
// between a and c without a node path from a to c through it.
Graph third_group_graph() {
  return import_onnx_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "f (float[8, 4] x, float[8, 1] w) => (float[8, 1] x1, float[8, 1] c) {\n"
      "  a = ReduceMax<axes = [1], keepdims = 1>(x)\n x1 = Exp(a)\n x2 = Neg(w)\n c = Add(a, x2) }",
      {}, "cycle");
}

// Regression (tiny-yolov3 on h100-sxm): a group X whose primitive read from
// P and whose primitive read by C are not connected inside X. Node-level
// legality sees no path P -> C outside the two groups, but merging them
// closes the cycle P∪C -> X -> P∪C; greedy merged such a pair and the plan
// was refused ("the partition's kernels form a cycle").
TEST(WorkStateCache, MergeThroughAnUnconnectedGroupWouldCycle) {
  const Graph g = third_group_graph();
  const DeviceSpec d = load_device("h100-sxm");
  WorkState ws(g, d);
  const int a = ws.home(g.at("a")), x1 = ws.home(g.at("x1")), x2 = ws.home(g.at("x2")), c = ws.home(g.at("c"));
  const int x = ws.merge(x1, x2);  // X = {x1, x2}: side by side, as a horizontal group
  EXPECT_TRUE(can_merge_vertical(g, ws.nodes(a), ws.nodes(c), d).ok());  // the node-level blind spot
  EXPECT_TRUE(ws.merge_would_cycle(a, c));
  EXPECT_TRUE(ws.merge_would_cycle(c, a));
  EXPECT_FALSE(ws.merge_would_cycle(a, x));  // a -> X directly: no third group between
  SearchOptions o;
  greedy_vertical_pass(ws, o, true);
  EXPECT_NO_THROW(make_plan(g, d, ws.partition(), "cost"));
}

// on_cycle: the partition {a, c}, {x1, x2} is cyclic only at the group level
// (a -> x1 and x2 -> c, with x1 and x2 unconnected): what a re-cut that moves
// c into a's group would build; refinement takes such a move back.
TEST(WorkStateCache, GroupLevelCycleIsSeenThroughAnUnconnectedGroup) {
  const Graph g = third_group_graph();
  const DeviceSpec d = load_device("h100-sxm");
  WorkState ws(g, d);
  const int a = ws.home(g.at("a")), x1 = ws.home(g.at("x1")), x2 = ws.home(g.at("x2")), c = ws.home(g.at("c"));
  const int x = ws.merge(x1, x2);
  EXPECT_FALSE(ws.on_cycle(a));
  EXPECT_FALSE(ws.on_cycle(x));
  const int ac = ws.merge(a, c);  // forced: the callers ask merge_would_cycle first
  EXPECT_TRUE(ws.on_cycle(ac));
  EXPECT_TRUE(ws.on_cycle(x));
  EXPECT_THROW(make_plan(g, d, ws.partition(), "cost"), Error);
}

// A path from group `from` to `to` through a third group, by a walk of the
// whole group DAG (no pruning): what merge_would_cycle must answer.
bool path_via_third_slow(const WorkState& ws, int from, int to) {
  std::vector<char> seen(ws.num_groups(), 0);
  std::vector<int> stack;
  seen[from] = 1;
  for (int x : ws.consumer_groups(from))
    if (x != to) stack.push_back(x);
  while (!stack.empty()) {
    const int x = stack.back();
    stack.pop_back();
    if (seen[x]) continue;
    seen[x] = 1;
    for (int y : ws.consumer_groups(x)) {
      if (y == to) return true;
      if (!seen[y]) stack.push_back(y);
    }
  }
  return false;
}

// f -> n -> {a, b} -> m with a, b one group whose written node a comes before
// its read node b in topological order (a, m, f, n, b): a walk from f that
// skipped groups starting after m ends (n) missed the path.
TEST(WorkStateCycle, PathThroughAGroupThatStartsAfterTheTargetEnds) {
  const Graph g = import_onnx_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "f (float[8, 4] x, float[8, 4] w) => (float[8, 4] m, float[8, 4] b) {\n"
      "  f = Neg(w)\n n = Sigmoid(f)\n a = Relu(x)\n m = Exp(a)\n b = Add(a, n) }",
      {}, "late");
  ASSERT_LT(g.topo_index(g.at("m")), g.topo_index(g.at("f")));
  ASSERT_LT(g.topo_index(g.at("m")), g.topo_index(g.at("n")));
  const DeviceSpec d = load_device("h100-sxm");
  WorkState ws(g, d);
  const int a = ws.home(g.at("a")), b = ws.home(g.at("b")), f = ws.home(g.at("f")), m = ws.home(g.at("m"));
  ws.merge(a, b);
  EXPECT_TRUE(ws.merge_would_cycle(f, m));
  EXPECT_TRUE(ws.merge_would_cycle(m, f));
  EXPECT_FALSE(ws.cyclic());
}

// A walk through thousands of groups answers as exactly as a short one: the
// 5000 readers of `a` lie between a and z in topological order and none
// reaches z.
TEST(WorkStateCycle, WideWalkFindsNoPath) {
  std::string outs, body = "  a = Relu(x)\n";
  for (int i = 0; i < 5000; ++i) {
    body += "  b" + std::to_string(i) + " = Exp(a)\n";
    outs += "float[4] b" + std::to_string(i) + ", ";
  }
  body += "  z = Neg(w)\n";
  const Graph g = import_onnx_text("<ir_version: 8, opset_import: [\"\" : 17]>\nf (float[4] x, float[4] w) => (" + outs +
                                       "float[4] z) {\n" + body + "}",
                                   {}, "wide");
  const DeviceSpec d = load_device("h100-sxm");
  WorkState ws(g, d);
  const int a = ws.home(g.at("a")), z = ws.home(g.at("z"));
  EXPECT_FALSE(ws.merge_would_cycle(a, z));
  EXPECT_FALSE(path_via_third_slow(ws, a, z));
}

// Through a whole search (greedy with duplication, refinement with re-cuts,
// horizontal merges), merge_would_cycle answers what a full walk answers, for
// every pair of adjacent groups and for pairs chosen at random.
void expect_cycle_answers_exact(const Graph& g, const DeviceSpec& d, const std::string& what) {
  SCOPED_TRACE(what);
  SearchOptions o;
  WorkState ws(g, d);
  std::mt19937 rng(11);
  int checked = 0, cycles = 0, wrong = 0;
  auto check = [&] {
    ASSERT_FALSE(ws.cyclic());
    const std::vector<int> alive = ws.alive_groups();
    for (int i = 0; i < 200; ++i) {
      const int a = alive[rng() % alive.size()];
      std::vector<int> cand = ws.consumer_groups(a);
      const int b = !cand.empty() && rng() % 2 ? cand[rng() % cand.size()] : alive[rng() % alive.size()];
      if (a == b) continue;
      const bool slow = path_via_third_slow(ws, a, b) || path_via_third_slow(ws, b, a);
      wrong += ws.merge_would_cycle(a, b) != slow;
      cycles += slow;
      ++checked;
    }
  };
  check();
  greedy_vertical_pass(ws, o, true);
  check();
  std::vector<int> changed;
  refine_pass(ws, o, &changed);
  check();
  horizontal_pass(ws, o);
  check();
  EXPECT_EQ(wrong, 0);
  EXPECT_GT(checked, 400);
  EXPECT_GT(cycles, 0);
}

TEST(WorkStateCycle, AnswersEqualAFullWalkThroughASearch) {
  const DeviceSpec d = load_device("h100-sxm");
  for (SyntheticKind k : {SyntheticKind::transformer, SyntheticKind::conv, SyntheticKind::mixed})
    expect_cycle_answers_exact(synthetic_graph(k, 1500), d, std::string(to_string(k)));
}

// After the whole local search, every cached price equals the group priced
// afresh from the state as it ends (cost_of_merge of the group alone builds
// and prices it without the cache).
void expect_cache_fresh(const Graph& g, const DeviceSpec& d, const std::string& what) {
  SCOPED_TRACE(what);
  SearchOptions o;
  WorkState ws(g, d);
  greedy_vertical_pass(ws, o, true);
  std::vector<int> changed;
  if (refine_pass(ws, o, &changed) > 0) greedy_vertical_pass_around(ws, o, changed, true);
  int stale = 0;
  for (int gid : ws.alive_groups()) {
    const int ids[1] = {gid};
    stale += ws.cost_of(gid).predicted_us != ws.cost_of_merge(ids).predicted_us;
  }
  EXPECT_EQ(stale, 0);
}

TEST(WorkStateCache, CachedPricesEqualFreshPricesAfterSearch) {
  for (const char* dev : {"h100-sxm", "host-cpu-reference"}) {
    const DeviceSpec d = load_device(dev);
    for (SyntheticKind k : {SyntheticKind::transformer, SyntheticKind::conv, SyntheticKind::mixed})
      expect_cache_fresh(synthetic_graph(k, 2000), d, std::string(to_string(k)) + " on " + dev);
    for (const auto& file : test::shared_model_files()) {
      Graph g;
      try {
        g = test::import_shared_model(file, 1);
      } catch (const Error&) {
        continue;
      }
      expect_cache_fresh(g, d, file + " on " + dev);
    }
  }
}

}  // namespace
}  // namespace fuseplan
