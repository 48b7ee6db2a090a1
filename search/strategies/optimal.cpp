// `optimal`: the exact baseline. The graph is cut into independent regions
// (components joined by fusable edges; big ones cut at materialisation
// points), every convex, connected, legal group of up to kMaxGroupSize
// primitives is enumerated per region, and a set-covering ILP is solved with
// COIN-OR CBC: each primitive covered at least once (duplication allowed: a
// column that does not write a cheap output needs a chosen column holding
// that output with its consumer), minimise Σ predicted µs. Cycles between the
// chosen kernels are removed lazily: solve, find a cycle in the kernel DAG,
// forbid that combination, solve again. status(): "optimal", or the gap left.
#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "search/strategies/optimal_candidates.h"
#include "search/strategies/optimal_ilp.h"
#include "search/strategies/registry.h"
#include "support/error.h"

namespace fuseplan {

namespace {

constexpr int kMaxGroupSize = 6;                    // primitives per candidate (bounds the enumeration)
constexpr std::size_t kMaxRegion = 400;             // primitives per ILP region before heuristic cuts
constexpr std::size_t kMaxCandidates = 40000;       // columns per region (larger sets dropped first)
constexpr int kMaxCycleRounds = 200;                // lazy cycle-constraint rounds per search

/// First cycle of the kernel DAG built as make_plan builds it (a node is read
/// from the first group holding it); empty when acyclic.
std::vector<std::size_t> find_cycle(const Graph& g, const std::vector<std::vector<NodeId>>& parts) {
  std::vector<std::vector<std::size_t>> groups_of(g.size());
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (NodeId n : parts[i]) groups_of[n].push_back(i);
  std::vector<std::set<std::size_t>> succ(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::set<NodeId> mine(parts[i].begin(), parts[i].end());
    for (NodeId n : parts[i])
      for (NodeId o : g.operands(n))
        if (g.op_class(o) != OpClass::source && !mine.count(o) && groups_of[o].front() != i)
          succ[groups_of[o].front()].insert(i);
  }
  enum class Visit { fresh, on_stack, done };
  std::vector<Visit> state(parts.size(), Visit::fresh);
  std::vector<std::size_t> stack;
  std::vector<std::size_t> cycle;
  std::function<bool(std::size_t)> dfs = [&](std::size_t v) {
    state[v] = Visit::on_stack;
    stack.push_back(v);
    for (std::size_t w : succ[v]) {
      if (state[w] == Visit::on_stack) {
        cycle.assign(std::find(stack.begin(), stack.end(), w), stack.end());
        return true;
      }
      if (state[w] == Visit::fresh && dfs(w)) return true;
    }
    stack.pop_back();
    state[v] = Visit::done;
    return false;
  };
  for (std::size_t v = 0; v < parts.size(); ++v)
    if (state[v] == Visit::fresh && dfs(v)) return cycle;
  return {};
}

class OptimalStrategy : public Strategy {
 public:
  std::string name() const override { return "optimal"; }
  std::string description() const override {
    return "exact: covering ILP (COIN-OR CBC) over convex groups of <= 6 primitives, per region";
  }
  std::string status() const override { return status_; }

  std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec& d, const SearchOptions& o) override {
    const auto t0 = std::chrono::steady_clock::now();
    auto left_s = [&] {
      return o.time_limit_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    int cuts = 0;
    const auto regions = strategies::optimal_regions(g, kMaxRegion, &cuts);
    std::vector<strategies::RegionIlp> ilps;
    bool truncated = false;
    for (const auto& r : regions) {
      bool t = false;
      ilps.emplace_back(strategies::optimal_candidates(g, d, r, kMaxGroupSize, kMaxCandidates, &t), r);
      truncated |= t;
    }
    // Region index of each candidate's first node, to add cycle cuts where they belong.
    std::vector<int> region_of(g.size(), -1);
    for (std::size_t i = 0; i < regions.size(); ++i)
      for (NodeId n : regions[i]) region_of[n] = static_cast<int>(i);

    std::vector<char> dirty(ilps.size(), 1);
    bool forced = false;  // a cross-region cycle was broken by forbidding a column
    std::vector<std::vector<NodeId>> parts;
    for (int round = 0;; ++round) {
      for (std::size_t i = 0; i < ilps.size(); ++i)
        if (dirty[i]) {
          ilps[i].solve(std::max(0.5, left_s() / static_cast<double>(ilps.size())));
          dirty[i] = 0;
        }
      parts.clear();
      std::vector<std::pair<std::size_t, std::size_t>> origin;  // (region, column)
      for (std::size_t i = 0; i < ilps.size(); ++i)
        for (std::size_t j : ilps[i].chosen()) {
          parts.push_back(ilps[i].column(j).nodes);
          origin.emplace_back(i, j);
        }
      const auto cyc = find_cycle(g, parts);
      if (cyc.empty()) break;
      FUSEPLAN_ASSERT(round < kMaxCycleRounds, "optimal: the kernel cycles remain after " +
                                                   std::to_string(kMaxCycleRounds) + " rounds of cycle cuts");
      std::map<std::size_t, std::vector<std::size_t>> by_region;
      for (std::size_t k : cyc) by_region[origin[k].first].push_back(origin[k].second);
      if (by_region.size() == 1) {
        auto& [ri, cols] = *by_region.begin();
        ilps[ri].forbid_together(cols);
        dirty[ri] = 1;
      } else {
        // Forbid the largest non-singleton kernel of the cycle outright.
        std::size_t best = cyc.front();
        for (std::size_t k : cyc)
          if (parts[k].size() > parts[best].size()) best = k;
        ilps[origin[best].first].forbid_together({origin[best].second});
        dirty[origin[best].first] = 1;
        forced = true;
      }
    }
    double obj = 0, bound = 0;
    bool proven = true;
    for (const auto& ilp : ilps) {
      obj += ilp.objective();
      bound += ilp.bound();
      proven &= ilp.proven_optimal();
    }
    std::ostringstream s;
    if (proven && cuts == 0 && !forced && !truncated) {
      s << "optimal";
    } else {
      s.setf(std::ios::fixed);
      s.precision(2);
      if (proven) s << "optimal per region";
      else s << "gap " << (obj > 0 ? std::max(0.0, (obj - bound) / obj * 100.0) : 0.0) << "%";
      if (cuts) s << ", " << cuts << " heuristic region cuts";
      if (truncated) s << ", candidate cap hit";
      if (forced) s << ", cross-region cycle broken";
    }
    s << " (" << regions.size() << " regions, ilp " << std::llround(obj * 100) / 100.0 << " us)";
    status_ = s.str();
    return parts;
  }

 private:
  std::string status_;
};
}  // namespace

std::unique_ptr<Strategy> make_optimal_strategy() { return std::make_unique<OptimalStrategy>(); }

}  // namespace fuseplan
