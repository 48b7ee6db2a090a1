// `optimal`: the exact baseline. The graph is cut into independent regions
// (components joined by fusable edges; big ones cut at materialisation
// points), every convex, connected, legal group of up to kMaxGroupSize
// primitives is enumerated per region, and a set-covering ILP is solved with
// COIN-OR CBC: each primitive covered at least once (duplication allowed: a
// column that does not write a cheap output needs a chosen column holding
// that output with its consumer), minimise Σ predicted µs. Cycles between the
// chosen kernels are removed lazily: solve, find a cycle in the kernel DAG,
// forbid that combination, solve again. status(): "optimal", or the gap left.
// SearchOptions::time_limit_s covers all of it; the regions it leaves
// unsolved keep their primitives unfused and the status says so.
#include <algorithm>
#include <chrono>
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

/// Seconds as the user wrote them ("1", "0.5", "2.25").
std::string fmt_seconds(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

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
  // Depth-first search with an explicit stack (a chain of 10^5 kernels is
  // 10^5 deep); the visiting order is that of the recursive formulation.
  enum class Visit { fresh, on_stack, done };
  std::vector<Visit> state(parts.size(), Visit::fresh);
  std::vector<std::size_t> stack;  // the DFS path
  std::vector<std::set<std::size_t>::const_iterator> next;  // per path entry: its next successor
  for (std::size_t root = 0; root < parts.size(); ++root) {
    if (state[root] != Visit::fresh) continue;
    state[root] = Visit::on_stack;
    stack.push_back(root);
    next.push_back(succ[root].begin());
    while (!stack.empty()) {
      const std::size_t v = stack.back();
      if (next.back() == succ[v].end()) {
        state[v] = Visit::done;
        stack.pop_back();
        next.pop_back();
        continue;
      }
      const std::size_t w = *next.back()++;
      if (state[w] == Visit::on_stack) return {std::find(stack.begin(), stack.end(), w), stack.end()};
      if (state[w] == Visit::fresh) {
        state[w] = Visit::on_stack;
        stack.push_back(w);
        next.push_back(succ[w].begin());
      }
    }
  }
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
    // --time-limit covers the whole strategy: regions, candidate enumeration
    // and pricing, model building and every CBC solve. A region whose
    // candidates are not priced by the deadline, or whose ILP gets no time,
    // keeps its primitives unfused (feasible, no proven bound).
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const double limit_s = o.time_limit_s > 0 ? std::min(o.time_limit_s, 1e7) : 0.0;  // no NaN/inf in clock arithmetic
    const auto deadline = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(limit_s));
    auto left_s = [&] { return std::chrono::duration<double>(deadline - clock::now()).count(); };
    const int max_size = static_cast<int>(std::min<std::size_t>(kMaxGroupSize, max_group_primitives(d, o.max_group_size)));
    int cuts = 0;
    const auto regions = strategies::optimal_regions(g, kMaxRegion, &cuts);
    std::vector<strategies::RegionIlp> ilps;
    ilps.reserve(regions.size());
    bool truncated = false;
    // Region by region: enumerate and price the candidates, then solve with
    // an equal share of the time left for this region and those after it,
    // less the time their enumeration is expected to take (the mean so far).
    double enum_s = 0;
    for (std::size_t i = 0; i < regions.size(); ++i) {
      bool t = false, late = clock::now() >= deadline;
      std::vector<strategies::Candidate> cols;
      const auto e0 = clock::now();
      if (!late) cols = strategies::optimal_candidates(g, d, regions[i], max_size, kMaxCandidates, &t, deadline, &late);
      enum_s += std::chrono::duration<double>(clock::now() - e0).count();
      if (late) {  // the singletons alone (priced as `unfused` prices them): the region stays unfused
        cols = strategies::optimal_candidates(g, d, regions[i], 1, kMaxCandidates, nullptr);
        t = false;
      }
      ilps.emplace_back(std::move(cols), regions[i]);
      truncated |= t;
      const double left = left_s(), after = static_cast<double>(regions.size() - i - 1);
      const double reserve = enum_s / static_cast<double>(i + 1) * after;
      const double budget = (left > reserve ? left - reserve : left) / (after + 1);
      if (!late && budget > 0) ilps.back().solve(budget);
      else ilps.back().keep_singletons();
    }

    std::vector<char> dirty(regions.size(), 0);  // regions with a new cycle cut since their last solve
    bool forced = false;  // a cross-region cycle was broken by forbidding a column
    std::vector<std::vector<NodeId>> parts;
    for (int round = 0;; ++round) {
      std::size_t pending = static_cast<std::size_t>(std::count(dirty.begin(), dirty.end(), 1));
      for (std::size_t i = 0; i < ilps.size(); ++i)
        if (dirty[i]) {
          // The time left is shared among the regions still to solve.
          const double budget = left_s() / static_cast<double>(pending--);
          if (budget > 0) ilps[i].solve(budget);
          else ilps[i].keep_singletons();
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
    bool proven = true, bounded = true, limit_hit = false;
    std::size_t unsolved = 0;
    for (const auto& ilp : ilps) {
      obj += ilp.objective();
      bound += ilp.bound();
      proven &= ilp.proven_optimal();
      bounded &= ilp.has_bound();
      unsolved += ilp.unsolved();
      limit_hit |= ilp.unsolved() || ilp.seconds_limit_hit();
    }
    std::ostringstream s;
    if (proven && cuts == 0 && !forced && !truncated) {
      s << "optimal";
    } else {
      s.setf(std::ios::fixed);
      s.precision(2);
      if (limit_hit) {
        s << "time limit " << fmt_seconds(o.time_limit_s) << " s reached";
        if (unsolved) s << " with " << unsolved << " of " << ilps.size() << " regions unsolved (kept unfused)";
        s << ", ";
      }
      if (proven) s << "optimal per region";
      else if (!bounded) s << "no proven bound";
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
