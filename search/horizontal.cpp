#include <algorithm>
#include <map>

#include "search/gain.h"
#include "search/legality.h"
#include "search/passes.h"

namespace fuseplan {

namespace {
/// Depth of every alive group in the group DAG (longest path from a group
/// with no producer group). Groups at equal depth are mutually independent,
/// and merging them keeps the DAG acyclic.
std::map<int, int> group_depths(const WorkState& ws) {
  std::map<int, std::vector<int>> preds;
  std::map<int, int> indeg;
  std::map<int, std::vector<int>> succ;
  for (int gid : ws.alive_groups()) {
    preds[gid] = ws.producer_groups(gid);
    indeg[gid] = static_cast<int>(preds[gid].size());
    for (int p : preds[gid]) succ[p].push_back(gid);
  }
  std::map<int, int> depth;
  std::vector<int> ready;
  for (auto& [gid, k] : indeg)
    if (k == 0) ready.push_back(gid), depth[gid] = 0;
  while (!ready.empty()) {
    int gid = ready.back();
    ready.pop_back();
    for (int s : succ[gid]) {
      depth[s] = std::max(depth[s], depth[gid] + 1);
      if (--indeg[s] == 0) ready.push_back(s);
    }
  }
  return depth;
}

bool shares_a_node(const WorkState& ws, int a, int b) {
  for (NodeId n : ws.nodes(a))
    if (ws.holds(b, n)) return true;
  return false;
}

bool is_launch_bound(const GroupCost& c) { return c.launch_us >= std::max(c.t_mem_us, c.t_compute_us); }
}  // namespace

void horizontal_pass(WorkState& ws, const SearchOptions& o) {
  const Graph& g = ws.graph();
  const DeviceSpec& d = ws.device();
  const std::size_t max_size = max_group_primitives(d, o.max_group_size);
  std::map<int, std::vector<int>> by_depth;
  for (auto [gid, dep] : group_depths(ws)) by_depth[dep].push_back(gid);
  for (auto& [dep, gids] : by_depth) {
    std::vector<int> buckets;
    for (int gid : gids) {
      if (!is_launch_bound(ws.cost_of(gid))) continue;
      bool placed = false;
      for (int b : buckets) {
        if (ws.nodes(b).size() + ws.nodes(gid).size() > max_size) continue;
        if (shares_a_node(ws, b, gid)) continue;  // duplicated copies: one kernel would compute them once
        if (!can_merge_horizontal(g, ws.nodes(b), ws.nodes(gid), true, &d).ok()) continue;
        const int ids[2] = {b, gid};
        GroupCost m = ws.cost_of_merge(ids);
        if (!check_resources(m, d, "horizontal group").ok()) continue;
        if (ws.cost_of(b).predicted_us + ws.cost_of(gid).predicted_us - m.predicted_us <= kMinGainUs) continue;
        ws.merge(b, gid);
        placed = true;
        break;
      }
      if (!placed) buckets.push_back(gid);
    }
  }
}

}  // namespace fuseplan
