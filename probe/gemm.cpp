// gemm() micro-kernel probe (see probe/gemm.h).
#include "probe/gemm.h"

#include <algorithm>
#include <cstdio>

#include "emit/cpu/compiler.h"
#include "emit/cpu/cpp_printer.h"

namespace fuseplan {
namespace {

// Appended to the runtime's text: b[0] is a double[4], the best time in ns of
// gemm(M, NR, K) for (M, K) = (6, 1), (384, 1), (6, 16), (384, 16).
constexpr const char* kProbeSource = R"PROBE(
#include <chrono>
extern "C" void fp_probe_gemm(void** b) {
  double* out = static_cast<double*>(b[0]);
  const int64_t NR = fprt::kGemmNR, Ms[2] = {6, 384}, Ks[2] = {1, 16};
  std::vector<float> A(384 * 16, 0.5f), B(16 * NR, 0.25f), C(384 * NR);
  for (int k = 0; k < 2; ++k)
    for (int m = 0; m < 2; ++m) {
      double best = 1e30;
      for (int rep = 0; rep < 201; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        fprt::gemm(Ms[m], NR, Ks[k], A.data(), Ks[k], 1, B.data(), NR, 1, C.data(), NR);
        auto t1 = std::chrono::steady_clock::now();
        best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count());
      }
      out[2 * k + m] = best;
    }
}
)PROBE";

}  // namespace

double gemm_microkernel_ns(std::string& note) {
  auto lib = cpu::compile_and_load(std::string(cpu::kRuntimeText) + kProbeSource);
  double t[4] = {0, 0, 0, 0};
  void* args[1] = {t};
  auto fn = lib->kernel("fp_probe_gemm");
  fn(args);  // warm-up: page faults of the scratch panels, the OpenMP runtime
  fn(args);
  constexpr double kRunsApart = 64 - 1;  // 384 / 6 runs against 1
  const double per_run_k1 = (t[1] - t[0]) / kRunsApart, per_run_k16 = (t[3] - t[2]) / kRunsApart;
  const double at_k0 = std::max(0.0, per_run_k1 - (per_run_k16 - per_run_k1) / 15);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "emit/cpu/runtime.h gemm(M, 2 vectors, K) compiled as the backend compiles it, one thread, best of "
                "201: %.1f ns per micro-kernel run at K = 1, %.1f at K = 16, extrapolated to K = 0",
                per_run_k1, per_run_k16);
  note = buf;
  return at_k0;
}

}  // namespace fuseplan
