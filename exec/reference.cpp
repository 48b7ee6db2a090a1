#include "exec/reference.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>

#include "emit/cpu/runtime.h"
#include "exec/onednn.h"
#include "graph/layout.h"
#include "graph/op_attrs.h"

namespace fuseplan {
namespace {

// Calls f(T{}) with T the C++ type of dtype t.
template <class F>
decltype(auto) with_type(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i64: return f(int64_t{});
    case DType::i32: return f(int32_t{});
    case DType::i16: return f(int16_t{});
    case DType::i8: return f(int8_t{});
    case DType::u8: return f(uint8_t{});
    case DType::boolean: return f(bool{});
    default: throw Error("reference executor: unsupported dtype " + std::string(to_string(t)));
  }
}

template <class T>
T load(const Tensor& t, int64_t i) {
  return with_type(t.dtype, [&](auto tag) -> T {
    using S = decltype(tag);
    return fprt::cast<T>(t.ptr<S>()[i]);
  });
}

// Visits every coordinate of `shape` in row-major order: f(coords, flat index).
template <class F>
void for_each_index(const std::vector<int64_t>& shape, F&& f) {
  int r = static_cast<int>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> c(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    f(c.data(), i);
    for (int d = r - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

// Offset in `in` (numpy-broadcast to an output of rank r) of output coords c.
int64_t bcast_offset(const std::vector<int64_t>& in, const int64_t* c, int r) {
  int64_t off = 0, stride = 1;
  int ir = static_cast<int>(in.size());
  for (int d = ir - 1; d >= 0; --d) {
    int od = d + (r - ir);
    if (in[d] != 1) off += c[od] * stride;
    stride *= in[d];
  }
  return off;
}

int64_t flat(const std::vector<int64_t>& shape, const int64_t* c) {
  int64_t off = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + c[d];
  return off;
}

Tensor eval_scalar(const Primitive& p, const std::vector<const Tensor*>& x) {
  Tensor y(p.out.dtype, p.out.shape);
  int r = static_cast<int>(p.out.shape.size());
  if (p.kind == Op::Where) {
    with_type(p.out.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* out = y.ptr<T>();
      for_each_index(p.out.shape, [&](const int64_t* c, int64_t i) {
        bool cond = load<bool>(*x[0], bcast_offset(x[0]->shape, c, r));
        out[i] = cond ? load<T>(*x[1], bcast_offset(x[1]->shape, c, r)) : load<T>(*x[2], bcast_offset(x[2]->shape, c, r));
      });
    });
    return y;
  }
  ScalarOp s = scalar_op(p);
  with_type(x[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto fn) {
      using R = decltype(fn(T{}, T{}));
      if (dtype_bytes(y.dtype) != static_cast<int64_t>(sizeof(R)))
        throw Error("reference executor: '" + p.name + "' output dtype does not match its operands");
      R* out = y.ptr<R>();
      bool bin = x.size() > 1;
      for_each_index(p.out.shape, [&](const int64_t* c, int64_t i) {
        T a = load<T>(*x[0], bcast_offset(x[0]->shape, c, r));
        T b = bin ? load<T>(*x[1], bcast_offset(x[1]->shape, c, r)) : T{};
        out[i] = fn(a, b);
      });
    };
    auto e = [&](int k) { return static_cast<T>(s.extra[k]); };
    const Op op = p.kind;
    if (op == Op::Identity) return run([](T a, T) -> T { return a; });
    if (op == Op::Relu) return run([](T a, T) -> T { return fprt::relu(a); });
    if (op == Op::Neg) return run([](T a, T) -> T { return T(-a); });
    if (op == Op::Abs) return run([](T a, T) -> T { return fprt::abs_(a); });
    if (op == Op::Sign) return run([](T a, T) -> T { return fprt::sign(a); });
    if (op == Op::Not) return run([](T a, T) -> bool { return !a; });
    if (op == Op::Clip) return run([&](T a, T) -> T { return fprt::clip(a, e(0), e(1)); });
    if (op == Op::Add) return run([](T a, T b) -> T { return T(a + b); });
    if (op == Op::Sub) return run([](T a, T b) -> T { return T(a - b); });
    if (op == Op::Mul) return run([](T a, T b) -> T { return T(a * b); });
    if (op == Op::Div) return run([](T a, T b) -> T { return fprt::div_(a, b); });
    if (op == Op::Min) return run([](T a, T b) -> T { return fprt::min_(a, b); });
    if (op == Op::Max) return run([](T a, T b) -> T { return fprt::max_(a, b); });
    if (op == Op::Equal) return run([](T a, T b) -> bool { return a == b; });
    if (op == Op::Less) return run([](T a, T b) -> bool { return a < b; });
    if (op == Op::Greater) return run([](T a, T b) -> bool { return a > b; });
    if (op == Op::LessOrEqual) return run([](T a, T b) -> bool { return a <= b; });
    if (op == Op::GreaterOrEqual) return run([](T a, T b) -> bool { return a >= b; });
    if (op == Op::And) return run([](T a, T b) -> bool { return a && b; });
    if (op == Op::Or) return run([](T a, T b) -> bool { return a || b; });
    if (op == Op::Xor) return run([](T a, T b) -> bool { return a != b; });
    if constexpr (!std::is_same_v<T, bool>) {
      if (op == Op::Mod) return run([&](T a, T b) -> T { return fprt::mod_(a, b, static_cast<int>(s.extra[0])); });
      if (op == Op::Pow) return run([](T a, T b) -> T { return fprt::pow_(a, b); });
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (op == Op::Sigmoid) return run([](T a, T) -> T { return fprt::sigmoid(a); });
      if (op == Op::Tanh) return run([](T a, T) -> T { return fprt::tanh_(a); });
      if (op == Op::Exp) return run([](T a, T) -> T { return fprt::exp_(a); });
      if (op == Op::Log) return run([](T a, T) -> T { return fprt::log_(a); });
      if (op == Op::Sqrt) return run([](T a, T) -> T { return std::sqrt(a); });
      if (op == Op::Reciprocal) return run([](T a, T) -> T { return fprt::reciprocal(a); });
      if (op == Op::Erf) return run([](T a, T) -> T { return fprt::erf_(a); });
      if (op == Op::Ceil) return run([](T a, T) -> T { return std::ceil(a); });
      if (op == Op::Floor) return run([](T a, T) -> T { return std::floor(a); });
      if (op == Op::Round) return run([](T a, T) -> T { return fprt::round_(a); });
      if (op == Op::Sin) return run([](T a, T) -> T { return fprt::sin_(a); });
      if (op == Op::Cos) return run([](T a, T) -> T { return fprt::cos_(a); });
      if (op == Op::Softplus) return run([](T a, T) -> T { return fprt::softplus(a); });
      if (op == Op::LeakyRelu) return run([&](T a, T) -> T { return fprt::leaky_relu(a, e(0)); });
      if (op == Op::HardSigmoid) return run([&](T a, T) -> T { return fprt::hard_sigmoid(a, e(0), e(1)); });
      if (op == Op::HardSwish) return run([](T a, T) -> T { return fprt::hard_swish(a); });
      if (op == Op::Elu) return run([&](T a, T) -> T { return fprt::elu(a, e(0)); });
    }
    throw Error("reference executor: " + p.op + " is not defined for " + std::string(to_string(x[0]->dtype)));
  });
  return y;
}

Tensor eval_cast(const Primitive& p, const Tensor& x) {
  Tensor y(p.out.dtype, p.out.shape);
  with_type(x.dtype, [&](auto in_tag) {
    using S = decltype(in_tag);
    with_type(y.dtype, [&](auto out_tag) {
      using U = decltype(out_tag);
      for (int64_t i = 0; i < y.numel(); ++i) y.ptr<U>()[i] = fprt::cast<U>(x.ptr<S>()[i]);
    });
  });
  return y;
}

// Injective ops: y[c] = x_k[src(c)] copied bytewise; src returns the operand
// index (or -1 for a constant-pad position) and the flat source offset.
Tensor eval_injective(const Primitive& p, const std::vector<const Tensor*>& x) {
  Tensor y(p.out.dtype, p.out.shape);
  const auto& os = p.out.shape;
  const auto& is = x[0]->shape;
  int r = static_cast<int>(os.size());
  int64_t es = dtype_bytes(y.dtype);
  std::vector<int64_t> ic(std::max<std::size_t>(is.size(), 1));
  std::function<std::pair<int, int64_t>(const int64_t*)> src;
  if (p.kind == Op::Slice) {
    SliceParams sp = slice_params(p, r);
    src = [&, sp](const int64_t* c) {
      for (int d = 0; d < r; ++d) ic[d] = sp.start[d] + c[d] * sp.step[d];
      return std::pair{0, flat(is, ic.data())};
    };
  } else if (p.kind == Op::Concat) {
    int ax = static_cast<int>(p.attr_int("axis", 0));
    src = [&, ax](const int64_t* c) {
      int64_t a = c[ax];
      for (std::size_t k = 0; k < x.size(); ++k) {
        if (a < x[k]->shape[ax]) {
          for (int d = 0; d < r; ++d) ic[d] = d == ax ? a : c[d];
          return std::pair{static_cast<int>(k), flat(x[k]->shape, ic.data())};
        }
        a -= x[k]->shape[ax];
      }
      throw Error("Concat '" + p.name + "': output larger than its operands");
    };
  } else if (p.kind == Op::Pad) {
    PadParams pp = pad_params(p, r);
    src = [&, pp](const int64_t* c) {
      for (int d = 0; d < r; ++d) {
        int64_t i = c[d] - pp.begin[d];
        if (i < 0 || i >= is[d]) {
          if (pp.mode == 0) return std::pair{-1, int64_t{0}};
          i = pp.mode == 1 ? fprt::reflect_index(i, is[d]) : fprt::clamp_index(i, is[d]);
        }
        ic[d] = i;
      }
      return std::pair{0, flat(is, ic.data())};
    };
  } else if (p.kind == Op::Expand) {
    src = [&](const int64_t* c) { return std::pair{0, bcast_offset(is, c, r)}; };
  } else if (p.kind == Op::Tile) {
    src = [&](const int64_t* c) {
      for (int d = 0; d < r; ++d) ic[d] = c[d] % is[d];
      return std::pair{0, flat(is, ic.data())};
    };
  } else if (p.kind == Op::Transpose) {
    auto perm = p.attr_ints("perm");
    if (perm.empty())
      for (int d = r - 1; d >= 0; --d) perm.push_back(d);
    src = [&, perm](const int64_t* c) {
      for (int d = 0; d < r; ++d) ic[perm[d]] = c[d];
      return std::pair{0, flat(is, ic.data())};
    };
  } else if (p.kind == Op::Resize) {
    ResizeParams rp = resize_params(p, is, os);
    src = [&, rp](const int64_t* c) {
      for (int d = 0; d < r; ++d)
        ic[d] = fprt::resize_nearest(c[d], rp.scales[d], is[d], os[d], rp.coord_mode, rp.nearest_mode);
      return std::pair{0, flat(is, ic.data())};
    };
  } else if (p.kind == Op::DepthToSpace || p.kind == Op::SpaceToDepth) {
    int64_t b = p.attr_int("blocksize", 1);
    bool crd = p.attr_string("mode", "DCR") == "CRD";
    bool d2s = p.kind == Op::DepthToSpace;
    src = [&, b, crd, d2s](const int64_t* c) {
      if (d2s) {
        int64_t oc = os[1], bh = c[2] % b, bw = c[3] % b;
        ic[0] = c[0];
        ic[1] = crd ? c[1] * b * b + bh * b + bw : (bh * b + bw) * oc + c[1];
        ic[2] = c[2] / b;
        ic[3] = c[3] / b;
      } else {
        int64_t icn = is[1], blk = c[1] / icn;
        ic[0] = c[0];
        ic[1] = c[1] % icn;
        ic[2] = c[2] * b + blk / b;
        ic[3] = c[3] * b + blk % b;
      }
      return std::pair{0, flat(is, ic.data())};
    };
  } else {
    throw Error("reference executor: unknown injective op " + p.op);
  }
  Tensor padv(p.out.dtype, {});
  if (p.kind == Op::Pad)
    with_type(y.dtype, [&](auto tag) { padv.ptr<decltype(tag)>()[0] = fprt::cast<decltype(tag)>(p.attr_float("value", 0)); });
  for_each_index(os, [&](const int64_t* c, int64_t i) {
    auto [k, off] = src(c);
    const std::byte* from = k < 0 ? padv.data.data() : x[k]->data.data() + off * es;
    std::memcpy(y.data.data() + i * es, from, static_cast<std::size_t>(es));
  });
  return y;
}

Tensor eval_reduce(const Primitive& p, const Tensor& x) {
  Tensor y(p.out.dtype, p.out.shape);
  int ir = static_cast<int>(x.shape.size());
  ReduceParams rp = reduce_params(p, ir);
  std::vector<bool> red(ir, false);
  std::vector<int64_t> rshape, kept;
  int64_t count = 1;
  for (int a : rp.axes) { red[a] = true; rshape.push_back(x.shape[a]); count *= x.shape[a]; }
  for (int d = 0; d < ir; ++d) kept.push_back(red[d] ? 1 : x.shape[d]);
  with_type(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* in = x.ptr<T>();
      T* out = y.ptr<T>();
      std::vector<int64_t> ic(ir);
      // The canonical order (graph/op_attrs.h reduce_lanes): lane = last
      // reduced coordinate mod lanes, then fprt::fold_lanes.
      static_assert(fprt::kReduceLanes == kReduceLanes);
      const int64_t lanes = reduce_lanes(rp, x.shape, x.dtype);
      const int last = static_cast<int>(rshape.size()) - 1;
      T init = rp.kind == ReduceKind::max ? std::numeric_limits<T>::lowest() : (rp.kind == ReduceKind::prod ? T(1) : T(0));
      if (rp.kind == ReduceKind::max && std::numeric_limits<T>::has_infinity) init = -std::numeric_limits<T>::infinity();
      if (rp.kind == ReduceKind::min) init = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                                       : std::numeric_limits<T>::max();
      const int fold = fold_lanes_kind(rp.kind);
      T acc[kReduceLanes];
      for_each_index(kept, [&](const int64_t* c, int64_t i) {
        std::fill(acc, acc + kReduceLanes, init);
        for_each_index(rshape, [&](const int64_t* rc, int64_t) {
          for (int d = 0, k = 0; d < ir; ++d) ic[d] = red[d] ? rc[k++] : c[d];
          T v = in[flat(x.shape, ic.data())];
          T& a = acc[lanes > 1 ? rc[last] % lanes : 0];
          if (rp.kind == ReduceKind::max) a = fprt::max_(a, v);
          else if (rp.kind == ReduceKind::min) a = fprt::min_(a, v);
          else if (rp.kind == ReduceKind::prod) a = T(a * v);
          else a = T(a + v);
        });
        T r = lanes > 1 ? fprt::fold_lanes(acc, fold) : acc[0];
        if (rp.kind == ReduceKind::mean) r = fprt::div_(r, T(count));
        out[i] = r;
      });
    } else {
      throw Error("reference executor: cannot reduce bool tensor '" + p.name + "'");
    }
  });
  return y;
}

