// A Plan: the chosen partition of a model into fusion groups, with the
// decision log and the predicted cost of each group and in total.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "costmodel/cost.h"
#include "costmodel/group.h"
#include "search/legality.h"

namespace fuseplan {

enum class Action { fused, kept, duplicated, blocked };
std::string_view to_string(Action a);
Action action_from_string(std::string_view s);

/// One record of the decision log: what happened to the edge producer -> consumer.
struct DecisionRecord {
  std::string producer;   // primitive name
  std::string consumer;   // primitive name
  Action action = Action::kept;
  Blocker blocker = Blocker::none;
  std::string reason;
  double delta_us = 0;    // predicted time saved by fusing (µs; negative = fusing loses)
};

struct PlanTotals {
  int64_t kernels = 0;
  double bytes = 0;         // bytes moved by all kernels
  double flops = 0;         // FLOP-equivalents
  double predicted_us = 0;  // Σ group predicted_us
  double search_ms = 0;     // wall time of the search
};

struct Plan {
  std::string model_path;
  std::string model_sha256;
  std::string device;
  std::string strategy;
  std::map<std::string, int64_t> dims;  // bound dims (including "batch" when given)
  std::vector<Group> groups;            // topological order; Group::id == index
  std::vector<GroupCost> costs;         // costs[i] prices groups[i]
  std::vector<DecisionRecord> decisions;
  PlanTotals totals;
  std::string status;                   // e.g. "optimal", "gap 3.2%", "" for heuristics
  /// The user's cap on primitives per kernel the plan was searched with
  /// (--max-group-size; 0: none): the decision log names the cuts it makes.
  int max_group_size = 0;
};

/// Who made a partition handed to make_plan, which decides what an invalid
/// one is: the user's input (a plan file: Error, exit 2) or a bug of
/// fuseplan's own (a strategy's search: InternalError, exit 70).
enum class PartitionSource { plan_file, strategy };

/// Builds a complete Plan from a partition: each inner vector is the node
/// set of one kernel (sources excluded; a node may appear in several groups =
/// duplicated). Orders groups topologically, derives kinds, materialised and
/// duplicated sets, prices every group, logs a decision for every edge
/// between non-source primitives (search/decision_log.h) and fills totals
/// (search_ms excepted). A source in a kernel, a primitive in no group or a
/// cycle among the kernels throws Error (`source` plan_file) or
/// InternalError (`source` strategy). `max_group_size`: the user's cap the
/// partition was made under (SearchOptions::max_group_size; 0: none).
Plan make_plan(const Graph& g, const DeviceSpec& d, std::vector<std::vector<NodeId>> partition,
               const std::string& strategy, PartitionSource source = PartitionSource::plan_file,
               int max_group_size = 0);

/// The materialised subset of `nodes` given the whole partition (graph
/// outputs, and outputs read by a group that does not recompute them; a
/// duplicated node is written only by the first group that holds it).
std::vector<NodeId> materialised_nodes(const Graph& g, const std::vector<std::vector<NodeId>>& partition,
                                       std::size_t group_index);

}  // namespace fuseplan
