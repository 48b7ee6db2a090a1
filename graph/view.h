// A tensor read through a chain of view ops (Reshape, Identity, Transpose,
// Slice with positive steps) of one stored tensor: where each element of
// the view lies in the stored one. Two backends' rules ask it: a stored
// view that would gather is one library copy (emit/kernel_plan.h
// strided_view), and a MatMul's B operand that is such a view is passed to
// the library with strides instead of being copied
// (strided_matmul_operand).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace fuseplan {

/// Each dim of a view as a run of (size, stride) factors, outermost first;
/// strides and the offset count elements of the source, stored row-major.
struct ViewFactors {
  NodeId source = kNoNode;
  int64_t offset = 0;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> dims;  // one per dim of the view
};

/// The view node n is of the tensor its chain reaches: the walk goes down
/// operand 0 from n while `through(at)` holds and `at` is a view op; the
/// first node it stops at is the source (through(n) must hold, or nullopt).
/// nullopt where a node on the way is another op, a Slice steps backwards or
/// starts from the end, or a reshape splits a dim across a stride jump it
/// cannot follow (a dim of size 6 as 4 x ... of a 2 x 3 view).
std::optional<ViewFactors> view_factors(const Graph& g, NodeId n, const std::function<bool(NodeId)>& through);

/// One element stride per dim of the view where each dim steps uniformly in
/// the source (its factors contiguous one inside the next); 0 for a dim of
/// size 1. nullopt where a dim merges factors a transpose separated.
std::optional<std::vector<int64_t>> view_strides(const ViewFactors& v);

/// A MatMul B operand read as a view: its source, the element offset of its
/// first element and one element stride per dim of B (0 for a dim of size 1).
struct MatMulBView {
  NodeId source = kNoNode;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

/// Operand 1 (B) of MatMul `mm` as the view the CPU backend passes to
/// oneDNN with strides instead of computing it, or nullopt: B is a member of the group
/// (`member`), every node from it down to the source is a member view op,
/// the source is no member and no model input or constant (a buffer
/// another kernel wrote), the view has one stride per dim (view_strides),
/// and B's reduced dim is the contiguous one (a transposed B).
/// GPT-2's Kᵀ [1,12,64,128] of K stored [1,128,12,64]: strides
/// {0, 64, 1, 768}. The view's nodes are then never computed and its
/// bytes are the source's, read by the library.
std::optional<MatMulBView> strided_matmul_operand(const Graph& g, NodeId mm,
                                                 const std::function<bool(NodeId)>& member);

}  // namespace fuseplan
