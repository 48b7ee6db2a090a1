// `xla`: XLA's GPU priority fusion (xla/service/gpu/transforms/priority_fusion.cc).
// Every producer sits in a priority queue keyed by its predicted benefit
//   (time(producer) + Σ time(consumer)) − (Σ time(consumer ∪ producer) + time(producer left))
// priced with 1 µs per kernel launch (XLA's GpuPerformanceModel launch
// overhead; a DeviceSpec copy used for the priority only) and without the
// register/occupancy terms (XLA's model has none). The best producer is fused
// into ALL of its consumers (duplicated when there are several) or into none;
// the groups it touched are repriced. A fusion holds at most 96 operands +
// outputs (XLA's kMaxOperandsAndOutputsPerFusion). Producers are never fused
// into a library GEMM/convolution (XLA keeps cuBLAS/cuDNN calls as custom
// calls); the GEMM rewriter's bias/activation epilogues are modelled by
// letting a contraction group fuse into its single elementwise consumer.
// No fusion grows past max_group_primitives (search/legality.h: the
// compile-time budget of a kernel, or the user's --max-group-size when
// smaller): besides honouring the limit, this bounds the work of each step
// (pricing, operand count and legality of the touched groups), so the pass
// is linear in the primitives; unbounded, a chain fused into one growing
// group reprices it at every step (quadratic: a 10^5 chain took minutes).
#include <algorithm>
#include <queue>
#include <span>
#include <unordered_set>

#include "search/gain.h"
#include "search/legality.h"
#include "search/strategies/registry.h"
#include "search/strategies/xla_fusion.h"
#include "search/work_state.h"

