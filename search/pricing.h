// Building groups: an arbitrary set of primitives as one kernel (its
// materialised outputs, its kind, its branches when disconnected) and its
// price. Shared by the strategies, WorkState, make_plan and the decision log.
#pragma once

#include <span>
#include <vector>

#include "costmodel/cost.h"
#include "costmodel/device.h"
#include "costmodel/group.h"
#include "graph/graph.h"

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

}  // namespace fuseplan
