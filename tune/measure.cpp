#include "tune/measure.h"

#include <cstdio>

namespace fuseplan {

std::string partition_key(const Graph& g, const Plan& plan) {
  std::string key;
  for (const auto& grp : plan.groups) {
    for (NodeId n : grp.nodes) key += g.node(n).name + " ";
    key += "\n";
  }
  return key;
}

Plan reprice(const Graph& g, const Plan& plan, const DeviceSpec& d) {
  std::vector<std::vector<NodeId>> partition;
  for (const auto& grp : plan.groups) partition.push_back(grp.nodes);
  Plan p = make_plan(g, d, std::move(partition), plan.strategy);
  p.status = plan.status;
  p.totals.search_ms = plan.totals.search_ms;
  p.model_path = plan.model_path;
  p.model_sha256 = plan.model_sha256;
  p.dims = plan.dims;
  return p;
}

const RunResult& PlanMeasurer::measure(const Graph& g, const Plan& plan, const std::string& scope) {
  const std::string key = scope + "\n" + partition_key(g, plan);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  RunOptions o = opts_;
  o.verify = false;
  ++runs_;
  return cache_.emplace(key, run_plan(g, plan, o)).first->second;
}

std::vector<TraceEvent> trace_events(const RunResult& run, int64_t pid) {
  std::vector<TraceEvent> out;
  double t_meas = 0, t_pred = 0;
  for (const auto& gt : run.groups) {
    char pred[32], meas[32];
    std::snprintf(pred, sizeof pred, "%.3f", gt.predicted_us);
    std::snprintf(meas, sizeof meas, "%.3f", gt.measured_us);
    std::map<std::string, std::string> args = {{"group", std::to_string(gt.group)},
                                               {"kind", gt.kind},
                                               {"primitives", std::to_string(gt.primitives)},
                                               {"label", gt.label},
                                               {"measured_us", meas},
                                               {"predicted_us", pred}};
    const std::string name = "g" + std::to_string(gt.group) + " " + gt.kind;
    out.push_back({name, gt.kind, t_meas, gt.measured_us, pid, 0, args});
    out.push_back({name, gt.kind, t_pred, gt.predicted_us, pid, 1, args});
    t_meas += gt.measured_us;
    t_pred += gt.predicted_us;
  }
  return out;
}

}  // namespace fuseplan
