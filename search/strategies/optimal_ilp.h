// The covering ILP of one region for the `optimal` strategy (internal): COIN-OR
// CBC when built with it (FUSEPLAN_HAVE_CBC), else an Error on solve().
#pragma once

#include <cstddef>
#include <vector>

#include "search/strategies/optimal_candidates.h"

namespace fuseplan::strategies {

class RegionIlp {
 public:
  RegionIlp(std::vector<Candidate> columns, const std::vector<NodeId>& region);

  /// Solves (again, with every constraint added so far) within `time_limit_s`
  /// seconds of wall time. Starts from the all-singletons solution, which is
  /// always feasible.
  void solve(double time_limit_s);
  /// Takes the all-singletons solution without solving (no time was left):
  /// feasible, with no proven bound.
  void keep_singletons();
  /// At most |cols| − 1 of these columns may be chosen together (a lazy cycle cut).
  void forbid_together(const std::vector<std::size_t>& cols);

  std::vector<std::size_t> chosen() const { return chosen_; }
  const Candidate& column(std::size_t j) const { return cols_[j]; }
  double objective() const { return objective_; }
  double bound() const { return bound_; }
  bool proven_optimal() const { return proven_; }
  /// Whether bound() is a proven lower bound on the region's optimum.
  bool has_bound() const { return has_bound_; }
  /// Whether the last answer is keep_singletons() (the ILP was not solved).
  bool unsolved() const { return unsolved_; }
  /// Whether CBC stopped at its time limit in the last solve().
  bool seconds_limit_hit() const { return seconds_limit_hit_; }

 private:
  std::vector<Candidate> cols_;
  std::vector<NodeId> region_;
  std::vector<std::vector<std::size_t>> cuts_;
  /// The singleton columns that write their outputs (*objective: their sum).
  std::vector<std::size_t> singletons(double* objective) const;

  std::vector<std::size_t> chosen_;
  double objective_ = 0, bound_ = 0;
  bool proven_ = false, has_bound_ = false, unsolved_ = false, seconds_limit_hit_ = false;
};

}  // namespace fuseplan::strategies
