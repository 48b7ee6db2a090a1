// fprt: the CPU backend's canonical numerics, shared verbatim by the reference
// executor (exec/reference.cpp includes this header) and by every
// generated translation unit (emit/cpu embeds this file's text at its top).
// Fusion may move values between memory and registers, never change the
// operations or their order (docs/numerics.md), so everything whose result
// depends on an evaluation order lives here exactly once:
//  - scalar op formulas (sigmoid = 1/(1+exp(-x)), softplus, hard-sigmoid...);
//  - float transcendentals (exp, log, tanh, erf, sin, cos, pow) are calls
//    into libfuseplan_vmath (emit/cpu/vmath.h: one SLEEF deterministic
//    family), which GCC vectorises in a generated loop and which return the
//    same bits at every vector width and in the reference;
//  - contractions (MatMul, Conv, ConvTranspose) are calls through one
//    ContractionLibrary table that the host binds (oneDNN primitives,
//    exec/onednn.h): the reference and every plan call the same primitive
//    for the same shapes and threads, so its accumulation order is the same
//    fused or unfused;
//  - pooling, cumsum, scatter, gather-nd, linear resize, which the generator
//    calls as whole-tensor routines.
// Self-contained: standard headers only, no fuseplan types.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

// Float transcendentals, defined in libfuseplan_vmath (emit/cpu/vmath.cpp).
// Under OpenMP (generated kernels build with -fopenmp) they are declared
// SIMD functions, so GCC vectorises a loop over them by calling their
// vector-ABI variants; scalar and vector variants return the same bits.
#if defined(_OPENMP)
#define FPRT_VMATH_SIMD _Pragma("omp declare simd notinbranch")
#else
#define FPRT_VMATH_SIMD
#endif
extern "C" {
FPRT_VMATH_SIMD __attribute__((const, nothrow)) float fp_expf(float);
FPRT_VMATH_SIMD __attribute__((const, nothrow)) float fp_logf(float);
FPRT_VMATH_SIMD __attribute__((const, nothrow)) float fp_tanhf(float);
FPRT_VMATH_SIMD __attribute__((const, nothrow)) float fp_erff(float);
FPRT_VMATH_SIMD __attribute__((const, nothrow)) float fp_sinf(float);
FPRT_VMATH_SIMD __attribute__((const, nothrow)) float fp_cosf(float);
FPRT_VMATH_SIMD __attribute__((const, nothrow)) float fp_powf(float, float);
}
#undef FPRT_VMATH_SIMD

namespace fprt {

// Immediates (emit/kernel_plan.h immediate_literal): a non-finite constant
// compiled into a kernel from its bits, so NaN payloads and signs survive.
inline float f32_bits(uint32_t u) { float f; std::memcpy(&f, &u, sizeof f); return f; }
inline double f64_bits(uint64_t u) { double f; std::memcpy(&f, &u, sizeof f); return f; }

// ---------------------------------------------------------------- scalar ops
template <class T> inline T relu(T x) { return x < T(0) ? T(0) : x; }
template <class T> inline T reciprocal(T x) { return T(1) / x; }
template <class T> inline T neg(T x) { return -x; }
template <class T> inline T abs_(T x) { return x < T(0) ? T(-x) : x; }
template <class T> inline T round_(T x) { return std::nearbyint(x); }  // half to even
template <class T> inline T sign(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0)); }
template <class T> inline T leaky_relu(T x, T a) { return x < T(0) ? T(a * x) : x; }
template <class T> inline T clip(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }
template <class T> inline T hard_sigmoid(T x, T a, T b) {
  T v = a * x + b;
  return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
}
template <class T> inline T hard_swish(T x) { return x * hard_sigmoid(x, T(1) / T(6), T(0.5)); }
// Where: the operand c picks, its bits copied whole, without a branch. A
// data-dependent condition (an attention mask) mispredicts a branch on about
// half the elements, and a bool condition keeps GCC from if-converting the
// ternary: gpt2_block's masked Where over 196608 elements took 604 us on a
// random mask and 105 us on a causal one, 90 us branch-free.
template <class T> inline T select(bool c, T a, T b) {
  if constexpr (std::is_trivially_copyable_v<T> && (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)) {
    using U = std::conditional_t<sizeof(T) == 1, uint8_t,
                                 std::conditional_t<sizeof(T) == 2, uint16_t,
                                                    std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    U ua, ub;
    std::memcpy(&ua, &a, sizeof(T));
    std::memcpy(&ub, &b, sizeof(T));
    const U m = U(U(0) - U(c));
    const U r = U((ua & m) | (ub & U(~m)));
    T out;
    std::memcpy(&out, &r, sizeof(T));
    return out;
  } else {
    return c ? a : b;
  }
}
// Transcendentals: float through libfuseplan_vmath (above); double and
// other types through libm. Double exp steps around glibc's underflow
// path: below -746 exp rounds to +0, but glibc gets there through
// __math_uflow, which sets errno (10-13 ns a call against 3.5-5 ns; a
// masked softmax row exponentiates -1e9 at every masked position). Both
// picks are fprt::select, so a random mask costs no mispredicted branch;
// same bits as std::exp for every input.
template <class T> inline T exp_(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return fp_expf(x);
  } else if constexpr (std::is_same_v<T, double>) {
    const bool zero = x < T(-746);
    return select(zero, T(0), T(std::exp(select(zero, T(0), x))));
  } else {
    return std::exp(x);
  }
}
#define FPRT_VMATH_UNARY(name, fn)                         \
  template <class T> inline T name(T x) {                  \
    if constexpr (std::is_same_v<T, float>) return fp_##fn##f(x); \
    else return std::fn(x);                                \
  }
