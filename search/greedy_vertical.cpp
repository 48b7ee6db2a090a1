#include <algorithm>
#include <cstdint>
#include <optional>
#include <queue>
#include <span>
#include <utility>
#include <vector>

#include "search/gain.h"
#include "search/legality.h"
#include "search/passes.h"

namespace fuseplan {

namespace {

// Declaration order is the tie order of equal savings (Worse): merges first.
enum class CandKind { merge, duplicate_one, duplicate_all };

struct Candidate {
  double delta_us = 0;
  CandKind kind = CandKind::merge;
  int p = -1, c = -1;
  uint32_t stamp_begin = 0, stamp_count = 0;  // (group, version) pairs it was priced at, in VerticalSearch::stamps_
  uint32_t epoch = 0;  // VerticalSearch::epoch_ when it was priced
};

struct Worse {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.delta_us != b.delta_us) return a.delta_us < b.delta_us;
    if (a.kind != b.kind) return a.kind > b.kind;
    if (a.p != b.p) return a.p > b.p;
    return a.c > b.c;
  }
};

// Greedy best-first merging. Invariant: whenever a group changes (merge,
// duplication, or a price change through what it must materialise: the
// state's take_repriced()), every candidate that involves it is priced again
// at once (push_around), so each pair's newest candidate is always in the
// queue and a stale entry (priced at an older version of one of its groups)
// is dropped when it surfaces. A pair's price can still move with groups it
// does not name (a merged group's materialisation depends on where its
// readers are), so the best candidate is priced once more before it is
// applied (gain_now).
class VerticalSearch {
 public:
  VerticalSearch(WorkState& ws, const SearchOptions& o, bool dup)
      : ws_(ws), o_(o), max_size_(max_group_primitives(ws.device(), o.max_group_size)), dup_(dup) {}

  /// `seeds`: the groups around which pairs are priced first; nullptr: every group.
  void run(const std::vector<int>* seeds) {
    // Every pair touching a seed once (a pair of two seeds from its
    // consumer's side), every duplication of a seed or of a seed's producer once.
    const std::vector<int> all = seeds ? std::vector<int>{} : ws_.alive_groups();
    const std::vector<int>& from = seeds ? *seeds : all;
    std::vector<char> is_seed(ws_.num_groups(), 0);
    for (int gid : from) is_seed[static_cast<std::size_t>(gid)] = 1;
    std::vector<int> dup_of;
    for (int gid : from) {
      for (int p : ws_.producer_groups(gid)) {
        push_pair(p, gid);
        if (seeds) dup_of.push_back(p);
      }
      if (seeds)
        for (int c : ws_.consumer_groups(gid))
          if (!is_seed[static_cast<std::size_t>(c)]) push_pair(gid, c);
      dup_of.push_back(gid);
    }
    std::sort(dup_of.begin(), dup_of.end());
    dup_of.erase(std::unique(dup_of.begin(), dup_of.end()), dup_of.end());
    for (int gid : dup_of) push_duplicate_all(gid);
    initialising_ = false;
    ws_.take_repriced();  // what changed before this pass is in `seeds`
    while (!pq_.empty()) {
      Candidate cand = pq_.top();
      pq_.pop();
      if (!fresh(cand)) continue;
      // Priced since the last change of the state (same epoch): gain_now()
      // would repeat the same computation on the same state and return
      // delta_us exactly, so it is not asked.
      const std::optional<double> gain = cand.epoch == epoch_ ? std::optional<double>(cand.delta_us) : gain_now(cand);
      if (gain && *gain == cand.delta_us) {
        // Node-level legality passed when it was priced; the group DAG has
        // the last word (checked once per applied merge, not per pricing).
        if (cand.kind == CandKind::merge && ws_.merge_would_cycle(cand.p, cand.c)) continue;
        apply(cand);
      } else if (gain) {
        std::vector<int> ids = cand.kind == CandKind::duplicate_all ? ws_.consumer_groups(cand.p)
                                                                       : std::vector<int>{cand.p, cand.c};
        if (cand.kind == CandKind::duplicate_all) ids.push_back(cand.p);
        push(*gain, cand.kind, cand.p, cand.c, ids);
      }
    }
  }

