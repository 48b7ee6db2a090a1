// fuseplan's own shape inference for every supported ONNX op, on bound
// (concrete) shapes. libonnx 1.12 cannot infer opset 18+ models, so this is
// the source of truth; graph/shape_check.cpp cross-checks it where it can.
#include <algorithm>
#include <cmath>

#include "graph/import_internal.h"

namespace fuseplan::detail {

using Shape = std::vector<int64_t>;

std::string dims_text(const Shape& s) {
  std::string t = "[";
  for (std::size_t k = 0; k < s.size(); ++k) t += (k ? "," : "") + std::to_string(s[k]);
  return t + "]";
}

int64_t norm_axis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    throw Error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return a;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  std::size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (std::size_t k = 0; k < r; ++k) {
    int64_t x = k < r - a.size() ? 1 : a[k - (r - a.size())];
    int64_t y = k < r - b.size() ? 1 : b[k - (r - b.size())];
    if (x != y && x != 1 && y != 1)
      throw Error("shapes " + TensorType{DType::f32, a}.str() + " and " + TensorType{DType::f32, b}.str() +
                  " do not broadcast");
    out[k] = x == 1 ? y : x;
  }
  return out;
}

namespace {
struct In {
  const std::vector<const Tensor*>& v;
  bool has(std::size_t k) const { return k < v.size() && v[k]; }
  const Tensor& at(std::size_t k) const {
    if (!has(k)) throw Error("missing required input " + std::to_string(k));
    return *v[k];
  }
  const Shape& sh(std::size_t k) const { return at(k).type.shape; }
  DType dt(std::size_t k) const { return at(k).type.dtype; }
  std::optional<std::vector<int64_t>> ints(std::size_t k) const {
    if (!has(k) || !v[k]->k || v[k]->k->fill) return std::nullopt;
    return v[k]->k->ints();
  }
  std::optional<std::vector<double>> floats(std::size_t k) const {
    if (!has(k) || !v[k]->k || v[k]->k->fill) return std::nullopt;
    std::vector<double> out;
    for (int64_t i = 0; i < v[k]->k->size(); ++i) out.push_back(v[k]->k->at_f(i));
    return out;
  }
};

TensorType tt(DType d, Shape s) { return TensorType{d, std::move(s), true}; }
TensorType unknown(DType d) { return TensorType{d, {}, false}; }

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Spatial output sizes of Conv / pooling / ConvTranspose.
Shape window_out(const Attrs& at, const Shape& x, const Shape& kernel, bool pool, bool transpose) {
  std::size_t sp = x.size() - 2;
  if (kernel.size() != sp) throw Error("kernel rank does not match input rank");
  auto strides = at.ints("strides"), dil = at.ints("dilations"), pads = at.ints("pads");
  strides.resize(sp, 1);
  if (strides.size() != sp || dil.size() > sp) throw Error("bad strides/dilations");
  dil.resize(sp, 1);
  if (pads.empty()) pads.assign(2 * sp, 0);
  if (pads.size() != 2 * sp) throw Error("pads has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * sp));
  std::string ap = at.s("auto_pad", "NOTSET");
  bool ceil_mode = pool && at.i("ceil_mode", 0) != 0;
  auto outpad = at.ints("output_padding");
  outpad.resize(sp, 0);
  auto oshape = at.ints("output_shape");
  Shape out;
  for (std::size_t k = 0; k < sp; ++k) {
    int64_t in = x[k + 2], s = strides[k], d = dil[k], kk = kernel[k];
    if (s <= 0 || d <= 0 || kk <= 0) throw Error("strides, dilations and kernel must be positive");
    if (pads[k] < 0 || pads[k + sp] < 0) throw Error("negative pads");
    int64_t ek = (kk - 1) * d + 1, o;
    if (transpose) {
      if (oshape.size() == sp) o = oshape[k];
      else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") o = in * s;
      else o = s * (in - 1) + outpad[k] + ek - pads[k] - pads[k + sp];
    } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      o = ceil_div(in, s);
    } else if (ap == "VALID") {
      o = ceil_div(in - ek + 1, s);
    } else {
      int64_t span = in + pads[k] + pads[k + sp] - ek;
      if (span < 0) throw Error("window larger than padded input");
      o = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
      if (ceil_mode && (o - 1) * s >= in + pads[k]) --o;
    }
    if (o <= 0) throw Error("non-positive output size " + std::to_string(o));
    out.push_back(o);
  }
  return out;
}

Shape reduce_shape(const Shape& x, std::vector<int64_t> axes, bool keep, bool noop_empty) {
  int64_t r = x.size();
  if (axes.empty()) {
    if (noop_empty) return x;
    for (int64_t k = 0; k < r; ++k) axes.push_back(k);
  }
  std::vector<bool> red(r, false);
  for (int64_t a : axes) red[norm_axis(a, r)] = true;
  Shape out;
  for (int64_t k = 0; k < r; ++k)
    if (!red[k]) out.push_back(x[k]);
    else if (keep) out.push_back(1);
  return out;
}

bool reduce_axes_input(Op op, int64_t opset) {
  return op == Op::ReduceSum ? opset >= 13 : opset >= 18;
}
}  // namespace

