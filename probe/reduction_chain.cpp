#include "probe/reduction_chain.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "graph/op_attrs.h"
#include "probe/timed_kernel.h"
#include "support/error.h"

namespace fuseplan {
namespace {

constexpr int kRows = 8;
// Rows of lengths no multiple of kReduceLanes: the backend folds them one by
// one (graph/op_attrs.h reduce_lanes), the serial chain whose step this
// times; a row in lanes is priced as that many steps per lane step.
constexpr int kLengths[2] = {255, 2047};
static_assert(kLengths[0] % kReduceLanes != 0 && kLengths[1] % kReduceLanes != 0,
              "the probe's rows must be ones the backend folds one by one");
constexpr int kRounds = 101;  // rounds per call
constexpr int kCalls = 5;     // calls, each kernel's best over all

// The accumulator's start and step as emit/cpu/cpp_printer.cpp reduce_loop
// prints them for a float ReduceSum and ReduceMax (a test holds them equal).
struct Chain {
  const char* init;
  const char* step;
};
constexpr Chain kChains[2] = {
    {"(float)0", "acc = (float)(acc + v0);"},
    {"(std::numeric_limits<float>::has_infinity ? -std::numeric_limits<float>::infinity() : "
            "std::numeric_limits<float>::lowest())",
     "acc = fprt::max_(acc, v0);"},
};

}  // namespace

// One kernel per chain and row length, shaped like an emitted reduction
// group (restrict pointers, constant trip counts, one output per row), then
// a timer over all of them in turn: b[0] is a double[4], best ns each.
std::string reduction_chain_source() {
  std::ostringstream s;
  s << "\n#include <chrono>\n#include <random>\n";
  for (int c = 0; c < 2; ++c)
    for (int n : kLengths)
      s << "__attribute__((noinline)) static void fp_chain" << c << "_" << n
        << "(const float* __restrict x, float* __restrict y) {\n"
        << "  for (int64_t i0 = 0; i0 < " << kRows << "; ++i0) {\n"
        << "    float acc = " << kChains[c].init << ";\n"
        << "    for (int64_t r0 = 0; r0 < " << n << "; ++r0) {\n"
        << "      const float v0 = x[((i0)*" << n << "+(r0))];\n"
        << "      " << kChains[c].step << "\n"
        << "    }\n"
        << "    y[(i0)] = acc;\n"
        << "  }\n}\n";
  s << "extern \"C\" void fp_probe_reduction_chains(void** b) {\n"
    << "  double* out = static_cast<double*>(b[0]);\n"
    << "  std::vector<float> x(" << kRows * kLengths[1] << "), y(" << kRows << ");\n"
    << "  std::mt19937_64 rng(7);\n  std::uniform_real_distribution<double> u(-1.0, 1.0);\n"
    << "  for (float& v : x) v = static_cast<float>(u(rng));\n"
    << "  using Fn = void (*)(const float*, float*);\n"
    << "  const Fn fns[] = {fp_chain0_" << kLengths[0] << ", fp_chain0_" << kLengths[1] << ", fp_chain1_"
    << kLengths[0] << ", fp_chain1_" << kLengths[1] << "};\n"
    << "  for (int f = 0; f < 4; ++f) out[f] = 1e30;\n"
    << "  for (int rep = 0; rep < " << kRounds << "; ++rep)\n"
    << "    for (int f = 0; f < 4; ++f) {\n"
    << "      auto t0 = std::chrono::steady_clock::now();\n"
    << "      fns[f](x.data(), y.data());\n"
    << "      auto t1 = std::chrono::steady_clock::now();\n"
    << "      out[f] = std::min(out[f], std::chrono::duration<double, std::nano>(t1 - t0).count());\n"
    << "    }\n}\n";
  return s.str();
}

ReductionChainTiming reduction_chain_ns() {
  const std::vector<double> t = best_of_calls(reduction_chain_source(), "fp_probe_reduction_chains", 4, kCalls);
  ReductionChainTiming r;
  const double steps = static_cast<double>(kRows) * (kLengths[1] - kLengths[0]);
  r.sum_ns = (t[1] - t[0]) / steps;
  r.max_ns = (t[3] - t[2]) / steps;
  if (!(r.sum_ns > 0) || !(r.max_ns > 0))
    throw Error("a reduce loop took no longer over rows of " + std::to_string(kLengths[1]) + " elements than of " +
                std::to_string(kLengths[0]) + " (timer or compiler trouble)");
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "the CPU backend's emitted float ReduceSum and ReduceMax loops (one serial chain per row), compiled as "
                "the backend compiles, one thread, slope between %d rows of %d and of %d elements, best of %d x %d "
                "rounds: sum %.3f, max %.3f ns per element",
                kRows, kLengths[0], kLengths[1], kCalls, kRounds, r.sum_ns, r.max_ns);
  r.note = buf;
  return r;
}

}  // namespace fuseplan
