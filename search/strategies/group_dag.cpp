#include "search/strategies/group_dag.h"

#include <algorithm>
#include <unordered_set>

#include "search/pricing.h"

namespace fuseplan::strategies {

namespace {
/// Whether `to` is reachable from `from` through at least one other group.
bool reaches_indirectly(const WorkState& ws, int from, int to, int other, int cap, bool& capped) {
  // Prune groups that start after `to` ends in topological order: with
  // fuseplan's group shapes (connected groups, duplicated producers and
  // horizontal groups of equal depth) they lie downstream of `to`. Estimate,
  // not a proof; make_plan still rejects a cyclic partition.
  const Graph& g = ws.graph();
  const std::size_t to_end = g.topo_index(ws.nodes(to).back());
  auto downstream = [&](int x) { return g.topo_index(ws.nodes(x).front()) > to_end; };
  std::vector<int> stack;
  std::unordered_set<int> seen;
  for (int c : ws.consumer_groups(from))
    if (c != to && c != other && !downstream(c)) stack.push_back(c);
  while (!stack.empty()) {
    const int x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    if (static_cast<int>(seen.size()) > cap) {
      capped = true;
      return true;
    }
    for (int c : ws.consumer_groups(x)) {
      if (c == to || c == other) return true;
      if (!seen.count(c) && !downstream(c)) stack.push_back(c);
    }
  }
  return false;
}
}  // namespace

bool would_create_cycle(const WorkState& ws, int a, int b, int cap) {
  bool capped = false;
  return reaches_indirectly(ws, a, b, a, cap, capped) || reaches_indirectly(ws, b, a, b, cap, capped);
}

int operand_and_output_count(const Graph& g, std::span<const NodeId> nodes) {
  std::unordered_set<NodeId> in(nodes.begin(), nodes.end()), ext;
  int outputs = 0;
  for (NodeId n : nodes) {
    for (NodeId o : g.operands(n))
      if (!in.count(o)) ext.insert(o);
    bool written = g.node(n).is_graph_output;
    for (NodeId c : g.consumers(n))
      if (!in.count(c)) written = true;
    outputs += written ? 1 : 0;
  }
  return static_cast<int>(ext.size()) + outputs;
}

std::vector<NodeId> union_nodes(const WorkState& ws, std::span<const int> gids) {
  std::vector<NodeId> out;
  for (int gid : gids) out.insert(out.end(), ws.nodes(gid).begin(), ws.nodes(gid).end());
  const Graph& g = ws.graph();
  std::sort(out.begin(), out.end(), [&](NodeId x, NodeId y) { return g.topo_index(x) < g.topo_index(y); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace fuseplan::strategies