FPRT_VMATH_UNARY(log_, log)
FPRT_VMATH_UNARY(tanh_, tanh)
FPRT_VMATH_UNARY(erf_, erf)
FPRT_VMATH_UNARY(sin_, sin)
FPRT_VMATH_UNARY(cos_, cos)
#undef FPRT_VMATH_UNARY
template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + exp_(-x)); }
template <class T> inline T softplus(T x) { return log_(T(1) + exp_(x)); }
template <class T> inline T elu(T x, T a) { return x < T(0) ? T(a * (exp_(x) - T(1))) : x; }
// Max/Min propagate NaN (ONNX); reductions use the same functions. Two
// selects rather than `(b > a || b != b) ? b : a`: the short-circuit `||`
// compiled to a data-dependent branch inside pool()'s window loop, which
// mispredicts on every new running maximum (MaxPool 2x2 over random data:
// 5.8 ns per window element against 2.9 ns branch-free, one thread on the
// development VM). Same result for every input, NaN and signed zeros too.
template <class T> inline T max_(T a, T b) {
  const T m = b > a ? b : a;
  return b != b ? b : m;
}
template <class T> inline T min_(T a, T b) {
  const T m = b < a ? b : a;
  return b != b ? b : m;
}
// Reductions in lanes (graph/op_attrs.h reduce_lanes, docs/numerics.md):
// the pairwise fold of kReduceLanes partial results, lane l taking lane
// l + h for h = 8, 4, 2, 1. kind: 0 sum or mean, 1 prod, 2 max, 3 min.
inline constexpr int kReduceLanes = 16;
// Written out over named values: the loop form (a[l] = f(a[l], a[l + h]))
// made GCC fold through the stack, halves of vectors stored and reloaded
// (store-forwarding stalls): BERT's row-resident softmax over rows of 128
// took 138 us with it, 121 us with this (one Zen 4 thread). Same order.
template <class T> inline T fold_lanes(const T* a, int kind) {
  static_assert(kReduceLanes == 16, "the tree below folds 16 lanes");
  auto f = [kind](T p, T q) {
    return kind == 0 ? T(p + q) : kind == 1 ? T(p * q) : kind == 2 ? max_(p, q) : min_(p, q);
  };
  const T b0 = f(a[0], a[8]), b1 = f(a[1], a[9]), b2 = f(a[2], a[10]), b3 = f(a[3], a[11]), b4 = f(a[4], a[12]),
          b5 = f(a[5], a[13]), b6 = f(a[6], a[14]), b7 = f(a[7], a[15]);
  const T c0 = f(b0, b4), c1 = f(b1, b5), c2 = f(b2, b6), c3 = f(b3, b7);
  return f(f(c0, c2), f(c1, c3));
}
// Integer Div and Mod are total (docs/numerics.md): x / 0 and x % 0 are 0,
// and a signed x / -1 is the two's complement negation, so INT_MIN / -1
// wraps to INT_MIN and INT_MIN % -1 is 0 (the hardware divide traps there:
// SIGFPE), as numpy and ONNX Runtime's wrapping arithmetic give.
template <class T> inline T div_(T a, T b) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    if (b == T(0)) return T(0);
    if (T(-1) < T(0) && b == T(-1)) return T(0ull - static_cast<unsigned long long>(a));
    return T(a / b);
  } else {
    return a / b;
  }
}
template <class T> inline T mod_(T a, T b, int fmod_mode) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    if (b == T(0) || (T(-1) < T(0) && b == T(-1))) return T(0);
    T r = T(a % b);
    if (!fmod_mode && r != T(0) && ((r < 0) != (b < 0))) r = T(r + b);
    return r;
  } else {
    T r = std::fmod(a, b);
    if (!fmod_mode && r != T(0) && ((r < 0) != (b < 0))) r = r + b;
    return r;
  }
}
// Pow: exponents 2 and 3 are x*x and (x*x)*x (graph/op_attrs.h
// pow_multiplies: what ONNX Runtime and PyTorch compute), any other the
// libm pow. All three are computed and one picked by select (a ternary
// keeps GCC from vectorising the loop), so a loop over a tensor exponent
// still vectorises; with an immediate exponent GCC drops the unused (const)
// call.
template <class T, class E> inline T pow_(T a, E b) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    return T(std::pow(double(a), double(b)));
  } else {
    T p;
    if constexpr (std::is_same_v<T, float>) p = fp_powf(a, T(b)); else p = std::pow(a, T(b));
    const T sq = a * a, cube = sq * a;  // unconditional: a select of values, no branch
    const T e = T(b);
    return select(e == T(2), sq, select(e == T(3), cube, p));
  }
}
template <class U, class T> inline U cast(T x) {
  if constexpr (std::is_same_v<U, bool>) return x != T(0);
  else return static_cast<U>(x);
}
/// QuantizeLinear: saturate(round_half_even(x / scale) + zero_point).
template <class Q> inline Q quantize(float x, float scale, Q zp) {
  float v = std::nearbyint(x / scale) + float(zp);
  float lo = float(std::numeric_limits<Q>::min()), hi = float(std::numeric_limits<Q>::max());
  return Q(v < lo ? lo : (v > hi ? hi : v));
}
/// DequantizeLinear: (x - zero_point) * scale; x int8, uint8 or int32 (a
/// quantized bias), the difference taken in 64 bits so an int32 one cannot
/// overflow.
template <class Q> inline float dequantize(Q x, float scale, Q zp) {
  return float(int64_t(x) - int64_t(zp)) * scale;
}
/// Index helpers for injective ops (negative index normalised, clamped so a
/// speculative read of a not-selected branch stays in bounds).
inline int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }
inline int64_t norm_index(int64_t i, int64_t n) { return clamp_index(i < 0 ? i + n : i, n); }
inline int64_t reflect_index(int64_t i, int64_t n) {
  if (n == 1) return 0;
  int64_t p = 2 * (n - 1);
  i = i % p;
  if (i < 0) i += p;
  return i < n ? i : p - i;
}
// coordinate_transformation_mode codes: 0 half_pixel, 1 asymmetric,
// 2 align_corners, 3 pytorch_half_pixel, 4 tf_half_pixel_for_nn.
inline float resize_src(int64_t o, float scale, int64_t in_n, int64_t out_n, int mode) {
  switch (mode) {
    case 1: return float(o) / scale;
    case 2: return out_n == 1 ? 0.0f : float(o) * float(in_n - 1) / float(out_n - 1);
    case 3: return out_n > 1 ? (float(o) + 0.5f) / scale - 0.5f : 0.0f;
    case 4: return (float(o) + 0.5f) / scale;
    default: return (float(o) + 0.5f) / scale - 0.5f;
  }
}
// nearest_mode codes: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil.
inline int64_t resize_nearest(int64_t o, float scale, int64_t in_n, int64_t out_n, int mode, int nmode) {
  float x = resize_src(o, scale, in_n, out_n, mode);
  float r;
  switch (nmode) {
    case 1: r = std::floor(x + 0.5f); break;
    case 2: r = std::floor(x); break;
    case 3: r = std::ceil(x); break;
    default: r = (x - std::floor(x) == 0.5f) ? std::floor(x) : std::round(x); break;
  }
  return clamp_index(int64_t(r), in_n);
}

