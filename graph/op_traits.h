// The op-traits table: one row per op of graph/op.h holding what every stage
// needs to know about an op (its class as a primitive, TVM op pattern,
// FLOP-equivalents per element, libm routine, reduction, library routine,
// control flow, scalar function). Stages ask it through traits(p) or a
// switch over p.kind, never by comparing op names. docs/ir.md is the
// contract for the ops themselves; graph/README.md says how to add one.
#pragma once

#include <span>
#include <vector>
#include <string_view>

#include "graph/graph.h"

namespace fuseplan {

/// TVM's op pattern (include/tvm/relay/op_attr_types.h, TOpPattern), with
/// TVM's numeric values: fusion rules compare patterns by order.
enum class TvmPattern : int {
  elemwise = 0,
  broadcast = 1,
  injective = 2,
  comm_reduce = 3,
  out_ewise_fusable = 4,
  opaque = 8
};

/// The math routine the CPU backend calls for a transcendental op (float:
/// libfuseplan_vmath's SLEEF routines, vectorised where the loop allows;
/// emit/cpu/vmath.h). Sigmoid, Elu and Softplus call exp (fprt::exp_).
enum class LibmRoutine { none, exp, erf, tanh, log, sin_cos, pow };
std::string_view to_string(LibmRoutine r);  // "exp", ..., "" for none

/// What a reduce op accumulates over its axes (docs/ir.md "Reduction").
enum class ReduceKind { none, sum, mean, max, min, prod };
std::string_view to_string(ReduceKind k);  // "sum", ..., "" for none

/// The function an elementwise op is computed with, per element, by both
/// backends and the reference executor (emit/cpu/runtime.h `fprt`): `fn`
/// is an fprt or std function, or a C operator between the two operands
/// (`infix`), "!" for Not, "?:" for Where and "" for Identity (the operand
/// itself). nullptr: not a scalar op.
struct ScalarFn {
  const char* fn = nullptr;
  bool infix = false;
  bool bool_result = false;  // comparisons and logic ops
};

/// One row of the table. Units: `flops` in FLOP-equivalents (one FP32
/// add/mul/FMA issue slot) per output element.
struct OpTraits {
  Op op = Op::unknown;
  std::string_view name;  // the primitive's `op` / the ONNX op type
  /// Class as a primitive (docs/ir.md). Shape-dependent for two kinds of
  /// row, which classify() refines: `elementwise` rows are
  /// `broadcast` when an operand is broadcast to the output; Transpose
  /// (`layout`) is `injective` when the last axis stays last. Rows for ops
  /// that never become a primitive of their name are `opaque`.
  OpClass op_class = OpClass::opaque;
  /// TVM's pattern for the op (search/strategies/tvm.cpp; `broadcast` for an
  /// elementwise row whose primitive is class broadcast).
  TvmPattern tvm = TvmPattern::opaque;
  /// FLOP-equivalents per output element of an elementwise/broadcast
  /// primitive (costmodel/flops.cpp prices the other classes from shapes).
  /// Estimates from throughput relative to an FMA: CUDA C Programming Guide
  /// "Arithmetic Instructions" (SFU functions 4-8x an FMA), Agner Fog's
  /// instruction tables (divide 5-10x a multiply), glibc/SLEEF libm
  /// polynomials (expf/logf 10-15 FMAs, erff/tanhf 15-25); an op without an
  /// estimate counts as one arithmetic op. Calibration corrects them (e_cmp).
  double flops = 1;
  LibmRoutine libm = LibmRoutine::none;  // none: not transcendental
  ReduceKind reduce = ReduceKind::none;  // none: not a reduce op (pooling windows are not)
  /// Computed by one whole-tensor fprt routine (GEMM, conv, conv-transpose,
  /// pooling, cumsum, scatter, gather-nd) by both backends and the
  /// reference executor. Resize is one too when linear (is_library_op,
  /// graph/op_attrs.h).
  bool library = false;
  bool control_flow = false;  // carries a subgraph (If, Loop, Scan)
  ScalarFn scalar;

  /// Whether the op is a transcendental function (a libm call on the CPU).
  bool transcendental() const { return libm != LibmRoutine::none; }
  bool is_reduce() const { return reduce != ReduceKind::none; }
  /// Computed per element from its operands at the same (broadcast) index:
  /// unary, binary, Where and Identity (Cast and Q/DQ are not).
  bool is_scalar() const { return scalar.fn != nullptr; }
};

/// The row of `op`.
const OpTraits& traits(Op op);
inline const OpTraits& traits(const Primitive& p) { return traits(p.kind); }
/// Every row, in enum order (row k is Op k).
std::span<const OpTraits> op_table();

/// The class of primitive `p` (docs/ir.md) whose operands have the types
/// `operands`, in operand order: its row's class, `broadcast` for an
/// elementwise row with an operand of another shape than p.out, `injective`
/// for a Transpose that keeps the last axis last; `opaque` for any op but
/// a source when p.out is not known.
OpClass classify(const Primitive& p, const std::vector<const TensorType*>& operands);
/// TVM's op pattern of `p` (after its class, set by classify): `opaque` for
/// class opaque, `broadcast` for class broadcast, else its row's pattern.
TvmPattern tvm_pattern(const Primitive& p);

}  // namespace fuseplan
