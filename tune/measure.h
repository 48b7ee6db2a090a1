// Measurement helpers shared by `tune` and `compare --measure`: a plan's
// identity (its partition), measuring each distinct plan once, re-pricing a
// plan on another device or graph, and the Chrome trace of a measured run.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

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

/// Whether two series of timings can be told apart: one is faster when its
/// interquartile range [p25, p75] lies wholly below the other's; otherwise
/// a tie. Fewer than 3 timings in either series: a tie.
enum class Verdict { first_faster, second_faster, tie };
Verdict separate(const std::vector<double>& a, const std::vector<double>& b);

/// Two plans measured head to head: whole-plan times (RunResult::measured_us,
/// µs) of interleaved runs, a then b in each round, and the 1-minute load
/// average before and after.
struct Duel {
  Verdict verdict = Verdict::tie;
  std::vector<double> a_us, b_us;
  double load_before = 0, load_after = 0;
  /// "812.4 us vs 905.1 us (medians of 6 interleaved rounds, IQR 10.2 / 12.9
  /// us, load 0.41 -> 0.52): the first faster" (or "a tie").
  std::string summary() const;
};

/// Several plans measured in interleaved rounds: each round runs every plan
/// once, in the order given, fresh (not cached). us[i] holds plan i's
/// whole-plan times (RunResult::measured_us, µs), one per round.
struct Interleaved {
  std::vector<std::vector<double>> us;
  double load_before = 0, load_after = 0;  // 1-minute load average
  int rounds() const { return us.empty() ? 0 : static_cast<int>(us.front().size()); }
};

/// Runs plans on the CPU backend, each distinct partition once per graph.
class PlanMeasurer {
 public:
  explicit PlanMeasurer(RunOptions o) : opts_(std::move(o)) {}
  /// The run of `plan` (cached by `scope` + partition key; scope names the
  /// graph, e.g. "model@b8").
  const RunResult& measure(const Graph& g, const Plan& plan, const std::string& scope);
  int runs() const { return runs_; }
  /// Runs a and b in turn, fresh (not cached), `min_rounds` rounds, then
  /// more until separate() tells them apart or `max_rounds` are done.
  Duel duel(const Graph& g, const Plan& a, const Plan& b, int min_rounds = 5, int max_rounds = 15);
  /// Runs `plans` in interleaved rounds: `min_rounds`, then more until
  /// `settled` says so or `max_rounds` are done (no `settled`: max_rounds).
  Interleaved interleave(const Graph& g, const std::vector<const Plan*>& plans, int min_rounds, int max_rounds,
                         const std::function<bool(const Interleaved&)>& settled = {});

 private:
  RunOptions opts_;
  std::map<std::string, RunResult> cache_;
  int runs_ = 0;
};

/// One complete event per measured kernel, back to back in plan order
/// (tid 0), and the same kernels at their predicted times (tid 1).
std::vector<TraceEvent> trace_events(const RunResult& run, int64_t pid);

}  // namespace fuseplan
