// The op-traits table (graph/op_traits.h): one row per Op, in enum order
// (checked at compile time). A row names the op, its class and TVM pattern,
// then only the facts that differ from the defaults of OpTraits.
#include "graph/op_traits.h"

#include <array>
#include <iterator>
#include <string>
#include <unordered_map>

namespace fuseplan {

namespace {

using L = LibmRoutine;
using R = ReduceKind;
using T = TvmPattern;
using C = OpClass;

// A row under construction: row(...) sets the columns every op has, the
// members add the others.
struct Row {
  OpTraits t;
  constexpr Row flops(double f) const { Row r = *this; r.t.flops = f; return r; }
  constexpr Row libm(LibmRoutine l) const { Row r = *this; r.t.libm = l; return r; }
  constexpr Row reduce(ReduceKind k) const { Row r = *this; r.t.reduce = k; return r; }
  constexpr Row library() const { Row r = *this; r.t.library = true; return r; }
  constexpr Row control_flow() const { Row r = *this; r.t.control_flow = true; return r; }
  constexpr Row scalar(const char* fn, bool infix = false, bool boolean = false) const {
    Row r = *this;
    r.t.scalar = {fn, infix, boolean};
    return r;
  }
};

constexpr Row row(Op op, std::string_view name, OpClass c, TvmPattern p) {
  Row r;
  r.t.op = op;
  r.t.name = name;
  r.t.op_class = c;
  r.t.tvm = p;
  return r;
}
// An elementwise primitive (class broadcast when an operand is broadcast).
constexpr Row pointwise(Op op, std::string_view name) { return row(op, name, C::elementwise, T::elemwise); }
// An op that is opaque as a primitive (or never becomes one of its name).
constexpr Row opaque(Op op, std::string_view name) { return row(op, name, C::opaque, T::opaque); }

// FLOP-equivalents (flops) by the throughput ratios of op_traits.h:
// exp/log/sin/cos 8, sqrt 8, erf/tanh 16, div/rcp 4; composites add their parts.
constexpr Row kRows[] = {
    opaque(Op::unknown, "unknown"),
    // sources (docs/ir.md "Sources")
    row(Op::Input, "Input", C::source, T::opaque),
    row(Op::Weight, "Weight", C::source, T::opaque),
    row(Op::Constant, "Constant", C::source, T::opaque),
    // elementwise / broadcast
    pointwise(Op::Relu, "Relu").scalar("fprt::relu"),
    pointwise(Op::Sigmoid, "Sigmoid").flops(13).libm(L::exp).scalar("fprt::sigmoid"),  // exp + add + div
    pointwise(Op::Tanh, "Tanh").flops(16).libm(L::tanh).scalar("fprt::tanh_"),  // libdevice / libm polynomial
    pointwise(Op::Exp, "Exp").flops(8).libm(L::exp).scalar("fprt::exp_"),     // SFU / libm polynomial
    pointwise(Op::Log, "Log").flops(8).libm(L::log).scalar("fprt::log_"),
    pointwise(Op::Sqrt, "Sqrt").flops(8).scalar("std::sqrt"),                // SFU rsqrt + refinement; a vector instruction
    pointwise(Op::Reciprocal, "Reciprocal").flops(4).scalar("fprt::reciprocal"),  // as Div
    pointwise(Op::Neg, "Neg").scalar("fprt::neg"),
    pointwise(Op::Abs, "Abs").scalar("fprt::abs_"),
    pointwise(Op::Erf, "Erf").flops(16).libm(L::erf).scalar("fprt::erf_"),  // libdevice / libm polynomial
    pointwise(Op::Ceil, "Ceil").scalar("std::ceil"),
    pointwise(Op::Floor, "Floor").scalar("std::floor"),
    pointwise(Op::Round, "Round").scalar("fprt::round_"),
    pointwise(Op::Not, "Not").scalar("!", false, true),
    pointwise(Op::Sin, "Sin").flops(8).libm(L::sin_cos).scalar("fprt::sin_"),
    pointwise(Op::Cos, "Cos").flops(8).libm(L::sin_cos).scalar("fprt::cos_"),
    pointwise(Op::Tan, "Tan"),
    pointwise(Op::Softplus, "Softplus").flops(17).libm(L::exp).scalar("fprt::softplus"),  // log(1 + exp)
    pointwise(Op::Softsign, "Softsign"),
    pointwise(Op::Sign, "Sign").scalar("fprt::sign"),
    pointwise(Op::Cast, "Cast"),
    pointwise(Op::LeakyRelu, "LeakyRelu").flops(2).scalar("fprt::leaky_relu"),       // compare + mul (select)
    pointwise(Op::Clip, "Clip").flops(2).scalar("fprt::clip"),                       // min + max
    pointwise(Op::HardSigmoid, "HardSigmoid").flops(3).scalar("fprt::hard_sigmoid"),  // fma + clamp
    pointwise(Op::HardSwish, "HardSwish").flops(4).scalar("fprt::hard_swish"),       // hard-sigmoid + mul
    pointwise(Op::Elu, "Elu").flops(10).libm(L::exp).scalar("fprt::elu"),            // exp + sub + select
    pointwise(Op::Selu, "Selu"),
    pointwise(Op::Celu, "Celu"),
    pointwise(Op::Mish, "Mish"),
    pointwise(Op::IsNaN, "IsNaN"),
    pointwise(Op::IsInf, "IsInf"),
    pointwise(Op::Add, "Add").scalar("+", true),
    pointwise(Op::Sub, "Sub").scalar("-", true),
    pointwise(Op::Mul, "Mul").scalar("*", true),
    pointwise(Op::Div, "Div").flops(4).scalar("fprt::div_"),  // rcp (SFU) + Newton FMAs; a vector instruction
    pointwise(Op::Pow, "Pow").flops(20).libm(L::pow).scalar("fprt::pow_"),  // log + mul + exp
    pointwise(Op::Min, "Min").scalar("fprt::min_"),
    pointwise(Op::Max, "Max").scalar("fprt::max_"),
    pointwise(Op::Mod, "Mod").flops(6).scalar("fprt::mod_"),  // div + trunc + fma
    pointwise(Op::Equal, "Equal").scalar("==", true, true),
    pointwise(Op::Less, "Less").scalar("<", true, true),
    pointwise(Op::Greater, "Greater").scalar(">", true, true),
    pointwise(Op::LessOrEqual, "LessOrEqual").scalar("<=", true, true),
    pointwise(Op::GreaterOrEqual, "GreaterOrEqual").scalar(">=", true, true),
    pointwise(Op::And, "And").scalar("&&", true, true),
    pointwise(Op::Or, "Or").scalar("||", true, true),
    pointwise(Op::Xor, "Xor").scalar("!=", true, true),
    pointwise(Op::PRelu, "PRelu"),
    pointwise(Op::Where, "Where").scalar("?:"),
    pointwise(Op::QuantizeLinear, "QuantizeLinear").flops(8),    // div + round + add + clamp
    pointwise(Op::DequantizeLinear, "DequantizeLinear").flops(2),  // sub + mul
    row(Op::OneHot, "OneHot", C::broadcast, T::broadcast),
    // reshape, injective, layout
    row(Op::Identity, "Identity", C::reshape, T::injective).scalar(""),
    row(Op::Reshape, "Reshape", C::reshape, T::injective),
    row(Op::Slice, "Slice", C::injective, T::injective),
    row(Op::Concat, "Concat", C::injective, T::injective),
    row(Op::Pad, "Pad", C::injective, T::injective),
    row(Op::Expand, "Expand", C::injective, T::injective),
    row(Op::Tile, "Tile", C::injective, T::injective),
    row(Op::Resize, "Resize", C::injective, T::injective),
    row(Op::DepthToSpace, "DepthToSpace", C::injective, T::injective),
    row(Op::SpaceToDepth, "SpaceToDepth", C::injective, T::injective),
    row(Op::Transpose, "Transpose", C::layout, T::injective),  // TVM's transpose is injective
    // reductions and pooling
    row(Op::ReduceSum, "ReduceSum", C::reduction, T::comm_reduce).reduce(R::sum),
    row(Op::ReduceMean, "ReduceMean", C::reduction, T::comm_reduce).reduce(R::mean),
    row(Op::ReduceMax, "ReduceMax", C::reduction, T::comm_reduce).reduce(R::max),
    row(Op::ReduceMin, "ReduceMin", C::reduction, T::comm_reduce).reduce(R::min),
    row(Op::ReduceProd, "ReduceProd", C::reduction, T::comm_reduce).reduce(R::prod),
    row(Op::GlobalAveragePool, "GlobalAveragePool", C::reduction, T::out_ewise_fusable).reduce(R::mean),
    row(Op::GlobalMaxPool, "GlobalMaxPool", C::reduction, T::out_ewise_fusable).reduce(R::max),
    row(Op::MaxPool, "MaxPool", C::reduction, T::out_ewise_fusable).library(),
    row(Op::AveragePool, "AveragePool", C::reduction, T::out_ewise_fusable).library(),
    row(Op::LpPool, "LpPool", C::reduction, T::comm_reduce),
    row(Op::GlobalLpPool, "GlobalLpPool", C::reduction, T::comm_reduce),
    row(Op::ArgMax, "ArgMax", C::reduction, T::comm_reduce),
    row(Op::ArgMin, "ArgMin", C::reduction, T::comm_reduce),
    // gather, scatter, scan
    row(Op::Gather, "Gather", C::gather, T::injective),  // TVM's take is injective
    row(Op::GatherElements, "GatherElements", C::gather, T::injective),
    row(Op::GatherND, "GatherND", C::gather, T::injective).library(),
    row(Op::ScatterND, "ScatterND", C::scatter, T::opaque).library(),
    row(Op::ScatterElements, "ScatterElements", C::scatter, T::opaque).library(),
    row(Op::CumSum, "CumSum", C::scan, T::opaque).library(),
    // contractions
    row(Op::MatMul, "MatMul", C::contraction, T::out_ewise_fusable).library(),
    row(Op::Conv, "Conv", C::contraction, T::out_ewise_fusable).library(),
    row(Op::ConvTranspose, "ConvTranspose", C::contraction, T::out_ewise_fusable).library(),
    // ONNX ops that never become a primitive of their own name
    opaque(Op::ReduceL1, "ReduceL1"),
    opaque(Op::ReduceL2, "ReduceL2"),
    opaque(Op::ReduceLogSum, "ReduceLogSum"),
    opaque(Op::ReduceLogSumExp, "ReduceLogSumExp"),
    opaque(Op::ReduceSumSquare, "ReduceSumSquare"),
    opaque(Op::Softmax, "Softmax"),
    opaque(Op::LogSoftmax, "LogSoftmax"),
    opaque(Op::LayerNormalization, "LayerNormalization"),
    opaque(Op::InstanceNormalization, "InstanceNormalization"),
    opaque(Op::BatchNormalization, "BatchNormalization"),
    opaque(Op::Gelu, "Gelu"),
    opaque(Op::Gemm, "Gemm"),
    opaque(Op::Sum, "Sum"),
    opaque(Op::Mean, "Mean"),
    opaque(Op::Split, "Split"),
    opaque(Op::Upsample, "Upsample"),
    opaque(Op::Dropout, "Dropout"),
    opaque(Op::Flatten, "Flatten"),
    opaque(Op::Squeeze, "Squeeze"),
    opaque(Op::Unsqueeze, "Unsqueeze"),
    opaque(Op::Scatter, "Scatter"),
    opaque(Op::Shape, "Shape"),
    opaque(Op::Size, "Size"),
    opaque(Op::ConstantOfShape, "ConstantOfShape"),
    opaque(Op::Range, "Range"),
    opaque(Op::NonZero, "NonZero"),
    opaque(Op::NonMaxSuppression, "NonMaxSuppression"),
    opaque(Op::TopK, "TopK"),
    opaque(Op::If, "If").control_flow(),
    opaque(Op::Loop, "Loop").control_flow(),
    opaque(Op::Scan, "Scan").control_flow(),
    opaque(Op::CastLike, "CastLike"),
    opaque(Op::MatMulInteger, "MatMulInteger"),
    opaque(Op::Asin, "Asin"),
    opaque(Op::Acos, "Acos"),
    opaque(Op::Atan, "Atan"),
    opaque(Op::Sinh, "Sinh"),
    opaque(Op::Cosh, "Cosh"),
    opaque(Op::LRN, "LRN"),
    opaque(Op::Shrink, "Shrink"),
    opaque(Op::ThresholdedRelu, "ThresholdedRelu"),
    opaque(Op::MeanVarianceNormalization, "MeanVarianceNormalization"),
    opaque(Op::Trilu, "Trilu"),
    opaque(Op::Hardmax, "Hardmax"),
    opaque(Op::BitShift, "BitShift"),
    // com.microsoft contrib ops
    opaque(Op::MsFastGelu, "com.microsoft:FastGelu"),
    opaque(Op::MsGelu, "com.microsoft:Gelu"),
    opaque(Op::MsBiasGelu, "com.microsoft:BiasGelu"),
    opaque(Op::MsQuickGelu, "com.microsoft:QuickGelu"),
    opaque(Op::MsSkipLayerNormalization, "com.microsoft:SkipLayerNormalization"),
    opaque(Op::MsSkipSimplifiedLayerNormalization, "com.microsoft:SkipSimplifiedLayerNormalization"),
    opaque(Op::MsEmbedLayerNormalization, "com.microsoft:EmbedLayerNormalization"),
    opaque(Op::MsAttention, "com.microsoft:Attention"),
};

constexpr auto kTable = [] {
  std::array<OpTraits, std::size(kRows)> a{};
  for (std::size_t k = 0; k < a.size(); ++k) a[k] = kRows[k].t;
  return a;
}();

constexpr bool rows_in_enum_order() {
  for (std::size_t k = 0; k < kTable.size(); ++k)
    if (static_cast<std::size_t>(kTable[k].op) != k) return false;
  return true;
}
static_assert(kTable.size() == kNumOps, "the op-traits table has one row per Op");
static_assert(rows_in_enum_order(), "row k of the op-traits table is Op k");

}  // namespace

const OpTraits& traits(Op op) {
  const auto k = static_cast<std::size_t>(op);
  FUSEPLAN_ASSERT(k < kTable.size(), "Op " + std::to_string(k) + " has no row in the op-traits table");
  return kTable[k];
}

std::span<const OpTraits> op_table() { return kTable; }

Op op_from_name(std::string_view name) {
  static const std::unordered_map<std::string_view, Op> by_name = [] {
    std::unordered_map<std::string_view, Op> m;
    for (const OpTraits& t : kTable) m.emplace(t.name, t.op);
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? Op::unknown : it->second;
}

std::string_view op_name(Op op) { return traits(op).name; }

OpClass classify(const Primitive& p, const std::vector<const TensorType*>& operands) {
  const OpClass c = traits(p).op_class;
  if (c == OpClass::source) return OpClass::source;
  if (!p.out.known) return OpClass::opaque;
  if (c == OpClass::elementwise) {
    for (const TensorType* t : operands)
      if (t->shape != p.out.shape) return OpClass::broadcast;
    return OpClass::elementwise;
  }
  if (p.kind == Op::Transpose) {
    auto perm = p.attr_ints("perm");
    return !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1 ? OpClass::injective
                                                                                  : OpClass::layout;
  }
  return c;
}

TvmPattern tvm_pattern(const Primitive& p) {
  if (p.op_class == OpClass::opaque) return TvmPattern::opaque;  // includes every op of unknown shape
  if (p.op_class == OpClass::broadcast) return TvmPattern::broadcast;
  return traits(p).tvm;
}

std::string_view to_string(LibmRoutine r) {
  switch (r) {
    case LibmRoutine::none: return "";
    case LibmRoutine::exp: return "exp";
    case LibmRoutine::erf: return "erf";
    case LibmRoutine::tanh: return "tanh";
    case LibmRoutine::log: return "log";
    case LibmRoutine::sin_cos: return "sin_cos";
    case LibmRoutine::pow: return "pow";
  }
  return "";
}

std::string_view to_string(ReduceKind k) {
  switch (k) {
    case ReduceKind::none: return "";
    case ReduceKind::sum: return "sum";
    case ReduceKind::mean: return "mean";
    case ReduceKind::max: return "max";
    case ReduceKind::min: return "min";
    case ReduceKind::prod: return "prod";
  }
  return "";
}

}  // namespace fuseplan