 private:
  bool fresh(const Candidate& c) const {
    for (uint32_t i = c.stamp_begin; i < c.stamp_begin + c.stamp_count; ++i) {
      auto [gid, v] = stamps_[i];
      if (!ws_.alive(gid) || ws_.version(gid) != v) return false;
    }
    return true;
  }

  /// False when (p, c) was already priced since the state last changed (c =
  /// -1: duplicate into all readers). The initial pass prices each once by
  /// construction; after it, one change prices a few dozen pairs: a linear scan.
  bool first_pricing(int p, int c) {
    if (initialising_) return true;
    const std::pair<int, int> key{p, c};
    if (std::find(priced_.begin(), priced_.end(), key) != priced_.end()) return false;
    priced_.push_back(key);
    return true;
  }

  std::size_t size_of(int gid) const { return ws_.nodes(gid).size(); }
  /// Whether p and c together stay within the group size cap.
  bool fits(int p, int c) const { return size_of(p) + size_of(c) <= max_size_; }

  /// Predicted saving (µs) of merging c into p, ranked (ranked_gain: a tie
  /// on time goes to fewer bytes written); nullopt when illegal or over resources.
  std::optional<double> merge_gain(int p, int c) {
    const DeviceSpec& d = ws_.device();
    if (!fits(p, c) || !can_merge_vertical(ws_.graph(), ws_.nodes(p), ws_.nodes(c), d).ok()) return std::nullopt;
    const int ids[2] = {p, c};
    GroupCost m = ws_.cost_of_merge(ids);
    if (!check_resources(m, d, "merge").ok()) return std::nullopt;
    const GroupCost &cp = ws_.cost_of(p), &cc = ws_.cost_of(c);
    return ranked_gain(cp.predicted_us + cc.predicted_us - m.predicted_us,
                       cp.bytes_written + cc.bytes_written - m.bytes_written, m.predicted_us);
  }

  /// Predicted saving of recomputing p inside its reader c (one of several).
  std::optional<double> duplicate_one_gain(int p, int c) {
    const DeviceSpec& d = ws_.device();
    if (!fits(p, c) || !can_duplicate(ws_.graph(), ws_.nodes(p), ws_.nodes(c), d).ok()) return std::nullopt;
    const int ids[1] = {c};
    GroupCost p_after;
    auto after = ws_.cost_of_duplicate(p, ids, &p_after);
    if (!check_resources(after[0], d, "duplicate").ok()) return std::nullopt;
    const GroupCost &cp = ws_.cost_of(p), &cc = ws_.cost_of(c);
    const double after_us = after[0].predicted_us + p_after.predicted_us;
    return ranked_gain(cp.predicted_us + cc.predicted_us - after_us,
                       cp.bytes_written + cc.bytes_written - after[0].bytes_written - p_after.bytes_written, after_us);
  }

  /// Predicted saving of recomputing p inside every reader in `readers` (≥ 2).
  std::optional<double> duplicate_all_gain(int p, const std::vector<int>& readers) {
    const Graph& g = ws_.graph();
    const DeviceSpec& d = ws_.device();
    double before = ws_.cost_of(p).predicted_us, written_before = ws_.cost_of(p).bytes_written;
    for (int c : readers) {
      if (!fits(p, c)) return std::nullopt;
      if (!can_duplicate(g, ws_.nodes(p), ws_.nodes(c), d).ok()) return std::nullopt;
      before += ws_.cost_of(c).predicted_us;
      written_before += ws_.cost_of(c).bytes_written;
    }
    GroupCost p_after;
    auto after = ws_.cost_of_duplicate(p, readers, &p_after);
    double total = p_after.predicted_us, written = p_after.bytes_written;
    for (const auto& a : after) {
      if (!check_resources(a, d, "duplicate").ok()) return std::nullopt;
      total += a.predicted_us;
      written += a.bytes_written;
    }
    return ranked_gain(before - total, written_before - written, total);
  }

  void push_pair(int p, int c) {
    if (p == c || !ws_.alive(p) || !ws_.alive(c) || !first_pricing(p, c)) return;
    const auto readers = ws_.consumer_groups(p);
    if (std::find(readers.begin(), readers.end(), c) == readers.end()) return;
    const int ids[2] = {p, c};
    if (auto gain = merge_gain(p, c)) push(*gain, CandKind::merge, p, c, ids);
    if (dup_ && readers.size() > 1)
      if (auto gain = duplicate_one_gain(p, c)) push(*gain, CandKind::duplicate_one, p, c, ids);
  }

