// Hand-built graphs and plans for the CPU backend tests (the importer and
// make_plan are other stages; these tests must not depend on them).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "search/plan.h"

namespace fuseplan::test {

struct Builder {
  Graph g;
  NodeId input(const std::string& name, std::vector<int64_t> shape, DType t = DType::f32) {
    Primitive p;
    p.name = name;
    p.op = "Input";
    p.op_class = OpClass::source;
    p.source = SourceKind::graph_input;
    p.out = {t, std::move(shape)};
    return g.add_node(p);
  }
  NodeId weight(const std::string& name, std::vector<int64_t> shape, std::vector<float> data = {}) {
    Primitive p;
    p.name = name;
    p.op = "Weight";
    p.op_class = OpClass::source;
    p.source = SourceKind::weight;
    p.out = {DType::f32, std::move(shape)};
    p.data.f32 = std::move(data);
    return g.add_node(p);
  }
  NodeId ints(const std::string& name, std::vector<int64_t> shape, std::vector<int64_t> data) {
    Primitive p;
    p.name = name;
    p.op = "Constant";
    p.op_class = OpClass::source;
    p.source = SourceKind::constant;
    p.out = {DType::i64, std::move(shape)};
    p.data.i64 = std::move(data);
    return g.add_node(p);
  }
  NodeId op(const std::string& name, const std::string& op, OpClass cls, std::vector<NodeId> operands,
            std::vector<int64_t> shape, std::map<std::string, AttrValue> attrs = {}, DType t = DType::f32) {
    Primitive p;
    p.name = name;
    p.op = op;
    p.op_class = cls;
    p.origin = name;
    p.onnx_op = op;
    p.out = {t, std::move(shape)};
    p.attrs = std::move(attrs);
    NodeId n = g.add_node(p);
    for (std::size_t k = 0; k < operands.size(); ++k) g.add_use(operands[k], n, static_cast<int>(k));
    return n;
  }
  Graph& done(std::vector<NodeId> outputs) {
    for (NodeId o : outputs) g.node_mut(o).is_graph_output = true;
    g.set_graph_outputs(outputs);
    g.finalize();
    return g;
  }
};

/// A plan from a partition (groups of NodeIds, sources excluded): a node is
/// materialised by the first group holding it when it is a graph output or
/// read by a group that does not hold it; later holders are duplicates.
inline Plan hand_plan(const Graph& g, const std::vector<std::vector<NodeId>>& parts, const std::string& name = "hand") {
  Plan plan;
  plan.strategy = name;
  plan.device = "host-cpu-reference";
  std::set<NodeId> seen;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Group grp;
    grp.id = static_cast<int>(i);
    grp.nodes = parts[i];
    std::set<NodeId> mine(parts[i].begin(), parts[i].end());
    for (NodeId n : parts[i]) {
      if (seen.count(n)) {
        grp.duplicated.push_back(n);
        continue;
      }
      bool needed = g.node(n).is_graph_output;
      for (std::size_t j = 0; j < parts.size(); ++j) {
        if (j == i) continue;
        std::set<NodeId> other(parts[j].begin(), parts[j].end());
        if (other.count(n)) continue;
        for (NodeId c : g.consumers(n))
          if (other.count(c)) needed = true;
      }
      if (needed) grp.materialised.push_back(n);
    }
    for (NodeId n : parts[i]) seen.insert(n);
    grp.kind = parts[i].size() == 1 ? GroupKind::single : GroupKind::loop;
    plan.groups.push_back(grp);
  }
  return plan;
}

/// Every non-source node in its own group, topological order.
inline Plan unfused_plan(const Graph& g) {
  std::vector<std::vector<NodeId>> parts;
  for (NodeId n : g.topo_order())
    if (g.node(n).op_class != OpClass::source) parts.push_back({n});
  return hand_plan(g, parts, "unfused");
}

}  // namespace fuseplan::test
