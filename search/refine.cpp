#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "search/gain.h"
#include "search/legality.h"
#include "search/passes.h"
#include "search/pricing.h"

namespace fuseplan {

namespace {
constexpr std::size_t kMaxSegment = 2;  // primitives moved at once by a re-cut (bounds the pass: linear)

/// holders[n] = number of alive groups holding primitive n (> 1: duplicated).
std::vector<int> holder_counts(const WorkState& ws) {
  std::vector<int> out(ws.graph().size(), 0);
  for (int gid : ws.alive_groups())
    for (NodeId n : ws.nodes(gid)) out[n]++;
  return out;
}

/// Primitives of `gid` that can leave it without breaking it in two: homed
/// here only, and with no producer or no consumer inside the group.
std::vector<NodeId> boundary_nodes(const WorkState& ws, int gid, const std::vector<int>& holders) {
  const Graph& g = ws.graph();
  const auto& nodes = ws.nodes(gid);
  std::unordered_set<NodeId> in(nodes.begin(), nodes.end());
  std::vector<NodeId> out;
  for (NodeId n : nodes) {
    if (ws.home(n) != gid || holders[n] > 1) continue;
    bool has_in_producer = false, has_in_consumer = false;
    for (NodeId o : g.operands(n)) has_in_producer |= in.count(o) > 0;
    for (NodeId c : g.consumers(n)) has_in_consumer |= in.count(c) > 0;
    if (!has_in_producer || !has_in_consumer) out.push_back(n);
  }
  return out;
}

/// Every primitive of `gid` is homed there and held by no other group: the
/// group can be re-cut and priced as a plain node set (price_set).
bool plain_group(const WorkState& ws, int gid, const std::vector<int>& holders) {
  for (NodeId n : ws.nodes(gid))
    if (ws.home(n) != gid || holders[n] > 1) return false;
  return true;
}

/// Single-primitive moves: split a boundary primitive off its group, keep it
/// alone or move it into a neighbouring group, whichever is cheapest.
int single_moves(WorkState& ws, const SearchOptions& o, const std::vector<int>& holders, std::vector<int>& changed) {
  const Graph& g = ws.graph();
  const DeviceSpec& d = ws.device();
  const std::size_t max_size = max_group_primitives(d, o.max_group_size);
  int moves = 0;
  for (int round = 0; round < 2; ++round) {
    bool improved = false;
    for (int gid : ws.alive_groups()) {
      if (!ws.alive(gid) || ws.nodes(gid).size() < 2) continue;
      for (NodeId n : boundary_nodes(ws, gid, holders)) {
        if (ws.nodes(gid).size() < 2) break;
        const GroupCost before_cost = ws.cost_of(gid);
        const double before = before_cost.predicted_us;
        const int s = ws.split_off(n);
        // References into the state's price cache: pricing other groups and
        // merges below leaves these two entries as they are.
        const GroupCost& rest_cost = ws.cost_of(gid);
        const double rest = rest_cost.predicted_us;
        // Option A: n alone. Gains are ranked (ranked_gain: a tie on time
        // goes to fewer bytes written), as the greedy pass ranks merges.
        const GroupCost& alone = ws.cost_of(s);
        double best_gain = ranked_gain(before - rest - alone.predicted_us,
                                       before_cost.bytes_written - rest_cost.bytes_written - alone.bytes_written,
                                       rest + alone.predicted_us);
        int best_target = -1;
        // Option B: move n into a neighbouring group.
        std::vector<int> neigh = ws.producer_groups(s);
        const std::vector<int> consumers = ws.consumer_groups(s);
        neigh.insert(neigh.end(), consumers.begin(), consumers.end());
        std::sort(neigh.begin(), neigh.end());
        neigh.erase(std::unique(neigh.begin(), neigh.end()), neigh.end());
        for (int x : neigh) {
          if (x == gid || !ws.alive(x) || ws.nodes(x).size() + 1 > max_size) continue;
          const bool s_feeds_x = std::find(consumers.begin(), consumers.end(), x) != consumers.end();
          FusionDecision dec = s_feeds_x ? can_merge_vertical(g, ws.nodes(s), ws.nodes(x), d)
                                         : can_merge_vertical(g, ws.nodes(x), ws.nodes(s), d);
          if (!dec.ok() || ws.merge_would_cycle(x, s)) continue;
          const int ids[2] = {x, s};
          GroupCost m = ws.cost_of_merge(ids);
          if (!check_resources(m, d, "merge").ok()) continue;
          const GroupCost& cx = ws.cost_of(x);
          const double gain =
              ranked_gain(before + cx.predicted_us - rest - m.predicted_us,
                          before_cost.bytes_written + cx.bytes_written - rest_cost.bytes_written - m.bytes_written,
                          rest + m.predicted_us);
          if (gain > best_gain) best_gain = gain, best_target = x;
        }
        if (best_gain <= kMinGainUs) {
          ws.undo_split_off(gid, s, before_cost);
          continue;
        }
        changed.push_back(gid);
        changed.push_back(best_target >= 0 ? ws.merge(best_target, s) : s);
        ++moves;
        improved = true;
      }
    }
    if (!improved) break;
  }
  return moves;
}

/// Which way a re-cut of P -> C moves primitives across their boundary.
enum class Recut {
  none,                // no move found
  suffix_of_producer,  // the last k primitives of P move into C
  prefix_of_consumer,  // the first k primitives of C move into P
};

/// Re-cut of two adjacent groups P -> C: moves up to kMaxSegment primitives
/// across their boundary at once — the last k of P (topological order) into
/// C, or the first k of C into P. Single-primitive moves cannot do this when every
/// intermediate step materialises an extra tensor (an epilogue chain that
/// greedy fused as a prologue of the next kernel instead of into its
/// contraction, or the reverse).
int recut_moves(WorkState& ws, const SearchOptions& o, const std::vector<int>& holders, std::vector<int>& changed) {
  const Graph& g = ws.graph();
  const DeviceSpec& d = ws.device();
  const std::size_t cap = max_group_primitives(d, o.max_group_size);
  int moves = 0;
  struct Move {
    double gain = kMinGainUs;
    Recut kind = Recut::none;
    std::size_t k = 0;  // primitives moved
  };
  // A pair's answer depends only on the two node sets (both groups plain:
  // price_set, legality and cost_of read nothing else), so a pair that found
  // no move is not asked again until one of its groups changes.
  std::unordered_map<uint64_t, std::pair<int, int>> no_move;  // (p, c) -> their versions then
  for (int round = 0; round < 2; ++round) {
    bool improved = false;
    for (int c : ws.alive_groups()) {
      if (!ws.alive(c) || !plain_group(ws, c, holders)) continue;
      for (int p : ws.producer_groups(c)) {
        if (!ws.alive(c) || !ws.alive(p) || p == c || !plain_group(ws, p, holders)) continue;
        const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(p)) << 32 | static_cast<uint32_t>(c);
        const std::pair<int, int> versions{ws.version(p), ws.version(c)};
        if (auto it = no_move.find(key); it != no_move.end() && it->second == versions) continue;
        const std::vector<NodeId> pn = ws.nodes(p), cn = ws.nodes(c);
        const double before = ws.cost_of(p).predicted_us + ws.cost_of(c).predicted_us;
        const double written_before = ws.cost_of(p).bytes_written + ws.cost_of(c).bytes_written;
        Move best;
        auto consider = [&](Recut kind, std::size_t k, std::span<const NodeId> moved, std::vector<NodeId> a,
                            std::vector<NodeId> b) {
          if (a.size() > cap || b.size() > cap || a.empty() || b.empty() || !is_connected(g, a) || !is_connected(g, b)) return;
          const GroupCost ca = price_set(g, d, a), cb = price_set(g, d, b);
          const double after = ca.predicted_us + cb.predicted_us;
          const double gain = ranked_gain(before - after, written_before - ca.bytes_written - cb.bytes_written, after);
          if (gain <= best.gain) return;
          if (!check_resources(ca, d, "merge").ok() || !check_resources(cb, d, "merge").ok()) return;
          // Legality of the grown group: the moved primitives against what they join.
          FusionDecision dec = FusionDecision::allow();
          if (kind == Recut::suffix_of_producer) dec = can_merge_vertical(g, moved, cn, d);
          else dec = can_merge_vertical(g, pn, moved, d);
          if (!dec.ok()) return;
          best = {gain, kind, k};
        };
        for (std::size_t k = 1; k <= kMaxSegment && k < pn.size(); ++k) {  // suffix of P into C
          std::span<const NodeId> moved(pn.end() - static_cast<std::ptrdiff_t>(k), pn.end());
          std::vector<NodeId> a(pn.begin(), pn.end() - static_cast<std::ptrdiff_t>(k)), b = cn;
          b.insert(b.end(), moved.begin(), moved.end());
          consider(Recut::suffix_of_producer, k, moved, std::move(a), std::move(b));
        }
        for (std::size_t k = 1; k <= kMaxSegment && k < cn.size(); ++k) {  // prefix of C into P
          std::span<const NodeId> moved(cn.begin(), cn.begin() + static_cast<std::ptrdiff_t>(k));
          std::vector<NodeId> a = pn, b(cn.begin() + static_cast<std::ptrdiff_t>(k), cn.end());
          a.insert(a.end(), moved.begin(), moved.end());
          consider(Recut::prefix_of_consumer, k, moved, std::move(a), std::move(b));
        }
        if (best.kind == Recut::none) {
          no_move[key] = versions;
          continue;
        }
        // Node-level legality cannot see a path through a third group whose
        // nodes on it are not connected inside that group (a horizontal
        // group, or one holding copies): the group DAG decides, and a move
        // that closes a cycle is taken back.
        auto move = [&](std::span<const NodeId> nodes, int to) {
          for (NodeId n : nodes) ws.merge(to, ws.split_off(n));
        };
        const std::span<const NodeId> moved =
            best.kind == Recut::suffix_of_producer ? std::span<const NodeId>(pn).last(best.k)
                                                   : std::span<const NodeId>(cn).first(best.k);
        move(moved, best.kind == Recut::suffix_of_producer ? c : p);
        if (ws.on_cycle(p) || ws.on_cycle(c)) {
          move(moved, best.kind == Recut::suffix_of_producer ? p : c);
          no_move[key] = {ws.version(p), ws.version(c)};
          continue;
        }
        changed.push_back(p);
        changed.push_back(c);
        ++moves;
        improved = true;
      }
    }
    if (!improved) break;
  }
  return moves;
}
}  // namespace

int refine_pass(WorkState& ws, const SearchOptions& o, std::vector<int>* changed) {
  const std::vector<int> holders = holder_counts(ws);  // moves below never change them
  std::vector<int> local;
  std::vector<int>& out = changed ? *changed : local;
  int moves = single_moves(ws, o, holders, out);
  moves += recut_moves(ws, o, holders, out);
  for (int gid : ws.take_repriced()) out.push_back(gid);  // priced differently now: seeds for greedy_vertical_pass_around
  return moves;
}

}  // namespace fuseplan
