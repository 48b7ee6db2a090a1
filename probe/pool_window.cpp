#include "probe/pool_window.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "probe/timed_kernel.h"
#include "support/error.h"

namespace fuseplan {
namespace {

constexpr int kChannels = 8, kWindow = 9;
constexpr int kSides[2] = {56, 112};  // input side; output side / 2
constexpr int kRounds = 31;           // rounds per call
constexpr int kCalls = 5;             // calls, each size's best over all

// One call of fprt::pool per input side, as an emitted MaxPool kernel calls
// it (cpp_printer.cpp print_library), timed in turn: b[0] is a double[2],
// best ns each.
std::string pool_window_source() {
  std::ostringstream s;
  s << "\n#include <chrono>\n#include <random>\n"
    << "extern \"C\" void fp_probe_pool(void** b) {\n"
    << "  double* out = static_cast<double*>(b[0]);\n"
    << "  std::vector<float> x(" << kChannels * kSides[1] * kSides[1] << "), y(" << kChannels * kSides[1] * kSides[1] / 4
    << ");\n"
    << "  std::mt19937_64 rng(7);\n  std::uniform_real_distribution<double> u(-1.0, 1.0);\n"
    << "  for (float& v : x) v = static_cast<float>(u(rng));\n"
    << "  static const int64_t st[] = {2,2}, pd[] = {1,1,1,1}, dl[] = {1,1}, ks[] = {3,3};\n"
    << "  for (int f = 0; f < 2; ++f) out[f] = 1e30;\n"
    << "  for (int rep = 0; rep < " << kRounds << "; ++rep)\n"
    << "    for (int f = 0; f < 2; ++f) {\n"
    << "      const int64_t side = f ? " << kSides[1] << " : " << kSides[0] << ";\n"
    << "      const int64_t xs[] = {1, " << kChannels << ", side, side}, ys[] = {1, " << kChannels
    << ", side / 2, side / 2};\n"
    << "      auto t0 = std::chrono::steady_clock::now();\n"
    << "      fprt::pool(x.data(), xs, y.data(), ys, 2, ks, st, pd, dl, 1, 0);\n"
    << "      auto t1 = std::chrono::steady_clock::now();\n"
    << "      out[f] = std::min(out[f], std::chrono::duration<double, std::nano>(t1 - t0).count());\n"
    << "    }\n}\n";
  return s.str();
}

}  // namespace

PoolWindowTiming pool_window_ns() {
  const std::vector<double> t = best_of_calls(pool_window_source(), "fp_probe_pool", 2, kCalls);
  auto window_elements = [](int side) { return double(kChannels) * (side / 2) * (side / 2) * kWindow; };
  PoolWindowTiming r;
  r.ns = (t[1] - t[0]) / (window_elements(kSides[1]) - window_elements(kSides[0]));
  if (!(r.ns > 0))
    throw Error("a pool over " + std::to_string(kSides[1]) + "^2 took no longer than over " +
                std::to_string(kSides[0]) + "^2 (timer or compiler trouble)");
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "the CPU backend's pooling routine (fprt::pool), a 3x3 stride-2 pad-1 MaxPool over %d channels, "
                "compiled as the backend compiles, one thread, slope between %d^2 and %d^2 inputs, best of %d x %d "
                "rounds: %.3f ns per window element",
                kChannels, kSides[0], kSides[1], kCalls, kRounds, r.ns);
  r.note = buf;
  return r;
}

}  // namespace fuseplan
