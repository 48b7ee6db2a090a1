// Pricing helpers shared by strategies and the decision log: price an
// arbitrary node set as one kernel, and explain every edge of a plan.
#pragma once

#include <span>
#include <vector>

#include "costmodel/cost.h"
#include "search/plan.h"

namespace fuseplan {

/// Prices `nodes` as one kernel whose materialised outputs are the graph
/// outputs among them plus every node read by a primitive outside `nodes`
/// (duplication ignored). Kind inferred (horizontal when disconnected).
GroupCost price_set(const Graph& g, const DeviceSpec& d, std::span<const NodeId> nodes);

/// Weakly connected components of `nodes` through edges inside the set, each
/// in topological order, ordered by their first node: the branches of a
/// horizontal group (one component = not horizontal).
std::vector<std::vector<NodeId>> split_branches(const Graph& g, std::span<const NodeId> nodes);

/// Whether `nodes` (non-empty, distinct) are one weakly connected component
/// through edges inside the set: split_branches(g, nodes).size() == 1 without
/// building the components (per-thread scratch; no allocation once warm).
bool is_connected(const Graph& g, std::span<const NodeId> nodes);

/// Kind of a node set: horizontal (with branches) when disconnected, else infer_group_kind.
void assign_kind(const Graph& g, Group& grp);

/// Group value for `nodes` (sorted, kind inferred, materialised as in price_set).
Group make_group(const Graph& g, std::span<const NodeId> nodes);

/// µs to write and read back a tensor of `bytes` at the device's effective DRAM bandwidth.
double roundtrip_us(double bytes, const DeviceSpec& d);

/// One record per edge between two non-source primitives of the plan:
/// fused / duplicated inside a kernel, or kept / blocked across kernels with
/// the blocker and the predicted saving of the merge (µs).
std::vector<DecisionRecord> log_decisions(const Graph& g, const DeviceSpec& d, const Plan& plan);

}  // namespace fuseplan
