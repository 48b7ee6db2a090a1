// libfuseplan_vmath: the CPU backend's float transcendentals (emit/cpu/vmath.h).
//
// Every function here is a SLEEF 3.5 routine (Debian libsleef-dev) of one
// deterministic family, chosen once per process from the CPU:
//  - "finz" (FMA, 1.0 ULP): where the CPU has AVX2 and FMA;
//  - "cinz" (no FMA, 1.0 ULP): elsewhere.
// SLEEF guarantees that a deterministic family returns the same bits for
// the same input at every vector width (its hash_finz / hash_cinz tests),
// so the scalar entry point (the reference executor, a loop GCC leaves
// scalar, a vector loop's remainder) and the 4-, 8- and 16-wide variants
// (a loop GCC vectorises) agree bit for bit.
//
// The vector variants carry the x86 vector-function ABI names GCC calls
// when it vectorises a loop over a function declared
// `#pragma omp declare simd notinbranch` (emit/cpu/runtime.h):
// _ZGV<isa>N<lanes>v_<name>, isa b = SSE (4 lanes), c = AVX (8), d = AVX2
// (8), e = AVX-512 (16). They must not be compiled in a translation unit
// that sees that pragma (GCC would then generate its own clones), so this
// file declares the functions plainly.
#include "emit/cpu/vmath.h"

#include <immintrin.h>

extern "C" {

// --- SLEEF's exported names (sleef.h would need every ISA's intrinsics
// enabled). The target attributes make 256- and 512-bit arguments travel in
// ymm/zmm registers at the call, as SLEEF's code expects.
#define FP_AVX __attribute__((target("avx")))
#define FP_AVX512 __attribute__((target("avx512f")))
#define FP_SLEEF_DECL(fn)                                        \
  float Sleef_finz_##fn##f1_u10purecfma(float);                  \
  float Sleef_cinz_##fn##f1_u10purec(float);                     \
  __m128 Sleef_finz_##fn##f4_u10avx2128(__m128);                 \
  __m128 Sleef_cinz_##fn##f4_u10sse2(__m128);                    \
  FP_AVX __m256 Sleef_finz_##fn##f8_u10avx2(__m256);             \
  FP_AVX __m256 Sleef_cinz_##fn##f8_u10avx(__m256);              \
  FP_AVX512 __m512 Sleef_finz_##fn##f16_u10avx512f(__m512);      \
  FP_AVX512 __m512 Sleef_cinz_##fn##f16_u10avx512fnofma(__m512);
#define FP_SLEEF_DECL2(fn)                                       \
  float Sleef_finz_##fn##f1_u10purecfma(float, float);           \
  float Sleef_cinz_##fn##f1_u10purec(float, float);              \
  __m128 Sleef_finz_##fn##f4_u10avx2128(__m128, __m128);         \
  __m128 Sleef_cinz_##fn##f4_u10sse2(__m128, __m128);            \
  FP_AVX __m256 Sleef_finz_##fn##f8_u10avx2(__m256, __m256);     \
  FP_AVX __m256 Sleef_cinz_##fn##f8_u10avx(__m256, __m256);      \
  FP_AVX512 __m512 Sleef_finz_##fn##f16_u10avx512f(__m512, __m512); \
  FP_AVX512 __m512 Sleef_cinz_##fn##f16_u10avx512fnofma(__m512, __m512);
FP_SLEEF_DECL(exp)
FP_SLEEF_DECL(log)
FP_SLEEF_DECL(tanh)
FP_SLEEF_DECL(erf)
FP_SLEEF_DECL(sin)
FP_SLEEF_DECL(cos)
FP_SLEEF_DECL2(pow)

}  // extern "C"

namespace {

// AVX2 + FMA: the finz family's vector code needs both; its scalar code FMA.
const bool kFma = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}();

}  // namespace

