#include <algorithm>
#include <unordered_set>

#include "search/legality.h"
#include "search/passes.h"

namespace fuseplan {

namespace {
constexpr double kMinGainUs = 1e-6;  // below this a move is noise, not a saving

/// Primitives of `gid` that can leave it without breaking it in two: homed
/// here only, and with no producer or no consumer inside the group.
std::vector<NodeId> boundary_nodes(const WorkState& ws, int gid) {
  const Graph& g = ws.graph();
  const auto& nodes = ws.nodes(gid);
  std::unordered_set<NodeId> in(nodes.begin(), nodes.end());
  std::vector<NodeId> out;
  for (NodeId n : nodes) {
    if (ws.home(n) != gid) continue;
    bool held_elsewhere = false;
    for (int k : ws.holders(n))  // only groups holding n (O(copies), not O(groups))
      if (k != gid && ws.alive(k)) held_elsewhere = true;
    if (held_elsewhere) continue;
    bool has_in_producer = false, has_in_consumer = false;
    for (NodeId o : g.operands(n)) has_in_producer |= in.count(o) > 0;
    for (NodeId c : g.consumers(n)) has_in_consumer |= in.count(c) > 0;
    if (!has_in_producer || !has_in_consumer) out.push_back(n);
  }
  return out;
}
}  // namespace

int refine_pass(WorkState& ws, const SearchOptions& o) {
  const Graph& g = ws.graph();
  const DeviceSpec& d = ws.device();
  int moves = 0;
  for (int round = 0; round < 2; ++round) {
    bool improved = false;
    for (int gid : ws.alive_groups()) {
      if (!ws.alive(gid) || ws.nodes(gid).size() < 2) continue;
      for (NodeId n : boundary_nodes(ws, gid)) {
        if (ws.nodes(gid).size() < 2) break;
        const double before = ws.cost_of(gid).predicted_us;
        const int s = ws.split_off(n);
        const double rest = ws.cost_of(gid).predicted_us;
        // Option A: n alone.
        double best_gain = before - rest - ws.cost_of(s).predicted_us;
        int best_target = -1;
        // Option B: move n into a neighbouring group.
        std::vector<int> neigh = ws.producer_groups(s);
        for (int c : ws.consumer_groups(s)) neigh.push_back(c);
        std::sort(neigh.begin(), neigh.end());
        neigh.erase(std::unique(neigh.begin(), neigh.end()), neigh.end());
        for (int x : neigh) {
          if (x == gid || !ws.alive(x) || ws.nodes(x).size() + 1 > static_cast<std::size_t>(o.max_group_size)) continue;
          const bool s_feeds_x = [&] {
            auto cs = ws.consumer_groups(s);
            return std::find(cs.begin(), cs.end(), x) != cs.end();
          }();
          FusionDecision dec = s_feeds_x ? can_merge_vertical(g, ws.nodes(s), ws.nodes(x), d)
                                         : can_merge_vertical(g, ws.nodes(x), ws.nodes(s), d);
          if (!dec.ok()) continue;
          const int ids[2] = {x, s};
          GroupCost m = ws.cost_of_merge(ids);
          if (!check_resources(m, d, "merge").ok()) continue;
          const double gain = before + ws.cost_of(x).predicted_us - rest - m.predicted_us;
          if (gain > best_gain) best_gain = gain, best_target = x;
        }
        if (best_gain <= kMinGainUs) {
          ws.merge(gid, s);  // undo
          continue;
        }
        if (best_target >= 0) ws.merge(best_target, s);
        ++moves;
        improved = true;
      }
    }
    if (!improved) break;
  }
  return moves;
}

}  // namespace fuseplan
