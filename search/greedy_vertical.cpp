#include <algorithm>
#include <cstdint>
#include <queue>
#include <unordered_map>

#include "search/legality.h"
#include "search/passes.h"

namespace fuseplan {

namespace {

enum class CandKind { merge = 0, duplicate_one = 1, duplicate_all = 2 };

struct Candidate {
  double delta_us = 0;
  CandKind kind = CandKind::merge;
  int p = -1, c = -1;
  std::vector<std::pair<int, int>> stamps;  // (group, version) it was priced at
};

struct Worse {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.delta_us != b.delta_us) return a.delta_us < b.delta_us;
    if (a.kind != b.kind) return a.kind > b.kind;
    if (a.p != b.p) return a.p > b.p;
    return a.c > b.c;
  }
};

constexpr double kMinGainUs = 1e-6;  // below this a merge is noise, not a saving

class VerticalSearch {
 public:
  VerticalSearch(WorkState& ws, const SearchOptions& o, bool dup) : ws_(ws), o_(o), dup_(dup) {}

  void run() {
    for (int gid : ws_.alive_groups()) push_around(gid);
    while (!pq_.empty()) {
      Candidate cand = pq_.top();
      pq_.pop();
      if (!fresh(cand)) {
        if (all_alive(cand)) reprice(cand);
        continue;
      }
      apply(cand);
    }
  }

 private:
  bool all_alive(const Candidate& c) const {
    for (auto [gid, v] : c.stamps)
      if (!ws_.alive(gid)) return false;
    return true;
  }
  bool fresh(const Candidate& c) const {
    for (auto [gid, v] : c.stamps)
      if (!ws_.alive(gid) || ws_.version(gid) != v) return false;
    return true;
  }
  void reprice(const Candidate& c) {
    if (c.kind == CandKind::duplicate_all) push_duplicate_all(c.p);
    else push_pair(c.p, c.c);
  }

  // Pricing memo. Between two applied changes (one epoch) the work state does
  // not change, so pricing the same pair again (push_around of several touched
  // groups, or repricing a stale entry whose groups push_around already
  // repriced) yields the same candidates: replay them instead of recomputing.
  // The queue receives exactly what it would without the memo.
  struct Memo {
    int64_t epoch = -1;
    std::vector<Candidate> pushed;
  };
  static uint64_t key(int p, int c) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(p)) << 32) | static_cast<uint32_t>(c);
  }
  /// True (and the memoised candidates re-pushed) when (p, c) was priced in this epoch.
  bool replay(int p, int c) {
    auto it = memo_.find(key(p, c));
    if (it == memo_.end() || it->second.epoch != epoch_) return false;
    for (const Candidate& cand : it->second.pushed) pq_.push(cand);
    return true;
  }
  /// Starts memoising (p, c) for this epoch; candidates pushed until the next begin() are recorded.
  void begin(int p, int c) {
    recording_ = &memo_[key(p, c)];
    recording_->epoch = epoch_;
    recording_->pushed.clear();
  }

  std::size_t size_of(int gid) const { return ws_.nodes(gid).size(); }

  void push_pair(int p, int c) {
    const Graph& g = ws_.graph();
    const DeviceSpec& d = ws_.device();
    if (p == c || !ws_.alive(p) || !ws_.alive(c)) return;
    if (replay(p, c)) return;
    begin(p, c);
    const auto readers = ws_.consumer_groups(p);
    if (std::find(readers.begin(), readers.end(), c) == readers.end()) return;
    const double before = ws_.cost_of(p).predicted_us + ws_.cost_of(c).predicted_us;
    if (size_of(p) + size_of(c) <= static_cast<std::size_t>(o_.max_group_size) &&
        can_merge_vertical(g, ws_.nodes(p), ws_.nodes(c), d).ok()) {
      const int ids[2] = {p, c};
      GroupCost m = ws_.cost_of_merge(ids);
      if (check_resources(m, d, "merge").ok())
        push({before - m.predicted_us, CandKind::merge, p, c, stamp({p, c})});
    }
    if (dup_ && readers.size() > 1 && size_of(p) + size_of(c) <= static_cast<std::size_t>(o_.max_group_size) &&
        can_duplicate(g, ws_.nodes(p), ws_.nodes(c), d).ok()) {
      const int ids[1] = {c};
      GroupCost p_after;
      auto after = ws_.cost_of_duplicate(p, ids, &p_after);
      if (check_resources(after[0], d, "duplicate").ok())
        push({before - after[0].predicted_us - p_after.predicted_us, CandKind::duplicate_one, p, c, stamp({p, c})});
    }
  }

  void push_duplicate_all(int p) {
    if (!dup_ || !ws_.alive(p)) return;
    if (replay(p, -1)) return;
    begin(p, -1);
    const Graph& g = ws_.graph();
    const DeviceSpec& d = ws_.device();
    const auto readers = ws_.consumer_groups(p);
    if (readers.size() < 2) return;
    double before = ws_.cost_of(p).predicted_us;
    for (int c : readers) {
      if (size_of(p) + size_of(c) > static_cast<std::size_t>(o_.max_group_size)) return;
      if (!can_duplicate(g, ws_.nodes(p), ws_.nodes(c), d).ok()) return;
      before += ws_.cost_of(c).predicted_us;
    }
    GroupCost p_after;
    auto after = ws_.cost_of_duplicate(p, readers, &p_after);
    double total = p_after.predicted_us;
    for (const auto& a : after) {
      if (!check_resources(a, d, "duplicate").ok()) return;
      total += a.predicted_us;
    }
    std::vector<int> ids = readers;
    ids.push_back(p);
    push({before - total, CandKind::duplicate_all, p, -1, stamp(ids)});
  }

  std::vector<std::pair<int, int>> stamp(const std::vector<int>& ids) const {
    std::vector<std::pair<int, int>> s;
    for (int i : ids) s.emplace_back(i, ws_.version(i));
    return s;
  }

  void push(Candidate c) {
    if (c.delta_us <= kMinGainUs) return;
    if (recording_) recording_->pushed.push_back(c);
    pq_.push(std::move(c));
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
    ++epoch_;  // the state changes: memoised pricings are stale
    recording_ = nullptr;
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
    for (int t : touched) push_around(t);
  }

  WorkState& ws_;
  const SearchOptions& o_;
  bool dup_;
  std::priority_queue<Candidate, std::vector<Candidate>, Worse> pq_;
  std::unordered_map<uint64_t, Memo> memo_;
  Memo* recording_ = nullptr;
  int64_t epoch_ = 0;
};

}  // namespace

void greedy_vertical_pass(WorkState& ws, const SearchOptions& o, bool allow_duplication) {
  VerticalSearch(ws, o, allow_duplication).run();
}

}  // namespace fuseplan
