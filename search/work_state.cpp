#include "search/work_state.h"

#include <algorithm>
#include <queue>
#include <set>

#include "costmodel/group.h"
#include "search/pricing.h"
#include "support/error.h"

namespace fuseplan {

namespace {
// Spacing of the initial topological labels: 2^32 leaves room for 32
// midpoint insertions at one place before relabel_all (labels of up to 2^32
// groups fit an uint64_t).
constexpr uint64_t kLabelGap = uint64_t{1} << 32;

// Membership in a short list (group ids, holders, node spans).
template <class Range, class T>
bool has(const Range& v, const T& x) {
  return std::find(std::begin(v), std::end(v), x) != std::end(v);
}
}  // namespace

WorkState::WorkState(const Graph& g, const DeviceSpec& d) : g_(g), d_(d) {
  home_.assign(g.size(), -1);
  copies_.resize(g.size());
  is_source_.resize(g.size());
  for (NodeId n = 0; n < g.size(); ++n) is_source_[n] = g.op_class(n) == OpClass::source;
  for (NodeId n : g.topo_order()) {
    if (g.op_class(n) == OpClass::source) continue;
    const int gid = static_cast<int>(nodes_.size());
    nodes_.push_back({n});
    home_[n] = gid;
    copies_[n] = {gid};
  }
  alive_.assign(nodes_.size(), 1);
  version_.assign(nodes_.size(), 0);
  cost_cache_.resize(nodes_.size());
  cost_version_.assign(nodes_.size(), -1);
  // Groups are created in topological order: that order is a valid labelling.
  label_.resize(nodes_.size());
  prev_.resize(nodes_.size());
  next_.resize(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    label_[i] = (i + 1) * kLabelGap;
    prev_[i] = static_cast<int>(i) - 1;
    next_[i] = i + 1 < nodes_.size() ? static_cast<int>(i) + 1 : -1;
  }
  first_ = nodes_.empty() ? -1 : 0;
  last_ = static_cast<int>(nodes_.size()) - 1;
}

bool WorkState::holds(int gid, NodeId n) const { return has(copies_[n], gid); }

std::vector<int> WorkState::alive_groups() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (alive_[i]) out.push_back(static_cast<int>(i));
  return out;
}

namespace {
std::vector<int> sorted_unique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}
}  // namespace

std::vector<int> WorkState::consumer_groups(int gid) const {
  std::vector<int> out;
  for (NodeId n : nodes_[gid]) {
    if (home_[n] != gid) continue;
    for (const OutEdge& e : g_.out_edges(n))
      for (int k : copies_[e.dst])
        if (k != gid && !holds(k, n)) out.push_back(k);
  }
  return sorted_unique(std::move(out));
}

std::vector<int> WorkState::producer_groups(int gid) const {
  std::vector<int> out;
  for (NodeId n : nodes_[gid])
    for (const InEdge& e : g_.in_edges(n)) {
      const NodeId o = e.src;
      if (is_source_[o] || home_[o] == gid || holds(gid, o)) continue;  // home_: the common case without a copies_ lookup
      out.push_back(home_[o]);
    }
  return sorted_unique(std::move(out));
}

bool WorkState::merge_would_cycle(int a, int b) const {
  FUSEPLAN_ASSERT(a != b && alive_[a] && alive_[b], "merge_would_cycle asks about two alive groups");
  // Acyclic: a path only climbs in label, so only one direction can exist.
  if (!cyclic_) return label_[a] < label_[b] ? path_via_third(a, b) : path_via_third(b, a);
  return path_via_third(a, b) || path_via_third(b, a);
}

bool WorkState::on_cycle(int gid) const { return cyclic_ && path_via_third(gid, gid); }

bool WorkState::path_via_third(int from, int to) const {
  // Acyclic: a group labelled above `to` reaches only groups labelled above
  // it, never `to`; not explored. Cyclic: every group reachable is.
  const bool prune = !cyclic_;
  const uint64_t limit = label_[to];
  // Epoch-stamped marks: no per-call clearing of an array of all groups.
  visit_mark_.resize(nodes_.size(), 0);
  const unsigned epoch = ++visit_epoch_;
  auto seen = [&](int x) { return visit_mark_[x] == epoch; };
  std::vector<int> stack;
  visit_mark_[from] = epoch;
  for (int x : consumer_groups(from))
    if (x != to) stack.push_back(x);
  while (!stack.empty()) {
    const int x = stack.back();
    stack.pop_back();
    if (seen(x)) continue;
    visit_mark_[x] = epoch;
    if (prune && label_[x] > limit) continue;
    for (int y : consumer_groups(x)) {
      if (y == to) return true;
      if (!seen(y)) stack.push_back(y);
    }
  }
  return false;
}

