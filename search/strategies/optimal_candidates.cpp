#include "search/strategies/optimal_candidates.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "search/legality.h"
#include "search/pricing.h"

namespace fuseplan::strategies {

namespace {
constexpr std::size_t kMaxConsumersInRegion = 8;  // fan-out above this is a materialisation point (estimate)

bool is_cheap(OpClass c) {
  return c == OpClass::elementwise || c == OpClass::broadcast || c == OpClass::reshape || c == OpClass::injective;
}

struct UnionFind {
  std::vector<std::size_t> p;
  explicit UnionFind(std::size_t n) : p(n) { std::iota(p.begin(), p.end(), 0); }
  std::size_t find(std::size_t x) {
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
  }
  void unite(std::size_t a, std::size_t b) { p[find(a)] = find(b); }
};

std::vector<std::vector<NodeId>> components(const Graph& g, const std::vector<NodeId>& nodes,
                                            const std::function<bool(NodeId, NodeId)>& joined) {
  std::unordered_map<NodeId, std::size_t> idx;
  for (std::size_t i = 0; i < nodes.size(); ++i) idx[nodes[i]] = i;
  UnionFind uf(nodes.size());
  for (NodeId p : nodes)
    for (NodeId c : g.consumers(p))
      if (idx.count(c) && joined(p, c)) uf.unite(idx[p], idx[c]);
  std::map<std::size_t, std::vector<NodeId>> comp;
  for (NodeId n : nodes) comp[uf.find(idx[n])].push_back(n);  // nodes are in topological order
  std::vector<std::vector<NodeId>> out;
  for (auto& [r, v] : comp) out.push_back(std::move(v));
  std::sort(out.begin(), out.end(), [&](auto& a, auto& b) { return g.topo_index(a[0]) < g.topo_index(b[0]); });
  return out;
}
}  // namespace

std::vector<std::vector<NodeId>> optimal_regions(const Graph& g, std::size_t max_region, int* heuristic_cuts) {
  std::vector<NodeId> all;
  for (NodeId n : g.topo_order())
    if (g.op_class(n) != OpClass::source) all.push_back(n);
  auto fusable = [&](NodeId p, NodeId c) { return can_fuse_edge(g, p, c).ok(); };
  int cuts = 0;
  std::vector<std::vector<NodeId>> out;
  for (auto& comp : components(g, all, fusable)) {
    if (comp.size() <= max_region) {
      out.push_back(std::move(comp));
      continue;
    }
    auto at_materialisation = [&](NodeId p, NodeId c) {
      const bool cut = g.op_class(c) == OpClass::contraction || g.consumers(p).size() > kMaxConsumersInRegion;
      if (cut && fusable(p, c)) ++cuts;
      return !cut && fusable(p, c);
    };
    for (auto& sub : components(g, comp, at_materialisation)) {
      for (std::size_t i = 0; i < sub.size(); i += max_region) {
        std::vector<NodeId> chunk(sub.begin() + i, sub.begin() + std::min(sub.size(), i + max_region));
        if (i > 0) ++cuts;
        out.push_back(std::move(chunk));
      }
    }
  }
  if (heuristic_cuts) *heuristic_cuts = cuts;
  return out;
}

std::vector<Candidate> optimal_candidates(const Graph& g, const DeviceSpec& d, const std::vector<NodeId>& region,
                                          int max_size, std::size_t max_candidates, bool* truncated,
                                          std::chrono::steady_clock::time_point deadline, bool* timed_out) {
  if (timed_out) *timed_out = false;
  // The clock is read every 64 steps (a step: one legality check or one pricing).
  std::size_t steps = 0;
  auto out_of_time = [&] {
    if ((++steps & 63) != 0 || std::chrono::steady_clock::now() < deadline) return false;
    if (timed_out) *timed_out = true;
    return true;
  };
  std::unordered_set<NodeId> in_region(region.begin(), region.end());
  std::vector<std::vector<NodeId>> level, sets;
  for (NodeId n : region) level.push_back({n});
  sets = level;
  std::set<std::vector<NodeId>> seen(level.begin(), level.end());
  bool cut = false;
  auto by_topo = [&](NodeId a, NodeId b) { return g.topo_index(a) < g.topo_index(b); };
  for (int size = 2; size <= max_size && !level.empty() && !cut; ++size) {
    std::vector<std::vector<NodeId>> next;
    for (const auto& s : level) {
      std::unordered_set<NodeId> in(s.begin(), s.end());
      std::set<NodeId> neigh;
      for (NodeId n : s) {
        for (NodeId o : g.operands(n))
          if (in_region.count(o) && !in.count(o)) neigh.insert(o);
        for (NodeId c : g.consumers(n))
          if (in_region.count(c) && !in.count(c)) neigh.insert(c);
      }
      for (NodeId u : neigh) {
        if (out_of_time()) return {};
        std::vector<NodeId> t = s;
        t.push_back(u);
        std::sort(t.begin(), t.end(), by_topo);
        if (seen.count(t)) continue;
        bool feeds = false, fed = false;  // u feeds s / u is fed by s
        for (NodeId c : g.consumers(u)) feeds |= in.count(c) > 0;
        for (NodeId o : g.operands(u)) fed |= in.count(o) > 0;
        const NodeId one[1] = {u};
        FusionDecision dec = FusionDecision::forbid(Blocker::cycle, "");
        if (feeds && !fed) dec = can_merge_vertical(g, one, s, d);
        else if (fed && !feeds) dec = can_merge_vertical(g, s, one, d);
        if (!dec.ok()) continue;
        seen.insert(t);
        next.push_back(std::move(t));
        if (sets.size() + next.size() >= max_candidates) {
          cut = true;
          break;
        }
      }
      if (cut) break;
    }
    sets.insert(sets.end(), next.begin(), next.end());
    level = std::move(next);
  }
  if (truncated) *truncated = cut;

  // Columns: a writes-all variant per set, plus a duplicate variant when it differs.
  std::set<std::pair<NodeId, NodeId>> coverable;  // (n, c) pairs some set holds together
  for (const auto& s : sets) {
    std::unordered_set<NodeId> in(s.begin(), s.end());
    for (NodeId n : s)
      for (NodeId c : g.consumers(n))
        if (in.count(c)) coverable.insert({n, c});
  }
  // Edges (p, c) out of the held-but-unwritten outputs of a priced group.
  auto unwritten_edges = [&](const Group& grp) {
    std::vector<std::pair<NodeId, NodeId>> e;
    for (NodeId p : grp.nodes) {
      if (std::find(grp.materialised.begin(), grp.materialised.end(), p) != grp.materialised.end()) continue;
      for (NodeId c : g.consumers(p))
        if (in_region.count(c)) e.push_back({p, c});
    }
    return e;
  };
  std::vector<Candidate> out;
  for (const auto& s : sets) {
    if (out_of_time()) return {};
    Group grp = make_group(g, s);
    out.push_back({grp.nodes, cost(g, grp, d).predicted_us, {}, unwritten_edges(grp)});
    Candidate dup{grp.nodes, 0, {}, {}};
    std::unordered_set<NodeId> in(s.begin(), s.end());
    std::vector<NodeId> keep;
    bool feasible = true;
    for (NodeId n : grp.materialised) {
      const Primitive& p = g.node(n);
      if (p.is_graph_output || !is_cheap(p.op_class)) {
        keep.push_back(n);
        continue;
      }
      for (NodeId c : g.consumers(n)) {
        if (in.count(c)) continue;
        if (!coverable.count({n, c})) feasible = false;
        dup.needs.push_back({n, c});
      }
    }
    if (!feasible || dup.needs.empty()) continue;
    grp.materialised = keep;
    dup.cost_us = cost(g, grp, d).predicted_us;
    dup.unwritten = unwritten_edges(grp);
    out.push_back(std::move(dup));
  }
  return out;
}

}  // namespace fuseplan::strategies