  void push_duplicate_all(int p) {
    if (!dup_ || !ws_.alive(p) || !first_pricing(p, -1)) return;
    std::vector<int> ids = ws_.consumer_groups(p);
    if (ids.size() < 2) return;
    const auto gain = duplicate_all_gain(p, ids);
    if (!gain) return;
    ids.push_back(p);
    push(*gain, CandKind::duplicate_all, p, -1, ids);
  }

  /// The candidate's saving priced afresh. Stamps only say its groups kept
  /// their node sets; a group's price also moves with what other groups hold
  /// (its readers' placement), so the surfaced best is re-priced before it
  /// is applied and queued again if its saving changed.
  std::optional<double> gain_now(const Candidate& cand) {
    if (cand.kind == CandKind::merge) return merge_gain(cand.p, cand.c);
    const std::vector<int> readers = ws_.consumer_groups(cand.p);
    if (cand.kind == CandKind::duplicate_one) {
      if (readers.size() < 2 || std::find(readers.begin(), readers.end(), cand.c) == readers.end()) return std::nullopt;
      return duplicate_one_gain(cand.p, cand.c);
    }
    if (readers.size() < 2) return std::nullopt;
    return duplicate_all_gain(cand.p, readers);
  }

  void push(double delta_us, CandKind kind, int p, int c, std::span<const int> stamp_ids) {
    if (!(delta_us > kMinGainUs)) return;  // NaN too
    Candidate cand{delta_us, kind, p, c, static_cast<uint32_t>(stamps_.size()), static_cast<uint32_t>(stamp_ids.size()),
                   epoch_};
    for (int i : stamp_ids) stamps_.emplace_back(i, ws_.version(i));
    pq_.push(cand);
  }

  void push_around(int gid) {
    if (!ws_.alive(gid)) return;
    for (int p : ws_.producer_groups(gid)) {
      push_pair(p, gid);
      push_duplicate_all(p);
    }
    for (int c : ws_.consumer_groups(gid)) push_pair(gid, c);
    push_duplicate_all(gid);
  }

  void apply(const Candidate& c) {
    // The state changes: every pair may be priced again.
    priced_.clear();
    ++epoch_;
    std::vector<int> touched;
    if (c.kind == CandKind::merge) {
      touched.push_back(ws_.merge(c.p, c.c));
    } else {
      std::vector<int> targets =
          c.kind == CandKind::duplicate_all ? ws_.consumer_groups(c.p) : std::vector<int>{c.c};
      ws_.duplicate(c.p, targets);
      touched = targets;
      touched.push_back(c.p);
    }
    for (int t : ws_.take_repriced()) touched.push_back(t);
    for (int t : touched) push_around(t);
  }

  WorkState& ws_;
  const SearchOptions& o_;
  const std::size_t max_size_;  // primitives per kernel (max_group_primitives)
  bool dup_;
  std::priority_queue<Candidate, std::vector<Candidate>, Worse> pq_;
  std::vector<std::pair<int, int>> stamps_;  // stamp storage of every candidate pushed
  std::vector<std::pair<int, int>> priced_;  // pairs priced since the last change
  bool initialising_ = true;
  uint32_t epoch_ = 0;  // number of changes apply() made to the state
};

}  // namespace

void greedy_vertical_pass(WorkState& ws, const SearchOptions& o, bool allow_duplication) {
  VerticalSearch(ws, o, allow_duplication).run(nullptr);
}

void greedy_vertical_pass_around(WorkState& ws, const SearchOptions& o, std::span<const int> changed,
                                 bool allow_duplication) {
  // Seeds: the changed groups and their neighbours (a change can alter a
  // neighbour's price through what it must materialise).
  std::vector<int> seeds;
  for (int gid : changed) {
    if (gid < 0 || !ws.alive(gid)) continue;
    seeds.push_back(gid);
    for (int x : ws.producer_groups(gid)) seeds.push_back(x);
    for (int x : ws.consumer_groups(gid)) seeds.push_back(x);
  }
  std::sort(seeds.begin(), seeds.end());
  seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  VerticalSearch(ws, o, allow_duplication).run(&seeds);
}

}  // namespace fuseplan
