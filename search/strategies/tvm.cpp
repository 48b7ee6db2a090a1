// `tvm`: TVM's FuseOps pass (src/relay/transforms/fuse_ops.cc), replayed on
// fuseplan primitives. Each primitive gets a TVM op pattern
//   elemwise < broadcast < injective < reduce < out-elemwise-fusable < opaque
// and each node tries to fuse into its immediate post-dominator when every
// path between them passes only ops the pattern rules accept:
//   - out-elemwise-fusable (contraction, pooling), phase 0: into its
//     post-dominator when the relation is elementwise and the path holds
//     only elemwise/broadcast ops (conv + bias + bn + relu);
//   - elemwise/broadcast: into an injective or reduce post-dominator (the
//     sink may also be a conv group), intermediate ops at most injective;
//   - injective, phase 1: when every path is injective;
//   - reduce: never starts a fusion (it only accepts prologues).
// A group holds at most 256 primitives (TVM's max_fuse_depth), fewer when
// the compile-time budget or --max-group-size says so (max_group_primitives). Each commit is
// also asked of fuseplan's legality (can_merge_vertical + convexity) and
// skipped when illegal there.
#include <algorithm>
#include <unordered_set>

#include "graph/op_traits.h"
#include "search/legality.h"
#include "search/strategies/post_dominator.h"
#include "search/strategies/registry.h"

namespace fuseplan {

namespace {

// TVM's TOpPattern values (graph/op_traits.h TvmPattern): the rules below compare them by order.
enum Pattern { kElemWise = 0, kBroadcast = 1, kInjective = 2, kCommReduce = 3, kOutEWiseFusable = 4, kOpaque = 8 };

constexpr int kMaxFuseDepth = 256;  // TVM relay.FuseOps.max_depth default

// The op-traits table's pattern: pooling is out-elemwise-fusable, the other
// reductions comm-reduce; TVM's transpose and take are injective (fuseplan's
// legality refuses a layout change).
Pattern op_pattern(const Primitive& p) { return static_cast<Pattern>(tvm_pattern(p)); }

class TvmFuser {
 public:
  TvmFuser(const Graph& g, const DeviceSpec& d, int max_group_size)
      : g_(g), d_(d), pd_(strategies::post_dominators(g)), max_size_(static_cast<int>(std::min<std::size_t>(kMaxFuseDepth, max_group_primitives(d, max_group_size)))) {
    const std::size_t n = g.size();
    parent_.resize(n);
    pattern_.assign(n, kOpaque);
    num_nodes_.assign(n, 1);
    members_.resize(n);
    for (NodeId v = 0; v < n; ++v) {
      parent_[v] = v;
      pattern_[v] = op_pattern(g.node(v));
      members_[v] = {v};
    }
    compute_tree_patterns();
  }

  std::vector<std::vector<NodeId>> run() {
    for (int phase = 0; phase < 2; ++phase) fuse_phase(phase);
    std::vector<std::vector<NodeId>> out;
    for (NodeId v : g_.topo_order())
      if (g_.op_class(v) != OpClass::source && root(v) == v) out.push_back(members_[v]);
    return out;
  }

 private:
  // Edge pattern of producer -> consumer: the consumer's pattern, broadcast
  // demoted to elemwise when the operand already has the output's shape.
  Pattern edge_pattern(NodeId p, NodeId c) const {
    Pattern k = op_pattern(g_.node(c));
    if (k == kBroadcast && g_.node(p).out.shape == g_.node(c).out.shape) k = kElemWise;
    return k;
  }

  // TVM's DominatorTree node pattern: the combined edge patterns on the way
  // to the least common post-dominator of all consumers.
  void compute_tree_patterns() {
    tree_pattern_.assign(g_.size(), kElemWise);
    const auto& topo = g_.topo_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      const NodeId v = *it;
      if (g_.op_class(v) == OpClass::source) continue;
      int pat = kElemWise;
      NodeId lca = kNoNode;
      bool first = true;
      for (NodeId c : g_.consumers(v)) {
        if (first) lca = c, first = false;
        else lca = climb(lca, c, pat);
        pat = std::max(pat, static_cast<int>(edge_pattern(v, c)));
      }
      tree_pattern_[v] = static_cast<Pattern>(pat);
    }
  }
  NodeId climb(NodeId a, NodeId b, int& pat) const {
    while (a != b) {
      if (a == kNoNode || b == kNoNode) return kNoNode;
      const int da = pd_.depth[a], db = pd_.depth[b];
      if (da < db) pat = std::max(pat, static_cast<int>(tree_pattern_[b])), b = pd_.ipdom[b];
      else if (db < da) pat = std::max(pat, static_cast<int>(tree_pattern_[a])), a = pd_.ipdom[a];
      else {
        pat = std::max({pat, static_cast<int>(tree_pattern_[a]), static_cast<int>(tree_pattern_[b])});
        a = pd_.ipdom[a], b = pd_.ipdom[b];
      }
    }
    return a;
  }

