// Decomposition of composite ONNX ops into primitives (docs/ir.md
// "Decompositions"): Softmax, LogSoftmax, LayerNormalization,
// InstanceNormalization, BatchNormalization, Gelu, Gemm, ReduceL2,
// ReduceSumSquare, variadic Sum/Min/Max/Mean, Split, Conv bias, Upsample,
// Dropout and the reshape family.
#include <cmath>

#include "graph/import_internal.h"

namespace fuseplan::detail {
std::vector<int64_t> conv_pads(const onnx::NodeProto& n, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                               const std::vector<int64_t>& kernel);
namespace {
using Shape = std::vector<int64_t>;

const Tensor* input(Ctx& ctx, const onnx::NodeProto& n, int k) {
  return k < n.input_size() && !n.input(k).empty() ? &ctx.tensor(n.input(k)) : nullptr;
}

TensorType with_shape(const TensorType& t, Shape s) { return TensorType{t.dtype, std::move(s), true}; }

Shape keep_shape(const Shape& x, const std::vector<int64_t>& axes) {
  Shape s = x;
  for (int64_t a : axes) s[a] = 1;
  return s;
}

// All values of a source tensor when known (initializer data, folded constant, fill).
std::optional<std::vector<double>> values(const Tensor* t) {
  if (!t) return std::nullopt;
  int64_t n = t->type.numel();
  if (n > 16 * kFoldLimit) return std::nullopt;  // per-channel vectors only; never expand a huge fill
  std::vector<double> v;
  if (t->k) {
    for (int64_t k = 0; k < n; ++k) v.push_back(t->k->fill ? *t->k->fill : t->k->at_f(k));
    if (static_cast<int64_t>(v.size()) == n) return v;
    return std::nullopt;
  }
  if (t->wdata.fill) return std::vector<double>(n, *t->wdata.fill);
  if (static_cast<int64_t>(t->wdata.f32.size()) == n) return std::vector<double>(t->wdata.f32.begin(), t->wdata.f32.end());
  if (static_cast<int64_t>(t->wdata.i64.size()) == n) return std::vector<double>(t->wdata.i64.begin(), t->wdata.i64.end());
  return std::nullopt;
}

// A per-channel vector [C] as a Weight [C,1,...,1] of rank `rank`; data when known.
NodeId channel_weight(Ctx& ctx, const std::string& suffix, const Tensor* src, const std::string& src_name, int64_t c,
                      int64_t rank, std::optional<std::vector<double>> data) {
  Shape s(std::max<int64_t>(rank, 1), 1);
  s[0] = c;
  TensorType t{src ? src->type.dtype : DType::f32, s, true};
  if (src && src->kind == Tensor::Kind::computed) return ctx.emit(ctx.sub(suffix), Op::Reshape, t, {ctx.use(src_name)});
  Const k;
  k.type = t;
  if (data && static_cast<int64_t>(data->size()) == c) k.f = *data;
  NodeId id = ctx.emit_const(ctx.sub(suffix), k, true);
  return id;
}

// mean/d/sq/var/veps/std/norm over `axes`; returns the `norm` primitive.
NodeId normalize(Ctx& ctx, NodeId x, const TensorType& xt, const std::vector<int64_t>& axes, double eps) {
  TensorType red = with_shape(xt, keep_shape(xt.shape, axes));
  std::map<std::string, AttrValue> ra{{"axes", axes}, {"keepdims", int64_t{1}}};
  NodeId mean = ctx.emit(ctx.sub("mean"), Op::ReduceMean, red, {x}, ra);
  NodeId d = ctx.emit(ctx.sub("d"), Op::Sub, xt, {x, mean});
  NodeId sq = ctx.emit(ctx.sub("sq"), Op::Mul, xt, {d, d});
  NodeId var = ctx.emit(ctx.sub("var"), Op::ReduceMean, red, {sq}, ra);
  NodeId veps = ctx.emit(ctx.sub("veps"), Op::Add, red, {var, ctx.scalar("eps", eps, xt.dtype)});
  NodeId sd = ctx.emit(ctx.sub("std"), Op::Sqrt, red, {veps});
  return ctx.emit(ctx.sub("norm"), Op::Div, xt, {d, sd});
}
}  // namespace

bool decompose_node(Ctx& ctx, const onnx::NodeProto& n, Op op) {
  Attrs at{n};
  const std::string& out = n.output(0);
  const TensorType ot = ctx.tensor(out).type;
  const Tensor* x = input(ctx, n, 0);
  if (!x) return false;
  const TensorType xt = x->type;
  int64_t r = xt.rank();
  auto X = [&] { return ctx.use(n.input(0)); };

  if (op == Op::Softmax || op == Op::LogSoftmax) {
    int64_t ax = norm_axis(at.i("axis", ctx.opset < 13 ? 1 : -1), r);
    std::vector<int64_t> axes;
    for (int64_t k = ax; k < (ctx.opset < 13 ? r : ax + 1); ++k) axes.push_back(k);
    TensorType red = with_shape(xt, keep_shape(xt.shape, axes));
    std::map<std::string, AttrValue> ra{{"axes", axes}, {"keepdims", int64_t{1}}};
    NodeId in = X();
    NodeId mx = ctx.emit(ctx.sub("max"), Op::ReduceMax, red, {in}, ra);
    NodeId sb = ctx.emit(ctx.sub("sub"), Op::Sub, xt, {in, mx});
    NodeId ex = ctx.emit(ctx.sub("exp"), Op::Exp, xt, {sb});
    NodeId sm = ctx.emit(ctx.sub("sum"), Op::ReduceSum, red, {ex}, ra);
    if (op == Op::Softmax) ctx.emit(out, Op::Div, ot, {ex, sm});
    else ctx.emit(out, Op::Sub, ot, {sb, ctx.emit(ctx.sub("log"), Op::Log, red, {sm})});
    return true;
  }
  if (op == Op::LayerNormalization) {
    int64_t ax = norm_axis(at.i("axis", -1), r);
    std::vector<int64_t> axes;
    for (int64_t k = ax; k < r; ++k) axes.push_back(k);
    NodeId norm = normalize(ctx, X(), xt, axes, at.f("epsilon", 1e-5));
    const Tensor* b = input(ctx, n, 2);
    NodeId sc = ctx.emit(b ? ctx.sub("scaled") : out, Op::Mul, ot, {norm, ctx.use(n.input(1))});
    if (b) ctx.emit(out, Op::Add, ot, {sc, ctx.use(n.input(2))});
    if (n.output_size() > 1 && !n.output(1).empty())
      ctx.emit(n.output(1), Op::Identity, ctx.tensor(n.output(1)).type, {ctx.g.find(ctx.sub("mean"))});
    if (n.output_size() > 2 && !n.output(2).empty())
      ctx.emit(n.output(2), Op::Reciprocal, ctx.tensor(n.output(2)).type, {ctx.g.find(ctx.sub("std"))});
    return true;
  }
  if (op == Op::InstanceNormalization) {
    std::vector<int64_t> axes;
    for (int64_t k = 2; k < r; ++k) axes.push_back(k);
    NodeId norm = normalize(ctx, X(), xt, axes, at.f("epsilon", 1e-5));
    const Tensor *s = input(ctx, n, 1), *b = input(ctx, n, 2);
    NodeId g = channel_weight(ctx, "gamma", s, n.input(1), xt.shape[1], r - 1, values(s));
    NodeId sc = ctx.emit(ctx.sub("scaled"), Op::Mul, ot, {norm, g});
    ctx.emit(out, Op::Add, ot, {sc, channel_weight(ctx, "beta", b, n.input(2), xt.shape[1], r - 1, values(b))});
    return true;
  }
  if (op == Op::BatchNormalization) {
    int64_t c = r > 1 ? xt.shape[1] : 1;
    const Tensor *s = input(ctx, n, 1), *b = input(ctx, n, 2), *m = input(ctx, n, 3), *v = input(ctx, n, 4);
    auto vs = values(s), vb = values(b), vm = values(m), vv = values(v);
    std::optional<std::vector<double>> se, sh;
    if (vs && vb && vm && vv && static_cast<int64_t>(vs->size()) == c && vb->size() == vs->size() &&
        vm->size() == vs->size() && vv->size() == vs->size()) {
      double eps = at.f("epsilon", 1e-5);
      se.emplace(), sh.emplace();
      for (int64_t k = 0; k < c; ++k) {
        se->push_back((*vs)[k] / std::sqrt((*vv)[k] + eps));
        sh->push_back((*vb)[k] - (*vm)[k] * se->back());
      }
    }
    Const ks, kb;
    Shape ws(std::max<int64_t>(r - 1, 1), 1);
    ws[0] = c;
    ks.type = kb.type = TensorType{xt.dtype, ws, true};
    if (se) ks.f = *se, kb.f = *sh;
    NodeId sw = ctx.emit_const(ctx.sub("scale_eff"), ks, true);
    NodeId bw = ctx.emit_const(ctx.sub("shift_eff"), kb, true);
    NodeId mul = ctx.emit(ctx.sub("scale"), Op::Mul, ot, {X(), sw});
    ctx.emit(out, Op::Add, ot, {mul, bw});
    for (int k = 1; k < n.output_size(); ++k)  // training-mode running stats: pass the inputs through
      if (!n.output(k).empty() && k + 2 < n.input_size())
        ctx.emit(n.output(k), Op::Identity, ctx.tensor(n.output(k)).type, {ctx.use(n.input(k + 2))});
    return true;
  }
  if (op == Op::Gelu) {
    NodeId in = X();
    if (at.s("approximate", "none") == "tanh") {
      NodeId x2 = ctx.emit(ctx.sub("x2"), Op::Mul, xt, {in, in});
      NodeId x3 = ctx.emit(ctx.sub("x3"), Op::Mul, xt, {x2, in});
      NodeId a = ctx.emit(ctx.sub("a"), Op::Mul, xt, {x3, ctx.scalar("k", 0.044715, xt.dtype)});
      NodeId b = ctx.emit(ctx.sub("b"), Op::Add, xt, {in, a});
      NodeId c = ctx.emit(ctx.sub("c"), Op::Mul, xt, {b, ctx.scalar("sqrt2_pi", std::sqrt(2.0 / M_PI), xt.dtype)});
      NodeId t = ctx.emit(ctx.sub("tanh"), Op::Tanh, xt, {c});
      NodeId d = ctx.emit(ctx.sub("d"), Op::Add, xt, {t, ctx.scalar("one", 1.0, xt.dtype)});
      NodeId e = ctx.emit(ctx.sub("e"), Op::Mul, xt, {in, d});
      ctx.emit(out, Op::Mul, ot, {e, ctx.scalar("half", 0.5, xt.dtype)});
    } else {
      NodeId a = ctx.emit(ctx.sub("a"), Op::Mul, xt, {in, ctx.scalar("inv_sqrt2", M_SQRT1_2, xt.dtype)});
      NodeId e = ctx.emit(ctx.sub("erf"), Op::Erf, xt, {a});
      NodeId b = ctx.emit(ctx.sub("b"), Op::Add, xt, {e, ctx.scalar("one", 1.0, xt.dtype)});
      NodeId c = ctx.emit(ctx.sub("c"), Op::Mul, xt, {in, b});
      ctx.emit(out, Op::Mul, ot, {c, ctx.scalar("half", 0.5, xt.dtype)});
    }
    return true;
  }
  if (op == Op::Gemm) {
    double alpha = at.f("alpha", 1.0), beta = at.f("beta", 1.0);
    const Tensor* c = input(ctx, n, 2);
    bool last_mm = alpha == 1.0 && !c;
    NodeId mm = ctx.emit(last_mm ? out : ctx.sub("mm"), Op::MatMul, ot, {X(), ctx.use(n.input(1))},
                         {{"transA", at.i("transA", 0)}, {"transB", at.i("transB", 0)}});
    if (alpha != 1.0) mm = ctx.emit(c ? ctx.sub("alpha_mul") : out, Op::Mul, ot, {mm, ctx.scalar("alpha", alpha, ot.dtype)});
    if (!c) return true;
    NodeId cb;
    if (beta == 1.0) cb = ctx.use(n.input(2));
    else if (auto vc = values(c); vc && c->kind != Tensor::Kind::computed) {
      Const k;
      k.type = c->type;
      for (double v : *vc) k.f.push_back(v * beta);
      cb = ctx.emit_const(ctx.sub("c_beta"), k, true);
    } else {
      cb = ctx.emit(ctx.sub("c_beta"), Op::Mul, c->type, {ctx.use(n.input(2)), ctx.scalar("beta", beta, c->type.dtype)});
    }
    ctx.emit(out, Op::Add, ot, {mm, cb});
    return true;
  }
  if (op == Op::Conv || op == Op::ConvTranspose) {
    const Tensor* b = input(ctx, n, 2);
    const Tensor& w = ctx.tensor(n.input(1));
    Shape kernel = at.ints("kernel_shape");
    if (kernel.empty()) kernel.assign(w.type.shape.begin() + 2, w.type.shape.end());
    std::size_t sp = r - 2;
    auto strides = at.ints("strides"), dil = at.ints("dilations");
    strides.resize(sp, 1), dil.resize(sp, 1);
    std::map<std::string, AttrValue> ca{{"strides", strides}, {"pads", conv_pads(n, xt.shape, ot.shape, kernel)},
                                        {"dilations", dil}, {"group", at.i("group", 1)}, {"kernel_shape", kernel}};
    if (op == Op::ConvTranspose) {
      auto op_ = at.ints("output_padding");
      op_.resize(sp, 0);
      ca["output_padding"] = op_;
    }
    NodeId cv = ctx.emit(b ? ctx.sub("conv") : out, op, ot, {X(), ctx.use(n.input(1))}, ca);
    if (b) ctx.emit(out, Op::Add, ot, {cv, channel_weight(ctx, "bias", b, n.input(2), ot.shape[1], r - 1, values(b))});
    return true;
  }
  if (op == Op::ReduceL2 || op == Op::ReduceSumSquare) {
    std::vector<int64_t> axes = at.ints("axes");
    if (const Tensor* ax = input(ctx, n, 1); ax && ax->k) axes = ax->k->ints();
    if (axes.empty())
      for (int64_t k = 0; k < r; ++k) axes.push_back(k);
    for (auto& a : axes) a = norm_axis(a, r);
    std::sort(axes.begin(), axes.end());
    NodeId in = X();
    NodeId sq = ctx.emit(ctx.sub("sq"), Op::Mul, xt, {in, in});
    std::map<std::string, AttrValue> ra{{"axes", axes}, {"keepdims", at.i("keepdims", 1)}};
    if (op == Op::ReduceSumSquare) ctx.emit(out, Op::ReduceSum, ot, {sq}, ra);
    else ctx.emit(out, Op::Sqrt, ot, {ctx.emit(ctx.sub("sum"), Op::ReduceSum, ot, {sq}, ra)});
    return true;
  }
  if (op == Op::Sum || op == Op::Mean || ((op == Op::Min || op == Op::Max) && n.input_size() != 2)) {
    std::vector<std::string> ins;
    for (const auto& i : n.input())
      if (!i.empty()) ins.push_back(i);
    const Op bop = op == Op::Sum || op == Op::Mean ? Op::Add : op;
    NodeId acc = ctx.use(ins[0]);
    TensorType at_ = ctx.tensor(ins[0]).type;
    if (ins.size() == 1 && op != Op::Mean) {
      ctx.emit(out, Op::Identity, ot, {acc});
      return true;
    }
    for (std::size_t k = 1; k < ins.size(); ++k) {
      at_.shape = broadcast_shapes(at_.shape, ctx.tensor(ins[k]).type.shape);
      bool last = k + 1 == ins.size() && op != Op::Mean;
      const std::string name = last ? out : ctx.sub(std::string(op_name(bop)) + std::to_string(k));
      acc = ctx.emit(name, bop, last ? ot : at_, {acc, ctx.use(ins[k])});
    }
    if (op == Op::Mean) ctx.emit(out, Op::Div, ot, {acc, ctx.scalar("count", static_cast<double>(ins.size()), ot.dtype)});
    return true;
  }
  if (op == Op::Split) {
    int64_t ax = norm_axis(at.i("axis", 0), r), start = 0;
    NodeId in = X();
    for (int k = 0; k < n.output_size(); ++k) {
      const TensorType& t = ctx.tensor(n.output(k).empty() ? out : n.output(k)).type;
      int64_t len = n.output(k).empty() ? 0 : t.shape[ax];
      if (!n.output(k).empty())
        ctx.emit(n.output(k), Op::Slice, t, {in},
                 {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{start + len}},
                  {"axes", std::vector<int64_t>{ax}}, {"steps", std::vector<int64_t>{1}}});
      start += len;
    }
    return true;
  }
  if (op == Op::Upsample) {
    std::vector<double> scales;
    for (int64_t k = 0; k < r; ++k) scales.push_back(xt.shape[k] ? static_cast<double>(ot.shape[k]) / xt.shape[k] : 1.0);
    std::string mode = at.s("mode", "nearest");
    if (mode == "bilinear") mode = "linear";
    ctx.emit(out, Op::Resize, ot, {X()},
             {{"mode", mode}, {"scales", scales}, {"coordinate_transformation_mode", std::string("asymmetric")},
              {"nearest_mode", std::string("floor")}});
    return true;
  }
  if (op == Op::Dropout) {
    ctx.emit(out, Op::Identity, ot, {X()});
    if (n.output_size() > 1 && !n.output(1).empty()) {  // inference mask: all true, a constant
      Tensor& m = ctx.tensor(n.output(1));
      auto c = std::make_shared<Const>();
      c->type = m.type;
      c->fill = 1.0;
      m.kind = Tensor::Kind::constant;
      m.k = c;
      m.wdata.fill = 1.0;
    }
    return true;
  }
  if (op == Op::Reshape || op == Op::Flatten || op == Op::Squeeze || op == Op::Unsqueeze) {
    ctx.emit(out, Op::Reshape, ot, {X()}, {{"shape", ot.shape}});
    return true;
  }
  return false;
}

}  // namespace fuseplan::detail
