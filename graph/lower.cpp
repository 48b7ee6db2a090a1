// Lowering of one ONNX node to primitives: 1:1 ops, constant operands turned
// into attributes (axes, shapes, pads, scales, starts/ends), opaque ops.
// Composite ops are in decompose.cpp.
#include <cmath>
#include <unordered_set>

#include "graph/import_internal.h"

namespace fuseplan::detail {
namespace {
using Attrs_t = std::map<std::string, AttrValue>;

Attrs_t copy_attrs(const onnx::NodeProto& n) {
  Attrs_t a;
  for (const auto& at : n.attribute()) {
    switch (at.type()) {
      case onnx::AttributeProto::INT: a[at.name()] = static_cast<int64_t>(at.i()); break;
      case onnx::AttributeProto::FLOAT: a[at.name()] = static_cast<double>(at.f()); break;
      case onnx::AttributeProto::STRING: a[at.name()] = at.s(); break;
      case onnx::AttributeProto::INTS: a[at.name()] = std::vector<int64_t>(at.ints().begin(), at.ints().end()); break;
      case onnx::AttributeProto::FLOATS: a[at.name()] = std::vector<double>(at.floats().begin(), at.floats().end()); break;
      default: break;
    }
  }
  return a;
}

const Tensor* input(Ctx& ctx, const onnx::NodeProto& n, int k) {
  return k < n.input_size() && !n.input(k).empty() ? &ctx.tensor(n.input(k)) : nullptr;
}

std::optional<std::vector<double>> const_floats(const Tensor* t) {
  if (!t || !t->k || t->k->fill) return std::nullopt;
  std::vector<double> v;
  for (int64_t k = 0; k < t->k->size(); ++k) v.push_back(t->k->at_f(k));
  return v;
}

// Recurses per subgraph level: loading refused models deeper than kMaxSubgraphDepth.
void free_vars(const onnx::GraphProto& g, std::vector<std::string>& out, int depth = 1) {
  FUSEPLAN_ASSERT(depth <= kMaxSubgraphDepth,
                  "subgraph depth " + std::to_string(depth) + " past the limit checked at loading");
  std::unordered_set<std::string> def;
  for (const auto& i : g.input()) def.insert(i.name());
  for (const auto& i : g.initializer()) def.insert(i.name());
  for (const auto& n : g.node()) {
    for (const auto& i : n.input())
      if (!i.empty() && !def.count(i)) out.push_back(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) free_vars(a.g(), out, depth + 1);
      for (const auto& sg : a.graphs()) free_vars(sg, out, depth + 1);
    }
    for (const auto& o : n.output()) def.insert(o);
  }
}

// Explicit [begin..., end...] pads for Conv/pooling, resolving auto_pad.
std::vector<int64_t> explicit_pads(const Attrs& at, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                                   const std::vector<int64_t>& kernel) {
  std::size_t sp = x.size() - 2;
  auto pads = at.ints("pads");
  if (pads.size() != 2 * sp) pads.assign(2 * sp, 0);
  std::string ap = at.s("auto_pad", "NOTSET");
  if (ap != "SAME_UPPER" && ap != "SAME_LOWER") return pads;
  auto strides = at.ints("strides"), dil = at.ints("dilations");
  strides.resize(sp, 1), dil.resize(sp, 1);
  for (std::size_t k = 0; k < sp && k < kernel.size(); ++k) {
    int64_t ek = (kernel[k] - 1) * dil[k] + 1;
    int64_t total = std::max<int64_t>(0, (y[k + 2] - 1) * strides[k] + ek - x[k + 2]);
    int64_t small = total / 2, big = total - small;
    pads[k] = ap == "SAME_UPPER" ? small : big;
    pads[k + sp] = ap == "SAME_UPPER" ? big : small;
  }
  return pads;
}
}  // namespace

void emit_opaque(Ctx& ctx, const onnx::NodeProto& n) {
  std::vector<NodeId> ops;
  for (const auto& i : n.input())
    if (!i.empty() && ctx.has(i)) ops.push_back(ctx.use(i));
  std::vector<std::string> fv;
  for (const auto& a : n.attribute()) {
    if (a.has_g()) free_vars(a.g(), fv);
    for (const auto& sg : a.graphs()) free_vars(sg, fv);
  }
  std::unordered_set<std::string> seen;
  for (const auto& v : fv)
    if (ctx.has(v) && seen.insert(v).second) ops.push_back(ctx.use(v));
  const std::string op = onnx_op_name(n);
  for (const auto& o : n.output())
    if (!o.empty()) ctx.emit(o, op, ctx.tensor(o).type, ops, copy_attrs(n));
}

