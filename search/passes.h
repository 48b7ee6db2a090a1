// Reusable search passes over a WorkState. Strategies compose them.
#pragma once

#include "search/strategy.h"
#include "search/work_state.h"

namespace fuseplan {

/// Priority-driven vertical fusion: repeatedly applies the legal merge or
/// duplication with the largest predicted saving (µs), repricing the
/// neighbours of each change (lazy priority queue). Duplication of a
/// multi-consumer producer is considered into each consumer and into all.
/// Deterministic: ties broken by group ids.
void greedy_vertical_pass(WorkState& ws, const SearchOptions& o, bool allow_duplication = true);

/// Refinement: splits boundary primitives off multi-primitive groups and
/// moves them to the neighbouring group (or keeps them alone) when that lowers
/// the predicted total; escapes greedy mistakes. Returns the number of moves.
int refine_pass(WorkState& ws, const SearchOptions& o);

/// Horizontal fusion: merges independent launch-bound groups at the same
/// depth of the group DAG into one launch (block-index dispatch) while the
/// merged register estimate stays under the device limit and the predicted
/// time falls.
void horizontal_pass(WorkState& ws, const SearchOptions& o);

}  // namespace fuseplan
