// Mutable partition used by iterative strategies: groups of primitives with
// duplicated copies, merged and split step by step, with cached costs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "costmodel/cost.h"
#include "costmodel/device.h"
#include "graph/graph.h"

namespace fuseplan {

class WorkState {
 public:
  /// Starts unfused: one group per non-source primitive.
  WorkState(const Graph& g, const DeviceSpec& d);

  const Graph& graph() const { return g_; }
  const DeviceSpec& device() const { return d_; }

  bool alive(int gid) const { return alive_[gid]; }
  int version(int gid) const { return version_[gid]; }
  int home(NodeId n) const { return home_[n]; }
  const std::vector<NodeId>& nodes(int gid) const { return nodes_[gid]; }
  bool holds(int gid, NodeId n) const;
  /// Groups holding a copy of n (its home group first, then duplicates); all alive.
  std::span<const int> holders(NodeId n) const { return {copies_[n].data(), copies_[n].size()}; }
  std::vector<int> alive_groups() const;
  std::size_t num_groups() const { return nodes_.size(); }

  /// Groups that read a value gid writes (ascending).
  std::vector<int> consumer_groups(int gid) const;
  /// Groups whose written values gid reads (ascending).
  std::vector<int> producer_groups(int gid) const;

  /// Whether merging a and b (alive, distinct) would close a cycle in the
  /// group DAG: a path from one to the other through a third group (edges:
  /// a value one group writes and another reads from memory; a direct edge
  /// between a and b is no cycle). Exact, with duplicated copies and
  /// disconnected (horizontal) groups: node-level legality
  /// (can_merge_vertical's path check) misses a path through a group whose
  /// node reached from one side and node reaching the other are not
  /// connected inside it. The walk visits only groups whose topological
  /// label lies between the two (see `label_`), so a merge of neighbours
  /// costs about the groups between them. The one cycle check of every
  /// strategy that works on a WorkState.
  bool merge_would_cycle(int a, int b) const;
  /// Whether a path leaves gid and comes back to it through other groups
  /// (the partition is cyclic there). O(1) while the partition is acyclic.
  bool on_cycle(int gid) const;
  /// Whether the group DAG has a cycle (a merge forced past
  /// merge_would_cycle, or a move of several primitives not finished yet).
  bool cyclic() const { return cyclic_; }

  /// Cost of the group as it stands (cached per version).
  const GroupCost& cost_of(int gid);
  /// Cost of the union of groups `gids` as one kernel (what merge() would give).
  GroupCost cost_of_merge(std::span<const int> gids) const;
  /// Costs of each consumer group after recomputing producer group `p`
  /// inside it; *p_after = p's cost afterwards (zero when nothing reads it).
  std::vector<GroupCost> cost_of_duplicate(int p, std::span<const int> consumers, GroupCost* p_after) const;
  /// Whether p would still have readers (or graph outputs) after being copied into `consumers`.
  bool still_needed_after_duplicate(int p, std::span<const int> consumers) const;

  /// Merges `b` into `a` (a keeps its id); returns a.
  int merge(int a, int b);
  /// Copies p's home nodes into each consumer group; removes p if nothing reads it any more.
  void duplicate(int p, std::span<const int> consumers);
  /// Moves node n (homed in its group, held nowhere else) out into a new group; returns its id.
  int split_off(NodeId n);
  /// Undoes `s = split_off(n)` (nothing changed since): merges s back into
  /// `from`, which leaves nodes, holders and homes exactly as before the
  /// split, so `from_price`, its cost_of() taken just before the split, is
  /// its price again and is cached instead of being recomputed.
  void undo_split_off(int from, int s, const GroupCost& from_price);

  /// Node sets of the alive groups.
  std::vector<std::vector<NodeId>> partition() const;

