#include "search/strategies/post_dominator.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dominator_tree.hpp>

namespace fuseplan::strategies {

PostDominators post_dominators(const Graph& g) {
  using RG = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
  using V = boost::graph_traits<RG>::vertex_descriptor;
  const std::size_t n = g.size();
  const V sink = n;
  RG r(n + 1);
  for (NodeId v : g.topo_order()) {
    const Primitive& p = g.node(v);
    if (p.op_class == OpClass::source) continue;
    const auto cons = g.consumers(v);
    if (p.is_graph_output || cons.empty()) boost::add_edge(sink, v, r);
    for (NodeId c : cons) boost::add_edge(c, v, r);  // reversed: consumer -> producer
  }
  std::vector<V> idom(n + 1, boost::graph_traits<RG>::null_vertex());
  auto idom_map = boost::make_iterator_property_map(idom.begin(), boost::get(boost::vertex_index, r));
  boost::lengauer_tarjan_dominator_tree(r, sink, idom_map);

  PostDominators out;
  out.ipdom.assign(n, kNoNode);
  out.depth.assign(n, 1);
  const auto& topo = g.topo_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const NodeId v = *it;
    if (g.op_class(v) == OpClass::source) continue;
    const V d = idom[v];
    if (d == boost::graph_traits<RG>::null_vertex() || d == sink || g.node(v).is_graph_output) continue;
    out.ipdom[v] = d;
    out.depth[v] = out.depth[d] + 1;  // d is a consumer-side node: already visited
  }
  return out;
}

}  // namespace fuseplan::strategies
