#include "emit/report_md.h"

#include "support/format.h"

#include <cstdio>
#include <map>
#include <sstream>

namespace fuseplan {

namespace {

std::string num(double v, int precision = 2) { return fixed_text(v, precision); }

std::string speedup(double row_us, double tuned_us) {
  if (row_us <= 0 || tuned_us <= 0) return "-";
  return num(row_us / tuned_us) + "x";
}

std::string measured(double us) { return us < 0 ? "-" : num(us, 1); }

void table(std::ostringstream& os, const std::vector<std::string>& header,
           const std::vector<std::vector<std::string>>& rows) {
  os << "|";
  for (const auto& h : header) os << " " << h << " |";
  os << "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) os << (i == 0 ? "---|" : "---:|");
  os << "\n";
  for (const auto& r : rows) {
    os << "|";
    for (const auto& c : r) os << " " << c << " |";
    os << "\n";
  }
}

std::string group_terms(int group, const GroupCost& c) {
  if (group < 0) return "-";
  return "g" + std::to_string(group) + ": " + c.bound + ", t_mem " + num(c.t_mem_us) + ", t_compute " +
         num(c.t_compute_us) + ", launch " + num(c.launch_us) + ", regs " + std::to_string(c.regs_per_thread) +
         " → " + num(c.predicted_us) + " µs";
}

}  // namespace

std::string summary_markdown(const std::string& model, const std::string& device,
                             const std::vector<BatchReport>& batches) {
  std::ostringstream os;
  os << "# fuseplan tune: " << model << " on " << device << "\n\n"
     << "Times in µs. *speedup* = that row's time / the tuned plan's time (predicted, and measured where both "
        "were run). Measured = Σ per-kernel medians on the CPU backend.\n";
  for (const auto& b : batches) {
    os << "\n## batch " << b.batch << "\n\n";
    os << "Tuned plan: " << b.tuned.kernels << " kernels, " << bytes_text(b.tuned.bytes) << ", predicted "
       << num(b.tuned.predicted_us) << " µs" << (b.tuned.measured_us >= 0 ? ", measured " + num(b.tuned.measured_us, 1) + " µs" : "")
       << "; " << b.rounds << (b.rounds == 1 ? " round" : " rounds") << (b.converged ? "" : " (not converged)");
    if (!b.note.empty()) os << "; " << b.note;
    os << ".\n\n";
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const PlanRow& r) {
      rows.push_back({r.label, std::to_string(r.kernels), bytes_text(r.bytes), num(r.predicted_us),
                      measured(r.measured_us), speedup(r.predicted_us, b.tuned.predicted_us),
                      r.measured_us >= 0 && b.tuned.measured_us >= 0 ? speedup(r.measured_us, b.tuned.measured_us)
                                                                     : "-"});
    };
    row(b.tuned);
    for (const auto& p : b.peers) row(p);
    table(os, {"plan", "kernels", "bytes", "predicted", "measured", "speedup (pred)", "speedup (meas)"}, rows);
  }
  return os.str();
}

std::vector<DecisionFlip> decision_flips(const std::vector<PlanAt>& plans) {
  std::vector<DecisionFlip> out;
  if (plans.size() < 2) return out;
  // Per plan: (producer, consumer) -> record, and primitive name -> group index.
  std::vector<std::map<std::pair<std::string, std::string>, const DecisionRecord*>> by_edge(plans.size());
  std::vector<std::map<std::string, int>> group_of(plans.size());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    for (const auto& r : plans[i].plan->decisions) by_edge[i][{r.producer, r.consumer}] = &r;
    const Plan& p = *plans[i].plan;
    for (std::size_t gi = 0; gi < p.groups.size(); ++gi)
      for (NodeId n : p.groups[gi].nodes) group_of[i].emplace(plans[i].graph->node(n).name, static_cast<int>(gi));
  }
  for (const auto& r0 : plans[0].plan->decisions) {
    DecisionFlip f{r0.producer, r0.consumer, {}};
    bool flips = false;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      auto it = by_edge[i].find({r0.producer, r0.consumer});
      if (it == by_edge[i].end()) continue;
      const DecisionRecord& r = *it->second;
      DecisionAt at{plans[i].batch, r.action, r.blocker, r.delta_us, -1, -1, {}, {}};
      const Plan& p = *plans[i].plan;
      auto gp = group_of[i].find(r.producer), gc = group_of[i].find(r.consumer);
      // The consumer's group first: a duplicated producer lives in it too.
      if (gc != group_of[i].end()) {
        at.consumer_group = gc->second;
        if (static_cast<std::size_t>(gc->second) < p.costs.size()) at.consumer_cost = p.costs[gc->second];
      }
      if (gp != group_of[i].end()) {
        at.producer_group = gp->second;
        if (static_cast<std::size_t>(gp->second) < p.costs.size()) at.producer_cost = p.costs[gp->second];
      }
      if (!f.at.empty() && f.at.front().action != at.action) flips = true;
      f.at.push_back(std::move(at));
    }
    if (flips) out.push_back(std::move(f));
  }
  return out;
}