Tensor eval_indexed(const Primitive& p, const std::vector<const Tensor*>& x) {
  Tensor y(p.out.dtype, p.out.shape);
  const auto& os = p.out.shape;
  int r = static_cast<int>(os.size());
  int64_t es = dtype_bytes(y.dtype);
  if (p.kind == Op::Gather || p.kind == Op::GatherElements) {
    const auto& ds = x[0]->shape;
    int ax = static_cast<int>(p.attr_int("axis", 0));
    int q = static_cast<int>(x[1]->shape.size());
    std::vector<int64_t> dc(ds.size());
    for_each_index(os, [&](const int64_t* c, int64_t i) {
      int64_t idx;
      if (p.kind == Op::Gather) {
        idx = load<int64_t>(*x[1], flat(x[1]->shape, c + ax));
        for (int d = 0; d < static_cast<int>(ds.size()); ++d) dc[d] = d < ax ? c[d] : (d == ax ? 0 : c[d + q - 1]);
      } else {
        idx = load<int64_t>(*x[1], flat(x[1]->shape, c));
        for (int d = 0; d < r; ++d) dc[d] = c[d];
      }
      dc[ax] = fprt::norm_index(idx, ds[ax]);
      std::memcpy(y.data.data() + i * es, x[0]->data.data() + flat(ds, dc.data()) * es, static_cast<std::size_t>(es));
    });
  } else if (p.kind == Op::OneHot) {
    int ax = static_cast<int>(p.attr_int("axis", -1));
    if (ax < 0) ax += r;
    int64_t depth = p.attr_int("depth", os[ax]);
    double on = p.attr_float("on", 1), off = p.attr_float("off", 0);
    std::vector<int64_t> ic(std::max(r - 1, 1));
    with_type(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_index(os, [&](const int64_t* c, int64_t i) {
        for (int d = 0, k = 0; d < r; ++d)
          if (d != ax) ic[k++] = c[d];
        int64_t v = load<int64_t>(*x[0], r > 1 ? flat(x[0]->shape, ic.data()) : 0);
        if (v < 0) v += depth;
        y.ptr<T>()[i] = fprt::cast<T>(v == c[ax] ? on : off);
      });
    });
  } else if (p.kind == Op::QuantizeLinear || p.kind == Op::DequantizeLinear) {
    int ax = static_cast<int>(p.attr_int("axis", 1));
    bool q = p.kind == Op::QuantizeLinear;
    DType qt = q ? y.dtype : x[0]->dtype;
    for_each_index(os, [&](const int64_t* c, int64_t i) {
      auto param = [&](std::size_t k) { return x[k]->numel() > 1 ? c[ax] : int64_t{0}; };
      float scale = load<float>(*x[1], param(1));
      with_type(qt, [&](auto tag) {
        using Q = decltype(tag);
        // DequantizeLinear also takes int32 (QDQ models' biases).
        if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t> || std::is_same_v<Q, int32_t>) {
          Q zp = x.size() > 2 ? load<Q>(*x[2], param(2)) : Q(0);
          if (!q) y.ptr<float>()[i] = fprt::dequantize<Q>(x[0]->ptr<Q>()[i], scale, zp);
          else if constexpr (std::is_same_v<Q, int32_t>)
            throw Error("reference executor: QuantizeLinear '" + p.name + "' to int32 is not supported (int8/uint8)");
          else y.ptr<Q>()[i] = fprt::quantize<Q>(load<float>(*x[0], i), scale, zp);
        } else {
          throw Error("reference executor: " + p.op + " '" + p.name + "' needs int8/uint8 (or int32 to dequantize)");
        }
      });
    });
  }
  return y;
}

