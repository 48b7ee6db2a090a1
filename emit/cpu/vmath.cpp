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

namespace {

// AVX2 + FMA: the finz family's vector code needs both; its scalar code FMA.
const bool kFma = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}();

}  // namespace

#define FP_SSE __attribute__((target("sse2")))
#define FP_AVX __attribute__((target("avx")))
#define FP_AVX2 __attribute__((target("avx2")))
#define FP_AVX512 __attribute__((target("avx512f")))

// Every NaN result becomes the canonical quiet NaN 0x7FC00000: SLEEF's
// deterministic families agree on every number but not on NaN payloads
// (on a Zen 4, the AVX-512 logf of a signalling NaN kept its payload,
// quieted, where the scalar logf returned 0x7FC00000).
namespace {
inline float canonical_nan(float r) { return r != r ? __builtin_nanf("") : r; }
FP_SSE inline __m128 canonical_nan(__m128 r) {
  const __m128 nan = _mm_cmpunord_ps(r, r);
  return _mm_or_ps(_mm_andnot_ps(nan, r), _mm_and_ps(nan, _mm_set1_ps(__builtin_nanf(""))));
}
FP_AVX inline __m256 canonical_nan(__m256 r) {
  return _mm256_blendv_ps(r, _mm256_set1_ps(__builtin_nanf("")), _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
}
FP_AVX512 inline __m512 canonical_nan(__m512 r) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), r, _mm512_set1_ps(__builtin_nanf("")));
}
}  // namespace

// One entry point `name`(params) forwarding `args` to SLEEF's finz routine,
// or to its cinz twin without FMA. SLEEF's names are declared here (sleef.h
// would need every ISA's intrinsics enabled) with `decl` (their ISA, so
// 256- and 512-bit arguments travel in ymm/zmm registers, as SLEEF's code
// expects); the entry is compiled for `isa`, so its vector arguments and
// result travel in registers as the vector-function ABI says.
#define FP_ENTRY(decl, isa, T, name, finz, cinz, params, args) \
  extern "C" decl T finz params;                             \
  extern "C" decl T cinz params;                             \
  extern "C" isa T name params { return canonical_nan(kFma ? finz args : cinz args); }

// The scalar entry fp_<fn>f and its 4-, 8- (AVX, AVX2) and 16-lane
// variants; v is the vector-ABI parameter code ("v" per vector argument).
#define FP_VMATH(fn, v, P1, P4, P8, P16, A)                                                                     \
  FP_ENTRY(, , float, fp_##fn##f, Sleef_finz_##fn##f1_u10purecfma, Sleef_cinz_##fn##f1_u10purec, P1, A)         \
  FP_ENTRY(, FP_SSE, __m128, _ZGVbN4##v##_fp_##fn##f, Sleef_finz_##fn##f4_u10avx2128, Sleef_cinz_##fn##f4_u10sse2, \
           P4, A)                                                                                               \
  FP_ENTRY(FP_AVX, FP_AVX, __m256, _ZGVcN8##v##_fp_##fn##f, Sleef_finz_##fn##f8_u10avx2,                        \
           Sleef_cinz_##fn##f8_u10avx, P8, A)                                                                   \
  FP_ENTRY(FP_AVX, FP_AVX2, __m256, _ZGVdN8##v##_fp_##fn##f, Sleef_finz_##fn##f8_u10avx2,                       \
           Sleef_cinz_##fn##f8_u10avx, P8, A)                                                                   \
  FP_ENTRY(FP_AVX512, FP_AVX512, __m512, _ZGVeN16##v##_fp_##fn##f, Sleef_finz_##fn##f16_u10avx512f,             \
           Sleef_cinz_##fn##f16_u10avx512fnofma, P16, A)
#define FP_UNARY(fn) FP_VMATH(fn, v, (float x), (__m128 x), (__m256 x), (__m512 x), (x))
#define FP_BINARY(fn) \
  FP_VMATH(fn, vv, (float x, float y), (__m128 x, __m128 y), (__m256 x, __m256 y), (__m512 x, __m512 y), (x, y))

FP_UNARY(exp)
FP_UNARY(log)
FP_UNARY(tanh)
FP_UNARY(erf)
FP_UNARY(sin)
FP_UNARY(cos)
FP_BINARY(pow)

extern "C" const char* fp_vmath_family() {
  return kFma ? "SLEEF 3.5 finz (FMA, deterministic, 1.0 ULP)" : "SLEEF 3.5 cinz (no FMA, deterministic, 1.0 ULP)";
}
