// Op class of each primitive (docs/ir.md): after TVM op patterns and
// DNNFusion mapping types.
#include <unordered_set>

#include "graph/import_internal.h"

namespace fuseplan::detail {

OpClass classify(const Primitive& p, const std::vector<const TensorType*>& operands) {
  static const std::unordered_set<std::string> pointwise = {
      "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Erf", "Ceil", "Floor",
      "Round", "Not", "Sin", "Cos", "Softplus", "Sign", "Cast", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish",
      "Elu", "Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Mod", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "And", "Or", "Xor", "Where", "QuantizeLinear", "DequantizeLinear", "PRelu", "Selu",
      "Softsign", "IsNaN", "IsInf", "Tan", "Mish", "Celu"};
  static const std::unordered_set<std::string> injective = {"Slice", "Concat", "Pad", "Expand", "Tile", "Resize",
                                                            "DepthToSpace", "SpaceToDepth"};
  static const std::unordered_set<std::string> reduction = {
      "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "MaxPool", "AveragePool",
      "GlobalAveragePool", "GlobalMaxPool", "ArgMax", "ArgMin", "LpPool", "GlobalLpPool"};
  const std::string& op = p.op;
  if (op == "Input" || op == "Weight" || op == "Constant") return OpClass::source;
  if (!p.out.known) return OpClass::opaque;
  if (pointwise.count(op)) {
    for (const TensorType* t : operands)
      if (t->shape != p.out.shape) return OpClass::broadcast;
    return OpClass::elementwise;
  }
  if (op == "OneHot") return OpClass::broadcast;
  if (op == "Identity" || op == "Reshape") return OpClass::reshape;
  if (injective.count(op)) return OpClass::injective;
  if (op == "Transpose") {
    auto perm = p.attr_ints("perm");
    return !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1 ? OpClass::injective
                                                                                  : OpClass::layout;
  }
  if (reduction.count(op)) return OpClass::reduction;
  if (op == "Gather" || op == "GatherElements" || op == "GatherND") return OpClass::gather;
  if (op == "ScatterND" || op == "ScatterElements") return OpClass::scatter;
  if (op == "CumSum") return OpClass::scan;
  if (op == "MatMul" || op == "Conv" || op == "ConvTranspose") return OpClass::contraction;
  return OpClass::opaque;
}

}  // namespace fuseplan::detail
