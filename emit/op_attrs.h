// Decoded attributes of primitives, shared by every executor of the IR (the
// reference executor in profiling/, the CPU and CUDA emitters): one place
// that turns docs/ir.md attributes into per-axis arrays with defaults, so
// the executors cannot disagree on a default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace fuseplan {

/// Slice: in[axis] = start[axis] + out[axis] * step[axis] for every axis.
struct SliceParams {
  std::vector<int64_t> start, step;
};
SliceParams slice_params(const Primitive& p, int rank);

/// Pad: out[axis] - begin[axis] is the input coordinate. mode: 0 constant,
/// 1 reflect, 2 edge.
struct PadParams {
  std::vector<int64_t> begin;
  int mode = 0;
  double value = 0;
};
PadParams pad_params(const Primitive& p, int rank);

/// Resize: per-axis scales (out/in when the attr is absent); mode codes as in
/// fprt::resize_src / fprt::resize_nearest.
struct ResizeParams {
  std::vector<float> scales;
  bool linear = false;
  int coord_mode = 0;
  int nearest_mode = 0;
};
ResizeParams resize_params(const Primitive& p, const std::vector<int64_t>& in_shape,
                           const std::vector<int64_t>& out_shape);

/// Conv / ConvTranspose / pooling window over `spatial` axes (defaults:
/// strides 1, pads 0, dilations 1, group 1).
struct WindowParams {
  std::vector<int64_t> kernel, strides, pads, dilations;
  int64_t group = 1;
};
WindowParams window_params(const Primitive& p, int spatial);

/// Reduction axes, sorted (all axes when the attr is empty); GlobalAveragePool
/// and GlobalMaxPool reduce axes 2.. with keepdims.
struct ReduceParams {
  std::vector<int> axes;
  bool keepdims = true;
  std::string kind;  // "sum", "mean", "max", "min", "prod"
};
bool is_reduce_op(const std::string& op);
ReduceParams reduce_params(const Primitive& p, int in_rank);

/// A scalar (elementwise/broadcast) primitive: the fprt function that computes
/// it and the extra float attributes passed after the operands.
struct ScalarOp {
  std::string fn;              // e.g. "fprt::leaky_relu", "+", "std::exp"
  bool infix = false;          // fn is a C operator between the two operands
  std::vector<double> extra;   // attribute arguments (cast to the value type)
  bool bool_result = false;    // comparisons and logic ops
};
/// True when `op` is computed per element from its operands at the same
/// (broadcast) index: unary, binary, Where, Cast, Q/DQ excluded.
bool is_scalar_op(const std::string& op);
ScalarOp scalar_op(const Primitive& p);

/// Ops the backends compute with one whole-tensor fprt routine.
bool is_library_op(const Primitive& p);

/// Row-major strides of a shape.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);

}  // namespace fuseplan
