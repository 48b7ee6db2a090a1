// Measurement helpers shared by `tune` and `compare --measure`: a plan's
// identity (its partition), measuring each distinct plan once, re-pricing a
// plan on another device or graph, and the Chrome trace of a measured run.
#pragma once

#include <map>
#include <string>

#include "emit/trace.h"
#include "exec/cpu_run.h"
#include "search/plan.h"

namespace fuseplan {

/// The partition as text: one line per group, its primitive names in order.
/// Equal keys = identical plans (whatever they were priced on).
std::string partition_key(const Graph& g, const Plan& plan);

/// The same partition re-derived by make_plan on `d` (strategy, status,
/// search time, model and dims kept).
Plan reprice(const Graph& g, const Plan& plan, const DeviceSpec& d);

/// Runs plans on the CPU backend, each distinct partition once per graph.
class PlanMeasurer {
 public:
  explicit PlanMeasurer(RunOptions o) : opts_(std::move(o)) {}
  /// The run of `plan` (cached by `scope` + partition key; scope names the
  /// graph, e.g. "model@b8").
  const RunResult& measure(const Graph& g, const Plan& plan, const std::string& scope);
  int runs() const { return runs_; }

 private:
  RunOptions opts_;
  std::map<std::string, RunResult> cache_;
  int runs_ = 0;
};

/// One complete event per measured kernel, back to back in plan order
/// (tid 0), and the same kernels at their predicted times (tid 1).
std::vector<TraceEvent> trace_events(const RunResult& run, int64_t pid);

}  // namespace fuseplan
