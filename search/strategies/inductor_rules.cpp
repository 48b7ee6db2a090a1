#include "search/strategies/inductor_rules.h"

#include <set>

#include "search/legality.h"

namespace fuseplan::strategies {

namespace {
bool is_pointwise(OpClass c) {
  return c == OpClass::elementwise || c == OpClass::broadcast || c == OpClass::reshape || c == OpClass::injective;
}
/// Whether consumer `c` can inline producer `p` in its inner function.
bool can_inline_into(const Graph& g, NodeId p, NodeId c) {
  const OpClass k = g.op_class(c);
  if (k == OpClass::contraction || k == OpClass::opaque || k == OpClass::scatter || k == OpClass::scan) return false;
  return can_fuse_edge(g, p, c).ok();
}
}  // namespace

std::vector<char> inductor_realized(const Graph& g) {
  const std::size_t n = g.size();
  std::vector<char> realized(n, 1);
  std::vector<std::set<NodeId>> reads(n);
  std::vector<int> opcount(n, 0);
  for (NodeId v : g.topo_order()) {
    const Primitive& p = g.node(v);
    if (p.op_class == OpClass::source || !is_pointwise(p.op_class)) continue;
    opcount[v] = 1;
    for (NodeId o : g.operands(v)) {
      if (realized[o]) {
        reads[v].insert(o);
      } else {
        reads[v].insert(reads[o].begin(), reads[o].end());
        opcount[v] += opcount[o];
      }
    }
    const auto users = g.consumers(v);
    const int nreads = static_cast<int>(reads[v].size());
    bool realize = p.is_graph_output || users.empty() || nreads > kRealizeAccReadsThreshold;
    if (users.size() > 1 && (nreads > kRealizeReadsThreshold || opcount[v] > kRealizeOpcountThreshold))
      realize = true;
    for (NodeId c : users) realize = realize || !can_inline_into(g, v, c);
    realized[v] = realize ? 1 : 0;
  }
  return realized;
}

}  // namespace fuseplan::strategies