// ------------------------------------------------------------ contractions
// MatMul, Conv and ConvTranspose run in a library the host binds before any
// kernel runs (exec/onednn.h: oneDNN primitives). The reference executor and
// every loaded kernel library call the same table in the same process, so a
// contraction computes the same bits whether its plan fused it or not; the
// accumulation order is the library's (docs/numerics.md).
struct ContractionLibrary {
  /// numpy matmul with batch broadcasting; shapes as in the graph (1-D
  /// operands promoted as numpy does); transA/transB swap the last two axes
  /// of a/b. b_const: b is a model constant (weights), so a reordered copy
  /// may be kept for the rest of the run.
  void (*matmul)(const float* a, const int64_t* as, int ar, const float* b, const int64_t* bs, int br, float* y,
                 const int64_t* ys, int yr, int transA, int transB, int b_const);
  /// Convolution (transposed = 0; x: [N,C,s...], w: [M,C/g,k...]) or
  /// ConvTranspose (transposed = 1; w: [C,M/g,k...]) over sr = 1-3 spatial
  /// dims; pads = [begin..., end...]; y's shape ys decides ConvTranspose's
  /// output padding. w_const as b_const above. layout: graph/layout.h's
  /// bits (1: x stored blocked, 2: y stored blocked, 4: run the blocked
  /// primitive, 8: the blocked sides are nChw16c, else nChw8c); 0 for NCHW
  /// buffers.
  void (*conv)(const float* x, const int64_t* xs, const float* w, const int64_t* ws, float* y, const int64_t* ys,
               int sr, const int64_t* strides, const int64_t* pads, const int64_t* dil, int64_t group, int transposed,
               int w_const, int layout);
  /// Copies x, stored blocked (nChw<block>c, block 8 or 16) with logical
  /// shape ys = [N, C, H, W], C a multiple of block, to y stored row-major
  /// NCHW: an exact copy (a oneDNN reorder).
  void (*unblock)(const float* x, float* y, const int64_t* ys, int block);
  /// Copies the strided view of x with `rank` dims `dims` and element
  /// strides `xs` into y, row-major over dims: an exact copy (a oneDNN
  /// reorder) of elements of `elem_bytes` bytes (1, 4 or 8).
  void (*copy_view)(const void* x, void* y, int rank, const int64_t* dims, const int64_t* xs, int elem_bytes);
  /// matmul with B read as a view: b points at its first element, and
  /// b_strides gives one element stride per dim of bs (rank >= 2; a dim
  /// of size 1 may have any). The same bits as matmul on the view copied
  /// row-major (exec/onednn.h).
  void (*matmul_view)(const float* a, const int64_t* as, int ar, const float* b, const int64_t* bs, int br,
                      const int64_t* b_strides, float* y, const int64_t* ys, int yr, int transA, int transB);
};
/// The bound table (null until the host binds one; generated units export
/// fp_bind_contractions for that).
inline const ContractionLibrary*& contraction_library() {
  static const ContractionLibrary* lib = nullptr;
  return lib;
}

