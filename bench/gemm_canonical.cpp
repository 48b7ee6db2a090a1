// The canonical GEMM (fprt::gemm, emit/cpu/runtime.h) against Eigen's, both
// built like the generated kernels (-O3 -march=native -ffp-contract=off
// -fopenmp): GFLOP/s on 512x512x512 and on the four convolutions of
// examples/resnet50_bottleneck at batch 1 (fprt::conv = im2col + GEMM), and
// how many of Eigen's outputs differ from the canonical ones: Eigen uses FMA
// and -march-dependent blocking, so its results cannot be bit-identical to a
// generic reference build (emit/README.md).
// Wall time (best of 7) and thread CPU time (single thread), because on a
// shared host the wall clock mostly measures the other jobs.
// Then the fixed costs of small calls that the cost model prices apart from
// the FLOPs (costmodel/README.md: gemm_calls, gemm_pack_elems): per shape,
// best of 31 cold (A, B, C flushed from the caches first) and warm, and the
// time per micro-kernel run (6 x 2-vector tile per K block of 256). Last,
// fprt::pool's MaxPool against AveragePool per window element.
#include <Eigen/Dense>
#include <immintrin.h>
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

  // Small calls: call overhead (an OpenMP region even on one thread),
  // packing (a GEMV packs all of B), micro-kernel runs (K = 1: no FLOPs to
  // speak of).
  std::printf("\n| gemm M x N x K | threads | micro-kernel runs | cold us (best of 31) | warm us | warm us per run |\n"
              "|---|---|---|---|---|---|\n");
  auto flush = [](const std::vector<float>& v) {
    for (size_t i = 0; i < v.size(); i += 16) _mm_clflush(v.data() + i);
    _mm_mfence();
  };
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 10, 256}, {128, 2, 2}, {96, 384, 1}, {128, 128, 1}, {128, 128, 256}};
  for (const auto& s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    auto sa = rnd(M * K, 5), sb = rnd(K * N, 6);
    std::vector<float> sc(M * N);
    auto call = [&] { fprt::gemm(M, N, K, sa.data(), K, 1, sb.data(), N, 1, sc.data(), N); };
    double cold = 1e30, warm = 1e30;
    for (int t = 0; t < 31; ++t) {
      flush(sa), flush(sb), flush(sc);
      double w0 = wall();
      call();
      cold = std::min(cold, wall() - w0);
      w0 = wall();
      call();
      warm = std::min(warm, wall() - w0);
    }
    const int64_t runs = (M + fprt::kGemmMR - 1) / fprt::kGemmMR * ((N + fprt::kGemmNR - 1) / fprt::kGemmNR) *
                         ((K + fprt::kGemmKC - 1) / fprt::kGemmKC);
    std::printf("| %lld x %lld x %lld | %d | %lld | %.2f | %.2f | %.3f |\n", (long long)M, (long long)N, (long long)K,
                omp_get_max_threads(), (long long)runs, cold * 1e6, warm * 1e6, warm * 1e6 / double(runs));
  }

  // The pooling library (fprt::pool) on random data, the pool_step_ns term:
  // MaxPool's running maximum (fprt::max_) is branch-free, so it costs about
  // what AveragePool's sum does (with the old `||` form it was a
  // data-dependent branch: 5.8 against 2.5 ns per window element, 2x2).
  std::printf("\n| pool over 64 x 112 x 112 random floats | threads | MaxPool ns per window element | AveragePool ns per "
              "window element | max / average |\n|---|---|---|---|---|\n");
  const int64_t px[4] = {1, 64, 112, 112}, dl1[2] = {1, 1};
  auto pin = rnd(64 * 112 * 112, 7);
  struct PoolCase { const char* name; int64_t k, s, pad, out; };
  for (const PoolCase& pc : {PoolCase{"2x2 stride 2", 2, 2, 0, 56}, PoolCase{"3x3 stride 2 pad 1", 3, 2, 1, 56}}) {
    const int64_t py[4] = {1, 64, pc.out, pc.out}, ks[2] = {pc.k, pc.k}, st[2] = {pc.s, pc.s},
                  pd[4] = {pc.pad, pc.pad, pc.pad, pc.pad};
    std::vector<float> pout(64 * pc.out * pc.out);
    double ns[2];
    for (int is_max = 1; is_max >= 0; --is_max) {
      double best = 1e30;
      for (int t = 0; t < 7; ++t) {
        double w0 = wall();
        fprt::pool(pin.data(), px, pout.data(), py, 2, ks, st, pd, dl1, is_max, 0);
        best = std::min(best, wall() - w0);
      }
      ns[is_max] = best * 1e9 / double(pout.size() * pc.k * pc.k);
    }
    std::printf("| %s | %d | %.2f | %.2f | %.2f |\n", pc.name, omp_get_max_threads(), ns[1], ns[0], ns[1] / ns[0]);
  }
  return 0;
}
