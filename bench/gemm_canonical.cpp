// The canonical GEMM (fprt::gemm, emit/cpu/runtime.h) against Eigen's, both
// built like the generated kernels (-O3 -march=native -ffp-contract=off
// -fopenmp): GFLOP/s on 512x512x512 and on the four convolutions of
// examples/resnet50_bottleneck at batch 1 (fprt::conv = im2col + GEMM), and
// how many of Eigen's outputs differ from the canonical ones: Eigen uses FMA
// and -march-dependent blocking, so its results cannot be bit-identical to a
// generic reference build (emit/README.md).
// Wall time (best of 7) and thread CPU time (single thread), because on a
// shared host the wall clock mostly measures the other jobs.
#include <Eigen/Dense>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>

#include "emit/cpu/runtime.h"

namespace {

double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double cpu() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

template <class F> void time_it(const char* what, double flops, F f) {
  f();
  double bw = 1e30, bc = 1e30;
  for (int t = 0; t < 7; ++t) {
    double w0 = wall(), c0 = cpu();
    f();
    bw = std::min(bw, wall() - w0);
    bc = std::min(bc, cpu() - c0);
  }
  std::printf("| %s | %d | %.2f | %.1f | %.1f |\n", what, omp_get_max_threads(), bw * 1e3, flops / bw / 1e9,
              flops / bc / 1e9);
}

std::vector<float> rnd(size_t n, unsigned seed) {
  std::mt19937 r(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(r);
  return v;
}

}  // namespace

int main() {
  using RM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t n = 512;
  auto a = rnd(n * n, 1), b = rnd(n * n, 2);
  std::vector<float> c(n * n), e(n * n);
  std::printf("| routine | threads | wall ms (best of 7) | GFLOP/s (wall) | GFLOP/s per CPU-second |\n|---|---|---|---|---|\n");
  const double gf = 2.0 * n * n * n;
  time_it("fprt::gemm 512x512x512", gf, [&] { fprt::gemm(n, n, n, a.data(), n, 1, b.data(), n, 1, c.data(), n); });
  Eigen::Map<RM> A(a.data(), n, n), B(b.data(), n, n), E(e.data(), n, n);
  time_it("Eigen 512x512x512", gf, [&] { E.noalias() = A * B; });
  int64_t differ = 0;
  for (int64_t i = 0; i < n * n; ++i) differ += c[i] != e[i];

  struct Conv { int64_t cin, cout, k, pad; };
  const Conv convs[] = {{64, 64, 1, 0}, {64, 64, 3, 1}, {64, 256, 1, 0}, {64, 256, 1, 0}};
  std::vector<std::vector<float>> X, W, Y;
  double cf = 0;
  for (const auto& cv : convs) {
    X.push_back(rnd(cv.cin * 56 * 56, 3));
    W.push_back(rnd(cv.cout * cv.cin * cv.k * cv.k, 4));
    Y.emplace_back(cv.cout * 56 * 56);
    cf += 2.0 * cv.cout * cv.cin * cv.k * cv.k * 56 * 56;
  }
  time_it("fprt::conv, resnet50_bottleneck's 4 convs (N=1)", cf, [&] {
    for (size_t i = 0; i < 4; ++i) {
      const auto& cv = convs[i];
      int64_t xs[4] = {1, cv.cin, 56, 56}, ws[4] = {cv.cout, cv.cin, cv.k, cv.k}, ys[4] = {1, cv.cout, 56, 56};
      int64_t st[2] = {1, 1}, pd[4] = {cv.pad, cv.pad, cv.pad, cv.pad}, dl[2] = {1, 1};
      fprt::conv(X[i].data(), xs, W[i].data(), ws, Y[i].data(), ys, 2, st, pd, dl, 1);
    }
  });
  std::printf("\nEigen vs canonical on 512x512x512: %lld of %lld outputs differ (%.1f%%)\n", (long long)differ,
              (long long)(n * n), 100.0 * double(differ) / double(n * n));
  return 0;
}