// -------------------------------------------------------------- scratch
// A kernel's temporary tensors (emit/cpu/cpp_printer.cpp alloc_scratch).
// A block of at least kScratchKeepMin bytes is kept when the kernel frees
// it and handed to the next request of the same size, up to
// kScratchKeepBytes in all (the oldest go first): glibc serves such blocks
// with mmap and returns them with munmap, so every call paid a page fault
// per 4 KiB on first touch. BERT's attention probabilities at batch 8 x
// sequence 512 (a 96 MiB scratch before the context MatMul) took 106 ms
// per call instead of 46 (one Zen 4 thread).
inline constexpr std::size_t kScratchKeepMin = std::size_t(1) << 20, kScratchKeepBytes = std::size_t(1) << 30;
struct ScratchCache {
  std::mutex mu;
  std::vector<std::pair<std::size_t, void*>> blocks;  // oldest first
  std::size_t bytes = 0;
  ~ScratchCache() {
    for (auto& b : blocks) std::free(b.second);
  }
};
inline ScratchCache& scratch_cache() {
  static ScratchCache c;
  return c;
}
inline void* scratch_alloc(std::size_t n) {
  if (n >= kScratchKeepMin) {
    ScratchCache& c = scratch_cache();
    std::lock_guard<std::mutex> lock(c.mu);
    for (std::size_t i = 0; i < c.blocks.size(); ++i)
      if (c.blocks[i].first == n) {
        void* p = c.blocks[i].second;
        c.blocks.erase(c.blocks.begin() + static_cast<std::ptrdiff_t>(i));
        c.bytes -= n;
        return p;
      }
  }
  return std::malloc(n);
}
inline void scratch_free(void* p, std::size_t n) {
  if (p && n >= kScratchKeepMin && n <= kScratchKeepBytes) {
    ScratchCache& c = scratch_cache();
    std::lock_guard<std::mutex> lock(c.mu);
    while (!c.blocks.empty() && c.bytes + n > kScratchKeepBytes) {
      std::free(c.blocks.front().second);
      c.bytes -= c.blocks.front().first;
      c.blocks.erase(c.blocks.begin());
    }
    c.blocks.emplace_back(n, p);
    c.bytes += n;
    return;
  }
  std::free(p);
}

/// No epilogue: the default of matmul and conv.
struct NoEpilogue {
  void operator()(int64_t, int64_t) const {}
};
template <class E> inline constexpr bool kHasEpilogue = !std::is_same_v<std::decay_t<E>, NoEpilogue>;

/// A fused contraction's elementwise epilogue runs in the generated code right
/// after the library call: `epi(start, len)` on runs of the output y[start,
/// start+len) of `n` elements, rows of `row` elements in parallel.
template <class Epi> inline void run_epilogue(int64_t n, int64_t row, Epi&& epi) {
  const int64_t rows = row > 0 ? (n + row - 1) / row : 0;
#ifdef _OPENMP
  _Pragma("omp parallel for schedule(static) if (rows > 1 && n >= 32768)")
#endif
  for (int64_t r = 0; r < rows; ++r) epi(r * row, std::min(row, n - r * row));
}
inline int64_t elements(const int64_t* s, int r) {
  int64_t n = 1;
  for (int i = 0; i < r; ++i) n *= s[i];
  return n;
}

