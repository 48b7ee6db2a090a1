// `elementwise`: what every compiler implements first. Walks the graph in
// topological order and merges an elementwise/broadcast producer into its
// consumer when the producer has exactly one consumer and the consumer is
// elementwise/broadcast too, and legality allows it. Never fuses into or out
// of reductions, contractions or re-indexing ops; never duplicates.
#include "search/legality.h"
#include "search/strategies/registry.h"
#include "search/work_state.h"

namespace fuseplan {

namespace {
bool is_pointwise(const Primitive& p) {
  return p.op_class == OpClass::elementwise || p.op_class == OpClass::broadcast;
}

class ElementwiseStrategy : public Strategy {
 public:
  std::string name() const override { return "elementwise"; }
  std::string description() const override {
    return "greedy merging of single-consumer elementwise/broadcast chains only";
  }
  std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec& d, const SearchOptions& o) override {
    WorkState ws(g, d);
    const std::size_t max_size = max_group_primitives(d, o.max_group_size);
    for (NodeId c : g.topo_order()) {
      if (!is_pointwise(g.node(c))) continue;
      for (NodeId p : g.operands(c)) {
        if (!is_pointwise(g.node(p)) || g.consumers(p).size() != 1) continue;
        const int gp = ws.home(p), gc = ws.home(c);
        if (gp == gc) continue;
        if (ws.nodes(gp).size() + ws.nodes(gc).size() > max_size) continue;
        if (!can_merge_vertical(g, ws.nodes(gp), ws.nodes(gc), d).ok()) continue;
        ws.merge(gc, gp);
      }
    }
    return ws.partition();
  }
};
}  // namespace

std::unique_ptr<Strategy> make_elementwise_strategy() { return std::make_unique<ElementwiseStrategy>(); }

}  // namespace fuseplan