// The entry points. A vector variant is compiled for its ISA (target
// attribute) so its vector arguments and result travel in registers as the
// vector-function ABI says.
#define FP_VMATH_DEFINE(fn)                                                                                   \
  extern "C" float fp_##fn##f(float x) {                                                                      \
    return kFma ? Sleef_finz_##fn##f1_u10purecfma(x) : Sleef_cinz_##fn##f1_u10purec(x);                       \
  }                                                                                                           \
  extern "C" __attribute__((target("sse2"))) __m128 _ZGVbN4v_fp_##fn##f(__m128 x) {                           \
    return kFma ? Sleef_finz_##fn##f4_u10avx2128(x) : Sleef_cinz_##fn##f4_u10sse2(x);                         \
  }                                                                                                           \
  extern "C" __attribute__((target("avx"))) __m256 _ZGVcN8v_fp_##fn##f(__m256 x) {                            \
    return kFma ? Sleef_finz_##fn##f8_u10avx2(x) : Sleef_cinz_##fn##f8_u10avx(x);                             \
  }                                                                                                           \
  extern "C" __attribute__((target("avx2"))) __m256 _ZGVdN8v_fp_##fn##f(__m256 x) {                           \
    return kFma ? Sleef_finz_##fn##f8_u10avx2(x) : Sleef_cinz_##fn##f8_u10avx(x);                             \
  }                                                                                                           \
  extern "C" __attribute__((target("avx512f"))) __m512 _ZGVeN16v_fp_##fn##f(__m512 x) {                       \
    return kFma ? Sleef_finz_##fn##f16_u10avx512f(x) : Sleef_cinz_##fn##f16_u10avx512fnofma(x);               \
  }
#define FP_VMATH_DEFINE2(fn)                                                                                  \
  extern "C" float fp_##fn##f(float x, float y) {                                                             \
    return kFma ? Sleef_finz_##fn##f1_u10purecfma(x, y) : Sleef_cinz_##fn##f1_u10purec(x, y);                 \
  }                                                                                                           \
  extern "C" __attribute__((target("sse2"))) __m128 _ZGVbN4vv_fp_##fn##f(__m128 x, __m128 y) {                \
    return kFma ? Sleef_finz_##fn##f4_u10avx2128(x, y) : Sleef_cinz_##fn##f4_u10sse2(x, y);                   \
  }                                                                                                           \
  extern "C" __attribute__((target("avx"))) __m256 _ZGVcN8vv_fp_##fn##f(__m256 x, __m256 y) {                 \
    return kFma ? Sleef_finz_##fn##f8_u10avx2(x, y) : Sleef_cinz_##fn##f8_u10avx(x, y);                       \
  }                                                                                                           \
  extern "C" __attribute__((target("avx2"))) __m256 _ZGVdN8vv_fp_##fn##f(__m256 x, __m256 y) {                \
    return kFma ? Sleef_finz_##fn##f8_u10avx2(x, y) : Sleef_cinz_##fn##f8_u10avx(x, y);                       \
  }                                                                                                           \
  extern "C" __attribute__((target("avx512f"))) __m512 _ZGVeN16vv_fp_##fn##f(__m512 x, __m512 y) {            \
    return kFma ? Sleef_finz_##fn##f16_u10avx512f(x, y) : Sleef_cinz_##fn##f16_u10avx512fnofma(x, y);         \
  }

FP_VMATH_DEFINE(exp)
FP_VMATH_DEFINE(log)
FP_VMATH_DEFINE(tanh)
FP_VMATH_DEFINE(erf)
FP_VMATH_DEFINE(sin)
FP_VMATH_DEFINE(cos)
FP_VMATH_DEFINE2(pow)

extern "C" const char* fp_vmath_family() {
  return kFma ? "SLEEF 3.5 finz (FMA, deterministic, 1.0 ULP)" : "SLEEF 3.5 cinz (no FMA, deterministic, 1.0 ULP)";
}