void WorkState::link_after(int gid, int after) {
  const int nx = next_[after];
  prev_[gid] = after;
  next_[gid] = nx;
  next_[after] = gid;
  if (nx >= 0) prev_[nx] = gid;
  else last_ = gid;
  if (nx < 0) {
    label_[gid] = label_[after] + kLabelGap;
  } else if (label_[nx] - label_[after] >= 2) {
    label_[gid] = label_[after] + (label_[nx] - label_[after]) / 2;
  } else {
    relabel_all();
  }
}

void WorkState::link_before(int gid, int before) {
  if (prev_[before] >= 0) return link_after(gid, prev_[before]);
  prev_[gid] = -1;
  next_[gid] = before;
  prev_[before] = gid;
  first_ = gid;
  if (label_[before] >= 2) label_[gid] = label_[before] / 2;
  else relabel_all();
}

void WorkState::unlink(int gid) {
  const int pv = prev_[gid], nx = next_[gid];
  if (pv >= 0) next_[pv] = nx;
  else first_ = nx;
  if (nx >= 0) prev_[nx] = pv;
  else last_ = pv;
  prev_[gid] = next_[gid] = -1;
}

void WorkState::take_slot(int gid, int slot) {
  unlink(gid);
  const int pv = prev_[slot], nx = next_[slot];
  prev_[gid] = pv;
  next_[gid] = nx;
  if (pv >= 0) next_[pv] = gid;
  else first_ = gid;
  if (nx >= 0) prev_[nx] = gid;
  else last_ = gid;
  prev_[slot] = next_[slot] = -1;
  label_[gid] = label_[slot];
}

void WorkState::relabel_all() {
  uint64_t l = 0;
  for (int x = first_; x >= 0; x = next_[x]) label_[x] = l += kLabelGap;
}

void WorkState::restore_order(std::span<const int> changed) {
  pending_.insert(pending_.end(), changed.begin(), changed.end());
  // Edges that go down in label; only edges of changed groups can.
  int lo = -1, hi = -1;
  auto widen = [&](int x) {
    if (lo < 0 || label_[x] < label_[lo]) lo = x;
    if (hi < 0 || label_[x] > label_[hi]) hi = x;
  };
  for (int gid : pending_) {
    if (!alive_[gid]) continue;
    for (int p : producer_groups(gid))
      if (label_[p] > label_[gid]) widen(p), widen(gid);
    for (int c : consumer_groups(gid))
      if (label_[c] < label_[gid]) widen(c), widen(gid);
  }
  if (lo < 0) {
    pending_.clear();
    cyclic_ = false;
    return;
  }
  // The groups labelled lo..hi, sorted topologically among themselves (Kahn;
  // ready groups by their old label). Edges leaving the window already go
  // up: one from below lo or to above hi cannot go down, or lo/hi would be wider.
  std::vector<int> run;
  for (int x = lo;; x = next_[x]) {
    run.push_back(x);
    if (x == hi) break;
  }
  visit_mark_.resize(nodes_.size(), 0);
  const unsigned epoch = ++visit_epoch_;
  for (int x : run) visit_mark_[x] = epoch;
  std::vector<std::vector<int>> succ(run.size());
  std::vector<int> pos(run.size()), indeg(run.size(), 0);
  std::vector<std::pair<uint64_t, std::size_t>> at;  // label -> index in run
  for (std::size_t i = 0; i < run.size(); ++i) at.emplace_back(label_[run[i]], i);
  auto index_of = [&](int x) {
    return std::lower_bound(at.begin(), at.end(), std::pair<uint64_t, std::size_t>(label_[x], 0))->second;
  };
  for (std::size_t i = 0; i < run.size(); ++i)
    for (int c : consumer_groups(run[i]))
      if (visit_mark_[c] == epoch) {
        const std::size_t j = index_of(c);
        succ[i].push_back(static_cast<int>(j));
        indeg[j]++;
      }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;  // run is in label order
  for (std::size_t i = 0; i < run.size(); ++i)
    if (indeg[i] == 0) ready.push(i);
  std::vector<int> sorted;
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    sorted.push_back(run[i]);
    for (int j : succ[i])
      if (--indeg[j] == 0) ready.push(static_cast<std::size_t>(j));
  }
  if (sorted.size() != run.size()) {
    cyclic_ = true;  // pending_ stays: sorted again after the next change
    return;
  }
  // The window's labels, ascending, handed out in the new order; relink.
  const int before = prev_[run.front()], after = next_[run.back()];
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const int x = sorted[i];
    label_[x] = at[i].first;
    prev_[x] = i == 0 ? before : sorted[i - 1];
    next_[x] = i + 1 == sorted.size() ? after : sorted[i + 1];
  }
  if (before >= 0) next_[before] = sorted.front();
  else first_ = sorted.front();
  if (after >= 0) prev_[after] = sorted.back();
  else last_ = sorted.back();
  pending_.clear();
  cyclic_ = false;
}

