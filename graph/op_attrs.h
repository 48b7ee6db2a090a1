// Decoded attributes of primitives, shared by every executor of the IR (the
// reference executor in exec/, the CPU and CUDA emitters in emit/): one
// place that turns docs/ir.md attributes into per-axis arrays with
// defaults, so the executors cannot disagree on a default. Errors: Error
// (exit 2) for an attribute out of range or a mode no executor supports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/op_traits.h"

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
  ReduceKind kind = ReduceKind::none;  // traits(p).reduce
};
/// p must be a reduce op (traits(p).is_reduce()); FUSEPLAN_ASSERT otherwise.
ReduceParams reduce_params(const Primitive& p, int in_rank);

/// The canonical order of a CPU reduction (docs/numerics.md, "Reductions"),
/// which the reference executor and every emitted kernel follow: a float or
/// double reduction whose last reduced axis has a length that is a multiple
/// of kReduceLanes keeps kReduceLanes partial results, lane l folding, in
/// row-major order, the elements whose last reduced coordinate is l modulo
/// kReduceLanes; the lanes then fold pairwise (h = 8, 4, 2, 1: lane l takes
/// lane l + h; fprt::fold_lanes), and a mean divides once at the end. Any
/// other reduction folds its elements one by one in row-major order (one
/// lane). 16: one AVX-512 vector of floats, two AVX2 ones; fixed for every
/// host so that the order, and the bits, do not depend on the ISA. The
/// lanes are independent chains a compiler may vectorise without
/// reassociating anything: a 512-float row sum took 19 ms per 25M elements
/// one by one and 3.6 ms in 16 lanes (one Zen 4 thread, memory-bound).
inline constexpr int64_t kReduceLanes = 16;
/// kReduceLanes or 1 for reduction `rp` of an input of shape `in_shape` and
/// dtype `t`.
int64_t reduce_lanes(const ReduceParams& rp, const std::vector<int64_t>& in_shape, DType t);
/// The `kind` argument of fprt::fold_lanes for a reduction of kind k: 0 sum
/// or mean, 1 prod, 2 max, 3 min.
inline int fold_lanes_kind(ReduceKind k) {
  return k == ReduceKind::prod ? 1 : k == ReduceKind::max ? 2 : k == ReduceKind::min ? 3 : 0;
}

/// A scalar (elementwise/broadcast) primitive: the fprt function that computes
/// it (traits(p).scalar) and the extra float attributes passed after the operands.
struct ScalarOp {
  std::string fn;              // e.g. "fprt::leaky_relu", "+", "std::exp"
  bool infix = false;          // fn is a C operator between the two operands
  std::vector<double> extra;   // attribute arguments (cast to the value type)
  bool bool_result = false;    // comparisons and logic ops
};
/// Throws Error when p is not a scalar op (traits(p).is_scalar()).
ScalarOp scalar_op(const Primitive& p);

/// Ops the backends compute with one whole-tensor fprt routine:
/// traits(p).library, and Resize when its mode is linear.
bool is_library_op(const Primitive& p);

/// Element i of constant data `d` as a T: the conversion every executor
/// applies (exec/'s source buffers, the backends' immediates), so a value
/// compiled into a kernel has the bits of the buffer it replaces.
template <class T>
T const_element(const ConstData& d, int64_t i) {
  if (d.fill) return static_cast<T>(*d.fill);
  if (!d.f32.empty()) return static_cast<T>(d.f32[static_cast<std::size_t>(i)]);
  return static_cast<T>(d.i64[static_cast<std::size_t>(i)]);
}

/// Scalar constants are immediates: a one-element source whose value the
/// model holds (a Constant or an initializer with data, never a graph input
/// or a weight fed at run time), of a dtype the executors hold (f32, f64,
/// i64, i32, i8, u8, bool). The backends compile its value into every kernel
/// that reads it inline (emit/kernel_plan.h `immediate_literal`), and the
/// cost model charges those kernels no bytes for it (costmodel/features.cpp).
bool is_immediate(const Primitive& p);
/// Whether `consumer` reads its operand `operand` as an immediate: the
/// operand is one (is_immediate) and the consumer inlines its operands'
/// values (any op but a library routine, is_library_op, which reads whole
/// buffers). The one answer both the cost model and the emitters ask.
bool reads_as_immediate(const Primitive& consumer, const Primitive& operand);

/// Pow with a small integer exponent is multiplies: a float Pow whose
/// exponent operand is an immediate 2 or 3 is computed as x·x or (x·x)·x
/// (fprt::pow_ on the CPU, pow_ in emit/cuda/device_runtime.cpp), bit for bit
/// what ONNX Runtime 1.32 and PyTorch 2.15 return for it (checked over 2^20
/// random floats), and without the libm pow call. The multiplies per
/// element (1 or 2), or 0 for any other Pow or op. The cost model prices
/// such a Pow as that many FLOPs and no transcendental.
int pow_multiplies(const Graph& g, NodeId n);

/// Whether the backends evaluate elementwise or broadcast node n with a
/// transcendental routine (traits(p).transcendental(): exp, erf, tanh, ...),
/// not a Pow computed as multiplies (pow_multiplies).
bool calls_transcendental(const Graph& g, NodeId n);

/// Row-major strides of a shape.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);

}  // namespace fuseplan
