// Fusion-group helpers: kind names, membership, external inputs, kind inference.
#include "costmodel/group.h"

#include <algorithm>
#include <array>
#include <string>

#include "costmodel/scratch.h"

namespace fuseplan {

namespace {
constexpr std::array<std::string_view, 6> kGroupKindNames = {
    "single", "loop", "reduction", "contraction", "horizontal", "multipass"};

bool in(const std::vector<NodeId>& v, NodeId n) { return std::find(v.begin(), v.end(), n) != v.end(); }

// True if some node of the group reads the result of reduction `r` (directly
// or through other group nodes) together with r's reduced input or one of that
// input's producers: the row must stay resident between the passes.
bool is_reread_reduction(const Graph& g, const std::vector<NodeId>& nodes, NodeId r) {
  const std::vector<NodeId>& ops = g.operands(r);
  if (ops.empty()) return false;
  // Ancestors of the reduced input inside the group, plus the external
  // tensors at the boundary (the row data and everything it is made of).
  PooledVector<NodeId> upstream;  // pooled (costmodel/scratch.h): the search asks this per candidate
  upstream.push_back(ops[0]);
  for (std::size_t i = 0; i < upstream.size(); ++i) {
    NodeId u = upstream[i];
    if (!in(nodes, u)) continue;
    for (const InEdge& e : g.in_edges(u)) {
      NodeId p = e.src;
      if (!in(upstream, p)) upstream.push_back(p);
    }
  }
  // Descendants of r inside the group.
  PooledVector<NodeId> downstream;
  downstream.push_back(r);
  for (std::size_t i = 0; i < downstream.size(); ++i)
    for (const OutEdge& e : g.out_edges(downstream[i])) {
      NodeId c = e.dst;
      if (in(nodes, c) && !in(downstream, c)) downstream.push_back(c);
    }
  for (std::size_t i = 1; i < downstream.size(); ++i)
    for (const InEdge& e : g.in_edges(downstream[i])) {
      NodeId o = e.src;
      if (in(upstream, o) && !in(downstream, o)) return true;
    }
  return false;
}
}  // namespace

std::string_view to_string(GroupKind k) { return kGroupKindNames[static_cast<std::size_t>(k)]; }

GroupKind group_kind_from_string(std::string_view s) {
  for (std::size_t i = 0; i < kGroupKindNames.size(); ++i)
    if (kGroupKindNames[i] == s) return static_cast<GroupKind>(i);
  throw Error("unknown group kind '" + std::string(s) +
              "' (expected single, loop, reduction, contraction, horizontal or multipass)");
}

bool Group::contains(NodeId n) const { return in(nodes, n); }

std::vector<NodeId> group_inputs(const Graph& g, const Group& grp) {
  std::vector<NodeId> out;
  for (NodeId n : grp.nodes)
    for (const InEdge& e : g.in_edges(n)) {
      NodeId p = e.src;
      if (!grp.contains(p)) out.push_back(p);
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

GroupKind infer_group_kind(const Graph& g, const std::vector<NodeId>& nodes) {
  bool has_reduction = false;
  for (NodeId n : nodes)
    if (g.op_class(n) == OpClass::contraction) return GroupKind::contraction;
  for (NodeId n : nodes) {
    if (g.op_class(n) != OpClass::reduction) continue;
    has_reduction = true;
    if (is_reread_reduction(g, nodes, n)) return GroupKind::multipass;
  }
  if (has_reduction) return GroupKind::reduction;
  return nodes.size() > 1 ? GroupKind::loop : GroupKind::single;
}

}  // namespace fuseplan