/// Elements of a MatMul output per epilogue call: whole rows, at least
/// kEpilogueMinRun of them, so that an epilogue whose trailing dims coalesce
/// (emit/cpu/cpp_printer.cpp) runs vector loops over several short rows
/// (rows of 2: its Erf ran scalar, 9.4 us against 0.7). 256 floats: 16
/// AVX-512 vectors, 1 KiB of the output still in L1 after the call.
inline constexpr int64_t kEpilogueMinRun = 256;
inline int64_t matmul_epilogue_run(int64_t row) {
  return row >= kEpilogueMinRun || row <= 0 ? row : row * ((kEpilogueMinRun + row - 1) / row);
}

template <class Epi = NoEpilogue>
inline void matmul_epilogue(const float* a, const int64_t* as, int ar, const float* b, const int64_t* bs, int br,
                            float* y, const int64_t* ys, int yr, int transA, int transB, int b_const,
                            Epi&& epi = Epi{}) {
  contraction_library()->matmul(a, as, ar, b, bs, br, y, ys, yr, transA, transB, b_const);
  if constexpr (kHasEpilogue<Epi>) run_epilogue(elements(ys, yr), matmul_epilogue_run(yr > 0 ? ys[yr - 1] : 1), epi);
}
inline void matmul(const float* a, const int64_t* as, int ar, const float* b, const int64_t* bs, int br, float* y,
                   const int64_t* ys, int yr, int transA, int transB, int b_const) {
  matmul_epilogue(a, as, ar, b, bs, br, y, ys, yr, transA, transB, b_const, NoEpilogue{});
}
/// matmul_epilogue with B a strided view (ContractionLibrary::matmul_view).
template <class Epi = NoEpilogue>
inline void matmul_view_epilogue(const float* a, const int64_t* as, int ar, const float* b, const int64_t* bs, int br,
                                 const int64_t* b_strides, float* y, const int64_t* ys, int yr, int transA, int transB,
                                 Epi&& epi = Epi{}) {
  contraction_library()->matmul_view(a, as, ar, b, bs, br, b_strides, y, ys, yr, transA, transB);
  if constexpr (kHasEpilogue<Epi>) run_epilogue(elements(ys, yr), matmul_epilogue_run(yr > 0 ? ys[yr - 1] : 1), epi);
}

/// The epilogue's runs are the output's channel planes (NCHW) or channel
/// blocks of 8 or 16 planes (y stored nChw8c / nChw16c: layout bit 2, and 8
/// for 16).
template <class Epi = NoEpilogue>
inline void conv_epilogue(const float* x, const int64_t* xs, const float* w, const int64_t* ws, float* y,
                          const int64_t* ys, int sr, const int64_t* strides, const int64_t* pads, const int64_t* dil,
                          int64_t group, int w_const, int layout, Epi&& epi = Epi{}) {
  contraction_library()->conv(x, xs, w, ws, y, ys, sr, strides, pads, dil, group, 0, w_const, layout);
  if constexpr (kHasEpilogue<Epi>)
    run_epilogue(elements(ys, sr + 2), elements(ys + 2, sr) * ((layout & 2) ? ((layout & 8) ? 16 : 8) : 1), epi);
}
inline void unblock(const float* x, float* y, const int64_t* ys, int block) {
  contraction_library()->unblock(x, y, ys, block);
}
inline void copy_view(const void* x, void* y, int rank, const int64_t* dims, const int64_t* xs, int elem_bytes) {
  contraction_library()->copy_view(x, y, rank, dims, xs, elem_bytes);
}
inline void conv(const float* x, const int64_t* xs, const float* w, const int64_t* ws, float* y, const int64_t* ys,
                 int sr, const int64_t* strides, const int64_t* pads, const int64_t* dil, int64_t group, int w_const,
                 int layout) {
  conv_epilogue(x, xs, w, ws, y, ys, sr, strides, pads, dil, group, w_const, layout, NoEpilogue{});
}
inline void conv_transpose(const float* x, const int64_t* xs, const float* w, const int64_t* ws, float* y,
                           const int64_t* ys, int sr, const int64_t* strides, const int64_t* pads, const int64_t* dil,
                           int64_t group, int w_const) {
  contraction_library()->conv(x, xs, w, ws, y, ys, sr, strides, pads, dil, group, 1, w_const, 0);
}

