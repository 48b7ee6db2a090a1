#include "search/decision_log.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "search/pricing.h"
#include "support/error.h"

namespace fuseplan {

double roundtrip_us(double bytes, const DeviceSpec& d) {
  const double bw = d.dram_bw_GBps * d.e_mem;  // GB/s == 1e3 bytes/µs
  return bw > 0 ? 2.0 * bytes / (bw * 1e3) : 0.0;
}

namespace {
/// Kernel-level DAG of a plan (groups are in topological order, so every
/// edge goes from a lower to a higher id).
struct GroupDag {
  std::vector<std::vector<int>> succ;

  GroupDag(const Graph& g, const Plan& plan, const std::vector<int>& home) : succ(plan.groups.size()) {
    for (const auto& grp : plan.groups) {
      for (NodeId n : grp.nodes)
        for (NodeId o : g.operands(n))
          if (g.op_class(o) != OpClass::source && !grp.contains(o)) succ[home[o]].push_back(grp.id);
    }
    for (auto& s : succ) {
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
    }
  }
  /// A path p -> x -> ... -> c through another kernel x (merging p and c would close a cycle).
  bool has_indirect_path(int p, int c) {
    // seen_[v] == epoch_: visited in this query (no per-query clearing).
    if (seen_.size() != succ.size() || ++epoch_ == 0) {
      seen_.assign(succ.size(), 0);
      epoch_ = 1;
    }
    stack_.clear();
    for (int x : succ[p])
      if (x != c && x < c) stack_.push_back(x);
    while (!stack_.empty()) {
      int v = stack_.back();
      stack_.pop_back();
      if (seen_[v] == epoch_) continue;
      seen_[v] = epoch_;
      for (int w : succ[v]) {
        if (w == c) return true;
        if (w < c && seen_[w] != epoch_) stack_.push_back(w);
      }
    }
    return false;
  }

 private:
  std::vector<uint32_t> seen_;
  uint32_t epoch_ = 0;
  std::vector<int> stack_;
};
}  // namespace

std::vector<DecisionRecord> log_decisions(const Graph& g, const DeviceSpec& d, const Plan& plan) {
  std::vector<int> home(g.size(), -1);
  for (const auto& grp : plan.groups)
    for (NodeId n : grp.nodes)
      if (home[n] < 0) home[n] = grp.id;
  for (NodeId n = 0; n < g.size(); ++n)
    FUSEPLAN_ASSERT(g.op_class(n) == OpClass::source || home[n] >= 0,
                    "the plan's groups cover primitive '" + g.node(n).name + "'");
  GroupDag dag(g, plan, home);
  std::map<std::pair<int, int>, GroupCost> merged_cost;  // one pricing per pair of kernels
  std::vector<DecisionRecord> out;
  for (NodeId c : g.topo_order()) {
    if (g.op_class(c) == OpClass::source) continue;
    auto ops = g.operands(c);
    std::sort(ops.begin(), ops.end());
    ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
    for (NodeId p : ops) {
      if (g.op_class(p) == OpClass::source) continue;
      DecisionRecord r;
      r.producer = g.node(p).name;
      r.consumer = g.node(c).name;
      const Group& gc = plan.groups[home[c]];
      const double tensor_bytes = g.node(p).out.known ? static_cast<double>(g.node(p).out.bytes()) : 0.0;
      if (gc.contains(p)) {
        const bool copy = home[p] != home[c];
        r.action = copy ? Action::duplicated : Action::fused;
        const bool written = std::find(plan.groups[home[p]].materialised.begin(),
                                       plan.groups[home[p]].materialised.end(), p) !=
                             plan.groups[home[p]].materialised.end();
        r.delta_us = written ? roundtrip_us(tensor_bytes, d) / 2 : roundtrip_us(tensor_bytes, d);
        if (copy) {
          r.blocker = Blocker::multi_consumer;
          r.reason = "'" + r.producer + "' is recomputed in kernel " + std::to_string(gc.id) +
                     " instead of being read back";
        } else if (g.node(p).is_graph_output) {
          r.blocker = Blocker::graph_output;
          r.reason = "'" + r.producer + "' is a graph output: fused, but its write stays";
        }
        out.push_back(std::move(r));
        continue;
      }
      const Group& gp = plan.groups[home[p]];
      FusionDecision dec = can_fuse_edge(g, p, c);
      if (dec.ok()) dec = can_merge_vertical(g, gp.nodes, gc.nodes, d, /*check_cycles=*/false);
      if (dec.ok() && dag.has_indirect_path(gp.id, gc.id))
        dec = FusionDecision::forbid(Blocker::cycle, "'" + r.producer + "' -> '" + r.consumer + "': kernel " +
                                                         std::to_string(gp.id) + " reaches kernel " +
                                                         std::to_string(gc.id) + " through another kernel");
      if (!dec.ok()) {
        r.action = Action::blocked;
        r.blocker = dec.blocker;
        r.reason = dec.reason;
        out.push_back(std::move(r));
        continue;
      }
      auto [it, fresh] = merged_cost.try_emplace({gp.id, gc.id});
      if (fresh) {
        std::vector<NodeId> both = gp.nodes;
        both.insert(both.end(), gc.nodes.begin(), gc.nodes.end());
        it->second = price_set(g, d, both);
      }
      const GroupCost& merged = it->second;
      r.delta_us = plan.costs[gp.id].predicted_us + plan.costs[gc.id].predicted_us - merged.predicted_us;
      r.action = Action::kept;
      std::set<int> reader_groups;
      for (NodeId x : g.consumers(p)) reader_groups.insert(home[x]);
      const std::string merging = "merging '" + r.producer + "' and '" + r.consumer + "'";
      if (FusionDecision res = check_resources(merged, d, merging); !res.ok()) {
        r.action = Action::blocked;
        r.blocker = res.blocker;
        r.reason = res.reason;
      } else if (reader_groups.size() > 1) {
        r.blocker = Blocker::multi_consumer;
        r.reason = "'" + r.producer + "' feeds " + std::to_string(reader_groups.size()) +
                   " kernels: kept in memory rather than recomputed in each";
      } else if (r.delta_us <= 0) {
        r.blocker = Blocker::unprofitable;
        r.reason = "merging kernels " + std::to_string(gp.id) + " and " + std::to_string(gc.id) +
                   " is legal but predicted slower";
      } else if (FusionDecision size = check_group_size(gp.nodes.size() + gc.nodes.size(), d, plan.max_group_size,
                                                        merging + " (kernels " + std::to_string(gp.id) + " and " +
                                                            std::to_string(gc.id) + ")");
                 !size.ok()) {
        // Predicted faster, but over the compile-time budget or the user's cap.
        r.action = Action::blocked;
        r.blocker = size.blocker;
        r.reason = size.reason;
      } else {
        r.reason = "strategy '" + plan.strategy + "' keeps kernels " + std::to_string(gp.id) + " and " +
                   std::to_string(gc.id) + " apart";
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace fuseplan
