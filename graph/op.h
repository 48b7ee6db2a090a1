// The ops fuseplan knows by name: every primitive op of docs/ir.md and every
// ONNX op the importer dispatches on (shape inference, folding, lowering,
// decomposition), as one enum. A name is resolved once, where it enters
// (Graph::add_node for a primitive's `op`, the importer for an ONNX node's
// op type); every stage after that compares enums. The facts about each op
// are the table in graph/op_traits.h.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace fuseplan {

/// One enumerator per row of the op-traits table (graph/op_traits.cpp), in
/// the table's order. Enumerators are the ONNX op type, except the
/// com.microsoft contrib ops (`Ms` + op type, named "com.microsoft:<op>").
/// `unknown` is every other name: an op fuseplan imports as opaque.
enum class Op : uint8_t {
  unknown,
  // sources
  Input, Weight, Constant,
  // elementwise / broadcast primitives
  Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Reciprocal, Neg, Abs, Erf, Ceil, Floor, Round, Not, Sin, Cos, Tan,
  Softplus, Softsign, Sign, Cast, LeakyRelu, Clip, HardSigmoid, HardSwish, Elu, Selu, Celu, Mish, IsNaN, IsInf,
  Add, Sub, Mul, Div, Pow, Min, Max, Mod, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor,
  PRelu, Where, QuantizeLinear, DequantizeLinear, OneHot,
  // reshape, injective, layout
  Identity, Reshape, Slice, Concat, Pad, Expand, Tile, Resize, DepthToSpace, SpaceToDepth, Transpose,
  // reductions and pooling
  ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, GlobalAveragePool, GlobalMaxPool, MaxPool, AveragePool,
  LpPool, GlobalLpPool, ArgMax, ArgMin,
  // gather, scatter, scan
  Gather, GatherElements, GatherND, ScatterND, ScatterElements, CumSum,
  // contractions
  MatMul, Conv, ConvTranspose,
  // ONNX ops that never become a primitive of their own name: decomposed,
  // folded, lowered to another op, or opaque
  ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare, Softmax, LogSoftmax, LayerNormalization,
  InstanceNormalization, BatchNormalization, Gelu, Gemm, Sum, Mean, Split, Upsample, Dropout, Flatten, Squeeze,
  Unsqueeze, Scatter, Shape, Size, ConstantOfShape, Range, NonZero, NonMaxSuppression, TopK, If, Loop, Scan,
  CastLike, MatMulInteger, Asin, Acos, Atan, Sinh, Cosh, LRN, Shrink, ThresholdedRelu, MeanVarianceNormalization,
  Trilu, Hardmax, BitShift,
  // com.microsoft contrib ops with inferred shapes (opaque primitives)
  MsFastGelu, MsGelu, MsBiasGelu, MsQuickGelu, MsSkipLayerNormalization, MsSkipSimplifiedLayerNormalization,
  MsEmbedLayerNormalization, MsAttention,
};

/// Number of enumerators (rows of the op-traits table).
inline constexpr int kNumOps = static_cast<int>(Op::MsAttention) + 1;

/// The op named `name` ("Add", "com.microsoft:Attention"); Op::unknown for
/// any name not in the table (never an error).
Op op_from_name(std::string_view name);
/// The table's name of `op` ("unknown" for Op::unknown).
std::string_view op_name(Op op);

/// Whether `op` is one of `ops`.
constexpr bool one_of(Op op, std::initializer_list<Op> ops) {
  for (Op o : ops)
    if (o == op) return true;
  return false;
}

}  // namespace fuseplan