/// Max/average pooling over 1-3 spatial dims; window in row-major order,
/// padded positions skipped; average divides by the window size
/// (count_include_pad) or by the number of positions inside the input.
/// Every output folds its window's valid positions in row-major order
/// (max_ or +), so each output sees the same operations in the same order
/// as a per-output window loop, whichever of three loop shapes runs: a
/// padded-plane grid (short rows, see below), one fold per plane (a window
/// over the whole plane), else one output row at a time, the innermost loop
/// over its outputs (a vector loop, no bounds test inside: each window
/// column covers a precomputed output range).
inline void pool(const float* x, const int64_t* xs, float* y, const int64_t* ys, int sr, const int64_t* kshape,
                 const int64_t* strides, const int64_t* pads, const int64_t* dil, int is_max, int count_include_pad) {
  int64_t NC = xs[0] * xs[1];
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1}, pb[3] = {0, 0, 0},
          pe[3] = {0, 0, 0}, dl[3] = {1, 1, 1};
  for (int i = 0; i < sr; ++i) {
    int o = 3 - sr + i;
    in[o] = xs[2 + i]; out[o] = ys[2 + i]; k[o] = kshape[i];
    st[o] = strides[i]; pb[o] = pads[i]; pe[o] = pads[sr + i]; dl[o] = dil[i];
  }
  const int64_t ivol = in[0] * in[1] * in[2], ovol = out[0] * out[1] * out[2];
  // Innermost dim: per window column e, the outputs [lo[e], hi[e]) whose
  // input i = o*st - pb + e*dl lies inside; per output, the positions inside
  // the input (cnt) and inside input + end padding (full).
  std::vector<int64_t> lo(k[2]), hi(k[2]), cnt2(out[2], 0), full2(out[2], 0);
  for (int64_t e = 0; e < k[2]; ++e) {
    lo[e] = out[2];
    hi[e] = 0;
    for (int64_t o2 = 0; o2 < out[2]; ++o2) {
      const int64_t i2 = o2 * st[2] - pb[2] + e * dl[2];
      if (i2 < in[2] + pe[2]) ++full2[o2];
      if (i2 < 0 || i2 >= in[2]) continue;
      ++cnt2[o2];
      lo[e] = std::min(lo[e], o2);
      hi[e] = o2 + 1;
    }
  }
  // One stride s over 1-2 dims, no dilation: each plane is copied into a
  // buffer padded with the fold's identity (-inf for max_, +0 for +: the
  // sums never hold -0, so adding +0 changes no bit), and each window
  // position folds into every output at once: output (o1, o2) sits at
  // f = o1*Wp + o2 of a grid as wide as the padded plane, whose input is at
  // s*f plus the position's offset, so one loop over the grid (its columns
  // past out[2] computed and dropped) replaces the rows below. The same
  // values fold in the same order. Taken at stride 1 where the grid wastes
  // at most half its work (a global window over a whole plane is not), at
  // a larger stride where an output row is shorter than one AVX-512 vector
  // (longer rows run well below, and the grid would waste (s-1)/s).
  // Inception's 3x3 pools over 7x7 and 14x14 planes spent 1.5 ns per
  // window element in rows of 7-14 (one Zen 4 thread): 0.17-0.33 ms a pool
  // that way, 0.62-0.66 before.
  const int64_t Hp = in[1] + pb[1] + pe[1], Wp = in[2] + pb[2] + pe[2], s = st[2];
  if (k[0] == 1 && st[1] == s && dl[1] == 1 && dl[2] == 1 && pb[1] >= 0 && pb[2] >= 0 && pe[1] >= 0 &&
      pe[2] >= 0 && Hp >= k[1] && Wp >= k[2] && out[1] == (Hp - k[1]) / s + 1 && out[2] == (Wp - k[2]) / s + 1 &&
      (s == 1 ? 2 * out[2] >= Wp : out[2] < 16)) {
    const float id = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
    const int64_t grid = out[1] * Wp;
#ifdef _OPENMP
    _Pragma("omp parallel if (NC > 1 && NC * ovol * k[1] * k[2] >= 262144)")
#endif
    {
      std::vector<float> xp((Hp + s) * Wp + k[2]), acc(grid);
#ifdef _OPENMP
      _Pragma("omp for schedule(static)")
#endif
      for (int64_t p = 0; p < NC; ++p) {
        std::fill(xp.begin(), xp.end(), id);
        for (int64_t i1 = 0; i1 < in[1]; ++i1)
          std::copy(x + p * ivol + i1 * in[2], x + p * ivol + (i1 + 1) * in[2], xp.begin() + (i1 + pb[1]) * Wp + pb[2]);
        std::fill(acc.begin(), acc.end(), id);
        float* __restrict ac = acc.data();
        // The window positions in row-major order; stride 1 and 2 as
        // constants, so the loads are contiguous or a two-vector permute.
        auto fold = [&](auto step) {
          for (int64_t b = 0; b < k[1]; ++b)
            for (int64_t e = 0; e < k[2]; ++e) {
              const float* __restrict src = xp.data() + b * Wp + e;
              if (is_max)
                for (int64_t f = 0; f < grid; ++f) ac[f] = max_(ac[f], src[step * f]);
              else
                for (int64_t f = 0; f < grid; ++f) ac[f] = ac[f] + src[step * f];
            }
        };
        if (s == 1) fold(std::integral_constant<int64_t, 1>{});
        else if (s == 2) fold(std::integral_constant<int64_t, 2>{});
        else fold(s);
        for (int64_t o1 = 0; o1 < out[1]; ++o1) {
          float* yr = y + p * ovol + o1 * out[2];
          const float* ar = ac + o1 * Wp;
          if (is_max) {
            std::copy(ar, ar + out[2], yr);
            continue;
          }
          int64_t cnt1 = 0, full1 = 0;
          for (int64_t b = 0; b < k[1]; ++b) {
            const int64_t i1 = o1 * s - pb[1] + b;
            full1 += i1 < in[1] + pe[1];
            cnt1 += i1 >= 0 && i1 < in[1];
          }
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            const int64_t c = count_include_pad ? full1 * full2[o2] : cnt1 * cnt2[o2];
            yr[o2] = ar[o2] / float(count_include_pad ? c : (c ? c : 1));
          }
        }
      }
    }
    return;
  }
  // A window that is the whole plane, unpadded (a global pool written as
  // AveragePool/MaxPool): its positions in row-major order are the plane
  // in memory order, one fold per plane.
  if (ovol == 1 && k[0] * k[1] * k[2] == ivol && pb[0] + pb[1] + pb[2] + pe[0] + pe[1] + pe[2] == 0 &&
      dl[0] * dl[1] * dl[2] == 1) {
#ifdef _OPENMP
    _Pragma("omp parallel for schedule(static) if (NC * ivol >= 262144)")
#endif
    for (int64_t p = 0; p < NC; ++p) {
      const float* xr = x + p * ivol;
      float a = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
      if (is_max)
        for (int64_t i = 0; i < ivol; ++i) a = max_(a, xr[i]);
      else
        for (int64_t i = 0; i < ivol; ++i) a = a + xr[i];
      y[p] = is_max ? a : a / float(ivol);
    }
    return;
  }
