// libfuseplan_vmath: the float transcendentals of the CPU backend, one
// shared library used by the reference executor and, through the process's
// global symbol scope, by every generated kernel library it loads.
//
// Entry points (extern "C", float in, float out, all defined in vmath.cpp):
//   fp_expf, fp_logf, fp_tanhf, fp_erff, fp_sinf, fp_cosf  (x)
//   fp_powf                                                 (x, y)
// plus their x86 vector-function-ABI variants (_ZGVbN4v_, _ZGVcN8v_,
// _ZGVdN8v_, _ZGVeN16v_; "vv" for pow), which GCC calls when it vectorises
// an emitted loop (emit/cpu/runtime.h declares the functions
// `#pragma omp declare simd`). Scalar and vector variants return the same
// bits for every input: all are one SLEEF deterministic family
// (docs/numerics.md, "Transcendentals"). Accuracy: 1.0 ULP (SLEEF's u10
// routines); infinities and signed zeros as C99 specifies; every NaN result
// is the canonical quiet NaN 0x7FC00000 (SLEEF's widths disagree on NaN
// payloads).
#pragma once

extern "C" {
/// The SLEEF family this process uses, in words ("SLEEF 3.5 finz (FMA, ...)").
const char* fp_vmath_family();
}
