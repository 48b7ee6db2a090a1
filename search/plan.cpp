#include "search/plan.h"

#include <algorithm>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "search/decision_log.h"
#include "search/pricing.h"
#include "support/error.h"

namespace fuseplan {

namespace {
constexpr std::string_view kActionNames[] = {"fused", "kept", "duplicated", "blocked"};

}  // namespace

std::string_view to_string(Action a) { return kActionNames[static_cast<int>(a)]; }

Action action_from_string(std::string_view s) {
  for (std::size_t i = 0; i < std::size(kActionNames); ++i)
    if (kActionNames[i] == s) return static_cast<Action>(i);
  throw Error("unknown decision action '" + std::string(s) + "'");
}

namespace {
/// Materialised subset of group gi given groups_of[n] = groups holding n,
/// ascending (the first is the home group that writes it).
std::vector<NodeId> materialised_in(const Graph& g, const std::vector<std::vector<NodeId>>& partition,
                                    const std::vector<std::vector<std::size_t>>& groups_of, std::size_t gi) {
  std::vector<NodeId> out;
  for (NodeId n : partition[gi]) {
    if (groups_of[n].front() != gi) continue;  // a duplicate copy never writes
    bool need = g.node(n).is_graph_output;
    for (NodeId c : g.consumers(n)) {
      if (need) break;
      for (std::size_t k : groups_of[c])
        if (!std::binary_search(groups_of[n].begin(), groups_of[n].end(), k)) {
          need = true;
          break;
        }
    }
    if (need) out.push_back(n);
  }
  return out;
}

std::vector<std::vector<std::size_t>> holders(const Graph& g, const std::vector<std::vector<NodeId>>& partition) {
  std::vector<std::vector<std::size_t>> groups_of(g.size());
  for (std::size_t i = 0; i < partition.size(); ++i)
    for (NodeId n : partition[i]) groups_of[n].push_back(i);
  return groups_of;
}
}  // namespace

std::vector<NodeId> materialised_nodes(const Graph& g, const std::vector<std::vector<NodeId>>& partition,
                                       std::size_t group_index) {
  return materialised_in(g, partition, holders(g, partition), group_index);
}

Plan make_plan(const Graph& g, const DeviceSpec& d, std::vector<std::vector<NodeId>> partition,
               const std::string& strategy, PartitionSource source, int max_group_size) {
  auto refuse = [&](const std::string& what) {
    FUSEPLAN_ASSERT(source != PartitionSource::strategy, "strategy '" + strategy + "' made an invalid partition: " + what);
    throw Error(what);
  };
  // Normalise: drop empty groups, sort nodes topologically, dedupe.
  std::vector<std::vector<NodeId>> parts;
  for (auto& p : partition) {
    std::sort(p.begin(), p.end(), [&](NodeId a, NodeId b) { return g.topo_index(a) < g.topo_index(b); });
    p.erase(std::unique(p.begin(), p.end()), p.end());
    for (NodeId n : p)
      if (g.op_class(n) == OpClass::source)
        refuse("partition puts source '" + g.node(n).name + "' in a kernel");
    if (!p.empty()) parts.push_back(std::move(p));
  }
  // A kernel whose every primitive another kernel also computes is redundant
  // (duplication left nothing for it to write): drop it.
  {
    std::vector<int> holder_count(g.size(), 0);
    for (const auto& p : parts)
      for (NodeId n : p) holder_count[n]++;
    std::vector<std::vector<NodeId>> kept;
    for (auto& p : parts) {
      bool redundant = true;
      for (NodeId n : p) redundant = redundant && holder_count[n] > 1;
      if (redundant) {
        for (NodeId n : p) holder_count[n]--;
      } else {
        kept.push_back(std::move(p));
      }
    }
    parts = std::move(kept);
  }
  std::vector<std::vector<std::size_t>> groups_of(g.size());
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (NodeId n : parts[i]) groups_of[n].push_back(i);
  for (NodeId n = 0; n < g.size(); ++n)
    if (g.op_class(n) != OpClass::source && groups_of[n].empty())
      refuse("partition leaves primitive '" + g.node(n).name + "' in no group");

  // Group DAG: home(producer) -> every group that reads it from memory.
  const std::size_t k = parts.size();
  std::vector<std::set<std::size_t>> succ(k);
  std::vector<int> indeg(k, 0);
  for (std::size_t gi = 0; gi < k; ++gi) {
    std::unordered_set<NodeId> mine(parts[gi].begin(), parts[gi].end());
    for (NodeId n : parts[gi])
      for (NodeId o : g.operands(n)) {
        if (g.op_class(o) == OpClass::source || mine.count(o)) continue;
        std::size_t h = groups_of[o].front();
        if (h != gi && succ[h].insert(gi).second) indeg[gi]++;
      }
  }
  // Kahn's algorithm, ties broken by the first node's topological index.
  auto key = [&](std::size_t i) { return g.topo_index(parts[i].front()); };
  std::priority_queue<std::pair<std::size_t, std::size_t>, std::vector<std::pair<std::size_t, std::size_t>>,
                      std::greater<>>
      ready;
  for (std::size_t i = 0; i < k; ++i)
    if (indeg[i] == 0) ready.emplace(key(i), i);
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    auto [kk, i] = ready.top();
    ready.pop();
    order.push_back(i);
    for (std::size_t s : succ[i])
      if (--indeg[s] == 0) ready.emplace(key(s), s);
  }
  if (order.size() != k) refuse("the partition's kernels form a cycle");

  // Keep "first group holding n" = home in the new order: reorder parts.
  std::vector<std::vector<NodeId>> ordered;
  for (std::size_t i : order) ordered.push_back(parts[i]);

  Plan plan;
  plan.device = d.name;
  plan.strategy = strategy;
  const auto ordered_holders = holders(g, ordered);
  for (std::size_t gi = 0; gi < ordered.size(); ++gi) {
    Group grp;
    grp.id = static_cast<int>(gi);
    grp.nodes = ordered[gi];
    grp.materialised = materialised_in(g, ordered, ordered_holders, gi);
    plan.groups.push_back(std::move(grp));
  }
  // Duplicated: nodes held by more than one group, listed where they are not home.
  std::vector<int> home(g.size(), -1);
  for (auto& grp : plan.groups)
    for (NodeId n : grp.nodes)
      if (home[n] < 0) home[n] = grp.id;
      else grp.duplicated.push_back(n);
  // Sources an earlier group reads are cached when a later one reads them
  // (Group::warm_sources).
  std::vector<char> read_before(g.size(), 0);
  for (auto& grp : plan.groups) {
    const std::vector<NodeId> inputs = group_inputs(g, grp);
    for (NodeId n : inputs)
      if (g.op_class(n) == OpClass::source && read_before[n]) grp.warm_sources.push_back(n);
    for (NodeId n : inputs) read_before[n] = 1;
  }
  for (auto& grp : plan.groups) {
    assign_kind(g, grp);
    plan.costs.push_back(cost(g, grp, d, /*with_breakdown=*/true));
  }
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    plan.totals.bytes += plan.costs[i].bytes();
    plan.totals.flops += plan.costs[i].flops;
    plan.totals.predicted_us += plan.costs[i].predicted_us;
  }
  plan.totals.kernels = static_cast<int64_t>(plan.groups.size());
  plan.max_group_size = max_group_size;
  plan.decisions = log_decisions(g, d, plan);
  return plan;
}

}  // namespace fuseplan