#ifdef _OPENMP
  _Pragma("omp parallel for schedule(static) if (NC > 1 && NC * ovol * k[0] * k[1] * k[2] >= 262144)")
#endif
  for (int64_t p = 0; p < NC; ++p) {
    std::vector<float> acc(out[2]);
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1) {
        std::fill(acc.begin(), acc.end(), is_max ? -std::numeric_limits<float>::infinity() : 0.0f);
        int64_t cnt01 = 0, full01 = 0;
        for (int64_t a = 0; a < k[0]; ++a)
          for (int64_t b = 0; b < k[1]; ++b) {
            const int64_t i0 = o0 * st[0] - pb[0] + a * dl[0], i1 = o1 * st[1] - pb[1] + b * dl[1];
            if (i0 < in[0] + pe[0] && i1 < in[1] + pe[1]) ++full01;
            if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1]) continue;
            ++cnt01;
            const float* row = x + p * ivol + (i0 * in[1] + i1) * in[2];
            for (int64_t e = 0; e < k[2]; ++e) {
              const int64_t off = e * dl[2] - pb[2], s2 = st[2];
              float* __restrict ac = acc.data();
              if (is_max)
                for (int64_t o2 = lo[e]; o2 < hi[e]; ++o2) ac[o2] = max_(ac[o2], row[o2 * s2 + off]);
              else
                for (int64_t o2 = lo[e]; o2 < hi[e]; ++o2) ac[o2] = ac[o2] + row[o2 * s2 + off];
            }
          }
        float* yr = y + p * ovol + (o0 * out[1] + o1) * out[2];
        if (is_max) {
          std::copy(acc.begin(), acc.end(), yr);
        } else {
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            const int64_t c = count_include_pad ? full01 * full2[o2] : cnt01 * cnt2[o2];
            yr[o2] = acc[o2] / float(count_include_pad ? c : (c ? c : 1));
          }
        }
      }
  }
}

/// CumSum along `axis`, sequential in the scan direction.
template <class T>
inline void cumsum(const T* x, const int64_t* s, int r, T* y, int axis, int exclusive, int reverse) {
  int64_t outer = 1, inner = 1, n = s[axis];
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (int i = axis + 1; i < r; ++i) inner *= s[i];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      T acc = T(0);
      for (int64_t t = 0; t < n; ++t) {
        int64_t j = reverse ? n - 1 - t : t;
        int64_t off = (o * n + j) * inner + in;
        if (exclusive) { y[off] = acc; acc = acc + x[off]; }
        else { acc = acc + x[off]; y[off] = acc; }
      }
    }
}

