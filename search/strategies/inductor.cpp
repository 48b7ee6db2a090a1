// `inductor`: TorchInductor's lowering + scheduler (torch/_inductor/ir.py,
// graph.py, scheduler.py) on fuseplan primitives.
// 1. Lowering: pointwise primitives (elementwise, broadcast, reshape,
//    injective) are inlined into their users (duplicated into each) unless
//    realized: a graph output, an operand that cannot be inlined (extern
//    kernels — contractions — and opaque ops read buffers), or a producer with
//    several users whose inner function reads more than 4 buffers
//    (realize_reads_threshold) or has more than 30 ops
//    (realize_opcount_threshold); any pointwise that has accumulated more than
//    8 reads is realized too (realize_acc_reads_threshold).
// 2. Scheduler fuse_nodes: candidate pairs of kernels that share a buffer,
//    vertical (one reads what the other writes) or horizontal (both read it),
//    ranked by bytes shared (score_fusion_memory) then proximity, fused
//    greedily while legal, acyclic and at most 64 primitives per kernel
//    (max_fusion_size; fewer when the compile-time budget or --max-group-size
//    says so, max_group_primitives, which bounds the
//    inlining too); up to 10 rounds. Contractions stay extern kernels
//    (cuBLAS/cuDNN, no max-autotune templates): nothing fuses with them.
#include <algorithm>
#include <map>
#include <set>

#include "search/legality.h"
#include "search/strategies/inductor_rules.h"
#include "search/strategies/registry.h"
#include "search/work_state.h"

namespace fuseplan {

namespace {

constexpr std::size_t kMaxFusionSize = 64;     // inductor config.max_fusion_size
constexpr int kFuseRounds = 10;                // Scheduler.fuse_nodes: range(10)
constexpr std::size_t kPairwiseAttempts = 64;  // config.max_fusion_buffer_group_pairwise_attempts

bool is_extern_or_fallback(const Primitive& p) {
  return p.op_class == OpClass::contraction || p.op_class == OpClass::opaque || p.op_class == OpClass::scatter ||
         p.op_class == OpClass::scan;
}

struct Pair {
  double bytes = 0;
  std::size_t distance = 0;
  int a = -1, b = -1;
};

class InductorScheduler {
 public:
  InductorScheduler(const Graph& g, const DeviceSpec& d, int max_group_size)
      : g_(g), d_(d), ws_(g, d), max_size_(std::min(kMaxFusionSize, max_group_primitives(d, max_group_size))) {}

  std::vector<std::vector<NodeId>> run() {
    lower();
    for (int round = 0; round < kFuseRounds; ++round)
      if (fuse_round() == 0) break;
    return ws_.partition();
  }

 private:
  /// Inlines every unrealized pointwise primitive into its users, consumers first.
  void lower() {
    const auto realized = strategies::inductor_realized(g_);
    const auto& topo = g_.topo_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      const NodeId n = *it;
      if (g_.op_class(n) == OpClass::source || realized[n]) continue;
      const int p = ws_.home(n);
      const auto users = ws_.consumer_groups(p);
      if (users.empty()) continue;
      bool legal = true;  // the kernels that would inline n must accept it, within the size cap
      for (int u : users)
        legal = legal && ws_.nodes(u).size() + ws_.nodes(p).size() <= max_size_ && (users.size() == 1 ? can_merge_vertical(g_, ws_.nodes(p), ws_.nodes(u), d_)
                                            : can_duplicate(g_, ws_.nodes(p), ws_.nodes(u), d_))
                             .ok();
      if (!legal) continue;  // realized after all: its own kernel
      if (users.size() == 1) ws_.merge(users[0], p);
      else ws_.duplicate(p, users);
    }
  }

  bool fusable_kernel(int gid) const {
    for (NodeId n : ws_.nodes(gid))
      if (is_extern_or_fallback(g_.node(n))) return false;
    return true;
  }

  /// Buffers a kernel reads from memory and writes.
  std::set<NodeId> reads(int gid) const {
    std::set<NodeId> out;
    for (NodeId n : ws_.nodes(gid))
      for (NodeId o : g_.operands(n))
        if (!ws_.holds(gid, o)) out.insert(o);
    return out;
  }
  std::set<NodeId> writes(int gid) const {
    std::set<NodeId> out;
    for (NodeId n : ws_.nodes(gid))
      if (ws_.home(n) == gid) out.insert(n);
    return out;
  }
  double buffer_bytes(NodeId n) const { return g_.node(n).out.known ? static_cast<double>(g_.node(n).out.bytes()) : 0; }