  NodeId root(NodeId v) {
    while (parent_[v] != v) v = parent_[v] = parent_[parent_[v]];
    return v;
  }

  template <typename F>
  bool check_path(NodeId src, NodeId sink, F fcond) {
    std::unordered_set<NodeId> seen;
    std::vector<NodeId> stack(g_.consumers(src));
    while (!stack.empty()) {
      const NodeId v = stack.back();
      stack.pop_back();
      if (!seen.insert(v).second) continue;
      if (!fcond(pattern_[root(v)], v == sink)) return false;
      if (v == sink) continue;
      if (g_.node(v).is_graph_output && v != sink) return false;  // an output escapes: no path closes
      for (NodeId c : g_.consumers(v)) stack.push_back(c);
    }
    return true;
  }

  /// Nodes strictly before `sink` on the paths from src (src included).
  std::vector<NodeId> path_nodes(NodeId src, NodeId sink) const {
    std::unordered_set<NodeId> seen{src};
    std::vector<NodeId> out{src}, stack(g_.consumers(src));
    while (!stack.empty()) {
      const NodeId v = stack.back();
      stack.pop_back();
      if (v == sink || !seen.insert(v).second) continue;
      out.push_back(v);
      for (NodeId c : g_.consumers(v)) stack.push_back(c);
    }
    return out;
  }

  /// TVM's CommitFuse, after asking fuseplan's legality about the merged group.
  bool commit(NodeId src, NodeId sink) {
    std::vector<NodeId> roots;
    int count = num_nodes_[root(sink)];
    for (NodeId v : path_nodes(src, sink)) {
      const NodeId r = root(v);
      if (r == root(sink) || std::find(roots.begin(), roots.end(), r) != roots.end()) continue;
      roots.push_back(r);
      count += num_nodes_[r];
    }
    if (count > max_size_) return false;
    std::vector<NodeId> prod;
    for (NodeId r : roots) prod.insert(prod.end(), members_[r].begin(), members_[r].end());
    const auto& cons = members_[root(sink)];
    if (!can_merge_vertical(g_, prod, cons, d_).ok()) return false;
    std::vector<NodeId> all = prod;
    all.insert(all.end(), cons.begin(), cons.end());
    if (g_.has_path_outside(all, all)) return false;  // not convex
    const NodeId target = root(sink);
    for (NodeId r : roots) {
      parent_[r] = target;
      num_nodes_[target] += num_nodes_[r];
      pattern_[target] = std::max(pattern_[target], pattern_[r]);
      members_[target].insert(members_[target].end(), members_[r].begin(), members_[r].end());
      members_[r].clear();
    }
    std::sort(members_[target].begin(), members_[target].end(),
              [&](NodeId a, NodeId b) { return g_.topo_index(a) < g_.topo_index(b); });
    return true;
  }

  void fuse_phase(int phase) {
    for (NodeId v : g_.topo_order()) {
      if (g_.op_class(v) == OpClass::source) continue;
      const Pattern self = pattern_[v];  // TVM reads the node's own group record, not its root
      const NodeId dom = pd_.ipdom[v];
      if (self == kOpaque || dom == kNoNode || root(v) == root(dom)) continue;
      if (self == kOutEWiseFusable) {
        if (phase != 0 || tree_pattern_[v] != kElemWise) continue;
        if (check_path(v, dom, [](int k, bool) { return k <= kBroadcast; })) commit(v, dom);
      } else if (self <= kBroadcast) {
        if (!(tree_pattern_[v] <= kInjective || tree_pattern_[v] == kCommReduce)) continue;
        auto fcond = [](int k, bool is_sink) {
          return is_sink ? (k <= kInjective || k == kCommReduce || k == kOutEWiseFusable) : k <= kInjective;
        };
        if (check_path(v, dom, fcond)) commit(v, dom);
      } else if (self == kInjective) {
        if (phase != 1) continue;
        if (check_path(v, dom, [](int k, bool) { return k <= kInjective; })) commit(v, dom);
      }
      // kCommReduce: a reduction never starts a fusion.
    }
  }

  const Graph& g_;
  const DeviceSpec& d_;
  strategies::PostDominators pd_;
  int max_size_;  // primitives per group: min(max_fuse_depth, max_group_primitives)
  std::vector<NodeId> parent_;
  std::vector<Pattern> pattern_;
  std::vector<Pattern> tree_pattern_;
  std::vector<int> num_nodes_;
  std::vector<std::vector<NodeId>> members_;
};

class TvmStrategy : public Strategy {
 public:
  std::string name() const override { return "tvm"; }
  std::string description() const override {
    return "TVM FuseOps: op patterns + post-dominator-tree fusion, <= 256 primitives per group";
  }
  std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec& d, const SearchOptions& o) override {
    return TvmFuser(g, d, o.max_group_size).run();
  }
};
}  // namespace

std::unique_ptr<Strategy> make_tvm_strategy() { return std::make_unique<TvmStrategy>(); }

}  // namespace fuseplan