  /// Groups whose price changed as a side effect of merge/duplicate/split_off
  /// since the last call (a primitive they write started or stopped being
  /// materialised because its readers moved between groups); their versions
  /// were bumped. Ascending, no repeats; clears the list.
  std::vector<int> take_repriced();

 private:
  /// Pending copies of `nodes` into each group of `targets` (a hypothetical duplication).
  struct Overlay {
    std::span<const int> targets;
    std::span<const NodeId> nodes;
  };
  bool holds_with(int gid, NodeId n, std::span<const int> merged, const Overlay& ov) const;
  /// The union of `gids` (with the overlay's copies) as one Group, built in
  /// scratch_: valid until the next build() (the callers price it at once;
  /// reusing the Group keeps its vectors' capacity across ~10^5 pricings).
  const Group& build(std::span<const int> gids, const Overlay& ov) const;
  bool materialised(NodeId n, std::span<const int> merged, const Overlay& ov) const;
  /// A path from group `from` to group `to` through at least one other group
  /// (from == to: a cycle through gid); see merge_would_cycle.
  bool path_via_third(int from, int to) const;
  // The topological labels (label_): list maintenance and repair.
  void link_after(int gid, int after);
  void link_before(int gid, int before);
  void unlink(int gid);
  /// Puts group `gid` where `slot` is in the label order (with its label)
  /// and takes `slot` out of the order.
  void take_slot(int gid, int slot);
  void relabel_all();
  /// Re-establishes "every edge goes to a higher label" after the edges of
  /// `changed` groups changed: the groups between the lowest and the highest
  /// label of an edge that now goes down are sorted topologically among
  /// themselves (the labels outside keep every other edge valid). Sets
  /// cyclic_ when that sort finds a cycle; the groups stay pending and are
  /// sorted again after the next change.
  void restore_order(std::span<const int> changed);
  void touch(int gid);
  /// Whether n, as its home group stands, is written to memory.
  bool materialised_now(NodeId n) const;
  /// The primitives whose materialisation can change when `moved` change
  /// holders (themselves and their non-source operands), with their flags now.
  void watch(std::span<const NodeId> moved);
  /// Bumps the home group of every watched primitive whose flag flipped.
  void touch_flipped();

  const Graph& g_;
  const DeviceSpec& d_;
  std::vector<std::vector<NodeId>> nodes_;   // per group, topological order
  std::vector<char> alive_;
  std::vector<int> version_;
  std::vector<char> is_source_;              // node -> op_class == source (read per edge)
  std::vector<int> home_;                    // node -> group computing and writing it
  // node -> all groups holding it (home first); inline up to two holders, so
  // the common lookup (one holder) reads the node's slot and no heap block.
  std::vector<boost::container::small_vector<int, 2>> copies_;
  std::vector<GroupCost> cost_cache_;
  std::vector<int> cost_version_;
  std::vector<std::pair<NodeId, char>> watched_;  // watch() .. touch_flipped()
  std::vector<int> repriced_;
  mutable std::vector<unsigned> visit_mark_;  // path_via_third's marks (== visit_epoch_: seen)
  mutable unsigned visit_epoch_ = 0;
  // Topological labels of the group DAG: while cyclic_ is false, every edge
  // x -> y of the group DAG has label_[x] < label_[y] (a dynamic topological
  // order: labels start at the primitives' topological order, spaced
  // kLabelGap apart; a new group takes the midpoint beside the group it
  // leaves, and a change that makes an edge go down re-sorts only the groups
  // whose labels lie between). Alive groups form a list in label order
  // (prev_/next_, -1 at the ends). A walk towards group t never needs a
  // group labelled above t: that is what keeps merge_would_cycle local.
  std::vector<uint64_t> label_;
  std::vector<int> prev_, next_;
  int first_ = -1, last_ = -1;
  std::vector<int> pending_;  // groups whose edges changed since the labels were last valid
  bool cyclic_ = false;
  mutable Group scratch_;  // build()'s result
};

}  // namespace fuseplan