  std::size_t first_topo(int gid) const { return g_.topo_index(ws_.nodes(gid).front()); }

  std::vector<Pair> candidates() {
    std::vector<int> alive;
    for (int gid : ws_.alive_groups())
      if (fusable_kernel(gid)) alive.push_back(gid);
    std::sort(alive.begin(), alive.end(), [&](int a, int b) { return first_topo(a) < first_topo(b); });
    std::map<NodeId, std::vector<int>> users;  // buffer -> kernels reading or writing it, in node order
    std::map<int, std::set<NodeId>> rw;
    for (int gid : alive) {
      auto r = reads(gid), w = writes(gid);
      r.insert(w.begin(), w.end());
      for (NodeId b : r) users[b].push_back(gid);
      rw[gid] = std::move(r);
    }
    std::set<std::pair<int, int>> seen;
    std::vector<Pair> out;
    for (auto& [buf, ks] : users)
      for (std::size_t i = 0; i < ks.size(); ++i)
        for (std::size_t j = i + 1; j < ks.size() && j <= i + kPairwiseAttempts; ++j) {
          const int a = std::min(ks[i], ks[j]), b = std::max(ks[i], ks[j]);
          if (!seen.insert({a, b}).second) continue;
          Pair p{0, 0, a, b};
          for (NodeId x : rw[a])
            if (rw[b].count(x)) p.bytes += buffer_bytes(x);
          const std::size_t fa = first_topo(a), fb = first_topo(b);
          p.distance = fa > fb ? fa - fb : fb - fa;
          out.push_back(p);
        }
    std::sort(out.begin(), out.end(), [](const Pair& x, const Pair& y) {
      if (x.bytes != y.bytes) return x.bytes > y.bytes;
      if (x.distance != y.distance) return x.distance < y.distance;
      return std::pair(x.a, x.b) < std::pair(y.a, y.b);
    });
    return out;
  }

  bool can_fuse(int a, int b) {
    if (ws_.nodes(a).size() + ws_.nodes(b).size() > max_size_) return false;
    if (!fusable_kernel(a) || !fusable_kernel(b)) return false;
    const auto ca = ws_.consumer_groups(a), cb = ws_.consumer_groups(b);
    const bool a_to_b = std::find(ca.begin(), ca.end(), b) != ca.end();
    const bool b_to_a = std::find(cb.begin(), cb.end(), a) != cb.end();
    if (a_to_b && b_to_a) return false;
    if (ws_.merge_would_cycle(a, b)) return false;
    if (a_to_b) return can_merge_vertical(g_, ws_.nodes(a), ws_.nodes(b), d_).ok();
    if (b_to_a) return can_merge_vertical(g_, ws_.nodes(b), ws_.nodes(a), d_).ok();
    return can_merge_horizontal(g_, ws_.nodes(a), ws_.nodes(b), /*independent=*/true, &d_).ok();
  }

  int fuse_round() {
    int fused = 0;
    std::map<int, int> now;  // kernel id -> the kernel it was fused into
    auto current = [&](int x) {
      while (now.count(x)) x = now[x];
      return x;
    };
    for (const Pair& p : candidates()) {
      const int a = current(p.a), b = current(p.b);
      if (a == b || !ws_.alive(a) || !ws_.alive(b) || !can_fuse(a, b)) continue;
      ws_.merge(a, b);
      now[b] = a;
      ++fused;
    }
    return fused;
  }

  const Graph& g_;
  const DeviceSpec& d_;
  WorkState ws_;
  std::size_t max_size_;  // primitives per kernel: min(max_fusion_size, max_group_primitives)
};

class InductorStrategy : public Strategy {
 public:
  std::string name() const override { return "inductor"; }
  std::string description() const override {
    return "TorchInductor: inline pointwise (realize >4 reads / >30 ops), fuse pairs by bytes shared, <= 64 per kernel";
  }
  std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec& d, const SearchOptions& o) override {
    return InductorScheduler(g, d, o.max_group_size).run();
  }
};
}  // namespace

std::unique_ptr<Strategy> make_inductor_strategy() { return std::make_unique<InductorStrategy>(); }

}  // namespace fuseplan