namespace fuseplan {

namespace {

constexpr double kXlaLaunchUs = 1.0;       // XLA GpuPerformanceModel: kKernelLaunchOverhead = 1 µs
constexpr int kMaxOperandsAndOutputs = 96;  // XLA: kMaxOperandsAndOutputsPerFusion

/// The device XLA's priority sees: 1 µs launches, no register spills, no occupancy loss.
DeviceSpec priority_device(const DeviceSpec& d) {
  DeviceSpec p = d;
  p.launch_us = kXlaLaunchUs;
  if (p.gpu) {
    p.gpu->max_regs_per_thread = 1 << 20;
    p.gpu->regs_per_sm = 1 << 30;
    p.gpu->min_occupancy_for_full_bw = 0;
  }
  if (p.cpu) p.cpu->vector_regs = 1 << 20;
  return p;
}

/// Operands + outputs of `nodes` as one kernel: distinct external producers
/// read (sources included) plus the outputs written to memory (what XLA's
/// kMaxOperandsAndOutputsPerFusion counts).
int operand_and_output_count(const Graph& g, std::span<const NodeId> nodes) {
  std::unordered_set<NodeId> in(nodes.begin(), nodes.end()), ext;
  int outputs = 0;
  for (NodeId n : nodes) {
    for (NodeId o : g.operands(n))
      if (!in.count(o)) ext.insert(o);
    bool written = g.node(n).is_graph_output;
    for (NodeId c : g.consumers(n))
      if (!in.count(c)) written = true;
    outputs += written ? 1 : 0;
  }
  return static_cast<int>(ext.size()) + outputs;
}

/// Union of the node sets of groups `gids` (topological order, deduplicated).
std::vector<NodeId> union_nodes(const WorkState& ws, std::span<const int> gids) {
  std::vector<NodeId> out;
  for (int gid : gids) out.insert(out.end(), ws.nodes(gid).begin(), ws.nodes(gid).end());
  const Graph& g = ws.graph();
  std::sort(out.begin(), out.end(), [&](NodeId x, NodeId y) { return g.topo_index(x) < g.topo_index(y); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool holds_class(const Graph& g, const std::vector<NodeId>& nodes, OpClass c) {
  for (NodeId n : nodes)
    if (g.op_class(n) == c) return true;
  return false;
}

struct Entry {
  double priority = 0;
  int producer = -1;
  std::vector<std::pair<int, int>> stamps;
  bool operator<(const Entry& o) const {
    if (priority != o.priority) return priority < o.priority;
    return producer > o.producer;  // ties: lower group id first
  }
};

class PriorityFusion {
 public:
  PriorityFusion(const Graph& g, const DeviceSpec& d, int max_group_size)
      : g_(g), d_(d), prio_d_(priority_device(d)), ws_(g, prio_d_),
        max_group_size_(max_group_primitives(d, max_group_size)) {}

  std::vector<std::vector<NodeId>> run() {
    for (int gid : ws_.alive_groups()) push(gid);
    while (!pq_.empty()) {
      Entry e = pq_.top();
      pq_.pop();
      bool fresh = true;
      for (auto [gid, v] : e.stamps) fresh &= ws_.alive(gid) && ws_.version(gid) == v;
      if (!fresh) {
        push(e.producer);
        continue;
      }
      fuse(e.producer);
      log_.push_back(e.producer);
    }
    return ws_.partition();
  }

  /// Producers fused, in order (replay with strategies::replay_xla_fusion).
  const std::vector<int>& log() const { return log_; }

 private:
  /// Prices fusing producer p into all of its consumers; false when not allowed.
  bool benefit(int p, const std::vector<int>& consumers, double& out) {
    if (consumers.empty()) return false;
    double before = ws_.cost_of(p).predicted_us, after = 0;
    for (int c : consumers) {
      if (ws_.nodes(p).size() + ws_.nodes(c).size() > max_group_size_) return false;
      if (holds_class(g_, ws_.nodes(c), OpClass::contraction)) return false;
      const int ids[2] = {p, c};
      if (operand_and_output_count(g_, union_nodes(ws_, ids)) > kMaxOperandsAndOutputs)
        return false;
      if (ws_.merge_would_cycle(p, c)) return false;
      const FusionDecision dec = consumers.size() == 1 ? can_merge_vertical(g_, ws_.nodes(p), ws_.nodes(c), d_)
                                                       : can_duplicate(g_, ws_.nodes(p), ws_.nodes(c), d_);
      if (!dec.ok()) return false;
      before += ws_.cost_of(c).predicted_us;
    }
    if (consumers.size() == 1) {
      const int ids[2] = {p, consumers[0]};
      after = ws_.cost_of_merge(ids).predicted_us;
    } else {
      GroupCost left;
      for (const GroupCost& c : ws_.cost_of_duplicate(p, consumers, &left)) after += c.predicted_us;
      after += left.predicted_us;
    }
    out = before - after;
    return true;
  }

  void push(int p) {
    if (p < 0 || !ws_.alive(p)) return;
    const auto consumers = ws_.consumer_groups(p);
    double gain = 0;
    if (!benefit(p, consumers, gain) || gain <= kMinGainUs) return;
    Entry e{gain, p, {{p, ws_.version(p)}}};
    for (int c : consumers) e.stamps.emplace_back(c, ws_.version(c));
    pq_.push(std::move(e));
  }

  void fuse(int p) {
    const auto consumers = strategies::fuse_into_all_consumers(ws_, p);
    // Reprice the fused consumers, their producers, and p if it survives.
    push(p);
    for (int c : consumers) {
      push(c);
      for (int q : ws_.producer_groups(c)) push(q);
    }
  }

  const Graph& g_;
  const DeviceSpec& d_;
  DeviceSpec prio_d_;
  WorkState ws_;
  std::size_t max_group_size_;  // primitives per group, copies included (max_group_primitives)
  std::priority_queue<Entry> pq_;
  std::vector<int> log_;
};

class XlaStrategy : public Strategy {
 public:
  std::string name() const override { return "xla"; }
  std::string description() const override {
    return "XLA priority fusion: producer into all consumers or none, 1 us launches, <= 96 operands+outputs";
  }
  std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec& d, const SearchOptions& o) override {
    return PriorityFusion(g, d, o.max_group_size).run();
  }
};
}  // namespace

namespace strategies {

std::vector<int> fuse_into_all_consumers(WorkState& ws, int p) {
  const auto consumers = ws.consumer_groups(p);
  if (consumers.size() == 1) ws.merge(consumers[0], p);
  else ws.duplicate(p, consumers);
  return consumers;
}

std::vector<int> xla_fusion_log(const Graph& g, const DeviceSpec& d, int max_group_size) {
  PriorityFusion f(g, d, max_group_size);
  f.run();
  return f.log();
}

void replay_xla_fusion(WorkState& ws, const std::vector<int>& log) {
  for (int p : log) fuse_into_all_consumers(ws, p);
}

}  // namespace strategies

std::unique_ptr<Strategy> make_xla_strategy() { return std::make_unique<XlaStrategy>(); }

}  // namespace fuseplan