std::optional<std::vector<TensorType>> infer_shapes(const onnx::NodeProto& n, Op op,
                                                    const std::vector<const Tensor*>& inputs, int64_t opset) {
  // The output is input 0's type.
  const bool same = one_of(
      op, {Op::Relu, Op::Sigmoid, Op::Tanh, Op::Exp, Op::Log, Op::Sqrt, Op::Reciprocal, Op::Neg, Op::Abs, Op::Erf,
           Op::Ceil, Op::Floor, Op::Round, Op::Not, Op::Sin, Op::Cos, Op::Tan, Op::Asin, Op::Acos, Op::Atan, Op::Sinh,
           Op::Cosh, Op::Softplus, Op::Softsign, Op::Sign, Op::Identity, Op::LeakyRelu, Op::HardSigmoid, Op::HardSwish,
           Op::Elu, Op::Selu, Op::Celu, Op::Gelu, Op::Mish, Op::Clip, Op::Softmax, Op::LogSoftmax,
           Op::InstanceNormalization, Op::CumSum, Op::LRN, Op::Shrink, Op::ThresholdedRelu, Op::MeanVarianceNormalization,
           Op::Trilu, Op::Hardmax, Op::ScatterND, Op::ScatterElements, Op::Scatter});
  // Broadcasting binary (or variadic) ops and comparisons.
  const bool bin = one_of(op, {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Mod, Op::Min, Op::Max, Op::Sum,
                               Op::Mean, Op::PRelu, Op::BitShift});
  const bool cmp =
      one_of(op, {Op::Equal, Op::Less, Op::Greater, Op::LessOrEqual, Op::GreaterOrEqual, Op::And, Op::Or, Op::Xor});
  Attrs at{n};
  In in{inputs};
  std::vector<TensorType> out;
  auto one = [&](TensorType t) { return std::vector<TensorType>{std::move(t)}; };

  // Common onnxruntime contrib ops (still opaque primitives); ops of any
  // other domain resolve to Op::unknown and get nullopt below.
  if (one_of(op, {Op::MsFastGelu, Op::MsGelu, Op::MsBiasGelu, Op::MsQuickGelu})) return one(in.at(0).type);
  if (one_of(op, {Op::MsSkipLayerNormalization, Op::MsSkipSimplifiedLayerNormalization})) {
    TensorType x = in.at(0).type, st = x;
    if (!st.shape.empty()) st.shape.back() = 1;
    for (int k = 0; k < n.output_size(); ++k) out.push_back(k == 1 || k == 2 ? tt(DType::f32, st.shape) : x);
    return out;
  }
  if (op == Op::MsEmbedLayerNormalization) {
    const Shape &ids = in.sh(0), &we = in.sh(2);
    if (ids.size() != 2 || we.size() != 2) throw Error("EmbedLayerNormalization expects 2-D ids and embedding");
    TensorType o = tt(in.dt(2), {ids[0], ids[1], we[1]});
    for (int k = 0; k < n.output_size(); ++k) out.push_back(k == 1 ? tt(DType::i32, {ids[0]}) : o);
    return out;
  }
  if (op == Op::MsAttention) {
    const Shape &x = in.sh(0), &w = in.sh(1);
    auto qkv = at.ints("qkv_hidden_sizes");
    int64_t heads = at.i("num_heads", 1);
    if (x.size() != 3 || w.size() != 2 || heads <= 0) throw Error("Attention expects 3-D input and 2-D weights");
    int64_t h = qkv.size() == 3 ? qkv[2] : w[1] / 3;
    out.push_back(tt(in.dt(0), {x[0], x[1], h}));
    int64_t past = in.has(4) && in.sh(4).size() == 5 ? in.sh(4)[3] : 0;
    if (n.output_size() > 1) out.push_back(tt(in.dt(0), {2, x[0], heads, past + x[1], h / heads}));
    return out;
  }
  if (same) {
    TensorType x = in.at(0).type;
    if (op == Op::PRelu) x.shape = broadcast_shapes(x.shape, in.sh(1));
    return one(x);
  }
  if (op == Op::IsNaN || op == Op::IsInf) return one(tt(DType::boolean, in.sh(0)));
  if (op == Op::Dropout) {
    out.push_back(in.at(0).type);
    if (n.output_size() > 1) out.push_back(tt(DType::boolean, in.sh(0)));
    return out;
  }
  if (bin || cmp || op == Op::Where) {
    if (inputs.empty()) throw Error("no inputs");
    Shape s = in.sh(0);
    for (std::size_t k = 1; k < inputs.size(); ++k) s = broadcast_shapes(s, in.sh(k));
    DType d = cmp ? DType::boolean : op == Op::Where ? in.dt(1) : in.dt(0);
    return one(tt(d, s));
  }
  if (op == Op::Cast) return one(tt(dtype_from_onnx(static_cast<int>(at.i("to", 1))), in.sh(0)));
  if (op == Op::CastLike) return one(tt(in.dt(1), in.sh(0)));
  if (op == Op::QuantizeLinear) {
    DType d = in.has(2) ? in.dt(2) : DType::u8;
    if (at.has("output_dtype")) d = dtype_from_onnx(static_cast<int>(at.i("output_dtype", 2)));
    return one(tt(d, in.sh(0)));
  }
  if (op == Op::DequantizeLinear) return one(tt(in.has(1) ? in.dt(1) : DType::f32, in.sh(0)));
  if (op == Op::BatchNormalization) {
    out.push_back(in.at(0).type);
    for (int k = 1; k < n.output_size(); ++k) out.push_back(in.has(3) ? in.at(3).type : in.at(0).type);
    return out;
  }
  if (op == Op::LayerNormalization) {
    TensorType x = in.at(0).type;
    out.push_back(x);
    int64_t ax = norm_axis(at.i("axis", -1), x.rank());
    Shape st = x.shape;
    for (int64_t k = ax; k < x.rank(); ++k) st[k] = 1;
    for (int k = 1; k < n.output_size(); ++k) out.push_back(tt(DType::f32, st));
    return out;
  }
  if (op == Op::MatMul || op == Op::MatMulInteger) {
    Shape a = in.sh(0), b = in.sh(1);
    if (a.empty() || b.empty()) throw Error("MatMul of a scalar");
    bool va = a.size() == 1, vb = b.size() == 1;
    if (va) a.insert(a.begin(), 1);
    if (vb) b.push_back(1);
    if (a.back() != b[b.size() - 2])
      throw Error("inner dims differ: " + TensorType{DType::f32, a}.str() + " x " + TensorType{DType::f32, b}.str());
    Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
    Shape s = broadcast_shapes(ba, bb);
    if (!va) s.push_back(a[a.size() - 2]);
    if (!vb) s.push_back(b.back());
    return one(tt(op == Op::MatMul ? in.dt(0) : DType::i32, s));
  }
  if (op == Op::Gemm) {
    Shape a = in.sh(0), b = in.sh(1);
    if (a.size() != 2 || b.size() != 2) throw Error("Gemm operands must be 2-D");
    int64_t m = at.i("transA", 0) ? a[1] : a[0], ka = at.i("transA", 0) ? a[0] : a[1];
    int64_t kb = at.i("transB", 0) ? b[1] : b[0], nn = at.i("transB", 0) ? b[0] : b[1];
    if (ka != kb) throw Error("Gemm inner dims differ");
    Shape s{m, nn};
    if (in.has(2)) broadcast_shapes(s, in.sh(2));
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Conv || op == Op::ConvTranspose) {
    const Shape &x = in.sh(0), &w = in.sh(1);
    if (x.size() < 3 || w.size() != x.size()) throw Error("Conv needs input and weight of equal rank >= 3");
    int64_t group = at.i("group", 1);
    if (group <= 0) throw Error("group must be positive");
    Shape kernel = at.ints("kernel_shape");
    if (kernel.empty()) kernel.assign(w.begin() + 2, w.end());
    if (!std::equal(kernel.begin(), kernel.end(), w.begin() + 2, w.end()))
      throw Error("kernel_shape " + dims_text(kernel) + " differs from the weight's spatial dims " +
                  dims_text(Shape(w.begin() + 2, w.end())));
    bool tr = op == Op::ConvTranspose;
    if (!tr && x[1] != w[1] * group) throw Error("input channels " + std::to_string(x[1]) + " != weight channels x group");
    if (tr && x[1] != w[0]) throw Error("input channels differ from weight dim 0");
    Shape s{x[0], tr ? w[1] * group : w[0]};
    for (int64_t o : window_out(at, x, kernel, false, tr)) s.push_back(o);
    return one(tt(in.dt(0), s));
  }
  if (op == Op::MaxPool || op == Op::AveragePool || op == Op::LpPool) {
    const Shape& x = in.sh(0);
    if (x.size() < 3) throw Error("pooling needs rank >= 3");
    Shape s{x[0], x[1]};
    for (int64_t o : window_out(at, x, at.ints("kernel_shape"), true, false)) s.push_back(o);
    out.push_back(tt(in.dt(0), s));
    if (n.output_size() > 1) out.push_back(tt(DType::i64, s));
    return out;
  }
  if (op == Op::GlobalAveragePool || op == Op::GlobalMaxPool || op == Op::GlobalLpPool) {
    Shape s = in.sh(0);
    if (s.size() < 2) throw Error("global pooling needs rank >= 2");
    for (std::size_t k = 2; k < s.size(); ++k) s[k] = 1;
    return one(tt(in.dt(0), s));
  }
  if (one_of(op, {Op::ReduceSum, Op::ReduceMean, Op::ReduceMax, Op::ReduceMin, Op::ReduceProd, Op::ReduceL1,
                  Op::ReduceL2, Op::ReduceLogSum, Op::ReduceLogSumExp, Op::ReduceSumSquare})) {
    std::vector<int64_t> axes = at.ints("axes");
    if (reduce_axes_input(op, opset) && in.has(1)) {
      auto a = in.ints(1);
      if (!a) return one(unknown(in.dt(0)));
      axes = *a;
    }
    return one(tt(in.dt(0), reduce_shape(in.sh(0), axes, at.i("keepdims", 1) != 0, at.i("noop_with_empty_axes", 0))));
  }
  if (op == Op::ArgMax || op == Op::ArgMin)
    return one(tt(DType::i64, reduce_shape(in.sh(0), {at.i("axis", 0)}, at.i("keepdims", 1) != 0, false)));
  if (op == Op::Transpose) {
    const Shape& x = in.sh(0);
    auto perm = at.ints("perm");
    if (perm.empty())
      for (int64_t k = x.size() - 1; k >= 0; --k) perm.push_back(k);
    if (perm.size() != x.size()) throw Error("perm size differs from rank");
    Shape s;
    std::vector<bool> seen(x.size(), false);
    for (int64_t p : perm) {
      int64_t a = norm_axis(p, x.size());
      if (seen[a]) throw Error("perm repeats an axis");
      seen[a] = true;
      s.push_back(x[a]);
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Reshape) {
    auto shape = opset >= 5 ? in.ints(1) : std::optional(at.ints("shape"));
    if (!shape) return one(unknown(in.dt(0)));
    const Shape& x = in.sh(0);
    int64_t total = in.at(0).type.numel(), prod = 1, neg = -1;
    Shape s = *shape;
    bool allowzero = at.i("allowzero", 0) != 0;
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (s[k] == 0 && !allowzero) {
        if (k >= x.size()) throw Error("shape 0 copies a dim the input lacks");
        s[k] = x[k];
      }
      if (s[k] == -1) {
        if (neg >= 0) throw Error("more than one -1 in reshape target");
        neg = k;
      } else if (s[k] < 0) throw Error("negative dim " + std::to_string(s[k]) + " in reshape target");
      else prod = TensorType{DType::f32, {prod, s[k]}}.numel();
    }
    if (neg >= 0) {
      if (prod == 0 || total % prod) throw Error("cannot reshape " + in.at(0).type.str() + " to the target");
      s[neg] = total / prod;
    } else if (prod != total) {
      throw Error("cannot reshape " + in.at(0).type.str() + " (" + std::to_string(total) + " elements) to " +
                  std::to_string(prod) + " elements");
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Flatten) {
    const Shape& x = in.sh(0);
    int64_t ax = at.i("axis", 1);
    if (ax < 0) ax += x.size();
    if (ax < 0 || ax > static_cast<int64_t>(x.size())) throw Error("Flatten axis out of range");
    int64_t a = TensorType{DType::f32, Shape(x.begin(), x.begin() + ax)}.numel();
    int64_t b = TensorType{DType::f32, Shape(x.begin() + ax, x.end())}.numel();
    return one(tt(in.dt(0), {a, b}));
  }
  if (op == Op::Squeeze || op == Op::Unsqueeze) {
    std::vector<int64_t> axes = at.ints("axes");
    if (opset >= 13 && in.has(1)) {
      auto a = in.ints(1);
      if (!a) return one(unknown(in.dt(0)));
      axes = *a;
    }
    const Shape& x = in.sh(0);
    Shape s;
    if (op == Op::Squeeze) {
      std::vector<bool> drop(x.size(), false);
      for (int64_t a : axes) {
        int64_t k = norm_axis(a, x.size());
        if (x[k] != 1) return one(unknown(in.dt(0)));  // invalid at these dims: an unknown-shape region, not an error
        drop[k] = true;
      }
      for (std::size_t k = 0; k < x.size(); ++k)
        if (!(axes.empty() ? x[k] == 1 : drop[k])) s.push_back(x[k]);
    } else {
      int64_t r = x.size() + axes.size();
      std::vector<bool> ins(r, false);
      for (int64_t a : axes) {
        int64_t k = norm_axis(a, r);
        if (ins[k]) throw Error("Unsqueeze repeats an axis");
        ins[k] = true;
      }
      for (int64_t k = 0, j = 0; k < r; ++k) s.push_back(ins[k] ? 1 : x[j++]);
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Concat) {
    if (inputs.empty()) throw Error("Concat without inputs");
    Shape s = in.sh(0);
    int64_t ax = norm_axis(at.i("axis", 0), s.size());
    for (std::size_t k = 1; k < inputs.size(); ++k) {
      const Shape& y = in.sh(k);
      if (y.size() != s.size()) throw Error("Concat inputs differ in rank");
      for (std::size_t d = 0; d < s.size(); ++d)
        if (static_cast<int64_t>(d) != ax && y[d] != s[d]) throw Error("Concat inputs differ off the axis");
      s[ax] += y[ax];
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Split) {
    const Shape& x = in.sh(0);
    int64_t ax = norm_axis(at.i("axis", 0), x.size());
    std::vector<int64_t> split = at.ints("split");
    if (opset >= 13 && in.has(1)) {
      auto a = in.ints(1);
      if (!a) return std::vector<TensorType>(n.output_size(), unknown(in.dt(0)));
      split = *a;
    }
    int64_t no = n.output_size();
    if (no <= 0) throw Error("Split without outputs");
    if (split.empty()) {
      int64_t chunk = ceil_div(x[ax], no);
      for (int64_t k = 0; k < no; ++k) split.push_back(std::max<int64_t>(0, std::min(chunk, x[ax] - k * chunk)));
    }
    if (static_cast<int64_t>(split.size()) != no) throw Error("split sizes do not match the output count");
    int64_t sum = 0;
    for (int64_t v : split) {
      if (v < 0) throw Error("negative split size");
      sum += v;
      Shape s = x;
      s[ax] = v;
      out.push_back(tt(in.dt(0), s));
    }
    if (sum != x[ax]) throw Error("split sizes do not sum to the axis size");
    return out;
  }
  if (op == Op::Slice) {
    bool ok = true;
    auto p = slice_params(n, inputs, opset, ok);
    if (!ok) return one(unknown(in.dt(0)));
    Shape s = in.sh(0);
    for (std::size_t k = 0; k < p[2].size(); ++k) {
      int64_t a = p[2][k], st = p[0][k], en = p[1][k], step = p[3][k];
      s[a] = step > 0 ? std::max<int64_t>(0, ceil_div(en - st, step)) : std::max<int64_t>(0, ceil_div(st - en, -step));
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Pad) {
    std::vector<int64_t> pads;
    if (opset < 11) pads = at.ints(opset >= 2 ? "pads" : "paddings");
    else {
      auto p = in.ints(1);
      if (!p) return one(unknown(in.dt(0)));
      pads = *p;
    }
    Shape s = in.sh(0);
    int64_t r = s.size();
    std::vector<int64_t> axes;
    if (auto a = in.ints(3)) axes = *a;
    else for (int64_t k = 0; k < r; ++k) axes.push_back(k);
    if (pads.size() != 2 * axes.size()) throw Error("pads has the wrong length");
    for (std::size_t k = 0; k < axes.size(); ++k) {
      int64_t a = norm_axis(axes[k], r);
      s[a] += pads[k] + pads[k + axes.size()];
      if (s[a] < 0) throw Error("pads make a negative dim");
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Expand) {
    auto shape = in.ints(1);
    if (!shape) return one(unknown(in.dt(0)));
    for (int64_t d : *shape) if (d < 0) throw Error("negative dim in Expand shape");
    return one(tt(in.dt(0), broadcast_shapes(in.sh(0), *shape)));
  }
  if (op == Op::Tile) {
    auto rep = in.ints(1);
    if (!rep) return one(unknown(in.dt(0)));
    Shape s = in.sh(0);
    if (rep->size() != s.size()) throw Error("repeats length differs from rank");
    for (std::size_t k = 0; k < s.size(); ++k) {
      if ((*rep)[k] < 0) throw Error("negative repeat");
      s[k] = TensorType{DType::f32, {s[k], (*rep)[k]}}.numel();
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Gather) {
    const Shape &x = in.sh(0), &idx = in.sh(1);
    int64_t ax = norm_axis(at.i("axis", 0), x.size());
    Shape s(x.begin(), x.begin() + ax);
    s.insert(s.end(), idx.begin(), idx.end());
    s.insert(s.end(), x.begin() + ax + 1, x.end());
    return one(tt(in.dt(0), s));
  }
  if (op == Op::GatherElements) return one(tt(in.dt(0), in.sh(1)));
  if (op == Op::GatherND) {
    const Shape &x = in.sh(0), &idx = in.sh(1);
    int64_t b = at.i("batch_dims", 0);
    if (idx.empty() || idx.back() + b > static_cast<int64_t>(x.size()) || b < 0) throw Error("bad GatherND indices");
    Shape s(idx.begin(), idx.end() - 1);
    s.insert(s.end(), x.begin() + b + idx.back(), x.end());
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Resize || op == Op::Upsample) {
    const Shape& x = in.sh(0);
    std::optional<std::vector<double>> scales;
    std::optional<std::vector<int64_t>> sizes;
    if (op == Op::Upsample && opset < 9) scales = at.floats("scales");
    else if (op == Op::Upsample || opset < 11) scales = in.floats(1);
    else {
      if (in.has(3)) sizes = in.ints(3);
      if (!sizes && in.has(2)) scales = in.floats(2);
      if (!sizes && !scales && (in.has(3) || in.has(2))) return one(unknown(in.dt(0)));
    }
    auto axes = at.ints("axes");
    if (axes.empty()) for (std::size_t k = 0; k < x.size(); ++k) axes.push_back(k);
    Shape s = x;
    if (sizes && !sizes->empty()) {
      if (sizes->size() != axes.size()) throw Error("sizes length differs from rank");
      for (std::size_t k = 0; k < axes.size(); ++k) s[norm_axis(axes[k], x.size())] = (*sizes)[k];
    } else if (scales && !scales->empty()) {
      if (scales->size() != axes.size()) throw Error("scales length differs from rank");
      for (std::size_t k = 0; k < axes.size(); ++k) {
        double v = std::floor(x[norm_axis(axes[k], x.size())] * (*scales)[k]);
        if (!(v >= 0 && v < 9e18)) throw Error("invalid resize scale");
        s[norm_axis(axes[k], x.size())] = static_cast<int64_t>(v);
      }
    } else {
      return one(unknown(in.dt(0)));
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::DepthToSpace || op == Op::SpaceToDepth) {
    Shape s = in.sh(0);
    int64_t b = at.i("blocksize", 1);
    if (s.size() != 4 || b <= 0) throw Error("bad DepthToSpace/SpaceToDepth");
    if (op == Op::DepthToSpace) {
      if (s[1] % (b * b)) throw Error("channels not divisible by blocksize^2");
      s = {s[0], s[1] / (b * b), s[2] * b, s[3] * b};
    } else {
      if (s[2] % b || s[3] % b) throw Error("spatial dims not divisible by blocksize");
      s = {s[0], s[1] * b * b, s[2] / b, s[3] / b};
    }
    return one(tt(in.dt(0), s));
  }
  if (op == Op::Shape) {
    int64_t r = in.at(0).type.rank();
    int64_t st = at.i("start", 0), en = at.i("end", r);
    st = std::clamp<int64_t>(st < 0 ? st + r : st, 0, r);
    en = std::clamp<int64_t>(en < 0 ? en + r : en, 0, r);
    return one(tt(DType::i64, {std::max<int64_t>(0, en - st)}));
  }
  if (op == Op::Size) return one(tt(DType::i64, {}));
  if (op == Op::ConstantOfShape) {
    auto shape = in.ints(0);
    DType d = DType::f32;
    if (auto a = at.find("value")) d = dtype_from_onnx(a->t().data_type());
    if (!shape) return one(unknown(d));
    for (int64_t v : *shape) if (v < 0) throw Error("negative dim in ConstantOfShape");
    return one(tt(d, *shape));
  }
  if (op == Op::Range) {
    auto a = in.floats(0), b = in.floats(1), c = in.floats(2);
    if (!a || !b || !c || a->size() != 1 || b->size() != 1 || c->size() != 1) return one(unknown(in.dt(0)));
    if ((*c)[0] == 0) throw Error("Range delta is zero");
    double len = std::ceil(((*b)[0] - (*a)[0]) / (*c)[0]);
    if (!(len < 9e18)) throw Error("Range too long");
    return one(tt(in.dt(0), {std::max<int64_t>(0, static_cast<int64_t>(len))}));
  }
  if (op == Op::OneHot) {
    auto depth = in.floats(1);
    DType d = in.has(2) ? in.dt(2) : DType::f32;
    if (!depth || depth->size() != 1) return one(unknown(d));
    Shape s = in.sh(0);
    int64_t ax = at.i("axis", -1), r = s.size() + 1;
    ax = norm_axis(ax, r);
    if ((*depth)[0] < 0 || !((*depth)[0] < 9e18)) throw Error("invalid OneHot depth");
    s.insert(s.begin() + ax, static_cast<int64_t>((*depth)[0]));
    return one(tt(d, s));
  }
  if (op == Op::TopK) {
    Shape s = in.sh(0);
    int64_t ax = norm_axis(at.i("axis", -1), s.size());
    auto k = opset >= 10 ? in.ints(1) : std::optional(std::vector<int64_t>{at.i("k", 1)});
    if (!k || k->size() != 1) return std::vector<TensorType>{unknown(in.dt(0)), unknown(DType::i64)};
    // ONNX: K must be non-negative and at most the axis length.
    if ((*k)[0] < 0 || (*k)[0] > s[ax])
      throw Error("TopK k = " + std::to_string((*k)[0]) + " is outside [0, " + std::to_string(s[ax]) +
                  "], the length of axis " + std::to_string(ax) + " of input " + TensorType{in.dt(0), s}.str());
    s[ax] = (*k)[0];
    return std::vector<TensorType>{tt(in.dt(0), s), tt(DType::i64, s)};
  }
  if (op == Op::NonZero) return one(unknown(DType::i64));
  if (op == Op::NonMaxSuppression) return one(unknown(DType::i64));
  if (op == Op::Loop || op == Op::Scan) return std::vector<TensorType>(n.output_size(), unknown(DType::unknown));
  return std::nullopt;
}

}  // namespace fuseplan::detail

namespace fuseplan::detail {
std::vector<std::vector<int64_t>> slice_params(const onnx::NodeProto& n, const std::vector<const Tensor*>& inputs,
                                               int64_t opset, bool& ok) {
  Attrs at{n};
  In in{inputs};
  const Shape& x = in.sh(0);
  int64_t r = x.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = at.ints("starts"), ends = at.ints("ends"), axes = at.ints("axes");
  } else {
    auto s = in.ints(1), e = in.ints(2);
    auto a = in.has(3) ? in.ints(3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    auto st = in.has(4) ? in.ints(4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    if (!s || !e || !a || !st) {
      ok = false;
      return {};
    }
    starts = *s, ends = *e, axes = *a, steps = *st;
  }
  if (axes.empty())
    for (std::size_t k = 0; k < starts.size(); ++k) axes.push_back(k);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error("Slice starts/ends/axes/steps differ in length");
  std::vector<bool> seen(r, false);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    int64_t a = norm_axis(axes[k], r), d = x[a], st = steps[k];
    if (seen[a]) throw Error("Slice repeats an axis");
    seen[a] = true;
    axes[k] = a;
    if (st == 0) throw Error("Slice step is zero");
    int64_t b = starts[k], e = ends[k];
    if (b < 0) b = b + d < 0 ? -1 : b + d;
    if (e < 0) e = e + d < 0 ? -1 : e + d;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
    } else {
      b = std::clamp<int64_t>(b, -1, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
    }
    starts[k] = b, ends[k] = e;
  }
  return {starts, ends, axes, steps};
}
}  // namespace fuseplan::detail
