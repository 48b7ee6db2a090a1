// Probe of the CPU backend's contraction library's fixed cost per tile (see probe/gemm.h).
#include "probe/gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "exec/onednn.h"

namespace fuseplan {

double gemm_microkernel_ns(std::string& note) {
  const fprt::ContractionLibrary& lib = onednn_contractions();
  constexpr int64_t NR = 16, Ms[2] = {6, 384}, Ks[2] = {1, 16};
  std::vector<float> A(384 * 16, 0.5f), B(16 * NR, 0.25f), C(384 * NR);
  const int threads = contraction_threads();
  set_contraction_threads(1);
  double t[4];
  for (int k = 0; k < 2; ++k)
    for (int m = 0; m < 2; ++m) {
      const int64_t as[2] = {Ms[m], Ks[k]}, bs[2] = {Ks[k], NR}, ys[2] = {Ms[m], NR};
      double best = 1e30;
      for (int rep = 0; rep < 202; ++rep) {  // the first call creates the primitive
        auto t0 = std::chrono::steady_clock::now();
        lib.matmul(A.data(), as, 2, B.data(), bs, 2, C.data(), ys, 2, 0, 0, 0);
        auto t1 = std::chrono::steady_clock::now();
        if (rep > 0) best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count());
      }
      t[2 * k + m] = best;
    }
  set_contraction_threads(threads);
  constexpr double kRunsApart = 64 - 1;  // 384 / 6 tiles against 1
  const double per_run_k1 = (t[1] - t[0]) / kRunsApart, per_run_k16 = (t[3] - t[2]) / kRunsApart;
  const double at_k0 = std::max(0.0, per_run_k1 - (per_run_k16 - per_run_k1) / 15);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s matmul (M x 16 x K, exec/onednn.h) on one thread, best of 201: %.1f ns per 6 x 16 tile of C at "
                "K = 1, %.1f at K = 16, extrapolated to K = 0",
                onednn_version().c_str(), per_run_k1, per_run_k16);
  note = buf;
  return at_k0;
}

}  // namespace fuseplan
