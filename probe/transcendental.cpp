// Transcendental-op probe (see probe/transcendental.h).
#include "probe/transcendental.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "emit/cpu/compiler.h"
#include "emit/cpu/cpp_printer.h"
#include "emit/cpu/vmath.h"
#include "graph/op_traits.h"
#include "graph/graph.h"
#include "probe/timed_kernel.h"
#include "support/stats.h"

namespace fuseplan {
namespace {

// The ops costmodel/flops.cpp calls transcendental, with the attribute
// arguments the emitter passes (ONNX defaults) or the broadcast operand.
struct ProbedOp {
  const char* op;
  const char* args;  // after the element: ", 1.0f" (Elu's alpha), ", e[0]" (Pow's exponent)
};
constexpr ProbedOp kOps[] = {{"Exp", ""},     {"Log", ""},      {"Sin", ""},      {"Cos", ""},
                             {"Tanh", ""},    {"Erf", ""},      {"Sigmoid", ""},  {"Softplus", ""},
                             {"Elu", ", 1.0f"}, {"Pow", ", e[0]"}};
constexpr int kSizes[2] = {1024, 8192};
constexpr int kRounds = 101;  // rounds per call
constexpr int kCalls = 5;     // calls, each op's best over all
// Cold-libm probe: one op per libm routine (indices into kOps: Exp, Log,
// Sin, Tanh, Erf, Pow), rounds of a hot and a cold call each.
constexpr int kColdOps[] = {0, 1, 2, 4, 5, 9};
constexpr int kColdRounds = 15;

// The probes' buffers, in the generated source: x (inputs uniform in
// [-1, 1]) and y 128 bytes apart modulo 4 KiB whatever the allocator does,
// so no load waits on a store to the same 4 KiB offset (4K aliasing); e
// holds Pow's exponent, 4: one fprt::pow_ computes with the libm pow (2 and
// 3 are multiplies, graph/op_attrs.h pow_multiplies).
constexpr const char* kProbeBuffers =
    "  std::vector<float> buf(2 * 8192 + 32), e(1, 4.0f);\n"
    "  float* x = buf.data(); float* y = buf.data() + 8192 + 32;\n"
    "  std::mt19937_64 rng(7);\n  std::uniform_real_distribution<double> u(-1.0, 1.0);\n"
    "  for (int i = 0; i < 8192; ++i) x[i] = static_cast<float>(u(rng));\n"
    "  using Fn = void (*)(const float*, const float*, float*);\n";

// One kernel per op and size, shaped like an emitted single-op group
// (restrict pointers, a constant trip count, the scalar call), then a timer
// over all of them: b[0] is a double[2 × ops], best ns per (op, size).
std::string probe_source() {
  std::ostringstream s;
  s << "\n#include <chrono>\n#include <random>\n";
  int i = 0;
  for (const ProbedOp& o : kOps) {
    const std::string fn = traits(op_from_name(o.op)).scalar.fn;
    for (int n : kSizes)
      s << "__attribute__((noinline)) static void fp_t" << i << "_" << n
        << "(const float* __restrict x, const float* __restrict e, float* __restrict y) {\n"
        << "  for (int64_t i0 = 0; i0 < " << n << "; ++i0) { const float v0 = x[(i0)]; y[(i0)] = (float)" << fn
        << "(v0" << o.args << "); }\n}\n";
    ++i;
  }
  s << "extern \"C\" void fp_probe_transcendental(void** b) {\n"
    << "  double* out = static_cast<double*>(b[0]);\n"
    << kProbeBuffers << "  const Fn fns[] = {";
  for (int k = 0; k < i; ++k)
    for (int n : kSizes) s << "fp_t" << k << "_" << n << ", ";
  // Round robin over the kernels, so a change of clock or of the load on
  // the sibling hyperthread during the probe slows every op alike: the
  // ratios between ops, which is what calibration keeps, stay.
  s << "};\n"
    << "  for (int f = 0; f < " << 2 * i << "; ++f) out[f] = 1e30;\n"
    << "  for (int rep = 0; rep < " << kRounds << "; ++rep)\n"
    << "    for (int f = 0; f < " << 2 * i << "; ++f) {\n"
    << "      auto t0 = std::chrono::steady_clock::now();\n"
    << "      fns[f](x, e.data(), y);\n"
    << "      auto t1 = std::chrono::steady_clock::now();\n"
    << "      out[f] = std::min(out[f], std::chrono::duration<double, std::nano>(t1 - t0).count());\n"
    << "    }\n}\n";
  // Cold libm: each routine's 1024-element kernel hot, then right after a
  // stream over b[1] (b[2] bytes, read and written) with x and y touched
  // back, so only the code and libm's tables are cold. b[0]: double[2 × ops],
  // best hot and best cold ns per op (kColdOps).
  s << "extern \"C\" void fp_probe_libm_cold(void** b) {\n"
    << "  double* out = static_cast<double*>(b[0]);\n"
    << "  volatile unsigned char* big = static_cast<unsigned char*>(b[1]);\n"
    << "  const std::size_t bytes = *static_cast<const std::size_t*>(b[2]);\n"
    << kProbeBuffers << "  const Fn fns[] = {";
  for (int k : kColdOps) s << "fp_t" << k << "_" << kSizes[0] << ", ";
  s << "};\n"
    << "  constexpr int n = sizeof fns / sizeof fns[0];\n"
    << "  for (int f = 0; f < 2 * n; ++f) out[f] = 1e30;\n"
    << "  volatile float sink = 0;\n"
    << "  for (int rep = 0; rep < " << kColdRounds << "; ++rep)\n"
    << "    for (int f = 0; f < n; ++f) {\n"
    << "      fns[f](x, e.data(), y);\n"
    << "      auto t0 = std::chrono::steady_clock::now();\n"
    << "      fns[f](x, e.data(), y);\n"
    << "      auto t1 = std::chrono::steady_clock::now();\n"
    << "      out[2 * f] = std::min(out[2 * f], std::chrono::duration<double, std::nano>(t1 - t0).count());\n"
    << "      for (std::size_t i = 0; i < bytes; i += 64) big[i] = static_cast<unsigned char>(big[i] + 1);\n"
    << "      float s = 0;\n"
    << "      for (int i = 0; i < " << kSizes[0] << "; ++i) s += x[i] + y[i];\n"
    << "      sink = sink + s;\n"
    << "      t0 = std::chrono::steady_clock::now();\n"
    << "      fns[f](x, e.data(), y);\n"
    << "      t1 = std::chrono::steady_clock::now();\n"
    << "      out[2 * f + 1] = std::min(out[2 * f + 1], std::chrono::duration<double, std::nano>(t1 - t0).count());\n"
    << "    }\n}\n";
  return s.str();
}

}  // namespace

std::map<std::string, double, std::less<>> transcendental_ns(std::string& note) {
  constexpr int kOpsCount = sizeof kOps / sizeof kOps[0];
  const std::vector<double> t = best_of_calls(probe_source(), "fp_probe_transcendental", 2 * kOpsCount, kCalls);
  std::map<std::string, double, std::less<>> ns;
  std::ostringstream parts;
  for (int k = 0; k < kOpsCount; ++k) {
    const double per_elem = (t[2 * k + 1] - t[2 * k]) / (kSizes[1] - kSizes[0]);
    if (!(per_elem > 0))
      throw Error(std::string("the ") + kOps[k].op + " loop took no longer at " + std::to_string(kSizes[1]) +
                  " elements than at " + std::to_string(kSizes[0]) + " (timer or compiler trouble)");
    ns[kOps[k].op] = per_elem;
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%s %.2f", k ? ", " : "", kOps[k].op, per_elem);
    parts << buf;
  }
  note = "the CPU backend's call per op (graph/op_traits.cpp; float: " + std::string(fp_vmath_family()) +
         ") in its emitted loop, compiled as the backend "
         "compiles, one thread, inputs uniform in [-1, 1], slope between 1024 and 8192 elements, best of 5 × 101 rounds over all ops: " +
         parts.str() + " ns per element";
  return ns;
}

double libm_cold_us(std::size_t evict_bytes, std::string& note) {
  auto lib = cpu::compile_and_load(std::string(cpu::kRuntimeText) + probe_source());
  constexpr int n = sizeof kColdOps / sizeof kColdOps[0];
  std::vector<double> t(2 * n, 0.0);
  std::vector<unsigned char> big(std::max<std::size_t>(evict_bytes, 64), 0);
  std::size_t bytes = big.size();
  void* args[3] = {t.data(), big.data(), &bytes};
  lib->kernel("fp_probe_libm_cold")(args);
  std::vector<double> extra(n);
  std::ostringstream parts;
  for (int k = 0; k < n; ++k) {
    extra[k] = std::max(0.0, t[2 * k + 1] - t[2 * k]) / 1000;  // ns → µs
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.3f", k ? ", " : "", kOps[kColdOps[k]].op, extra[k]);
    parts << buf;
  }
  char head[256];
  std::snprintf(head, sizeof head,
                "median over libm routines of (best cold − best hot) time of a %d-element loop, %d rounds, cold = right "
                "after streaming %.0f MiB with the loop's data touched back: ",
                kSizes[0], kColdRounds, static_cast<double>(bytes) / 1048576.0);
  note = head + parts.str() + " us";
  return median(extra);
}

}  // namespace fuseplan