// reduction codes for scatter: 0 none, 1 add, 2 mul, 3 max, 4 min.
template <class T> inline T scatter_combine(T a, T b, int red) {
  switch (red) {
    case 1: return a + b;
    case 2: if constexpr (std::is_same_v<T, bool>) return a && b; else return a * b;
    case 3: return max_(a, b);
    case 4: return min_(a, b);
    default: return b;
  }
}

/// ScatterND: y = data; updates applied in row-major order of the index tuples.
template <class T>
inline void scatter_nd(const T* data, const int64_t* ds, int dr, const int64_t* idx, const int64_t* is, int ir,
                       const T* upd, T* y, int red) {
  int64_t n = 1;
  for (int i = 0; i < dr; ++i) n *= ds[i];
  std::memcpy(y, data, size_t(n) * sizeof(T));
  int64_t q = is[ir - 1], tuples = 1, slice = 1;
  for (int i = 0; i < ir - 1; ++i) tuples *= is[i];
  for (int i = int(q); i < dr; ++i) slice *= ds[i];
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < q; ++j) off = off * ds[j] + norm_index(idx[t * q + j], ds[j]);
    for (int64_t e = 0; e < slice; ++e)
      y[off * slice + e] = scatter_combine(y[off * slice + e], upd[t * slice + e], red);
  }
}

/// ScatterElements along `axis`; updates applied in row-major order.
template <class T>
inline void scatter_elements(const T* data, const int64_t* ds, int dr, const int64_t* idx, const int64_t* is,
                             const T* upd, T* y, int axis, int red) {
  int64_t n = 1, m = 1;
  for (int i = 0; i < dr; ++i) { n *= ds[i]; m *= is[i]; }
  std::memcpy(y, data, size_t(n) * sizeof(T));
  for (int64_t t = 0; t < m; ++t) {
    int64_t rem = t, off = 0, mul = 1;
    for (int d = dr - 1; d >= 0; --d) {
      int64_t c = rem % is[d];
      rem /= is[d];
      if (d == axis) c = norm_index(idx[t], ds[d]);
      off += c * mul;
      mul *= ds[d];
    }
    y[off] = scatter_combine(y[off], upd[t], red);
  }
}

/// GatherND (batch_dims = 0).
template <class T>
inline void gather_nd(const T* data, const int64_t* ds, int dr, const int64_t* idx, const int64_t* is, int ir, T* y) {
  int64_t q = is[ir - 1], tuples = 1, slice = 1;
  for (int i = 0; i < ir - 1; ++i) tuples *= is[i];
  for (int i = int(q); i < dr; ++i) slice *= ds[i];
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < q; ++j) off = off * ds[j] + norm_index(idx[t * q + j], ds[j]);
    for (int64_t e = 0; e < slice; ++e) y[t * slice + e] = data[off * slice + e];
  }
}

/// Linear (n-linear) resize: per output element, the 2^k corner weights of
/// the resized axes, summed in corner order (bit 0 = last resized axis).
inline void resize_linear(const float* x, const int64_t* xs, int r, float* y, const int64_t* ys, const float* scales,
                          int mode) {
  int64_t n = 1;
  for (int i = 0; i < r; ++i) n *= ys[i];
  int ax[8], na = 0;
  for (int i = 0; i < r; ++i)
    if (xs[i] != ys[i] || scales[i] != 1.0f) ax[na++] = i;
  for (int64_t t = 0; t < n; ++t) {
    int64_t c[8], rem = t;
    for (int d = r - 1; d >= 0; --d) { c[d] = rem % ys[d]; rem /= ys[d]; }
    int64_t lo[8], hi[8];
    float wl[8];
    for (int a = 0; a < na; ++a) {
      int d = ax[a];
      float s = resize_src(c[d], scales[d], xs[d], ys[d], mode);
      if (s < 0.0f) s = 0.0f;
      int64_t l = int64_t(std::floor(s));
      if (l > xs[d] - 1) l = xs[d] - 1;
      lo[a] = l; hi[a] = l + 1 < xs[d] ? l + 1 : l;
      wl[a] = 1.0f - (s - float(l));
      if (s >= float(xs[d] - 1)) wl[a] = 1.0f;
    }
    float acc = 0.0f;
    for (int corner = 0; corner < (1 << na); ++corner) {
      int64_t cc[8];
      for (int d = 0; d < r; ++d) cc[d] = c[d];
      float wgt = 1.0f;
      for (int a = 0; a < na; ++a) {
        bool up = (corner >> (na - 1 - a)) & 1;
        cc[ax[a]] = up ? hi[a] : lo[a];
        wgt = wgt * (up ? 1.0f - wl[a] : wl[a]);
      }
      int64_t off = 0;
      for (int d = 0; d < r; ++d) off = off * xs[d] + cc[d];
      acc = acc + wgt * x[off];
    }
    y[t] = acc;
  }
}

}  // namespace fprt
