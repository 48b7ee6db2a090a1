// Constant folding: evaluates nodes whose operands are all known constants
// (shape computations: Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
// ConstantOfShape, Range, Constant, small int arithmetic, Cast, Equal, Where...).
#include <algorithm>
#include <cmath>

#include "graph/import_internal.h"

namespace fuseplan::detail {
namespace {
using Shape = std::vector<int64_t>;

// For every flat index of `out`, the flat index of a tensor of shape `in` broadcast to it.
std::vector<int64_t> bcast_index(const Shape& out, const Shape& in) {
  int64_t n = TensorType{DType::f32, out}.numel();
  std::size_t r = out.size(), off = r - in.size();
  std::vector<int64_t> stride(r, 0);
  int64_t s = 1;
  for (std::size_t k = r; k-- > off;) {
    stride[k] = in[k - off] == 1 ? 0 : s;
    s *= in[k - off];
  }
  std::vector<int64_t> idx(n), pos(r, 0);
  int64_t cur = 0;
  for (int64_t i = 0; i < n; ++i) {
    idx[i] = cur;
    for (std::size_t k = r; k-- > 0;) {
      ++pos[k];
      cur += stride[k];
      if (pos[k] < out[k]) break;
      cur -= stride[k] * pos[k];
      pos[k] = 0;
    }
  }
  return idx;
}

bool is_float(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16 || d == DType::f64; }

// The int64 view of a folded double (Builder::push keeps both): truncated,
// and 0 where no int64 holds the value (NaN, infinities, |v| >= 9e18), which
// only a float result can be, and a float result keeps its double.
int64_t int_view(double v) { return std::isfinite(v) && std::fabs(v) < 9e18 ? static_cast<int64_t>(v) : 0; }

// Integer Neg and Abs wrap at INT64_MIN (two's complement), as the kernels do.
int64_t wrapping_neg(int64_t a) { return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a)); }

struct Builder {
  TensorType t;
  std::vector<int64_t> i;
  std::vector<double> f;
  explicit Builder(TensorType tt) : t(std::move(tt)) {}
  void push(double v, int64_t iv) {
    if (is_float(t.dtype)) f.push_back(t.dtype == DType::f32 ? static_cast<float>(v) : v);
    else if (t.dtype == DType::boolean) i.push_back(iv != 0);
    else i.push_back(iv);
  }
  void copy(const Const& c, int64_t k) { push(c.at_f(k), c.at_i(k)); }
  ConstPtr done() { return make_const(t.dtype, t.shape, std::move(i), std::move(f)); }
};

double unary(Op op, double x) {
  switch (op) {
    case Op::Neg: return -x;
    case Op::Abs: return std::fabs(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Floor: return std::floor(x);
    case Op::Ceil: return std::ceil(x);
    case Op::Round: return std::nearbyint(x);
    case Op::Reciprocal: return 1.0 / x;
    case Op::Relu: return std::max(0.0, x);
    case Op::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Op::Tanh: return std::tanh(x);
    case Op::Erf: return std::erf(x);
    case Op::Not: return x == 0;
    default: return x;  // Identity, Cast, Dropout
  }
}

std::optional<double> binary_f(Op op, double a, double b) {
  switch (op) {
    case Op::Add:
    case Op::Sum: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Pow: return std::pow(a, b);
    case Op::Mod: return std::fmod(a, b);
    case Op::Min: return std::min(a, b);
    case Op::Max: return std::max(a, b);
    case Op::Equal: return a == b;
    case Op::Less: return a < b;
    case Op::Greater: return a > b;
    case Op::LessOrEqual: return a <= b;
    case Op::GreaterOrEqual: return a >= b;
    case Op::And: return (a != 0) && (b != 0);
    case Op::Or: return (a != 0) || (b != 0);
    case Op::Xor: return (a != 0) != (b != 0);
    default: return std::nullopt;
  }
}

std::optional<int64_t> binary_i(Op op, int64_t a, int64_t b) {
  auto wrap = [](__int128 v) -> std::optional<int64_t> {
    if (v > INT64_MAX || v < INT64_MIN) return std::nullopt;
    return static_cast<int64_t>(v);
  };
  switch (op) {
    case Op::Add:
    case Op::Sum: return wrap(static_cast<__int128>(a) + b);
    case Op::Sub: return wrap(static_cast<__int128>(a) - b);
    case Op::Mul: return wrap(static_cast<__int128>(a) * b);
    case Op::Div:
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      return a / b;
    case Op::Mod: {
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      int64_t m = a % b;
      return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
    }
    case Op::Pow: {
      double p = std::pow(static_cast<double>(a), static_cast<double>(b));
      if (!(p > -9e18 && p < 9e18)) return std::nullopt;
      return static_cast<int64_t>(p);
    }
    case Op::Min: return std::min(a, b);
    case Op::Max: return std::max(a, b);
    case Op::Equal: return a == b;
    case Op::Less: return a < b;
    case Op::Greater: return a > b;
    case Op::LessOrEqual: return a <= b;
    case Op::GreaterOrEqual: return a >= b;
    case Op::And: return (a != 0) && (b != 0);
    case Op::Or: return (a != 0) || (b != 0);
    case Op::Xor: return (a != 0) != (b != 0);
    default: return std::nullopt;
  }
}

ConstPtr transpose(const Const& x, const std::vector<int64_t>& perm, const TensorType& ot) {
  int64_t r = x.type.rank();
  std::vector<int64_t> in_stride(r, 1);
  for (int64_t k = r - 2; k >= 0; --k) in_stride[k] = in_stride[k + 1] * x.type.shape[k + 1];
  Builder b(ot);
  int64_t n = ot.numel();
  std::vector<int64_t> pos(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = 0;
    for (int64_t k = 0; k < r; ++k) src += pos[k] * in_stride[perm[k]];
    b.copy(x, src);
    for (int64_t k = r - 1; k >= 0; --k) {
      if (++pos[k] < ot.shape[k]) break;
      pos[k] = 0;
    }
  }
  return b.done();
}
}  // namespace

