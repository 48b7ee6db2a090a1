#include "search/pricing.h"

#include <algorithm>
#include <cstdint>

namespace fuseplan {

std::vector<std::vector<NodeId>> split_branches(const Graph& g, std::span<const NodeId> nodes) {
  if (nodes.size() == 1) return {{nodes[0]}};
  // Position of each member (per-thread scratch indexed by NodeId, -1 = not a
  // member; reset before returning): no hashing in this hot path.
  thread_local std::vector<int> idx;
  if (idx.size() < g.size()) idx.resize(g.size(), -1);
  for (std::size_t i = 0; i < nodes.size(); ++i) idx[nodes[i]] = static_cast<int>(i);
  std::vector<std::size_t> parent(nodes.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (const OutEdge& e : g.out_edges(nodes[i])) {
      const int j = idx[e.dst];
      if (j >= 0) parent[find(i)] = find(static_cast<std::size_t>(j));
    }
  for (NodeId n : nodes) idx[n] = -1;
  // Components, each in topological order, ordered by their first node.
  std::vector<std::size_t> order(nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return g.topo_index(nodes[a]) < g.topo_index(nodes[b]); });
  std::vector<std::vector<NodeId>> out;
  std::vector<int> comp_of(nodes.size(), -1);  // root -> component index
  for (std::size_t i : order) {
    const std::size_t r = find(i);
    if (comp_of[r] < 0) {
      comp_of[r] = static_cast<int>(out.size());
      out.emplace_back();
    }
    out[comp_of[r]].push_back(nodes[i]);
  }
  return out;
}

bool is_connected(const Graph& g, std::span<const NodeId> nodes) {
  if (nodes.size() <= 1) return true;
  thread_local std::vector<int> idx;  // NodeId -> position, -1 = not a member; reset before returning
  thread_local std::vector<std::size_t> parent;
  if (idx.size() < g.size()) idx.resize(g.size(), -1);
  for (std::size_t i = 0; i < nodes.size(); ++i) idx[nodes[i]] = static_cast<int>(i);
  parent.resize(nodes.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::size_t components = nodes.size();
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (const OutEdge& e : g.out_edges(nodes[i])) {
      const int j = idx[e.dst];
      if (j < 0) continue;
      const std::size_t a = find(i), b = find(static_cast<std::size_t>(j));
      if (a != b) parent[a] = b, --components;
    }
  for (NodeId n : nodes) idx[n] = -1;
  return components == 1;
}

void assign_kind(const Graph& g, Group& grp) {
  if (is_connected(g, grp.nodes)) {
    grp.kind = infer_group_kind(g, grp.nodes);
    grp.branches.clear();
  } else {
    grp.kind = GroupKind::horizontal;
    grp.branches = split_branches(g, grp.nodes);
  }
}

Group make_group(const Graph& g, std::span<const NodeId> nodes) {
  Group grp;
  grp.nodes.assign(nodes.begin(), nodes.end());
  std::sort(grp.nodes.begin(), grp.nodes.end(), [&](NodeId a, NodeId b) { return g.topo_index(a) < g.topo_index(b); });
  grp.nodes.erase(std::unique(grp.nodes.begin(), grp.nodes.end()), grp.nodes.end());
  thread_local std::vector<uint8_t> in;  // membership marks indexed by NodeId, cleared below
  if (in.size() < g.size()) in.resize(g.size(), 0);
  for (NodeId n : grp.nodes) in[n] = 1;
  for (NodeId n : grp.nodes) {
    bool need = g.node(n).is_graph_output;
    for (const OutEdge& e : g.out_edges(n)) {
      if (need) break;
      need = !in[e.dst];
    }
    if (need) grp.materialised.push_back(n);
  }
  for (NodeId n : grp.nodes) in[n] = 0;
  assign_kind(g, grp);
  return grp;
}

GroupCost price_set(const Graph& g, const DeviceSpec& d, std::span<const NodeId> nodes) {
  return cost(g, make_group(g, nodes), d);
}

}  // namespace fuseplan
