// GroupView (a group's nodes in topological order with an O(1) position
// lookup) and the per-group facts the features are built from: reduction
// rows, and the bytes a group reads of each input.
#include <algorithm>
#include <string>

#include "costmodel/cost_detail.h"

namespace fuseplan {

namespace costmodel_detail {

namespace {
// GroupView's position table: NodeId -> position, -1 everywhere outside the
// view that holds it (`busy`).
struct PositionTable {
  std::vector<int> pos;
  bool busy = false;
};
thread_local PositionTable t_positions;
}  // namespace

GroupView::GroupView(const Graph& graph, const Group& group) : g(graph), grp(group) {
  order.assign(group.nodes.begin(), group.nodes.end());
  for (NodeId n : order)
    if (n >= g.size()) throw Error("group " + std::to_string(grp.id) + " holds node " + std::to_string(n) +
                                   " which is not in graph '" + g.name + "'");
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return g.topo_index(a) < g.topo_index(b); });
  order.erase(std::unique(order.begin(), order.end()), order.end());
  if (!t_positions.busy) {
    t_positions.busy = true;
    if (t_positions.pos.size() < g.size()) t_positions.pos.resize(g.size(), -1);
    table_ = t_positions.pos.data();
    table_size_ = t_positions.pos.size();
    for (std::size_t i = 0; i < order.size(); ++i) table_[order[i]] = static_cast<int>(i);
    return;
  }
  index_.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) index_.emplace_back(order[i], static_cast<int>(i));
  std::sort(index_.begin(), index_.end());
}

GroupView::~GroupView() {
  if (!table_) return;
  for (NodeId n : order) table_[n] = -1;
  t_positions.busy = false;
}

int GroupView::pos_in_index(NodeId n) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(n, -1));
  return it != index_.end() && it->first == n ? it->second : -1;
}

double work_elems(const Graph& g, NodeId n) {
  const Primitive& p = g.node(n);
  if (p.op_class == OpClass::reduction && p.kind != Op::MaxPool && p.kind != Op::AveragePool) {
    for (const InEdge& e : g.in_edges(n))
      if (e.operand == 0) return static_cast<double>(g.numel(e.src));
  }
  return static_cast<double>(g.numel(n));
}

namespace {
// Widest reduction: (row elements, row bytes).
std::pair<double, double> widest_row(const GroupView& v) {
  std::pair<double, double> best{0, 0};
  for (NodeId n : v.order) {
    const Primitive& p = v.g.node(n);
    if (p.op_class != OpClass::reduction) continue;
    double out = static_cast<double>(v.g.numel(n));
    if (out <= 0) continue;
    double row = node_facts(v.g, n).work_elems / out;
    double elem_bytes = static_cast<double>(dtype_bytes(p.out.dtype));
    for (const InEdge& e : v.g.in_edges(n))
      if (e.operand == 0) elem_bytes = static_cast<double>(dtype_bytes(v.g.node(e.src).out.dtype));
    if (row > best.first) best = {row, row * elem_bytes};
  }
  return best;
}
}  // namespace

double reduction_row_elems(const GroupView& v) { return widest_row(v).first; }
double reduction_row_bytes(const GroupView& v) { return widest_row(v).second; }

bool reads_in_part(const Graph& g, NodeId c, NodeId n) {
  const Primitive& p = g.node(c);
  if (p.kind != Op::Slice && p.op_class != OpClass::gather) return false;
  const std::vector<NodeId>& ops = g.operands(c);
  return !ops.empty() && ops[0] == n && std::count(ops.begin(), ops.end(), n) == 1;
}

double input_bytes_read(const Graph& g, const GroupView& v, NodeId n) {
  const double full = static_cast<double>(g.bytes(n));
  // Most tensors have no partial reader: no walk over their consumers (a
  // shared constant can have thousands).
  if (!node_facts(g, n).read_in_part) return full;
  double part = 0;
  bool read_here = false;
  for (NodeId c : g.consumers(n)) {
    if (v.pos(c) < 0) continue;
    if (!reads_in_part(g, c, n)) return full;
    part += static_cast<double>(g.bytes(c));  // output elements × the operand's dtype
    read_here = true;
  }
  return read_here ? std::min(full, part) : full;
}

}  // namespace costmodel_detail

}  // namespace fuseplan
