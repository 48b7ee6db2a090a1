// The op-traits table (graph/op_traits.h): every row's name resolves to its
// own enumerator, and for every op the table answers what the per-stage
// predicates it replaced answered. Each `Old*` below is one of those
// predicates as it read before the table (graph/classify.cpp's lists,
// search/legality.cpp is_control_flow_op, search/strategies/tvm.cpp
// is_pooling/op_pattern, costmodel/flops.cpp kElementwise, kTranscendental
// and libm_routine, emit/op_attrs.cpp is_reduce_op, reduce kinds,
// is_library_op and the scalar table), kept here as the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/op_attrs.h"
#include "graph/op_traits.h"

namespace fuseplan {
namespace {

// ---- the replaced predicates, by op name

OpClass OldClassify(const Primitive& p, const std::vector<const TensorType*>& operands) {
  static const std::set<std::string> pointwise = {
      "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Erf", "Ceil", "Floor",
      "Round", "Not", "Sin", "Cos", "Softplus", "Sign", "Cast", "LeakyRelu", "Clip", "HardSigmoid", "HardSwish",
      "Elu", "Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "Mod", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "And", "Or", "Xor", "Where", "QuantizeLinear", "DequantizeLinear", "PRelu", "Selu",
      "Softsign", "IsNaN", "IsInf", "Tan", "Mish", "Celu"};
  static const std::set<std::string> injective = {"Slice", "Concat", "Pad", "Expand", "Tile", "Resize",
                                                  "DepthToSpace", "SpaceToDepth"};
  static const std::set<std::string> reduction = {
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

bool OldIsControlFlow(const std::string& op) { return op == "If" || op == "Loop" || op == "Scan"; }

bool OldIsPooling(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool";
}

TvmPattern OldTvmPattern(const Primitive& p) {
  switch (p.op_class) {
    case OpClass::elementwise: return TvmPattern::elemwise;
    case OpClass::broadcast: return TvmPattern::broadcast;
    case OpClass::reshape:
    case OpClass::injective:
    case OpClass::layout:
    case OpClass::gather: return TvmPattern::injective;
    case OpClass::reduction: return OldIsPooling(p.op) ? TvmPattern::out_ewise_fusable : TvmPattern::comm_reduce;
    case OpClass::contraction: return TvmPattern::out_ewise_fusable;
    default: return TvmPattern::opaque;
  }
}

double OldFlopsPerElem(const std::string& op) {
  static const std::map<std::string, double> t = {
      {"Add", 1}, {"Sub", 1}, {"Mul", 1}, {"Neg", 1}, {"Abs", 1}, {"Relu", 1}, {"Min", 1}, {"Max", 1},
      {"Sign", 1}, {"Ceil", 1}, {"Floor", 1}, {"Round", 1}, {"Cast", 1}, {"Not", 1}, {"And", 1}, {"Or", 1},
      {"Xor", 1}, {"Where", 1}, {"Equal", 1}, {"Less", 1}, {"Greater", 1}, {"LessOrEqual", 1},
      {"GreaterOrEqual", 1}, {"OneHot", 1}, {"Clip", 2}, {"LeakyRelu", 2}, {"HardSigmoid", 3}, {"HardSwish", 4},
      {"DequantizeLinear", 2}, {"Div", 4}, {"Reciprocal", 4}, {"Mod", 6}, {"QuantizeLinear", 8}, {"Sqrt", 8},
      {"Exp", 8}, {"Log", 8}, {"Sin", 8}, {"Cos", 8}, {"Elu", 10}, {"Sigmoid", 13}, {"Erf", 16}, {"Tanh", 16},
      {"Softplus", 17}, {"Pow", 20}};
  auto it = t.find(op);
  return it == t.end() ? 1 : it->second;
}

bool OldIsTranscendental(const std::string& op) {
  static const std::set<std::string> t = {"Exp", "Log", "Sin", "Cos", "Tanh", "Erf", "Sigmoid", "Softplus", "Elu", "Pow"};
  return t.count(op) > 0;
}

std::string OldLibmRoutine(const std::string& op) {
  if (op == "Erf") return "erf";
  if (op == "Tanh") return "tanh";
  if (op == "Log") return "log";
  if (op == "Sin" || op == "Cos") return "sin_cos";
  if (op == "Pow") return "pow";
  return "exp";
}

std::string OldReduceKind(const std::string& op) {  // "" when not is_reduce_op
  static const std::map<std::string, std::string> kinds = {
      {"ReduceSum", "sum"}, {"ReduceMean", "mean"}, {"ReduceMax", "max"}, {"ReduceMin", "min"},
      {"ReduceProd", "prod"}, {"GlobalAveragePool", "mean"}, {"GlobalMaxPool", "max"}};
  auto it = kinds.find(op);
  return it == kinds.end() ? "" : it->second;
}

bool OldIsLibrary(const Primitive& p) {
  static const char* ops[] = {"MatMul", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "CumSum",
                              "ScatterND", "ScatterElements", "GatherND"};
  for (const char* o : ops)
    if (p.op == o) return true;
  return p.op == "Resize" && p.attr_string("mode", "nearest") == "linear";
}

struct OldScalar {
  std::string fn;
  bool infix, boolean;
};
const std::map<std::string, OldScalar>& OldScalarTable() {
  static const std::map<std::string, OldScalar> t = {
      {"Relu", {"fprt::relu", false, false}}, {"Sigmoid", {"fprt::sigmoid", false, false}},
      {"Tanh", {"fprt::tanh_", false, false}}, {"Exp", {"fprt::exp_", false, false}},
      {"Log", {"fprt::log_", false, false}}, {"Sqrt", {"std::sqrt", false, false}},
      {"Reciprocal", {"fprt::reciprocal", false, false}}, {"Neg", {"fprt::neg", false, false}},
      {"Abs", {"fprt::abs_", false, false}}, {"Erf", {"fprt::erf_", false, false}},
      {"Ceil", {"std::ceil", false, false}}, {"Floor", {"std::floor", false, false}},
      {"Round", {"fprt::round_", false, false}}, {"Not", {"!", false, true}},
      {"Sin", {"fprt::sin_", false, false}}, {"Cos", {"fprt::cos_", false, false}},
      {"Softplus", {"fprt::softplus", false, false}}, {"Sign", {"fprt::sign", false, false}},
      {"Identity", {"", false, false}}, {"LeakyRelu", {"fprt::leaky_relu", false, false}},
      {"Clip", {"fprt::clip", false, false}}, {"HardSigmoid", {"fprt::hard_sigmoid", false, false}},
      {"HardSwish", {"fprt::hard_swish", false, false}}, {"Elu", {"fprt::elu", false, false}},
      {"Add", {"+", true, false}}, {"Sub", {"-", true, false}},
      {"Mul", {"*", true, false}}, {"Div", {"fprt::div_", false, false}},
      {"Pow", {"fprt::pow_", false, false}}, {"Min", {"fprt::min_", false, false}},
      {"Max", {"fprt::max_", false, false}}, {"Mod", {"fprt::mod_", false, false}},
      {"Equal", {"==", true, true}}, {"Less", {"<", true, true}},
      {"Greater", {">", true, true}}, {"LessOrEqual", {"<=", true, true}},
      {"GreaterOrEqual", {">=", true, true}}, {"And", {"&&", true, true}},
      {"Or", {"||", true, true}}, {"Xor", {"!=", true, true}},
      {"Where", {"?:", false, false}}};
  return t;
}

// Every op name of the table, and names it does not hold.
std::vector<std::string> all_names() {
  std::vector<std::string> v;
  for (const OpTraits& t : op_table()) v.emplace_back(t.name);
  for (const char* other : {"Foo", "relu", "", "ReduceFoo", "com.example:Add", "ai.onnx.ml:TreeEnsembleClassifier"})
    v.emplace_back(other);
  return v;
}

Primitive prim(const std::string& op, std::vector<int64_t> shape, bool known = true) {
  Primitive p;
  p.name = "y";
  p.op = op;
  p.kind = op_from_name(op);
  p.out = TensorType{DType::f32, std::move(shape), known};
  return p;
}

// ---- the table itself

TEST(OpTraits, EveryRowRoundTripsThroughItsName) {
  ASSERT_EQ(op_table().size(), static_cast<std::size_t>(kNumOps));
  std::set<std::string_view> names;
  for (std::size_t k = 0; k < op_table().size(); ++k) {
    const OpTraits& t = op_table()[k];
    EXPECT_EQ(static_cast<std::size_t>(t.op), k) << t.name;
    EXPECT_EQ(op_from_name(t.name), t.op) << t.name;
    EXPECT_EQ(op_name(t.op), t.name);
    EXPECT_EQ(&traits(t.op), &t);
    EXPECT_TRUE(names.insert(t.name).second) << "two rows named " << t.name;
  }
  EXPECT_EQ(op_name(Op::Add), "Add");
  EXPECT_EQ(op_name(Op::MsAttention), "com.microsoft:Attention");
  EXPECT_EQ(op_from_name("com.microsoft:Attention"), Op::MsAttention);
  EXPECT_EQ(op_from_name("Attention"), Op::unknown);  // the default domain has none
}

TEST(OpTraits, AnUnknownNameIsOpaqueNotAnError) {
  for (const char* n : {"Foo", "relu", "", "ReduceFoo", "com.example:Add"}) {
    EXPECT_EQ(op_from_name(n), Op::unknown) << n;
    const OpTraits& t = traits(op_from_name(n));
    EXPECT_EQ(t.op_class, OpClass::opaque);
    EXPECT_EQ(t.tvm, TvmPattern::opaque);
    EXPECT_FALSE(t.transcendental() || t.is_reduce() || t.library || t.control_flow || t.is_scalar());
  }
}

TEST(OpTraits, ClassMatchesTheReplacedClassifier) {
  const TensorType same{DType::f32, {2, 3}}, row{DType::f32, {3}};
  for (const std::string& op : all_names()) {
    Primitive p = prim(op, {2, 3});
    EXPECT_EQ(classify(p, {&same, &same}), OldClassify(p, {&same, &same})) << op;
    EXPECT_EQ(classify(p, {&same, &row}), OldClassify(p, {&same, &row})) << op;  // a broadcast operand
    EXPECT_EQ(classify(p, {}), OldClassify(p, {})) << op;
    Primitive u = prim(op, {}, false);
    EXPECT_EQ(classify(u, {&same}), OldClassify(u, {&same})) << op;  // unknown shape
  }
  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{1, 0}, {0, 1}, {}}) {
    Primitive t = prim("Transpose", {3, 2});
    if (!perm.empty()) t.attrs["perm"] = perm;
    EXPECT_EQ(classify(t, {&same}), OldClassify(t, {&same}));
  }
  Primitive keep = prim("Transpose", {3, 2, 4});
  keep.attrs["perm"] = std::vector<int64_t>{1, 0, 2};
  EXPECT_EQ(classify(keep, {}), OpClass::injective);
  keep.attrs["perm"] = std::vector<int64_t>{2, 1, 0};
  EXPECT_EQ(classify(keep, {}), OpClass::layout);
}

TEST(OpTraits, TvmPatternMatchesTheReplacedOne) {
  const TensorType same{DType::f32, {2, 3}}, row{DType::f32, {3}};
  for (const std::string& op : all_names())
    for (const std::vector<const TensorType*>& ops : {std::vector<const TensorType*>{&same}, {&same, &row}}) {
      Primitive p = prim(op, {2, 3});
      p.op_class = classify(p, ops);
      EXPECT_EQ(tvm_pattern(p), OldTvmPattern(p)) << op << " " << to_string(p.op_class);
      Primitive u = prim(op, {}, false);
      u.op_class = classify(u, ops);
      EXPECT_EQ(tvm_pattern(u), OldTvmPattern(u)) << op;
    }
  EXPECT_EQ(traits(Op::MaxPool).tvm, TvmPattern::out_ewise_fusable);
  EXPECT_EQ(traits(Op::ReduceMax).tvm, TvmPattern::comm_reduce);
}

TEST(OpTraits, CostModelFactsMatchTheReplacedLists) {
  for (const std::string& op : all_names()) {
    const OpTraits& t = traits(op_from_name(op));
    EXPECT_EQ(t.flops, OldFlopsPerElem(op)) << op;
    EXPECT_EQ(t.transcendental(), OldIsTranscendental(op)) << op;
    if (OldIsTranscendental(op)) {
      EXPECT_EQ(to_string(t.libm), OldLibmRoutine(op)) << op;
    }
    EXPECT_EQ(t.control_flow, OldIsControlFlow(op)) << op;
  }
  EXPECT_EQ(traits(Op::Sigmoid).flops, 13);
  EXPECT_EQ(to_string(traits(Op::Softplus).libm), "exp");
  EXPECT_EQ(to_string(traits(Op::Cos).libm), "sin_cos");
  EXPECT_FALSE(traits(Op::Sqrt).transcendental());  // a vector instruction, not libm
}

TEST(OpTraits, ExecutorFactsMatchTheReplacedLists) {
  for (const std::string& op : all_names()) {
    const OpTraits& t = traits(op_from_name(op));
    EXPECT_EQ(std::string(to_string(t.reduce)), OldReduceKind(op)) << op;
    EXPECT_EQ(t.is_reduce(), !OldReduceKind(op).empty()) << op;
    for (const char* mode : {"nearest", "linear"}) {
      Primitive p = prim(op, {2, 3});
      p.attrs["mode"] = std::string(mode);
      EXPECT_EQ(is_library_op(p), OldIsLibrary(p)) << op << " " << mode;
    }
    auto it = OldScalarTable().find(op);
    ASSERT_EQ(t.is_scalar(), it != OldScalarTable().end()) << op;
    if (!t.is_scalar()) {
      EXPECT_THROW(scalar_op(prim(op, {2})), Error) << op;
      continue;
    }
    const ScalarOp s = scalar_op(prim(op, {2}));
    EXPECT_EQ(s.fn, it->second.fn) << op;
    EXPECT_EQ(s.infix, it->second.infix) << op;
    EXPECT_EQ(s.bool_result, it->second.boolean) << op;
  }
  Primitive clip = prim("Clip", {2});
  clip.attrs["min"] = 0.0;
  EXPECT_EQ(scalar_op(clip).extra, (std::vector<double>{0.0, INFINITY}));
  EXPECT_EQ(scalar_op(prim("LeakyRelu", {2})).extra, (std::vector<double>{0.01}));
  Primitive mod = prim("Mod", {2});
  mod.attrs["fmod"] = int64_t{1};
  EXPECT_EQ(scalar_op(mod).extra, (std::vector<double>{1.0}));
}

TEST(OpTraits, ReduceParamsTakeTheKindFromTheTable) {
  Primitive gap = prim("GlobalAveragePool", {1, 8, 1, 1});
  ReduceParams rp = reduce_params(gap, 4);
  EXPECT_EQ(rp.kind, ReduceKind::mean);
  EXPECT_EQ(rp.axes, (std::vector<int>{2, 3}));
  EXPECT_TRUE(rp.keepdims);
  Primitive mx = prim("ReduceMax", {2, 1});
  mx.attrs["axes"] = std::vector<int64_t>{-1};
  mx.attrs["keepdims"] = int64_t{0};
  rp = reduce_params(mx, 2);
  EXPECT_EQ(rp.kind, ReduceKind::max);
  EXPECT_EQ(rp.axes, (std::vector<int>{1}));
  EXPECT_FALSE(rp.keepdims);
  EXPECT_THROW(reduce_params(prim("Add", {2}), 1), InternalError);
}

// Graph::add_node resolves `kind` from `op`, and finalize() again after node_mut().
TEST(OpTraits, TheGraphResolvesEachNodesOp) {
  Graph g;
  Primitive x;
  x.name = "x";
  x.op = "Input";
  x.op_class = OpClass::source;
  x.out = {DType::f32, {4}};
  const NodeId a = g.add_node(x);
  Primitive y = prim("Exp", {4});
  y.kind = Op::unknown;  // add_node sets it from `op`
  y.onnx_op = "Softmax";
  const NodeId b = g.add_node(y);
  g.add_use(a, b, 0);
  g.finalize();
  EXPECT_EQ(g.node(a).kind, Op::Input);
  EXPECT_EQ(g.node(b).kind, Op::Exp);
  EXPECT_EQ(g.node(b).onnx_kind, Op::Softmax);
  g.node_mut(b).op = "com.example:Custom";
  g.finalize();
  EXPECT_EQ(g.node(b).kind, Op::unknown);
}

}  // namespace
}  // namespace fuseplan
