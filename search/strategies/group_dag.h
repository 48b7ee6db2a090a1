// Internal helpers shared by the compared strategies: group-DAG cycle checks
// and operand counting over a WorkState. Not a public header.
#pragma once

#include <span>
#include <vector>

#include "search/work_state.h"

namespace fuseplan::strategies {

/// True when merging alive groups `a` and `b` would close a cycle in the group
/// DAG: a path a -> X -> ... -> b (or b -> ... -> a) through a third group.
/// Works on groups (duplicated copies and horizontal groups included), not on
/// primitives. Explores at most `cap` groups; beyond that it answers true
/// (refuse: not proven acyclic), which keeps the check bounded and deterministic.
/// Groups that start after the target ends (topologically) are not explored.
bool would_create_cycle(const WorkState& ws, int a, int b, int cap = 4096);

/// Operands + outputs of `nodes` as one kernel: distinct external producers
/// read (sources included) plus the outputs written to memory.
int operand_and_output_count(const Graph& g, std::span<const NodeId> nodes);

/// Union of the node sets of groups `gids` (topological order, deduplicated).
std::vector<NodeId> union_nodes(const WorkState& ws, std::span<const int> gids);

}  // namespace fuseplan::strategies