void lower_node(Ctx& ctx, const onnx::NodeProto& n, Op op) {
  // Only ops infer_shapes knows get here, and each has a row.
  FUSEPLAN_ASSERT(op != Op::unknown, "lowering op " + n.op_type() + ", which has no row in the op-traits table");
  if (decompose_node(ctx, n, op)) return;
  Attrs at{n};
  const std::string& out = n.output(0);
  const TensorType& ot = ctx.tensor(out).type;
  const Tensor* x = input(ctx, n, 0);
  Attrs_t a = copy_attrs(n);
  auto x0 = [&] { return std::vector<NodeId>{ctx.use(n.input(0))}; };
  auto all = [&] {
    std::vector<NodeId> v;
    for (const auto& i : n.input())
      if (!i.empty()) v.push_back(ctx.use(i));
    return v;
  };
  // ReduceL2 and ReduceSumSquare are decomposed; the other ONNX reductions keep their op.
  if (one_of(op, {Op::ReduceSum, Op::ReduceMean, Op::ReduceMax, Op::ReduceMin, Op::ReduceProd, Op::ReduceL1,
                  Op::ReduceLogSum, Op::ReduceLogSumExp})) {
    std::vector<int64_t> axes = at.ints("axes");
    if (const Tensor* ax = input(ctx, n, 1); ax && ax->k) axes = ax->k->ints();
    int64_t r = x->type.rank();
    if (axes.empty() && at.i("noop_with_empty_axes", 0)) {
      ctx.emit(out, Op::Identity, ot, x0());
      return;
    }
    if (axes.empty())
      for (int64_t k = 0; k < r; ++k) axes.push_back(k);
    for (auto& v : axes) v = norm_axis(v, r);
    std::sort(axes.begin(), axes.end());
    ctx.emit(out, op, ot, x0(), {{"axes", axes}, {"keepdims", at.i("keepdims", 1)}});
    return;
  }
  if (op == Op::Slice) {
    bool ok = true;
    auto p = slice_params(n, {x, input(ctx, n, 1), input(ctx, n, 2), input(ctx, n, 3), input(ctx, n, 4)},
                          ctx.opset, ok);
    ctx.emit(out, Op::Slice, ot, x0(), {{"starts", p[0]}, {"ends", p[1]}, {"axes", p[2]}, {"steps", p[3]}});
    return;
  }
  if (op == Op::Pad) {
    int64_t r = x->type.rank();
    std::vector<int64_t> pads(2 * r, 0), raw = ctx.opset < 11 ? at.ints(ctx.opset >= 2 ? "pads" : "paddings")
                                                              : input(ctx, n, 1)->k->ints();
    std::vector<int64_t> axes;
    if (const Tensor* ax = input(ctx, n, 3); ax && ax->k) axes = ax->k->ints();
    else for (int64_t k = 0; k < r; ++k) axes.push_back(k);
    for (std::size_t k = 0; k < axes.size(); ++k) {
      int64_t ax = norm_axis(axes[k], r);
      pads[ax] = raw[k], pads[ax + r] = raw[k + axes.size()];
    }
    double value = at.f("value", 0.0);
    auto v = const_floats(input(ctx, n, 2));
    if (v && !v->empty()) value = (*v)[0];
    ctx.emit(out, Op::Pad, ot, x0(), {{"pads", pads}, {"mode", at.s("mode", "constant")}, {"value", value}});
    return;
  }
  if (op == Op::Expand) {
    ctx.emit(out, Op::Expand, ot, x0(), {{"shape", ot.shape}});
    return;
  }
  if (op == Op::Tile) {
    ctx.emit(out, Op::Tile, ot, x0(), {{"repeats", input(ctx, n, 1)->k->ints()}});
    return;
  }
  if (op == Op::Resize) {
    std::vector<double> scales;
    for (int64_t k = 0; k < ot.rank(); ++k)
      scales.push_back(x->type.shape[k] ? static_cast<double>(ot.shape[k]) / x->type.shape[k] : 1.0);
    if (auto s = const_floats(input(ctx, n, ctx.opset < 11 ? 1 : 2)); s && s->size() == scales.size()) scales = *s;
    std::string mode = at.s("mode", "nearest");
    ctx.emit(out, Op::Resize, ot, x0(),
             {{"mode", mode}, {"scales", scales},
              {"coordinate_transformation_mode",
               at.s("coordinate_transformation_mode", ctx.opset < 11 ? "asymmetric" : "half_pixel")},
              {"nearest_mode", at.s("nearest_mode", "round_prefer_floor")}});
    return;
  }
  if (op == Op::Transpose) {
    auto perm = at.ints("perm");
    if (perm.empty())
      for (int64_t k = x->type.rank() - 1; k >= 0; --k) perm.push_back(k);
    for (auto& p : perm) p = norm_axis(p, x->type.rank());
    ctx.emit(out, Op::Transpose, ot, x0(), {{"perm", perm}});
    return;
  }
  if (op == Op::Concat) {
    ctx.emit(out, Op::Concat, ot, all(), {{"axis", norm_axis(at.i("axis", 0), ot.rank())}});
    return;
  }
  if (op == Op::Gather || op == Op::GatherElements) {
    const int64_t ax = norm_axis(at.i("axis", 0), x->type.rank());
    // Constant indices are checked here, as ONNX requires ([-d, d)); the
    // kernels clamp data-dependent ones (emit/cpu/runtime.h).
    if (const Tensor* idx = input(ctx, n, 1); idx && idx->k && x->type.known) {
      const int64_t d = x->type.shape[static_cast<std::size_t>(ax)];
      for (int64_t j = 0; j < idx->k->size(); ++j)
        if (const int64_t v = idx->k->at_i(j); v < -d || v >= d)
          throw Error("index " + std::to_string(v) + " is out of range for axis " + std::to_string(ax) + " of size " +
                      std::to_string(d));
    }
    ctx.emit(out, op, ot, all(), {{"axis", ax}});
    return;
  }
  if (op == Op::ScatterElements || op == Op::Scatter) {
    ctx.emit(out, Op::ScatterElements, ot, all(),
             {{"axis", norm_axis(at.i("axis", 0), x->type.rank())}, {"reduction", at.s("reduction", "none")}});
    return;
  }
  if (op == Op::ScatterND) {
    ctx.emit(out, op, ot, all(), {{"reduction", at.s("reduction", "none")}});
    return;
  }
  if (op == Op::CumSum) {
    const Tensor* ax = input(ctx, n, 1);
    if (!ax || !ax->k) { emit_opaque(ctx, n); return; }
    ctx.emit(out, Op::CumSum, ot, x0(), {{"axis", norm_axis(ax->k->at_i(0), x->type.rank())},
                                       {"exclusive", at.i("exclusive", 0)}, {"reverse", at.i("reverse", 0)}});
    return;
  }
  if (op == Op::Clip) {
    double lo = at.f("min", -INFINITY), hi = at.f("max", INFINITY);
    std::vector<NodeId> ops = x0();
    if (ctx.opset >= 11) {
      for (int k = 1; k <= 2; ++k) {
        const Tensor* t = input(ctx, n, k);
        if (!t) continue;
        if (auto v = const_floats(t); v && v->size() == 1) (k == 1 ? lo : hi) = (*v)[0];
        else { emit_opaque(ctx, n); return; }
      }
    }
    ctx.emit(out, Op::Clip, ot, ops, {{"min", lo}, {"max", hi}});
    return;
  }
  if (op == Op::OneHot) {
    auto vals = const_floats(input(ctx, n, 2));
    auto depth = const_floats(input(ctx, n, 1));
    double off = vals && vals->size() == 2 ? (*vals)[0] : 0.0, on = vals && vals->size() == 2 ? (*vals)[1] : 1.0;
    ctx.emit(out, Op::OneHot, ot, x0(),
             {{"depth", static_cast<int64_t>(depth ? (*depth)[0] : 0)},
              {"axis", norm_axis(at.i("axis", -1), ot.rank())}, {"on", on}, {"off", off}});
    return;
  }
  if (op == Op::Cast) {
    ctx.emit(out, Op::Cast, ot, x0(), {{"to", static_cast<int64_t>(ot.dtype)}});
    return;
  }
  if (op == Op::QuantizeLinear || op == Op::DequantizeLinear) {
    ctx.emit(out, op, ot, all(), {{"axis", at.i("axis", 1)}});
    return;
  }
  if (op == Op::MatMul) {
    ctx.emit(out, Op::MatMul, ot, all(), {{"transA", int64_t{0}}, {"transB", int64_t{0}}});
    return;
  }
  if (op == Op::MaxPool || op == Op::AveragePool || op == Op::LpPool) {
    auto kernel = at.ints("kernel_shape");
    std::size_t sp = x->type.rank() - 2;
    auto strides = at.ints("strides"), dil = at.ints("dilations");
    strides.resize(sp, 1), dil.resize(sp, 1);
    Attrs_t pa{{"kernel_shape", kernel}, {"strides", strides},
               {"pads", explicit_pads(at, x->type.shape, ot.shape, kernel)}, {"dilations", dil},
               {"ceil_mode", at.i("ceil_mode", 0)}, {"count_include_pad", at.i("count_include_pad", 0)}};
    ctx.emit(out, op, ot, x0(), pa);
    for (int k = 1; k < n.output_size(); ++k)
      if (!n.output(k).empty()) ctx.emit(n.output(k), op, ctx.tensor(n.output(k)).type, x0(), pa);
    return;
  }
  if (op == Op::Identity) {
    ctx.emit(out, Op::Identity, ot, x0());
    return;
  }
  if (one_of(op, {Op::If, Op::Loop, Op::Scan, Op::NonZero, Op::NonMaxSuppression, Op::TopK, Op::Range,
                  Op::ConstantOfShape}) ||
      n.output_size() != 1) {
    emit_opaque(ctx, n);
    return;
  }
  ctx.emit(out, op, ot, all(), a);  // 1:1 ops (elementwise, broadcast, gather, ...) keep their ONNX attributes
}

std::vector<int64_t> conv_pads(const onnx::NodeProto& n, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                               const std::vector<int64_t>& kernel) {
  return explicit_pads(Attrs{n}, x, y, kernel);
}

}  // namespace fuseplan::detail
