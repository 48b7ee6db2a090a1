// The strategy interface: a strategy asks legality and cost and decides a
// partition. Adding a heuristic touches one file under search/strategies/.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "costmodel/cost.h"
#include "costmodel/device.h"
#include "graph/graph.h"
#include "search/plan.h"

namespace fuseplan {

struct SearchOptions {
  /// The user's cap on primitives per group (--max-group-size N),
  /// duplicated copies included, in every strategy; 0: none. Every kernel is
  /// capped anyway where its estimated compile time reaches the budget
  /// (costmodel/compile_time.h; max_group_primitives, search/legality.h),
  /// which also bounds each step's work (the searches stay linear). A cut
  /// either limit makes is a blocked decision naming it (`group_size`,
  /// `compile_time`).
  int max_group_size = 0;
  /// Wall seconds for the whole of an exact strategy (optimal): enumeration,
  /// model building and solving; the heuristics are linear passes.
  double time_limit_s = 60;
  /// When set (GPU devices): measured registers/spills replace the estimate
  /// for groups whose estimate constrains them (costmodel/cost.h,
  /// OracleUse::constrained), during the partition and in the plan's pricing.
  ResourceOracle resource_oracle;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  /// One-line description for `fuseplan compare --help`.
  virtual std::string description() const = 0;
  /// Returns the partition (see make_plan); must be deterministic.
  virtual std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec& d,
                                                     const SearchOptions& o) = 0;
  /// Plan status after partition(): "optimal" or the remaining gap for exact
  /// strategies, empty for heuristics.
  virtual std::string status() const { return {}; }
};

/// Names of all registered strategies, in presentation order.
std::vector<std::string> strategy_names();
/// Throws Error naming the known strategies when `name` is unknown.
std::unique_ptr<Strategy> make_strategy(const std::string& name);

/// Runs a strategy and builds the plan (fills totals.search_ms).
Plan search(const Graph& g, const DeviceSpec& d, const std::string& strategy, const SearchOptions& o = {});

}  // namespace fuseplan
