// fuseplan inspect MODEL: primitives, op classes, FLOPs and unfused bytes.
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "costmodel/cost.h"
#include "search/pricing.h"

namespace fuseplan::cli {

namespace {
struct InspectArgs {
  ModelArgs model;
  bool json = false;
};

void run_inspect(const InspectArgs& a) {
  LoadedModel m = load_model(a.model);
  const Graph& g = m.graph;
  const DeviceSpec dummy = make_cpu_device();  // bytes and FLOPs do not depend on the device
  struct ClassStats {
    int64_t count = 0;
    double flops = 0, bytes = 0;
  };
  std::map<OpClass, ClassStats> per;
  ClassStats total;
  for (NodeId n = 0; n < g.size(); ++n) {
    const Primitive& p = g.node(n);
    ClassStats& s = per[p.op_class];
    s.count++;
    if (p.op_class == OpClass::source) continue;
    total.count++;
    const NodeId one[1] = {n};
    const GroupCost c = price_set(g, dummy, one);
    s.flops += c.flops;
    s.bytes += c.bytes();
    total.flops += c.flops;
    total.bytes += c.bytes();
  }
  auto tensors = [&](const std::vector<NodeId>& ids) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (NodeId n : ids) arr.push_back({{"name", g.node(n).name}, {"type", g.node(n).out.str()}});
    return arr;
  };
  if (a.json) {
    nlohmann::ordered_json j;
    j["model"] = a.model.path;
    j["sha256"] = m.sha256;
    j["primitives"] = total.count;
    j["sources"] = per[OpClass::source].count;
    nlohmann::ordered_json cls = nlohmann::ordered_json::object();
    for (auto& [c, s] : per)
      cls[std::string(to_string(c))] = {{"primitives", s.count}, {"flops", s.flops}, {"unfused_bytes", s.bytes}};
    j["op_classes"] = cls;
    j["flops"] = total.flops;
    j["unfused_bytes"] = total.bytes;
    j["inputs"] = tensors(g.graph_inputs());
    j["outputs"] = tensors(g.graph_outputs());
    j["warnings"] = g.warnings;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "model      " << a.model.path << "\n";
  std::cout << "primitives " << total.count << " (+ " << per[OpClass::source].count << " sources)\n";
  std::cout << "FLOPs      " << fmt(total.flops / 1e9, 3) << " GFLOP\n";
  std::cout << "unfused    " << fmt_bytes(total.bytes) << " moved\n\n";
  std::vector<std::vector<std::string>> rows;
  for (auto& [c, s] : per)
    rows.push_back({std::string(to_string(c)), std::to_string(s.count),
                    c == OpClass::source ? "-" : fmt(s.flops / 1e6, 3), c == OpClass::source ? "-" : fmt_bytes(s.bytes)});
  std::cout << format_table({"op class", "primitives", "MFLOP", "unfused bytes"}, rows) << "\n";
  std::cout << "inputs\n";
  for (NodeId n : g.graph_inputs()) std::cout << "  " << g.node(n).name << "  " << g.node(n).out.str() << "\n";
  std::cout << "outputs\n";
  for (NodeId n : g.graph_outputs()) std::cout << "  " << g.node(n).name << "  " << g.node(n).out.str() << "\n";
  if (!g.warnings.empty()) {
    std::cout << "warnings\n";
    for (const auto& w : g.warnings) std::cout << "  " << w << "\n";
  }
}
}  // namespace

void add_inspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "primitive count, op-class histogram, FLOPs and unfused bytes");
  args->model.add_to(cmd);
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->callback([args] { run_inspect(*args); });
}

}  // namespace fuseplan::cli
