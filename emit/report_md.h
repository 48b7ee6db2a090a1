// Markdown reports of a tuning run: summary.md (one table per batch size:
// the tuned plan against every strategy) and diff.md (every decision
// producer->consumer whose action flips between batch sizes, with the cost
// terms around it). Pure data in, text out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/plan.h"

namespace fuseplan {

/// One plan in a summary table. measured_us < 0 = not measured.
struct PlanRow {
  std::string label;  // strategy name, or "tuned (cost)"
  int64_t kernels = 0;
  double bytes = 0;
  double predicted_us = 0;
  double measured_us = -1;
};

struct BatchReport {
  int64_t batch = 0;
  PlanRow tuned;
  int rounds = 0;           // search rounds run (1 without --measure)
  bool converged = true;    // the plan stopped changing within the rounds
  std::string note;         // e.g. "recalibration unavailable"
  std::vector<PlanRow> peers;  // every strategy of strategy_names(), unfused first
};

/// summary.md text: a header naming model/device, then per batch size one table
/// (kernels, bytes, predicted and measured µs, speedup of the tuned plan over
/// each row: predicted and measured).
std::string summary_markdown(const std::string& model, const std::string& device, const std::vector<BatchReport>& batches);

/// A plan of one batch size with the graph it was built on.
struct PlanAt {
  int64_t batch = 0;
  const Graph* graph = nullptr;
  const Plan* plan = nullptr;
};

/// The decision on one edge at one batch size, with the groups around it.
struct DecisionAt {
  int64_t batch = 0;
  Action action = Action::kept;
  Blocker blocker = Blocker::none;
  double delta_us = 0;
  int producer_group = -1, consumer_group = -1;
  GroupCost producer_cost, consumer_cost;
};

struct DecisionFlip {
  std::string producer, consumer;
  std::vector<DecisionAt> at;  // one per batch size, ascending
  // Why it flips, one clause per pair of batch sizes whose action differs,
  // each starting "batch size", "recalibration" or "measured choice"
  // (tune/diff.h);
  // empty = not classified.
  std::string cause = {};
};

/// Every decision (matched by producer/consumer name) whose action differs
/// between two batch sizes, in the order of the first plan's decision log.
std::vector<DecisionFlip> decision_flips(const std::vector<PlanAt>& plans);

/// diff.md text: one section per flip (the cost terms at every batch size).
std::string diff_markdown(const std::string& model, const std::string& device, const std::vector<int64_t>& batches,
                          const std::vector<DecisionFlip>& flips);

}  // namespace fuseplan
