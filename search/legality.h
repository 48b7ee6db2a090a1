// Legality: is a merge allowed? Free functions returning a FusionDecision
// value (ok, or a blocker code + one-line reason naming the tensors).
// Strategies ask these; they never re-implement them. Costs are not decided
// here except where a blocker is defined by a resource limit (registers,
// shared memory, row residency).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "costmodel/cost.h"
#include "costmodel/device.h"
#include "graph/graph.h"

namespace fuseplan {

/// Blocker codes: docs/blockers.md says what each means, with an example
/// and the function that decides it. `none` = allowed without remark.
enum class Blocker {
  none, layout_mismatch, indirect_access, scan_recurrence, graph_output, multi_consumer,
  control_flow, reduction_barrier, graph_break, cycle,
  two_contractions, epilogue_not_elementwise, contraction_broadcast, prologue_not_cheap,
  expensive_broadcast, horizontal_contraction, iteration_space,
  register_pressure, shared_memory, compile_time, group_size, unprofitable
};
std::string_view to_string(Blocker b);
/// Throws Error on an unknown code.
Blocker blocker_from_string(std::string_view s);

/// ok() is true when the merge is legal. Legal decisions may still carry an
/// informational code (graph_output: the write stays; multi_consumer:
/// duplicate or keep is a cost decision).
struct FusionDecision {
  bool legal = true;
  Blocker blocker = Blocker::none;
  std::string reason;

  bool ok() const { return legal; }
  static FusionDecision allow() { return {}; }
  static FusionDecision note(Blocker b, std::string why) { return {true, b, std::move(why)}; }
  static FusionDecision forbid(Blocker b, std::string why) { return {false, b, std::move(why)}; }
  /// And-combination: the first illegal decision wins, else the first note.
  FusionDecision operator&&(const FusionDecision& o) const;
};

/// Edge-level legality of putting `producer` and its consumer `consumer` in
/// one kernel (vertical fusion), from op classes alone: graph breaks, control
/// flow, indirect access, scans, scatters, layout changes.
FusionDecision can_fuse_edge(const Graph& g, NodeId producer, NodeId consumer);

/// Group-level legality of merging producer group P into consumer group C
/// (P has an edge into C). Checks, in this order: every crossing edge
/// (can_fuse_edge; a consumer feeding P back: cycle); contractions (one per
/// kernel: two_contractions; elementwise epilogues:
/// epilogue_not_elementwise, reduction_barrier; no broadcast of the
/// contraction's output: contraction_broadcast; cheap prologues:
/// prologue_not_cheap); reductions (same rows, and a row-resident
/// multipass row fitting one block; or rows of different reductions that
/// nest, search/nested_reduction.h: else reduction_barrier); iteration
/// spaces (only a cheap P may be broadcast: else expensive_broadcast); and
/// cycles on the primitive DAG (a path P -> X -> C through another group:
/// cycle).
/// `check_cycles = false` skips step 5 for callers that check cycles on
/// their own group DAG (cheaper than the node-level search).
FusionDecision can_merge_vertical(const Graph& g, std::span<const NodeId> producer_group,
                                  std::span<const NodeId> consumer_group, const DeviceSpec& d,
                                  bool check_cycles = true);

/// Whether the producer group may be *duplicated* (recomputed) inside a
/// consumer group: only cheap groups (no contraction, no reduction, no
/// opaque/gather/scatter/scan) that can legally merge vertically.
FusionDecision can_duplicate(const Graph& g, std::span<const NodeId> producer_group,
                             std::span<const NodeId> consumer_group, const DeviceSpec& d);

/// Horizontal legality of launching two independent groups as one kernel:
/// `independent` must say whether no path connects them (callers know the
/// group DAG; else cycle); no opaque members (graph_break); no contraction
/// (horizontal_contraction); same iteration space, or both small for
/// block-index dispatch (else iteration_space); with a device, the rows both
/// groups keep resident (multipass) must fit one block's shared memory
/// together (else shared_memory).
FusionDecision can_merge_horizontal(const Graph& g, std::span<const NodeId> a, std::span<const NodeId> b,
                                    bool independent, const DeviceSpec* d = nullptr);

/// Bytes of the row a multipass (row-resident) node set keeps in one block:
/// the largest reduced row whose result the set reads back at row shape; 0
/// when the set is not row-resident.
double resident_row_bytes(const Graph& g, std::span<const NodeId> nodes);

/// Per-kernel resource limits for a priced group: register_pressure when
/// the register estimate exceeds a GPU's per-thread limit (CPU spills are
/// priced by the cost model instead).
FusionDecision check_resources(const GroupCost& c, const DeviceSpec& d, const std::string& what);

/// The most primitives (duplicated copies included) one kernel may hold on
/// d, for every strategy: where the emitted kernel's estimated compile time
/// reaches its budget (costmodel/compile_time.h), or the user's cap
/// `user_cap` (--max-group-size; 0: none) when that is smaller.
std::size_t max_group_primitives(const DeviceSpec& d, int user_cap);

/// Whether one kernel may hold `primitives` primitives: compile_time when
/// its estimated compile time exceeds the budget, group_size when it exceeds
/// the user's cap (`user_cap` > 0; the smaller limit is named when both
/// are), else allowed. `what` starts the reason ("merging 'a' and 'b'").
FusionDecision check_group_size(std::size_t primitives, const DeviceSpec& d, int user_cap, const std::string& what);

/// Iteration space of a set of primitives in elements: the largest numel
/// among outputs and reduction/contraction inputs.
int64_t iteration_space(const Graph& g, std::span<const NodeId> nodes);

}  // namespace fuseplan