bool WorkState::holds_with(int gid, NodeId n, std::span<const int> merged, const Overlay& ov) const {
  if (has(merged, gid)) {
    for (int m : merged)
      if (holds(m, n) || (has(ov.targets, m) && has(ov.nodes, n))) return true;
    return false;
  }
  return holds(gid, n) || (has(ov.targets, gid) && has(ov.nodes, n));
}

bool WorkState::materialised(NodeId n, std::span<const int> merged, const Overlay& ov) const {
  if (g_.node(n).is_graph_output) return true;
  for (const OutEdge& e : g_.out_edges(n)) {  // a repeated consumer answers the same
    const NodeId c = e.dst;
    for (int k : copies_[c])
      if (!holds_with(k, n, merged, ov)) return true;
    if (has(ov.nodes, c))
      for (int t : ov.targets)
        if (!holds_with(t, n, merged, ov)) return true;
  }
  return false;
}

const Group& WorkState::build(std::span<const int> gids, const Overlay& ov) const {
  Group& grp = scratch_;
  grp.nodes.clear();
  grp.materialised.clear();
  grp.duplicated.clear();
  grp.branches.clear();
  for (int gid : gids) grp.nodes.insert(grp.nodes.end(), nodes_[gid].begin(), nodes_[gid].end());
  for (int t : ov.targets)
    if (has(gids, t)) grp.nodes.insert(grp.nodes.end(), ov.nodes.begin(), ov.nodes.end());
  std::sort(grp.nodes.begin(), grp.nodes.end(),
            [&](NodeId a, NodeId b) { return g_.topo_index(a) < g_.topo_index(b); });
  grp.nodes.erase(std::unique(grp.nodes.begin(), grp.nodes.end()), grp.nodes.end());
  for (NodeId n : grp.nodes) {
    if (has(gids, home_[n])) {
      if (materialised(n, gids, ov)) grp.materialised.push_back(n);
    } else {
      grp.duplicated.push_back(n);
    }
  }
  assign_kind(g_, grp);
  return grp;
}

const GroupCost& WorkState::cost_of(int gid) {
  if (cost_version_[gid] != version_[gid]) {
    const int ids[1] = {gid};
    cost_cache_[gid] = cost(g_, build(ids, Overlay{}), d_);
    cost_version_[gid] = version_[gid];
  }
  return cost_cache_[gid];
}

GroupCost WorkState::cost_of_merge(std::span<const int> gids) const { return cost(g_, build(gids, Overlay{}), d_); }

bool WorkState::still_needed_after_duplicate(int p, std::span<const int> consumers) const {
  std::vector<NodeId> mine;
  for (NodeId n : nodes_[p])
    if (home_[n] == p) mine.push_back(n);
  const Overlay ov{consumers, mine};
  const int ids[1] = {p};
  for (NodeId n : mine)
    if (materialised(n, ids, ov)) return true;
  return false;
}

std::vector<GroupCost> WorkState::cost_of_duplicate(int p, std::span<const int> consumers, GroupCost* p_after) const {
  std::vector<NodeId> mine;
  for (NodeId n : nodes_[p])
    if (home_[n] == p) mine.push_back(n);
  const Overlay ov{consumers, mine};
  std::vector<GroupCost> out;
  for (int c : consumers) {
    const int ids[1] = {c};
    out.push_back(cost(g_, build(ids, ov), d_));
  }
  if (p_after) {
    if (still_needed_after_duplicate(p, consumers)) {
      const int ids[1] = {p};
      *p_after = cost(g_, build(ids, ov), d_);
    } else {
      *p_after = GroupCost{};
    }
  }
  return out;
}

void WorkState::touch(int gid) { version_[gid]++; }

bool WorkState::materialised_now(NodeId n) const {
  const int ids[1] = {home_[n]};
  return materialised(n, ids, Overlay{});
}

void WorkState::watch(std::span<const NodeId> moved) {
  watched_.clear();
  for (NodeId n : moved) {
    watched_.emplace_back(n, 0);
    for (NodeId o : g_.operands(n))
      if (!is_source_[o]) watched_.emplace_back(o, 0);
  }
  std::sort(watched_.begin(), watched_.end());
  watched_.erase(std::unique(watched_.begin(), watched_.end()), watched_.end());
  for (auto& [n, flag] : watched_) flag = materialised_now(n);
}

void WorkState::touch_flipped() {
  // A group's cached price depends on its own node set (its version) and on
  // which of its primitives are materialised, which depends on the groups
  // holding their readers: a flip is the only way another group's change
  // reaches this group's price.
  for (const auto& [n, flag] : watched_) {
    if (static_cast<char>(materialised_now(n)) == flag) continue;
    touch(home_[n]);
    repriced_.push_back(home_[n]);
  }
  watched_.clear();
}