// w_const: the contraction's second operand is a source (weights), constant
// for the run (exec/onednn.h keeps its reordered copy).
// conv_layout: the Conv's graph/layout.h bits for plain buffers.
Tensor eval_library(const Primitive& p, const std::vector<const Tensor*>& x, int w_const, int conv_layout) {
  Tensor y(p.out.dtype, p.out.shape);
  const auto& os = p.out.shape;
  int r = static_cast<int>(os.size());
  auto need_f32 = [&] {
    for (auto* t : x)
      if (t->dtype != DType::f32) throw Error("reference executor: " + p.op + " '" + p.name + "' supports float32 only");
  };
  if (p.kind == Op::MatMul) {
    need_f32();
    fprt::matmul(x[0]->ptr<float>(), x[0]->shape.data(), static_cast<int>(x[0]->shape.size()), x[1]->ptr<float>(),
                 x[1]->shape.data(), static_cast<int>(x[1]->shape.size()), y.ptr<float>(), os.data(), r,
                 static_cast<int>(p.attr_int("transA", 0)), static_cast<int>(p.attr_int("transB", 0)), w_const);
  } else if (p.kind == Op::Conv || p.kind == Op::ConvTranspose) {
    need_f32();
    WindowParams w = window_params(p, r - 2);
    if (p.kind == Op::Conv)
      fprt::conv(x[0]->ptr<float>(), x[0]->shape.data(), x[1]->ptr<float>(), x[1]->shape.data(), y.ptr<float>(),
                 os.data(), r - 2, w.strides.data(), w.pads.data(), w.dilations.data(), w.group, w_const, conv_layout);
    else
      fprt::conv_transpose(x[0]->ptr<float>(), x[0]->shape.data(), x[1]->ptr<float>(), x[1]->shape.data(),
                           y.ptr<float>(), os.data(), r - 2, w.strides.data(), w.pads.data(), w.dilations.data(),
                           w.group, w_const);
  } else if (p.kind == Op::MaxPool || p.kind == Op::AveragePool) {
    need_f32();
    WindowParams w = window_params(p, r - 2);
    fprt::pool(x[0]->ptr<float>(), x[0]->shape.data(), y.ptr<float>(), os.data(), r - 2, w.kernel.data(),
               w.strides.data(), w.pads.data(), w.dilations.data(), p.kind == Op::MaxPool,
               static_cast<int>(p.attr_int("count_include_pad", 0)));
  } else if (p.kind == Op::Resize) {
    need_f32();
    ResizeParams rp = resize_params(p, x[0]->shape, os);
    fprt::resize_linear(x[0]->ptr<float>(), x[0]->shape.data(), r, y.ptr<float>(), os.data(), rp.scales.data(),
                        rp.coord_mode);
  } else {
    with_type(y.dtype, [&](auto tag) {
      using T = decltype(tag);
      static const char* reds[] = {"none", "add", "mul", "max", "min"};
      int red = 0;
      for (int k = 0; k < 5; ++k)
        if (p.attr_string("reduction", "none") == reds[k]) red = k;
      const auto& ds = x[0]->shape;
      int dr = static_cast<int>(ds.size());
      if (p.kind == Op::CumSum) {
        fprt::cumsum(x[0]->ptr<T>(), ds.data(), dr, y.ptr<T>(), static_cast<int>(p.attr_int("axis", 0)),
                     static_cast<int>(p.attr_int("exclusive", 0)), static_cast<int>(p.attr_int("reverse", 0)));
        return;
      }
      if (x[1]->dtype != DType::i64) throw Error(p.op + " '" + p.name + "': indices must be int64");
      const auto& is = x[1]->shape;
      if (p.kind == Op::GatherND)
        fprt::gather_nd(x[0]->ptr<T>(), ds.data(), dr, x[1]->ptr<int64_t>(), is.data(), static_cast<int>(is.size()),
                        y.ptr<T>());
      else if (p.kind == Op::ScatterND)
        fprt::scatter_nd(x[0]->ptr<T>(), ds.data(), dr, x[1]->ptr<int64_t>(), is.data(), static_cast<int>(is.size()),
                         x[2]->ptr<T>(), y.ptr<T>(), red);
      else
        fprt::scatter_elements(x[0]->ptr<T>(), ds.data(), dr, x[1]->ptr<int64_t>(), is.data(), x[2]->ptr<T>(),
                               y.ptr<T>(), static_cast<int>(p.attr_int("axis", 0)), red);
    });
  }
  return y;
}

}  // namespace