std::optional<std::vector<ConstPtr>> fold_node(const onnx::NodeProto& n, Op op, const std::vector<const Tensor*>& in,
                                               const std::vector<TensorType>& out_types, int64_t opset) {
  const bool unary_op = one_of(op, {Op::Neg, Op::Abs, Op::Sqrt, Op::Exp, Op::Log, Op::Floor, Op::Ceil, Op::Round,
                                    Op::Reciprocal, Op::Relu, Op::Sigmoid, Op::Tanh, Op::Erf, Op::Not, Op::Identity,
                                    Op::Cast, Op::Dropout});
  const bool reshape_op = one_of(op, {Op::Reshape, Op::Flatten, Op::Squeeze, Op::Unsqueeze});
  Attrs at{n};
  if (!n.domain().empty() && n.domain() != "ai.onnx") return std::nullopt;
  if (out_types.empty() || in.empty()) return std::nullopt;
  const TensorType& ot = out_types[0];
  if (op != Op::NonZero) {
    for (const auto& t : out_types)
      if (!t.known || t.numel() > kFoldLimit) {
        if (op == Op::ConstantOfShape && t.known) {
          auto c = std::make_shared<Const>();
          c->type = t;
          c->fill = 0.0;
          if (auto a = at.find("value")) {
            Tensor tmp;
            read_tensor(a->t(), tmp, true);
            if (tmp.k && tmp.k->size() == 1) c->fill = tmp.k->at_f(0);
          }
          return std::vector<ConstPtr>{c};
        }
        return std::nullopt;
      }
  }
  if (op == Op::Shape) {
    const Shape& s = in[0]->type.shape;
    int64_t r = s.size(), st = at.i("start", 0), en = at.i("end", r);
    st = std::clamp<int64_t>(st < 0 ? st + r : st, 0, r);
    en = std::clamp<int64_t>(en < 0 ? en + r : en, 0, r);
    return std::vector<ConstPtr>{make_const(DType::i64, ot.shape, Shape(s.begin() + st, s.begin() + std::max(st, en)), {})};
  }
  if (op == Op::Size) return std::vector<ConstPtr>{make_const(DType::i64, {}, {in[0]->type.numel()}, {})};
  for (const Tensor* t : in)
    if (t && (!t->k || t->k->fill)) return std::nullopt;
  const Const& x = *in[0]->k;
  if (op == Op::ConstantOfShape) {
    auto c = std::make_shared<Const>();
    c->type = ot;
    double v = 0;
    if (auto a = at.find("value")) {
      Tensor tmp;
      read_tensor(a->t(), tmp, true);
      if (tmp.k && tmp.k->size() == 1) v = tmp.k->at_f(0);
    }
    Builder b(ot);
    for (int64_t k = 0; k < ot.numel(); ++k) b.push(v, int_view(v));
    return std::vector<ConstPtr>{b.done()};
  }
  if (unary_op || reshape_op) {
    Builder b(ot);
    for (int64_t k = 0; k < x.size(); ++k) {
      if (is_float(ot.dtype) || !x.is_float() || op == Op::Cast || op == Op::Not) {
        double v = unary(op, x.at_f(k));
        int64_t iv = x.is_float() ? int_view(v)
                                  : (op == Op::Neg    ? wrapping_neg(x.at_i(k))
                                     : op == Op::Abs  ? (x.at_i(k) < 0 ? wrapping_neg(x.at_i(k)) : x.at_i(k))
                                     : op == Op::Relu ? std::max<int64_t>(0, x.at_i(k))
                                     : op == Op::Not  ? x.at_i(k) == 0
                                                      : x.at_i(k));
        const bool int_exact =
            reshape_op || one_of(op, {Op::Neg, Op::Abs, Op::Relu, Op::Not, Op::Identity, Op::Cast, Op::Dropout});
        if (!x.is_float() && !is_float(ot.dtype) && !int_exact) return std::nullopt;
        b.push(v, iv);
      } else {
        return std::nullopt;
      }
    }
    auto c = b.done();
    return std::vector<ConstPtr>{c};
  }
  if (one_of(op, {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Mod, Op::Min, Op::Max, Op::Sum, Op::Equal, Op::Less,
                  Op::Greater, Op::LessOrEqual, Op::GreaterOrEqual, Op::And, Op::Or, Op::Xor}) &&
      in.size() == 2) {
    const Const& y = *in[1]->k;
    auto ia = bcast_index(ot.shape, x.type.shape), ib = bcast_index(ot.shape, y.type.shape);
    Builder b(ot);
    bool fl = x.is_float() || y.is_float();
    for (std::size_t k = 0; k < ia.size(); ++k) {
      if (fl) {
        auto v = binary_f(op, x.at_f(ia[k]), y.at_f(ib[k]));
        if (!v) return std::nullopt;
        b.push(*v, int_view(*v));
      } else {
        auto v = binary_i(op, x.at_i(ia[k]), y.at_i(ib[k]));
        if (!v) return std::nullopt;
        b.push(static_cast<double>(*v), *v);
      }
    }
    return std::vector<ConstPtr>{b.done()};
  }
  if (op == Op::Where && in.size() == 3) {
    const Const &a = *in[1]->k, &c = *in[2]->k;
    auto ic = bcast_index(ot.shape, x.type.shape), ia = bcast_index(ot.shape, a.type.shape),
         ib = bcast_index(ot.shape, c.type.shape);
    Builder b(ot);
    for (std::size_t k = 0; k < ic.size(); ++k) b.copy(x.at_i(ic[k]) ? a : c, x.at_i(ic[k]) ? ia[k] : ib[k]);
    return std::vector<ConstPtr>{b.done()};
  }
  if (op == Op::Expand || op == Op::Tile) {
    Builder b(ot);
    if (op == Op::Expand) {
      for (int64_t k : bcast_index(ot.shape, x.type.shape)) b.copy(x, k);
    } else {
      int64_t r = ot.rank(), total = ot.numel();
      std::vector<int64_t> pos(r, 0), st(r, 1);
      for (int64_t k = r - 2; k >= 0; --k) st[k] = st[k + 1] * x.type.shape[k + 1];
      for (int64_t i = 0; i < total; ++i) {
        int64_t src = 0;
        for (int64_t k = 0; k < r; ++k) src += (pos[k] % x.type.shape[k]) * st[k];
        b.copy(x, src);
        for (int64_t k = r - 1; k >= 0; --k) {
          if (++pos[k] < ot.shape[k]) break;
          pos[k] = 0;
        }
      }
    }
    return std::vector<ConstPtr>{b.done()};
  }
  if (op == Op::Gather) {
    const Const& idx = *in[1]->k;
    int64_t ax = norm_axis(at.i("axis", 0), x.type.rank()), d = x.type.shape[ax];
    int64_t outer = TensorType{DType::f32, Shape(x.type.shape.begin(), x.type.shape.begin() + ax)}.numel();
    int64_t inner = TensorType{DType::f32, Shape(x.type.shape.begin() + ax + 1, x.type.shape.end())}.numel();
    Builder b(ot);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < idx.size(); ++j) {
        int64_t v = idx.at_i(j);
        if (v < 0) v += d;
        if (v < 0 || v >= d) throw Error("Gather index " + std::to_string(idx.at_i(j)) + " out of range");
        for (int64_t q = 0; q < inner; ++q) b.copy(x, (o * d + v) * inner + q);
      }
    return std::vector<ConstPtr>{b.done()};
  }
  if (op == Op::Concat) {
    int64_t ax = norm_axis(at.i("axis", 0), ot.rank());
    int64_t outer = TensorType{DType::f32, Shape(ot.shape.begin(), ot.shape.begin() + ax)}.numel();
    Builder b(ot);
    for (int64_t o = 0; o < outer; ++o)
      for (const Tensor* t : in) {
        int64_t chunk = TensorType{DType::f32, Shape(t->type.shape.begin() + ax, t->type.shape.end())}.numel();
        for (int64_t q = 0; q < chunk; ++q) b.copy(*t->k, o * chunk + q);
      }
    return std::vector<ConstPtr>{b.done()};
  }
  if (op == Op::Slice) {
    bool ok = true;
    auto p = slice_params(n, in, opset, ok);
    if (!ok) return std::nullopt;
    int64_t r = x.type.rank();
    Shape start(r, 0), step(r, 1);
    for (std::size_t k = 0; k < p[2].size(); ++k) start[p[2][k]] = p[0][k], step[p[2][k]] = p[3][k];
    std::vector<int64_t> st(r, 1), pos(r, 0);
    for (int64_t k = r - 2; k >= 0; --k) st[k] = st[k + 1] * x.type.shape[k + 1];
    Builder b(ot);
    int64_t total = ot.numel();
    for (int64_t i = 0; i < total; ++i) {
      int64_t src = 0;
      for (int64_t k = 0; k < r; ++k) src += (start[k] + pos[k] * step[k]) * st[k];
      b.copy(x, src);
      for (int64_t k = r - 1; k >= 0; --k) {
        if (++pos[k] < ot.shape[k]) break;
        pos[k] = 0;
      }
    }
    return std::vector<ConstPtr>{b.done()};
  }
  if (op == Op::Transpose) {
    auto perm = at.ints("perm");
    if (perm.empty())
      for (int64_t k = x.type.rank() - 1; k >= 0; --k) perm.push_back(k);
    for (auto& p : perm) p = norm_axis(p, x.type.rank());
    return std::vector<ConstPtr>{transpose(x, perm, ot)};
  }
  if (op == Op::Range) {
    Builder b(ot);
    for (int64_t k = 0; k < ot.numel(); ++k)
      b.push(x.at_f(0) + k * in[2]->k->at_f(0), x.at_i(0) + k * in[2]->k->at_i(0));
    return std::vector<ConstPtr>{b.done()};
  }
  if (op == Op::DequantizeLinear || op == Op::QuantizeLinear) {
    const Const& sc = *in[1]->k;
    const Const* zp = in.size() > 2 && in[2] ? in[2]->k.get() : nullptr;
    int64_t r = x.type.rank(), ax = sc.size() > 1 ? norm_axis(at.i("axis", 1), r) : 0;
    int64_t inner = 1;
    for (int64_t k = ax + 1; k < r; ++k) inner *= x.type.shape[k];
    int64_t d = sc.size() > 1 ? x.type.shape[ax] : 1;
    if (sc.size() > 1 && sc.size() != d) return std::nullopt;
    Builder b(ot);
    for (int64_t k = 0; k < x.size(); ++k) {
      int64_t c = sc.size() > 1 ? (k / inner) % d : 0;
      double z = zp ? zp->at_f(zp->size() > 1 ? c : 0) : 0.0;
      if (op == Op::DequantizeLinear) {
        b.push((x.at_f(k) - z) * sc.at_f(c), 0);
      } else {
        double q = std::nearbyint(x.at_f(k) / sc.at_f(c)) + z;
        double lo = ot.dtype == DType::i8 ? -128 : 0, hi = ot.dtype == DType::i8 ? 127 : 255;
        q = std::clamp(q, lo, hi);
        b.push(q, int_view(q));
      }
    }
    return std::vector<ConstPtr>{b.done()};
  }
  if (op == Op::NonZero) {
    if (x.size() > kFoldLimit) return std::nullopt;
    int64_t r = x.type.rank();
    std::vector<int64_t> hits;
    for (int64_t k = 0; k < x.size(); ++k)
      if (x.at_f(k) != 0) hits.push_back(k);
    std::vector<int64_t> vals(r * hits.size());
    for (std::size_t h = 0; h < hits.size(); ++h) {
      int64_t rem = hits[h];
      for (int64_t d = r - 1; d >= 0; --d) {
        vals[d * hits.size() + h] = rem % x.type.shape[d];
        rem /= x.type.shape[d];
      }
    }
    return std::vector<ConstPtr>{make_const(DType::i64, {r, static_cast<int64_t>(hits.size())}, vals, {})};
  }
  return std::nullopt;
}

}  // namespace fuseplan::detail
