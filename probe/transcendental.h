// Probe of the CPU backend's transcendental ops (exp, log, tanh, erf, ...):
// the call the op-traits table (graph/op_traits.cpp) names for each (float:
// libfuseplan_vmath, vectorised by the compiler), in the loop the backend
// emits, compiled as it compiles kernels (emit/cpu/compiler.h) and timed on
// one thread. The cost model prices an op listed here by its measured time
// (CpuSpec::transcendental_ns) instead of a FLOP-equivalent estimate.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>

namespace fuseplan {

/// ns per element of each transcendental op (Exp, Log, Sin, Cos, Tanh, Erf,
/// Sigmoid, Softplus, Elu, Pow with a broadcast exponent 3) on one core:
/// the slope of its loop between 1024 and 8192 elements (best of 5 × 101 rounds
/// that time every op's loop in turn, so the ratios between ops hold when the
/// clock drifts; both sizes in L2, so the time is the calls'), inputs uniform in
/// [-1, 1] as `fuseplan measure` draws them. `note` receives a one-line
/// description. Throws Error when the compiler or the loaded kernel fails
/// (the caller leaves the table empty: the estimates).
std::map<std::string, double, std::less<>> transcendental_ns(std::string& note);

/// µs a libm routine's loop takes longer when its code and tables are cold
/// (CpuSpec::libm_cold_us; docs/calibration.md, "The fit"): the median
/// over one op per routine (Exp, Log, Sin, Tanh, Erf, Pow) of the best time
/// of its 1024-element loop right after streaming `evict_bytes` (read and
/// written; 4 × the LLC evicts code and tables from every level) with the
/// loop's inputs and outputs touched back, minus its best hot time; 15
/// rounds each, one thread. `note` receives the per-routine values. Throws
/// Error when the compiler or the loaded kernel fails.
double libm_cold_us(std::size_t evict_bytes, std::string& note);

}  // namespace fuseplan
