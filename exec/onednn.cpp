#include "exec/onednn.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "graph/layout.h"
#include "support/error.h"

// libgomp's entry points, declared here rather than through <omp.h> so a
// clang build links the runtime oneDNN uses, not clang's own.
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace fuseplan {
namespace {

using dnnl::memory;
using Dims = memory::dims;
constexpr auto kF32 = memory::data_type::f32;

struct Engine {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};
Engine& engine() {
  static Engine e;
  return e;
}

// Row-major strides of dims.
Dims plain_strides(const Dims& d) {
  Dims s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * std::max<int64_t>(d[i + 1], 1);
  return s;
}
memory::desc plain(const Dims& d) { return memory::desc(d, kF32, plain_strides(d)); }

std::string dims_text(const int64_t* s, int r) {
  std::string t = "[";
  for (int i = 0; i < r; ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

// A grow-only 64-byte-aligned buffer (activations reordered around a call).
class Scratch {
 public:
  void* get(std::size_t bytes) {
    if (bytes > size_) {
      buf_.reset(static_cast<std::byte*>(::operator new(bytes, std::align_val_t{64})));
      size_ = bytes;
    }
    return buf_.get();
  }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte, Free> buf_;
  std::size_t size_ = 0;
};

// A constant's reordered copy, valid while `fingerprint` matches its bytes.
struct WeightCopy {
  uint64_t fingerprint = 0;
  memory mem;
};

// One created primitive, the layouts around it, and what a call needs bound
// once: the memory objects on the caller's buffers (their data handles set
// per call) and the reorders between the caller's layouts and the
// primitive's. Creating them per call cost more than a small GEMM's
// primitive: a 16x32x32 MatMul took 2.3 us through this table against
// 0.54 us for the primitive on bound memories (Zen 4, 1 thread).
struct Prim {
  dnnl::primitive prim;
  memory::desc src_user, src, wei_user, wei, dst_user, dst;
  std::string what;  // "Conv [..] x [..]: jit:avx2" for onednn_implementations()
  struct Bound {     // bind()
    memory src_u, wei_u, dst_u, src_m, wei_m, dst_m;
    dnnl::reorder src_in, wei_in, dst_out;  // where the layouts differ
    std::unordered_map<int, memory> args;
    // Reordered copies of constant weights, by address (onednn_forget_weights).
    std::unordered_map<const void*, WeightCopy> weights;
  } bound;
};

// A reorder bound once (fprt::unblock, fprt::copy_view).
struct BoundReorder {
  memory from, to;
  dnnl::reorder reorder;
};

struct State {
  std::mutex mu;
  std::unordered_map<std::string, Prim> prims;       // by call key (Key)
  std::unordered_map<std::string, BoundReorder> reorders;  // by call key
  std::vector<std::string> order;               // creation order, for onednn_implementations()
  Scratch src_buf, dst_buf, wei_buf;
  double last_primitive_us = 0;  // onednn_last_primitive_us()
};
State& state() {
  static State s;
  return s;
}

// A call's key: the bytes of its arguments (shapes, attributes, threads).
// The readable text is built only when a primitive is created or fails.
class Key {
 public:
  Key& operator<<(int64_t v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Key& add(const int64_t* v, int n) {
    *this << n;
    bytes_.append(reinterpret_cast<const char*>(v), sizeof(int64_t) * static_cast<std::size_t>(n));
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// FNV-1a over the size and 16 sampled floats: catches a constant address
// that holds other data without reading the whole tensor every call.
uint64_t fingerprint(const float* w, std::size_t n) {
  uint64_t h = 1469598103934665603ull ^ n;
  for (std::size_t i = 0; i < 16 && n > 0; ++i) {
    uint32_t bits;
    std::memcpy(&bits, w + (i * 2654435761u) % n, 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

[[noreturn]] void fail(const std::string& what, const dnnl::error& e) {
  throw Error("oneDNN cannot run " + what + ": " + e.what());
}

// Binds p's memory objects (no data yet) and the reorders it needs.
void bind(Prim& p) {
  const dnnl::engine& eng = engine().eng;
  auto side = [&](const memory::desc& user, const memory::desc& prim, memory& u, memory& m) {
    u = memory(user, eng, DNNL_MEMORY_NONE);
    m = prim != user ? memory(prim, eng, DNNL_MEMORY_NONE) : u;
  };
  side(p.src_user, p.src, p.bound.src_u, p.bound.src_m);
  side(p.wei_user, p.wei, p.bound.wei_u, p.bound.wei_m);
  side(p.dst_user, p.dst, p.bound.dst_u, p.bound.dst_m);
  if (p.src != p.src_user) p.bound.src_in = dnnl::reorder(p.bound.src_u, p.bound.src_m);
  if (p.wei != p.wei_user) p.bound.wei_in = dnnl::reorder(p.bound.wei_u, p.bound.wei_m);
  if (p.dst != p.dst_user) p.bound.dst_out = dnnl::reorder(p.bound.dst_m, p.bound.dst_u);
  p.bound.args = {{DNNL_ARG_SRC, p.bound.src_m}, {DNNL_ARG_WEIGHTS, p.bound.wei_m}, {DNNL_ARG_DST, p.bound.dst_m}};
}

// Executes p on user buffers: reorders the activation in and the output out
// when the primitive's layout differs, and the weights (once per run for a
// constant).
void execute(Prim& p, const float* src, const float* wei, bool wei_const, float* dst) {
  State& st = state();
  dnnl::stream& strm = engine().strm;
  p.bound.src_u.set_data_handle(const_cast<float*>(src));
  p.bound.wei_u.set_data_handle(const_cast<float*>(wei));
  p.bound.dst_u.set_data_handle(dst);
  if (p.src != p.src_user) {
    p.bound.src_m.set_data_handle(st.src_buf.get(p.src.get_size()));
    p.bound.src_in.execute(strm, p.bound.src_u, p.bound.src_m);
  }
  p.bound.args[DNNL_ARG_WEIGHTS] = p.bound.wei_m;
  if (p.wei != p.wei_user) {
    if (wei_const) {
      const std::size_t n = p.wei_user.get_size() / sizeof(float);
      const uint64_t fp = fingerprint(wei, n);
      WeightCopy& c = p.bound.weights[wei];
      if (!c.mem || c.fingerprint != fp) {
        c.mem = memory(p.wei, engine().eng);
        p.bound.wei_in.execute(strm, p.bound.wei_u, c.mem);
        c.fingerprint = fp;
      }
      p.bound.args[DNNL_ARG_WEIGHTS] = c.mem;
    } else {
      p.bound.wei_m.set_data_handle(st.wei_buf.get(p.wei.get_size()));
      p.bound.wei_in.execute(strm, p.bound.wei_u, p.bound.wei_m);
    }
  }
  if (p.dst != p.dst_user) p.bound.dst_m.set_data_handle(st.dst_buf.get(p.dst.get_size()));
  const auto t0 = std::chrono::steady_clock::now();
  p.prim.execute(strm, p.bound.args);
  strm.wait();  // a CPU stream runs the primitive in execute(); the wait returns at once
  st.last_primitive_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (p.dst != p.dst_user) p.bound.dst_out.execute(strm, p.bound.dst_m, p.bound.dst_u);
  strm.wait();
}

// Finds the primitive of `key` (creating it with make() on first use) and
// executes it on user buffers; oneDNN's errors become one-line Errors
// naming text().
template <class Text, class Make>
void run(const Key& key, Text&& text, Make&& make, const float* src, const float* wei, bool wei_const, float* dst) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  try {
    auto it = st.prims.find(key.bytes());
    if (it == st.prims.end()) {
      Prim p = make();
      bind(p);
      it = st.prims.emplace(key.bytes(), std::move(p)).first;
      st.order.push_back(key.bytes());
    }
    execute(it->second, src, wei, wei_const, dst);
  } catch (const dnnl::error& e) {
    fail(text(), e);
  }
}

// A constant B's row padding (onednn.h, "MatMul"): rows of N floats, N a
// multiple of kPadEveryN, get kRowPad more when M < kPadBelowM.
constexpr int64_t kPadEveryN = 1024, kPadBelowM = 512, kRowPad = 16;

// ------------------------------------------------------------------ matmul
// matmul and matmul_view: b_strides null for a row-major B.
void matmul_strided(const float* a, const int64_t* as, int ar, const float* b, const int64_t* bs, int br,
                    const int64_t* b_strides, float* y, const int64_t* ys, int yr, int transA, int transB, int b_const) {
  // numpy promotion of 1-D operands: a [K] -> [1,K], b [K] -> [K,1].
  std::vector<int64_t> A(as, as + ar), B(bs, bs + br);
  if (A.size() == 1) A.insert(A.begin(), 1);
  if (B.size() == 1) B.push_back(1);
  const int an = static_cast<int>(A.size()), bn = static_cast<int>(B.size());
  const int64_t M = transA ? A[an - 1] : A[an - 2], K = transA ? A[an - 2] : A[an - 1];
  const int64_t N = transB ? B[bn - 2] : B[bn - 1];
  const int nb = std::max(an, bn) - 2;
  // Batch dims right-aligned, size 1 where an operand lacks or broadcasts one.
  Dims ba(nb, 1), bb(nb, 1);
  for (int d = 0; d < nb; ++d) {
    const int ia = d - (nb - (an - 2)), ib = d - (nb - (bn - 2));
    if (ia >= 0) ba[d] = A[ia];
    if (ib >= 0) bb[d] = B[ib];
  }
  const int64_t out = std::accumulate(ys, ys + yr, int64_t{1}, std::multiplies<>());
  if (out == 0) return;
  if (K == 0) {
    std::fill(y, y + out, 0.0f);
    return;
  }
  Key key;
  key << 'M' << transA << transB << omp_get_max_threads();
  key.add(as, ar).add(bs, br);
  if (b_strides) key.add(b_strides, br);
  auto text = [&] {
    return "MatMul " + dims_text(as, ar) + "x" + dims_text(bs, br) + (b_strides ? " B strides " + dims_text(b_strides, br) : "") +
           " t" + std::to_string(transA) + std::to_string(transB) + " @" + std::to_string(omp_get_max_threads());
  };
  run(
      key, text,
      [&] {
        const int64_t batch_a = std::accumulate(ba.begin(), ba.end(), int64_t{1}, std::multiplies<>());
        const int64_t batch_b = std::accumulate(bb.begin(), bb.end(), int64_t{1}, std::multiplies<>());
        // The problem as oneDNN sees it: [batch..., M, K] x [batch..., K, N].
        Dims bd_a, bd_b;
        int64_t m = M;
        if (batch_b == 1 && !transA) {
          m = M * batch_a;  // B shared by the batch: one GEMM over all of A's rows
        } else if (ba == bb && !b_strides) {
          if (nb > 0) bd_a = bd_b = {batch_a};
        } else {
          bd_a = ba;
          bd_b = bb;
        }
        auto with = [](Dims lead, std::initializer_list<int64_t> tail) {
          lead.insert(lead.end(), tail);
          return lead;
        };
        // Operand strides: the stored operand is [batch..., rows, cols] row-major.
        auto operand = [&](const Dims& lead, int64_t r, int64_t c, bool trans) {
          Dims d = with(lead, {r, c});
          Dims s(d.size());
          // Logical [r, c]; stored [c, r] when transposed.
          s[d.size() - 2] = trans ? 1 : c;
          s[d.size() - 1] = trans ? r : 1;
          int64_t step = r * c;
          for (int i = static_cast<int>(lead.size()) - 1; i >= 0; --i) {
            s[i] = step;
            step *= std::max<int64_t>(lead[i], 1);
          }
          return memory::desc(d, kF32, s);
        };
        memory::desc ad = operand(bd_a, m, K, transA), bdsc = operand(bd_b, K, N, transB);
        Dims bd_y = bd_a;
        for (std::size_t i = 0; i < bd_y.size(); ++i) bd_y[i] = std::max(bd_a[i], bd_b[i]);
        memory::desc yd = plain(with(bd_y, {m, N}));
        if (b_strides) {
          // B as the caller's view: its own strides per dim (a broadcast or
          // size-1 dim: the dense stride, never read twice apart).
          const memory::desc dense = bdsc;
          Dims st(bd_b.size() + 2);
          for (std::size_t i = 0; i < bd_b.size(); ++i) {
            const int ib = static_cast<int>(i) - (nb - (bn - 2));
            st[i] = ib >= 0 && B[ib] > 1 ? b_strides[ib] : dense.data.format_desc.blocking.strides[i];
          }
          const std::size_t k = bd_b.size();
          st[k] = transB ? b_strides[bn - 1] : b_strides[bn - 2];
          st[k + 1] = transB ? b_strides[bn - 2] : b_strides[bn - 1];
          if (K == 1) st[k] = dense.data.format_desc.blocking.strides[k];
          if (N == 1) st[k + 1] = dense.data.format_desc.blocking.strides[k + 1];
          bdsc = memory::desc(with(bd_b, {K, N}), kF32, st);
          // oneDNN runs the view itself only where it picks the same
          // implementation as on a row-major B of these dims (so the same
          // accumulation as the reference, which reads B row-major);
          // otherwise B is reordered row-major first (onednn.h).
          dnnl::matmul::primitive_desc on_view(dnnl::matmul::desc(ad, bdsc, yd), engine().eng),
              on_dense(dnnl::matmul::desc(ad, dense, yd), engine().eng);
          const bool same = std::string(on_view.impl_info_str()) == on_dense.impl_info_str();
          const dnnl::matmul::primitive_desc& pd = same ? on_view : on_dense;
          return Prim{dnnl::matmul(pd), ad, pd.src_desc(), bdsc, pd.weights_desc(), yd, pd.dst_desc(),
                      text() + ": " + pd.impl_info_str() + (same ? " (B read as a view)" : " (B reordered)"), {}};
        }
        // Weights in the layout oneDNN prefers when B is a constant (it may
        // be packed once); otherwise as stored.
        memory::desc bw = b_const && bd_b.empty() ? memory::desc(bdsc.dims(), kF32, memory::format_tag::any) : bdsc;
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bw, yd), engine().eng);
        // Where that layout is plain row-major K x N with N a multiple of
        // 1024 and M < 512, rows padded by 16 floats: gemm:jit (2.6) reads
        // such a B at half speed (onednn.h).
        if (b_const && bd_b.empty() && N % kPadEveryN == 0 && m < kPadBelowM &&
            pd.weights_desc() == memory::desc({K, N}, kF32, Dims{N, 1})) {
          pd = dnnl::matmul::primitive_desc(
              dnnl::matmul::desc(ad, memory::desc({K, N}, kF32, Dims{N + kRowPad, 1}), yd), engine().eng);
        }
        return Prim{dnnl::matmul(pd), ad, pd.src_desc(), bdsc, pd.weights_desc(), yd, pd.dst_desc(),
                    text() + ": " + pd.impl_info_str(), {}};
      },
      a, b, b_const != 0, y);
}

void matmul(const float* a, const int64_t* as, int ar, const float* b, const int64_t* bs, int br, float* y,
            const int64_t* ys, int yr, int transA, int transB, int b_const) {
  matmul_strided(a, as, ar, b, bs, br, nullptr, y, ys, yr, transA, transB, b_const);
}

void matmul_view(const float* a, const int64_t* as, int ar, const float* b, const int64_t* bs, int br,
                 const int64_t* b_strides, float* y, const int64_t* ys, int yr, int transA, int transB) {
  if (br < 2) throw Error("internal error: matmul_view of a " + std::to_string(br) + "-D B");
  matmul_strided(a, as, ar, b, bs, br, b_strides, y, ys, yr, transA, transB, 0);
}

// -------------------------------------------------------------------- conv
void conv(const float* x, const int64_t* xs, const float* w, const int64_t* ws, float* y, const int64_t* ys, int sr,
          const int64_t* strides, const int64_t* pads, const int64_t* dil, int64_t group, int transposed,
          int w_const, int layout) {
  const int r = sr + 2;
  const int64_t out = std::accumulate(ys, ys + r, int64_t{1}, std::multiplies<>());
  if (out == 0) return;
  const int64_t C = xs[1], M = ys[1], Cg = C / group, Mg = M / group;
  int64_t kvol = 1, ivol = 1;
  for (int i = 0; i < sr; ++i) {
    kvol *= ws[2 + i];
    ivol *= xs[2 + i];
  }
  if (Cg * kvol == 0 || ivol == 0 || xs[0] == 0) {
    std::fill(y, y + out, 0.0f);
    return;
  }
  Key key;
  key << 'C' << sr << group << transposed << layout << omp_get_max_threads();
  key.add(xs, r).add(ws, r).add(ys, r).add(strides, sr).add(pads, 2 * sr).add(dil, sr);
  auto text = [&] {
    return std::string(transposed ? "ConvTranspose " : "Conv ") + dims_text(xs, r) + "x" + dims_text(ws, r) + "->" +
           dims_text(ys, r) + " s" + dims_text(strides, sr) + " p" + dims_text(pads, 2 * sr) + " d" +
           dims_text(dil, sr) + " g" + std::to_string(group) + " l" + std::to_string(layout) + " @" +
           std::to_string(omp_get_max_threads());
  };
  run(
      key, text,
      [&] {
        Dims xd(xs, xs + r), yd(ys, ys + r), st(strides, strides + sr), dl(sr), pl(pads, pads + sr), pr(sr);
        for (int i = 0; i < sr; ++i) {
          dl[i] = dil[i] - 1;  // oneDNN counts dilation from 0
          const int64_t span = (ws[2 + i] - 1) * dil[i] + 1;
          // Conv sizes its output as ONNX does (floor); ConvTranspose's end padding
          // absorbs output_padding: oneDNN wants out = (in-1)*stride + span - pl - pr.
          pr[i] = transposed ? (xs[2 + i] - 1) * strides[i] + span - pads[i] - ys[2 + i] : pads[sr + i];
        }
        // Weights as oneDNN indexes them: [g, Mg, Cg, k...] (ungrouped: [M, C, k...]).
        // The stored ONNX layouts: Conv [M][Cg][k...], ConvTranspose [C][Mg][k...].
        Dims wd, wst;
        const int64_t out_stride = transposed ? kvol : Cg * kvol, in_stride = transposed ? Mg * kvol : kvol;
        if (group > 1) {
          wd = {group, Mg, Cg};
          wst = {Mg * Cg * kvol, out_stride, in_stride};
        } else {
          wd = {M, C};
          wst = {out_stride, in_stride};
        }
        Dims kd(ws + 2, ws + r), kst = plain_strides(kd);
        wd.insert(wd.end(), kd.begin(), kd.end());
        wst.insert(wst.end(), kst.begin(), kst.end());
        // The activations as the caller stores them: NCHW, or nChw8c / nChw16c
        // where the plan's layout assignment keeps them blocked (graph/layout.h).
        const auto blocked_tag = layout & kConvBlock16 ? memory::format_tag::nChw16c : memory::format_tag::nChw8c;
        const int64_t blocked_block = layout & kConvBlock16 ? 16 : 8;
        auto user = [&](const Dims& d, bool blocked) { return blocked ? memory::desc(d, kF32, blocked_tag) : plain(d); };
        const memory::desc xu = user(xd, layout & kConvXBlocked), yu = user(yd, layout & kConvYBlocked), wu(wd, kF32, wst);
        // NCHW as it is only where the gemm convolution beats blocked + reorders
        // and the plan keeps neither side blocked (graph/layout.h).
        bool unit = true;
        int64_t outputs_per_image = 1;
        for (int i = 0; i < sr; ++i) {
          unit = unit && pads[i] == 0 && pr[i] == 0 && strides[i] == 1;
          outputs_per_image *= ys[2 + i];
        }
        const bool plain_nchw = !transposed && !(layout & kConvBlockedPrimitive) &&
                                gemm_conv_on_nchw(kvol, group, unit, outputs_per_image);
        const memory::desc any_x(xd, kF32, memory::format_tag::any), any_y(yd, kF32, memory::format_tag::any),
            any_w(wd, kF32, memory::format_tag::any);
        // The blocked primitive reads and writes the blocked layout itself
        // wherever the channels fill whole blocks (onednn.h): left to `any`,
        // oneDNN 2.6 on avx512_core picks brgconv on NHWC, and every conv
        // of a blocked chain paid a reorder in and out.
        // A stem conv (conv_blocking y_only) reads its NCHW x as it is.
        const ConvBlocking blocking = (layout & kConvBlockedPrimitive) && r == 4 && !transposed
                                          ? conv_blocking(C, M, group, blocked_block)
                                          : ConvBlocking::none;
        const memory::desc px = plain_nchw                         ? xu
                                : blocking == ConvBlocking::both   ? memory::desc(xd, kF32, blocked_tag)
                                : blocking == ConvBlocking::y_only ? plain(xd)
                                                                   : any_x;
        const memory::desc py = plain_nchw                         ? yu
                                : blocking == ConvBlocking::none   ? any_y
                                                                   : memory::desc(yd, kF32, blocked_tag);
        const auto prop = dnnl::prop_kind::forward_inference;
        if (transposed) {
          dnnl::deconvolution_forward::primitive_desc pd(
              dnnl::deconvolution_forward::desc(prop, dnnl::algorithm::deconvolution_direct, px, any_w, py, st, dl, pl,
                                                pr),
              engine().eng);
          return Prim{dnnl::deconvolution_forward(pd), xu, pd.src_desc(), wu, pd.weights_desc(), yu, pd.dst_desc(),
                      text() + ": " + pd.impl_info_str(), {}};
        }
        auto conv_pd = [&](const memory::desc& sx, const memory::desc& sy) {
          return dnnl::convolution_forward::primitive_desc(
              dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, sx, any_w, sy, st, dl, pl, pr),
              engine().eng);
        };
        auto pd = conv_pd(px, py);
        // An ISA whose blocked kernels lack this case (conv_blocking's rule
        // is the AVX-512 and AVX2 kernels') leaves only oneDNN's reference
        // kernel on the blocked layout: `any` then.
        if (blocking != ConvBlocking::none && std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
          pd = conv_pd(any_x, any_y);
        return Prim{dnnl::convolution_forward(pd), xu, pd.src_desc(), wu, pd.weights_desc(), yu, pd.dst_desc(),
                    text() + ": " + pd.impl_info_str(), {}};
      },
      x, w, w_const != 0, y);
}

// ------------------------------------------------------------- reorders
// Runs the reorder bound under `key` from x into y, creating it on first
// use from the (source, destination) descriptors make() returns; oneDNN's
// errors become one line naming text().
template <class Make, class Text>
void reorder(const Key& key, Make&& make, const void* x, void* y, Text&& text) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  try {
    auto it = st.reorders.find(key.bytes());
    if (it == st.reorders.end()) {
      const auto [from_d, to_d] = make();
      const dnnl::engine& eng = engine().eng;
      memory from(from_d, eng, DNNL_MEMORY_NONE), to(to_d, eng, DNNL_MEMORY_NONE);
      it = st.reorders.emplace(key.bytes(), BoundReorder{from, to, dnnl::reorder(from, to)}).first;
    }
    BoundReorder& r = it->second;
    r.from.set_data_handle(const_cast<void*>(x));  // read only: the reorder's source
    r.to.set_data_handle(y);
    r.reorder.execute(engine().strm, r.from, r.to);
    engine().strm.wait();
  } catch (const dnnl::error& err) {
    fail(text(), err);
  }
}

void unblock(const float* x, float* y, const int64_t* ys, int block) {
  Key key;
  key << block;
  key.add(ys, 4);
  const Dims d(ys, ys + 4);
  reorder(
      key,
      [&] {
        return std::pair{memory::desc(d, kF32, block == 16 ? memory::format_tag::nChw16c : memory::format_tag::nChw8c),
                         plain(d)};
      },
      x, y, [&] { return "Unblock " + dims_text(ys, 4) + " b" + std::to_string(block); });
}

void copy_view(const void* x, void* y, int rank, const int64_t* dims, const int64_t* xs, int elem_bytes) {
  if (elem_bytes != 1 && elem_bytes != 4 && elem_bytes != 8)
    throw Error("internal error: copy_view of " + std::to_string(elem_bytes) + "-byte elements");
  Key key;
  key << 'V' << elem_bytes << omp_get_max_threads();
  key.add(dims, rank).add(xs, rank);
  reorder(
      key,
      [&] {
        // Elements as a data type oneDNN copies bit for bit: u8, or s32 (an
        // 8-byte element is two s32 lanes).
        const auto type = elem_bytes == 1 ? memory::data_type::u8 : memory::data_type::s32;
        const int lanes = elem_bytes == 8 ? 2 : 1;
        Dims d(dims, dims + rank), s(xs, xs + rank);
        for (int64_t& v : s) v *= lanes;
        if (lanes > 1) {
          d.push_back(lanes);
          s.push_back(1);
        }
        return std::pair{memory::desc(d, type, s), memory::desc(d, type, plain_strides(d))};
      },
      x, y, [&] { return "Copy " + dims_text(dims, rank) + " strides " + dims_text(xs, rank); });
}

}  // namespace

const fprt::ContractionLibrary& onednn_contractions() {
  static const fprt::ContractionLibrary lib{&matmul, &conv, &unblock, &copy_view, &matmul_view};
  return lib;
}

void onednn_forget_weights() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& [key, p] : s.prims) p.bound.weights.clear();
}

std::string onednn_implementations() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  std::string out;
  for (const std::string& k : s.order) out += s.prims.at(k).what + "\n";
  return out;
}

double onednn_last_primitive_us() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.last_primitive_us;
}

int contraction_threads() { return omp_get_max_threads(); }
void set_contraction_threads(int n) { omp_set_num_threads(n); }

OnednnVectors onednn_vectors() {
  using I = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case I::avx512_core_amx: return {16, "avx512_core_amx"};
    case I::avx512_core_bf16: return {16, "avx512_core_bf16"};
    case I::avx512_core_vnni: return {16, "avx512_core_vnni"};
    case I::avx512_core: return {16, "avx512_core"};
    case I::avx512_mic_4ops: return {16, "avx512_mic_4ops"};
    case I::avx512_mic: return {16, "avx512_mic"};
    case I::avx2_vnni: return {8, "avx2_vnni"};
    case I::avx2: return {8, "avx2"};
    case I::avx: return {8, "avx"};
    default: return {4, "sse41"};
  }
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace fuseplan