Tensor eval_primitive(const Graph& g, NodeId n, const std::vector<const Tensor*>& x) {
  const Primitive& p = g.node(n);
  if (p.op_class == OpClass::opaque)
    throw Error("cannot execute opaque primitive '" + p.name + "' (op " + p.op + ")");
  if (!p.out.known) throw Error("cannot execute '" + p.name + "': its shape is not known");
  if (p.kind == Op::Reshape || p.kind == Op::Identity) {
    Tensor y(p.out.dtype, p.out.shape);
    if (x[0]->data.size() != y.data.size()) throw Error("Reshape '" + p.name + "': element count changes");
    y.data = x[0]->data;
    return y;
  }
  if (p.kind == Op::Cast) return eval_cast(p, *x[0]);
  if (traits(p).is_scalar()) return eval_scalar(p, x);
  if (traits(p).is_reduce()) return eval_reduce(p, *x[0]);
  if (is_library_op(p)) {
    fprt::contraction_library() = &onednn_contractions();
    const auto ops = g.operands(n);
    // A Conv runs the primitive the plan's kernels run (graph/layout.h).
    const int conv_layout = p.kind == Op::Conv ? layouts_of(g).conv_bits(g, n, true) : 0;
    return eval_library(p, x, ops.size() > 1 && g.node(ops[1]).op_class == OpClass::source, conv_layout);
  }
  if (one_of(p.kind, {Op::Gather, Op::GatherElements, Op::OneHot, Op::QuantizeLinear, Op::DequantizeLinear}))
    return eval_indexed(p, x);
  if (one_of(p.kind, {Op::Slice, Op::Concat, Op::Pad, Op::Expand, Op::Tile, Op::Transpose, Op::Resize,
                      Op::DepthToSpace, Op::SpaceToDepth}))
    return eval_injective(p, x);
  throw Error("cannot execute primitive '" + p.name + "': unknown op " + p.op);
}

std::vector<Tensor> run_reference(const Graph& g, const std::map<NodeId, Tensor>& sources) {
  onednn_forget_weights();
  std::vector<Tensor> v(g.size());
  for (NodeId n : g.topo_order()) {
    const Primitive& p = g.node(n);
    if (p.op_class == OpClass::source) {
      auto it = sources.find(n);
      if (it == sources.end()) throw Error("no data for source '" + p.name + "'");
      v[n] = it->second;
      continue;
    }
    std::vector<const Tensor*> ops;
    for (NodeId o : g.operands(n)) ops.push_back(&v[o]);
    v[n] = eval_primitive(g, n, ops);
  }
  return v;
}

}  // namespace fuseplan
