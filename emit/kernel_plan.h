// Backend-neutral walk of one fusion group: which primitive is computed
// where (a stage writes a buffer; every other node of the group is inlined
// and recomputed at each use), which tensors the kernel loads and stores,
// whether all stages share a row-resident outer loop, and the index
// expressions (C syntax, valid in C++ and CUDA C++) that map an output
// coordinate of a primitive to coordinates of its operands. The CPU printer
// (emit/cpu/cpp_printer.cpp) turns this into loops; a CUDA printer can reuse it.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "costmodel/group.h"
#include "graph/graph.h"
#include "graph/view.h"

namespace fuseplan {

enum class StageKind {
  loop,     // one value per output element, from inlined expressions
  reduce,   // per output element a sequential loop over the reduced elements
  library,  // one whole-tensor fprt routine (contraction, pooling, scan, scatter)
};

struct Stage {
  NodeId node = kNoNode;
  StageKind kind = StageKind::loop;
  bool global = false;  // writes the plan's buffer of `node` (materialised); else kernel-local scratch
};

struct KernelPlan {
  int group_id = 0;
  std::string fn_name;            // generated identifier, e.g. "fp_group_3"
  std::vector<Stage> stages;      // topological order
  std::vector<NodeId> loads;      // tensors produced outside the group (buffers read)
  /// Scalar constants a member reads inline (graph/op_attrs.h
  /// reads_as_immediate): compiled in as literals (immediate_literal), not
  /// loaded; in `loads` too only when a library routine of the group reads
  /// the buffer.
  std::set<NodeId> immediates;
  std::vector<NodeId> stores;     // materialised tensors (buffers written)
  std::set<NodeId> members;       // every node computed here
  /// Nested reductions (search/nested_reduction.h): the reductions computed
  /// inside the reduction loop of the reduction that reads them, and the
  /// per-element ops between them. None is a stage: each is computed once per
  /// element of the outer row, inline; a materialised one is stored there
  /// (is_nested_store).
  std::set<NodeId> nested;
  /// Reductions whose reduction loop computes a nested reduction.
  std::set<NodeId> nest_outer;
  /// > 0: every stage runs inside one outer loop over the first `row_dims`
  /// dims (the rows); scratch holds one row (multipass normalisation).
  int row_dims = 0;
  std::vector<int64_t> row_shape;  // the shared leading dims
  bool is_stage(NodeId n) const;
  /// n is nested and materialised: written where the outer loop computes it.
  bool is_nested_store(NodeId n) const;
};

/// Builds the kernel plan of one group (nesting the reductions of each
/// horizontal branch that can_nest_reductions allows). Throws Error when the group holds
/// an opaque primitive or a source, or a node the backends cannot execute.
/// strided_matmul_b (the CPU backend): a MatMul's B operand that is a view
/// of a loaded buffer (graph/view.h strided_matmul_operand) is no stage;
/// the printer passes the buffer with strides (strided_matmul_b_view).
KernelPlan plan_kernel(const Graph& g, const Group& grp, bool strided_matmul_b = false);

/// The strided view MatMul `mm`'s B operand is of a loaded buffer in a plan
/// built with strided_matmul_b (graph/view.h MatMulBView); nullopt when B
/// is computed (a stage, or a buffer).
std::optional<MatMulBView> strided_matmul_b_view(const Graph& g, const KernelPlan& kp, NodeId mm);

/// A loop stage whose value is a pure copy of one loaded buffer (or of an
/// earlier stage's, e.g. a MatMul's output in scratch) through
/// inlined Reshape/Identity/Transpose/Slice (positive steps) members: the
/// stage's element at row-major offset i is the source's element at
/// `offset + sum_d c_d * strides[d]`, c the coordinates of i in `dims`.
/// `dims` refine the stage's shape (each dim of it is a run of consecutive
/// `dims`: a reshape that merges axes a transpose separated splits the
/// merged axis again), so the stage is row-major over `dims`; dims of size
/// 1 are dropped and adjacent dims that step contiguously in the source are
/// merged. Strides and offset count elements of the source. The CPU printer
/// runs such a stage as one library copy (fprt::copy_view, a oneDNN
/// reorder) instead of a loop whose reads gather: GPT-2's Kᵀ, [8,128,12,64]
/// read as [8,12,64,128], took 0.90 ms as a loop and 0.18 ms as a reorder
/// (one Zen 4 thread).
struct StridedView {
  NodeId source = kNoNode;
  int64_t offset = 0;
  std::vector<int64_t> dims, strides;
};
/// n's view of one buffer kp loads or an earlier stage of kp writes (n a
/// member of kp), or nullopt where any member on the way is another op, the
/// source is neither (an immediate), or a reshape splits a dim across a
/// stride jump it cannot follow.
std::optional<StridedView> strided_view(const Graph& g, const KernelPlan& kp, NodeId n);

/// One coordinate expression per dim of a tensor.
using Coords = std::vector<std::string>;

/// Row-major linear offset of `c` in a tensor of `shape` ("0" for a scalar);
/// dims of size 1 contribute nothing.
std::string linear_offset(const std::vector<int64_t>& shape, const Coords& c);
/// Coordinates of a tensor of `shape` from a linear offset expression.
Coords delinearise(const std::vector<int64_t>& shape, const std::string& offset);
/// Coordinates in a dense row-major tensor of shape `is` of the element a
/// reshape to `os` (same element count) holds at `c`: per block of common
/// factors of the two shapes, so dims a reshape only inserts, drops, merges
/// or splits cost no division where none is needed.
Coords reshape_coords(const std::vector<int64_t>& is, const std::vector<int64_t>& os, const Coords& c);
/// Coordinates in operand `k` of node `n` when `n` is read at `c`, for the
/// ops whose operand index is a pure affine/broadcast map: scalar ops, Cast,
/// Reshape/Identity, Expand, Slice, Tile, Transpose, Resize (nearest),
/// DepthToSpace/SpaceToDepth. Throws Error for other ops.
Coords operand_coords(const Graph& g, NodeId n, int k, const Coords& c);
/// Broadcast (numpy) coordinates of an operand of `shape` read at output coordinates c.
Coords broadcast_coords(const std::vector<int64_t>& shape, const Coords& c);

/// C type of a dtype ("float", "int64_t", "bool", ...); throws Error for f16/bf16/string.
std::string c_type(DType t);
/// Exact C literal of a double converted to type `t` (hex float for reals).
std::string c_literal(double v, DType t);
/// The value of an immediate (graph/op_attrs.h is_immediate) as an exact C
/// literal of its dtype, valid in C++ and CUDA C++: the bits of the buffer
/// exec/ fills for it (const_element). Finite reals are hex floats, a
/// non-finite one is `fprt::f32_bits(0x...u)` / `fprt::f64_bits(0x...ull)`
/// (NaN payload and sign kept), integers `(int32_t)(-5LL)`, bools true/false.
std::string immediate_literal(const Primitive& p);

}  // namespace fuseplan
