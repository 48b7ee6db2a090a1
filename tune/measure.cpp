#include "tune/measure.h"

#include <algorithm>
#include <cstdio>

#include "support/stats.h"

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
  Plan p = make_plan(g, d, std::move(partition), plan.strategy, PartitionSource::plan_file, plan.max_group_size);
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

Verdict separate(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 3 || b.size() < 3) return Verdict::tie;
  if (quantile(a, 0.75) < quantile(b, 0.25)) return Verdict::first_faster;
  if (quantile(b, 0.75) < quantile(a, 0.25)) return Verdict::second_faster;
  return Verdict::tie;
}

std::string Duel::summary() const {
  auto iqr = [](const std::vector<double>& v) { return quantile(v, 0.75) - quantile(v, 0.25); };
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%.1f us vs %.1f us (medians of %zu interleaved rounds, IQR %.1f / %.1f us, load %.2f -> %.2f): %s",
                median(a_us), median(b_us), std::min(a_us.size(), b_us.size()), iqr(a_us), iqr(b_us), load_before,
                load_after,
                verdict == Verdict::first_faster    ? "the first faster"
                : verdict == Verdict::second_faster ? "the second faster"
                                                    : "a tie");
  return buf;
}

Interleaved PlanMeasurer::interleave(const Graph& g, const std::vector<const Plan*>& plans, int min_rounds,
                                     int max_rounds, const std::function<bool(const Interleaved&)>& settled) {
  RunOptions o = opts_;
  o.verify = false;
  Interleaved s;
  s.us.resize(plans.size());
  s.load_before = load_average_1min();
  for (int r = 0; r < max_rounds; ++r) {
    for (std::size_t i = 0; i < plans.size(); ++i) s.us[i].push_back(run_plan(g, *plans[i], o).measured_us);
    runs_ += static_cast<int>(plans.size());
    if (r + 1 >= min_rounds && settled && settled(s)) break;
  }
  s.load_after = load_average_1min();
  return s;
}

Duel PlanMeasurer::duel(const Graph& g, const Plan& a, const Plan& b, int min_rounds, int max_rounds) {
  Interleaved s = interleave(g, {&a, &b}, min_rounds, max_rounds,
                             [](const Interleaved& x) { return separate(x.us[0], x.us[1]) != Verdict::tie; });
  Duel d;
  d.verdict = separate(s.us[0], s.us[1]);
  d.a_us = std::move(s.us[0]);
  d.b_us = std::move(s.us[1]);
  d.load_before = s.load_before;
  d.load_after = s.load_after;
  return d;
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