std::string diff_markdown(const std::string& model, const std::string& device, const std::vector<int64_t>& batches,
                          const std::vector<DecisionFlip>& flips) {
  std::ostringstream os;
  os << "# fuseplan tune: decisions that flip with batch size\n\n" << model << " on " << device << ", batch sizes";
  for (auto b : batches) os << " " << b;
  os << ".\n\n";
  if (batches.size() < 2) {
    os << "Only one batch size was tuned: nothing to compare.\n";
    return os.str();
  }
  if (flips.empty()) {
    os << "No decision flips: every producer→consumer edge gets the same action at every batch size.\n";
    return os.str();
  }
  os << flips.size() << (flips.size() == 1 ? " decision flips" : " decisions flip")
     << ". For each: the action at every batch size, the predicted saving of merging (delta_us; negative = merging "
        "loses) and the cost terms of the groups holding the producer and the consumer.\n";
  int by_batch = 0, by_recal = 0, classified = 0;
  for (const auto& f : flips) {
    if (f.cause.empty()) continue;
    ++classified;
    const bool batch = f.cause.find("batch size") != std::string::npos;
    by_batch += batch;
    by_recal += !batch;
  }
  if (classified)
    os << "\nCause: " << by_batch << " of " << flips.size() << " flip with the batch size (every size searched "
       << "again on one device, the final one, flips them too; 'batch size and recalibration' where it flips them "
          "another way), "
       << by_recal << " with recalibration or the measured choice only (the graph is identical at both sizes, or "
                      "on one device the sizes agree; 'measured choice' where tune kept a plan it measured faster "
                      "than its search's, another round's or a peer strategy's). Batch-size flips are listed "
                      "first.\n";
  std::vector<const DecisionFlip*> order;
  for (const auto& f : flips)
    if (f.cause.empty() || f.cause.find("batch size") != std::string::npos) order.push_back(&f);
  for (const auto& f : flips)
    if (!f.cause.empty() && f.cause.find("batch size") == std::string::npos) order.push_back(&f);
  for (const DecisionFlip* fp : order) {
    const DecisionFlip& f = *fp;
    os << "\n## " << f.producer << " → " << f.consumer << "\n\n";
    for (std::size_t i = 0; i < f.at.size(); ++i)
      os << (i ? ", " : "") << to_string(f.at[i].action) << " at " << f.at[i].batch;
    os << "\n\n";
    if (!f.cause.empty()) os << "Cause: " << f.cause << ".\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& a : f.at)
      rows.push_back({std::to_string(a.batch), std::string(to_string(a.action)),
                      a.blocker == Blocker::none ? "-" : std::string(to_string(a.blocker)), num(a.delta_us, 3),
                      a.producer_group == a.consumer_group ? "same kernel" : group_terms(a.producer_group, a.producer_cost),
                      group_terms(a.consumer_group, a.consumer_cost)});
    table(os, {"batch", "action", "blocker", "delta_us", "producer's group", "consumer's group"}, rows);
  }
  return os.str();
}

}  // namespace fuseplan
