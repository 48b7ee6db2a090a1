// Reusable search passes over a WorkState. Strategies compose them.
#pragma once

#include <span>
#include <vector>

#include "search/strategy.h"
#include "search/work_state.h"

namespace fuseplan {

/// Priority-driven vertical fusion: repeatedly applies the legal merge or
/// duplication with the largest predicted saving (µs), repricing the
/// neighbours of each change (lazy priority queue). Duplication of a
/// multi-consumer producer is considered into each consumer and into all.
/// Deterministic: ties broken by group ids.
void greedy_vertical_pass(WorkState& ws, const SearchOptions& o, bool allow_duplication = true);

/// greedy_vertical_pass resumed after a pass that changed only the groups
/// `changed` (ids; dead ones ignored) of a state greedy_vertical_pass had
/// left with no profitable merge: only pairs within one group of a changed
/// group are priced at the start (every other pair's price is the one the
/// earlier pass last saw, none profitable). Same result as the full pass,
/// in time proportional to the change.
void greedy_vertical_pass_around(WorkState& ws, const SearchOptions& o, std::span<const int> changed,
                                 bool allow_duplication = true);

/// Refinement: splits boundary primitives off multi-primitive groups and
/// moves them to the neighbouring group (or keeps them alone) when that lowers
/// the predicted total; escapes greedy mistakes. Returns the number of moves;
/// appends the ids of the groups the moves changed or created, and of those
/// whose price they changed (WorkState::take_repriced), to `*changed` when given.
int refine_pass(WorkState& ws, const SearchOptions& o, std::vector<int>* changed = nullptr);

/// Horizontal fusion: merges independent launch-bound groups at the same
/// depth of the group DAG into one launch (block-index dispatch) while the
/// merged register estimate stays under the device limit and the predicted
/// time falls.
void horizontal_pass(WorkState& ws, const SearchOptions& o);

}  // namespace fuseplan
