// Nested reductions: a reduction of a reduction as one kernel, a loop over
// the outer reduced axes around the inner reduction (Inductor emits these as
// one kernel). The rule (docs/blockers.md, "Nested reductions"), asked by
// can_merge_vertical when a merged group's reductions reduce different rows,
// and by emit/kernel_plan.cpp to decide which reductions it computes inline:
//
//  - The reductions form one chain R1 -> R2 -> ... -> Rk (innermost first):
//    each Ri but the last is read by exactly one reduction of the group,
//    R(i+1), as its reduced input, directly or through per-element ops
//    (scalar ops, Cast) of Ri's output shape; nothing else in the group
//    reads Ri or those ops, and each reduction nests at most one other.
//  - Every inner row lies inside one output element of the outer reduction,
//    contiguously: over the axes of R1's input of size > 1, the axes both
//    keep come first, then the axes R2 reduces, then the axes R1 reduces
//    (x[.., A, B]: ReduceSum over B, then ReduceMax over A). Each reduces a
//    row of more than one element.
//  - Nothing in the group reads a result of the chain back at a larger
//    shape (no row stays resident: that is multipass, one row class only).
//  - Only Reduce* ops (and global pools) nest, not windowed pooling.
//
// Per output element of Rk, every Ri is computed once per element of the
// row that reads it, in its own canonical order (docs/numerics.md), so a
// nested kernel gives the bits of the unfused reductions.
#pragma once

#include <span>
#include <vector>

#include "graph/graph.h"
#include "search/legality.h"

namespace fuseplan {

struct ReductionNest {
  /// The reductions, innermost first; the last is the outermost (its kernel's stage).
  std::vector<NodeId> chain;
  /// Computed inside an outer reduction's loop: every reduction of the chain
  /// but the last, and the per-element ops between consecutive reductions.
  std::vector<NodeId> inner;
};

/// Whether every reduction among `reductions` reduces the same rows (equal
/// output counts and input counts): the one-row-class case of
/// can_merge_vertical (prologues, epilogues, multipass). True for none or one.
bool reduce_same_rows(const Graph& g, std::span<const NodeId> reductions);

/// The rule above for the reductions among `nodes` (a fusion group, or the
/// union of two being merged): allowed with the nest in `*nest` (when given),
/// or reduction_barrier with a reason naming the reductions (no edge prefix).
FusionDecision can_nest_reductions(const Graph& g, std::span<const NodeId> nodes, ReductionNest* nest = nullptr);

}  // namespace fuseplan
