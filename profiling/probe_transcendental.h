// Probe of the CPU backend's transcendental ops (exp, log, tanh, erf, ...):
// the scalar call emit/op_attrs.cpp emits for each, in the loop the backend
// emits, compiled as it compiles kernels (emit/cpu/compiler.h) and timed on
// one thread. The cost model prices an op listed here by its measured time
// (DeviceSpec::transcendental_ns) instead of a FLOP-equivalent estimate.
#pragma once

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

}  // namespace fuseplan