std::vector<int> WorkState::take_repriced() {
  std::vector<int> out = sorted_unique(std::move(repriced_));
  repriced_.clear();
  return out;
}

int WorkState::merge(int a, int b) {
  FUSEPLAN_ASSERT(a != b && alive_[a] && alive_[b], "merge joins two alive groups");
  watch(nodes_[b]);
  for (NodeId n : nodes_[b]) {
    auto& cp = copies_[n];
    cp.erase(std::remove(cp.begin(), cp.end(), b), cp.end());
    if (!has(cp, a)) cp.push_back(a);
    if (home_[n] == b) home_[n] = a;
    nodes_[a].push_back(n);
  }
  auto& v = nodes_[a];
  std::sort(v.begin(), v.end(), [&](NodeId x, NodeId y) { return g_.topo_index(x) < g_.topo_index(y); });
  v.erase(std::unique(v.begin(), v.end()), v.end());
  nodes_[b].clear();
  alive_[b] = 0;
  touch(a);
  touch(b);
  touch_flipped();
  // The union sits at a's or at b's place in the label order, whichever
  // leaves the narrower window of edges going down to re-sort.
  auto window = [&](uint64_t at, const std::vector<int>& preds, const std::vector<int>& succs) {
    uint64_t lo = at, hi = at;
    for (int p : preds) hi = std::max(hi, label_[p]);
    for (int c : succs) lo = std::min(lo, label_[c]);
    return hi - lo;
  };
  const std::vector<int> preds = producer_groups(a), succs = consumer_groups(a);
  if (window(label_[b], preds, succs) < window(label_[a], preds, succs)) take_slot(a, b);
  else unlink(b);
  const int changed[1] = {a};
  restore_order(changed);
  return a;
}

void WorkState::duplicate(int p, std::span<const int> consumers) {
  FUSEPLAN_ASSERT(alive_[p], "duplicate copies an alive group");
  for (int c : consumers) FUSEPLAN_ASSERT(c != p && alive_[c], "duplicate copies into other alive groups");
  const bool keep = still_needed_after_duplicate(p, consumers);
  std::vector<NodeId> mine;
  for (NodeId n : nodes_[p])
    if (home_[n] == p) mine.push_back(n);
  watch(mine);
  for (int c : consumers) {
    for (NodeId n : mine) {
      if (holds(c, n)) continue;
      copies_[n].push_back(c);
      nodes_[c].push_back(n);
    }
    auto& v = nodes_[c];
    std::sort(v.begin(), v.end(), [&](NodeId x, NodeId y) { return g_.topo_index(x) < g_.topo_index(y); });
    touch(c);
  }
  if (!keep) {
    // p disappears; each of its nodes is now homed in the first consumer holding it.
    for (NodeId n : nodes_[p]) {
      auto& cp = copies_[n];
      cp.erase(std::remove(cp.begin(), cp.end(), p), cp.end());
      if (home_[n] == p) home_[n] = cp.front();
    }
    nodes_[p].clear();
    alive_[p] = 0;
    unlink(p);
  }
  touch(p);
  touch_flipped();
  std::vector<int> changed(consumers.begin(), consumers.end());
  if (keep) changed.push_back(p);
  restore_order(changed);
}

int WorkState::split_off(NodeId n) {
  const int from = home_[n];
  FUSEPLAN_ASSERT(from >= 0 && copies_[n].size() == 1 && nodes_[from].size() >= 2,
                  "split_off moves a primitive held by its home group alone, which keeps others");
  const NodeId moved[1] = {n};
  watch(moved);
  auto& v = nodes_[from];
  v.erase(std::remove(v.begin(), v.end(), n), v.end());
  const int gid = static_cast<int>(nodes_.size());
  nodes_.push_back({n});
  alive_.push_back(1);
  version_.push_back(0);
  cost_cache_.emplace_back();
  cost_version_.push_back(-1);
  copies_[n] = {gid};
  home_[n] = gid;
  touch(from);
  touch_flipped();
  // Beside `from` in the label order: after it when n reads a value it holds.
  label_.push_back(0);
  prev_.push_back(-1);
  next_.push_back(-1);
  bool reads_from = false;
  for (NodeId o : g_.operands(n)) reads_from = reads_from || holds(from, o);
  if (reads_from) link_after(gid, from);
  else link_before(gid, from);
  const int changed[2] = {from, gid};
  restore_order(changed);
  return gid;
}

void WorkState::undo_split_off(int from, int s, const GroupCost& from_price) {
  merge(from, s);
  cost_cache_[from] = from_price;
  cost_version_[from] = version_[from];
}

std::vector<std::vector<NodeId>> WorkState::partition() const {
  std::vector<std::vector<NodeId>> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (alive_[i] && !nodes_[i].empty()) out.push_back(nodes_[i]);
  return out;
}

}  // namespace fuseplan
