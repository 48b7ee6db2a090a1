// The device runtime prepended to every emitted CUDA translation unit: fixed
// width integer types, numeric limits, the scalar op formulas (the same
// formulas as the CPU runtime emit/cpu/runtime.h, so a fused and an unfused
// plan evaluate identical expressions) and the canonical block reduction.
// NVRTC compiles it without any system header.
#include "emit/cuda/cuda_printer.h"

namespace fuseplan::cuda {

const char* const kDeviceRuntimeText = R"FPRT(
typedef long long int64_t;
typedef int int32_t;
typedef short int16_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;
#define FP_D __device__ __forceinline__
namespace fprt {
template <class T> struct numeric_limits {
  static constexpr bool is_integer = true, has_infinity = false;
  static FP_D T lowest() { return T(1) << (sizeof(T) * 8 - 1); }
  static FP_D T max() { return ~lowest(); }
};
template <> struct numeric_limits<bool> {
  static constexpr bool is_integer = true, has_infinity = false;
  static FP_D bool lowest() { return false; }
  static FP_D bool max() { return true; }
};
template <> struct numeric_limits<uint8_t> {
  static constexpr bool is_integer = true, has_infinity = false;
  static FP_D uint8_t lowest() { return 0; }
  static FP_D uint8_t max() { return 255; }
};
template <> struct numeric_limits<float> {
  static constexpr bool is_integer = false, has_infinity = true;
  static FP_D float infinity() { return __int_as_float(0x7f800000); }
  static FP_D float quiet_NaN() { return __int_as_float(0x7fc00000); }
  static FP_D float lowest() { return -3.40282347e+38f; }
  static FP_D float max() { return 3.40282347e+38f; }
};
template <> struct numeric_limits<double> {
  static constexpr bool is_integer = false, has_infinity = true;
  static FP_D double infinity() { return __longlong_as_double(0x7ff0000000000000LL); }
  static FP_D double quiet_NaN() { return __longlong_as_double(0x7ff8000000000000LL); }
  static FP_D double lowest() { return -1.7976931348623157e+308; }
  static FP_D double max() { return 1.7976931348623157e+308; }
};
// Immediates: a non-finite constant from its bits (emit/kernel_plan.h immediate_literal).
FP_D float f32_bits(unsigned int u) { return __uint_as_float(u); }
FP_D double f64_bits(unsigned long long u) { return __longlong_as_double((long long)u); }
// libm: the CUDA math library (IEEE-rounded where CUDA documents 0 ulp).
FP_D float exp(float x) { return ::expf(x); }     FP_D double exp(double x) { return ::exp(x); }
FP_D float log(float x) { return ::logf(x); }     FP_D double log(double x) { return ::log(x); }
FP_D float tanh(float x) { return ::tanhf(x); }   FP_D double tanh(double x) { return ::tanh(x); }
FP_D float sqrt(float x) { return ::sqrtf(x); }   FP_D double sqrt(double x) { return ::sqrt(x); }
FP_D float erf(float x) { return ::erff(x); }     FP_D double erf(double x) { return ::erf(x); }
FP_D float ceil(float x) { return ::ceilf(x); }   FP_D double ceil(double x) { return ::ceil(x); }
FP_D float floor(float x) { return ::floorf(x); } FP_D double floor(double x) { return ::floor(x); }
FP_D float sin(float x) { return ::sinf(x); }     FP_D double sin(double x) { return ::sin(x); }
FP_D float cos(float x) { return ::cosf(x); }     FP_D double cos(double x) { return ::cos(x); }
FP_D float round(float x) { return ::roundf(x); } FP_D double round(double x) { return ::round(x); }
FP_D float nearbyint(float x) { return ::rintf(x); } FP_D double nearbyint(double x) { return ::rint(x); }
FP_D float fmod(float a, float b) { return ::fmodf(a, b); } FP_D double fmod(double a, double b) { return ::fmod(a, b); }
FP_D float pow(float a, float b) { return ::powf(a, b); }   FP_D double pow(double a, double b) { return ::pow(a, b); }
template <class T> FP_D T relu(T x) { return x < T(0) ? T(0) : x; }
// The CPU runtime's exp_ steps around glibc's errno-setting underflow path;
// CUDA's expf has none, so the same name is plain exp here.
template <class T> FP_D T exp_(T x) { return exp(x); }
// The CPU runtime's log_, tanh_, erf_, sin_, cos_ call libfuseplan_vmath
// for float; here they are the CUDA math library's.
template <class T> FP_D T log_(T x) { return log(x); }
template <class T> FP_D T tanh_(T x) { return tanh(x); }
template <class T> FP_D T erf_(T x) { return erf(x); }
template <class T> FP_D T sin_(T x) { return sin(x); }
template <class T> FP_D T cos_(T x) { return cos(x); }
template <class T> FP_D T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }
template <class T> FP_D T reciprocal(T x) { return T(1) / x; }
template <class T> FP_D T neg(T x) { return -x; }
template <class T> FP_D T abs_(T x) { return x < T(0) ? T(-x) : x; }
template <class T> FP_D T round_(T x) { return nearbyint(x); }
template <class T> FP_D T softplus(T x) { return log(T(1) + exp(x)); }
template <class T> FP_D T sign(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0)); }
template <class T> FP_D T leaky_relu(T x, T a) { return x < T(0) ? T(a * x) : x; }
template <class T> FP_D T clip(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }
template <class T> FP_D T hard_sigmoid(T x, T a, T b) { T v = a * x + b; return v < T(0) ? T(0) : (v > T(1) ? T(1) : v); }
template <class T> FP_D T hard_swish(T x) { return x * hard_sigmoid(x, T(1) / T(6), T(0.5)); }
template <class T> FP_D T elu(T x, T a) { return x < T(0) ? T(a * (exp(x) - T(1))) : x; }
template <class T> FP_D T select(bool c, T a, T b) { return c ? a : b; }  // Where (selp: no divergence)
template <class T> FP_D T max_(T a, T b) { return (b > a || b != b) ? b : a; }
template <class T> FP_D T min_(T a, T b) { return (b < a || b != b) ? b : a; }
// Integer Div/Mod are total, as the CPU runtime's (emit/cpu/runtime.h):
// x / 0 = x % 0 = 0, INT_MIN / -1 wraps to INT_MIN, INT_MIN % -1 = 0.
template <class T> FP_D T div_(T a, T b) {
  if constexpr (numeric_limits<T>::is_integer) {
    if (b == T(0)) return T(0);
    if (T(-1) < T(0) && b == T(-1)) return T(0ull - static_cast<unsigned long long>(a));
    return T(a / b);
  } else {
    return a / b;
  }
}
template <class T> FP_D T mod_(T a, T b, int fmod_mode) {
  if constexpr (numeric_limits<T>::is_integer) {
    if (b == T(0) || (T(-1) < T(0) && b == T(-1))) return T(0);
    T r = T(a % b);
    if (!fmod_mode && r != T(0) && ((r < 0) != (b < 0))) r = T(r + b);
    return r;
  } else {
    T r = fmod(a, b);
    if (!fmod_mode && r != T(0) && ((r < 0) != (b < 0))) r = r + b;
    return r;
  }
}
// Exponents 2 and 3 are x*x and (x*x)*x, as fprt::pow_ on the CPU
// (graph/op_attrs.h pow_multiplies).
template <class T, class E> FP_D T pow_(T a, E b) {
  if constexpr (numeric_limits<T>::is_integer) return T(pow(double(a), double(b)));
  else { const T sq = a * a; return T(b) == T(2) ? sq : (T(b) == T(3) ? T(sq * a) : pow(a, T(b))); }
}
template <class U, class T> FP_D U cast(T x) {
  if constexpr (sizeof(U) == 1 && U(2) == U(1)) return x != T(0); else return static_cast<U>(x);
}
template <class Q> FP_D Q quantize(float x, float scale, Q zp) {
  float v = nearbyint(x / scale) + float(zp);
  float lo = float(numeric_limits<Q>::lowest()), hi = float(numeric_limits<Q>::max());
  return Q(v < lo ? lo : (v > hi ? hi : v));
}
template <class Q> FP_D float dequantize(Q x, float scale, Q zp) { return float((long long)x - (long long)zp) * scale; }
FP_D int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }
FP_D int64_t norm_index(int64_t i, int64_t n) { return clamp_index(i < 0 ? i + n : i, n); }
FP_D int64_t reflect_index(int64_t i, int64_t n) {
  if (n == 1) return 0;
  int64_t p = 2 * (n - 1);
  i = i % p;
  if (i < 0) i += p;
  return i < n ? i : p - i;
}
FP_D float resize_src(int64_t o, float scale, int64_t in_n, int64_t out_n, int mode) {
  switch (mode) {
    case 1: return float(o) / scale;
    case 2: return out_n == 1 ? 0.0f : float(o) * float(in_n - 1) / float(out_n - 1);
    case 3: return out_n > 1 ? (float(o) + 0.5f) / scale - 0.5f : 0.0f;
    case 4: return (float(o) + 0.5f) / scale;
    default: return (float(o) + 0.5f) / scale - 0.5f;
  }
}
FP_D int64_t resize_nearest(int64_t o, float scale, int64_t in_n, int64_t out_n, int mode, int nmode) {
  float x = resize_src(o, scale, in_n, out_n, mode), r;
  switch (nmode) {
    case 1: r = floor(x + 0.5f); break;
    case 2: r = floor(x); break;
    case 3: r = ceil(x); break;
    default: r = (x - floor(x) == 0.5f) ? floor(x) : round(x); break;
  }
  return clamp_index(int64_t(r), in_n);
}
// ---- canonical block reduction: thread t folds elements t, t+B, t+2B, ...
// in order; then a xor-shuffle tree in each warp (offsets 16..1); then warp 0
// folds the per-warp partials with the same tree. Every reduction of one
// kind and block size runs this exact order, fused or not.
template <class T, class F> __device__ T block_reduce(T v, T identity, F op, T* smem) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? smem[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) smem[0] = v;
  }
  __syncthreads();
  T r = smem[0];
  __syncthreads();
  return r;
}
template <class T> struct add_op { FP_D T operator()(T a, T b) const { return T(a + b); } };
template <class T> struct mul_op { FP_D T operator()(T a, T b) const { return T(a * b); } };
template <class T> struct max_op { FP_D T operator()(T a, T b) const { return max_(a, b); } };
template <class T> struct min_op { FP_D T operator()(T a, T b) const { return min_(a, b); } };
}  // namespace fprt
)FPRT";

}  // namespace fuseplan::cuda
