#include "emit/cpu/cpu_backend.h"

#include <set>

#include "emit/cpu/cpp_printer.h"

namespace fuseplan::cpu {

void check_plan_matches(const Graph& g, const Plan& plan) {
  auto fail = [](const std::string& why) { throw Error("plan does not match the model: " + why); };
  std::set<NodeId> written, computed;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    const Group& grp = plan.groups[i];
    std::set<NodeId> members;
    for (NodeId n : grp.nodes) {
      if (n >= g.size()) fail("group " + std::to_string(i) + " names node " + std::to_string(n) + " of " +
                              std::to_string(g.size()));
      if (g.node(n).op_class == OpClass::source) fail("group " + std::to_string(i) + " holds source '" + g.node(n).name + "'");
      members.insert(n);
    }
    for (NodeId n : grp.nodes)
      for (NodeId o : g.operands(n))
        if (!members.count(o) && g.node(o).op_class != OpClass::source && !written.count(o))
          fail("group " + std::to_string(i) + " reads '" + g.node(o).name + "' before any group writes it");
    for (NodeId m : grp.materialised) {
      if (!members.count(m)) fail("group " + std::to_string(i) + " materialises a node it does not compute");
      written.insert(m);
    }
    computed.insert(members.begin(), members.end());
  }
  for (NodeId n = 0; n < g.size(); ++n)
    if (g.node(n).op_class != OpClass::source && !computed.count(n))
      fail("primitive '" + g.node(n).name + "' is in no group");
  for (NodeId o : g.graph_outputs())
    if (g.node(o).op_class != OpClass::source && !written.count(o))
      fail("graph output '" + g.node(o).name + "' is never materialised");
}

std::vector<KernelPlan> kernel_plans(const Graph& g, const Plan& plan) {
  check_plan_matches(g, plan);
  std::vector<KernelPlan> out;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    Group grp = plan.groups[i];
    grp.id = static_cast<int>(i);
    out.push_back(plan_kernel(g, grp, true));  // B views passed with strides (cpp_printer)
  }
  return out;
}

std::string plan_source(const Graph& g, const Plan& plan) {
  std::string title = g.name + " / strategy " + plan.strategy + " / device " + plan.device;
  return print_cpp(g, kernel_plans(g, plan), title);
}

}  // namespace fuseplan::cpu
