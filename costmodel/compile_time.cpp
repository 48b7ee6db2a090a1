// The compile-time model of emitted kernels (costmodel/compile_time.h).
#include "costmodel/compile_time.h"

#include <cmath>

namespace fuseplan {

namespace {
// GCC 12.2 (Debian 12), the CPU backend's flags (emit/cpu/compiler.cpp:
// -std=c++20 -O3 -march=native -ffp-contract=off -fno-fast-math
// -fno-math-errno -fopenmp -fPIC, -c), one kernel of an elementwise chain
// (Add/Relu/Mul/Neg/Abs/Max cycling, scalar-constant operands) with the
// embedded runtime, as `fuseplan run` writes it; best of 3 on the shared
// 2-core AMD EPYC (Zen 4) development VM: 1 primitive 0.48 s (the
// translation unit's fixed cost), 250: 0.62, 500: 0.77, 1000: 1.04,
// 2000: 2.16, 3000: 3.53, 4000: 4.97 s. Least squares of (t − t(1)) over
// b·k + c·k²; residuals ≤ 0.12 s.
constexpr CompileTimeModel kGcc{"GCC 12 (CPU backend flags)", 5.2e-4, 1.54e-7};
// NVRTC (CUDA 12, sm_90, -fmad=false) through `fuseplan emit --backend
// cuda` on the same chains, cold minus cached cache (the compile alone),
// best of 3 on the same VM: 1 primitive 0.04 s, 250: 0.09, 500: 0.12,
// 1000: 0.19, 2000: 0.35, 4000: 0.79 s. Least squares as above; residuals
// ≤ 0.02 s.
constexpr CompileTimeModel kNvrtc{"NVRTC (CUDA backend)", 1.35e-4, 1.3e-8};
}  // namespace

const CompileTimeModel& compile_time_model(const DeviceSpec& d) { return d.gpu ? kNvrtc : kGcc; }

double kernel_compile_s(std::size_t primitives, const DeviceSpec& d) {
  const CompileTimeModel& m = compile_time_model(d);
  const double k = static_cast<double>(primitives);
  return m.per_primitive_s * k + m.per_primitive_sq_s * k * k;
}

std::size_t compile_time_max_primitives(const DeviceSpec& d) {
  const CompileTimeModel& m = compile_time_model(d);
  const double b = m.per_primitive_s, c = m.per_primitive_sq_s;
  // The positive root of c·k² + b·k = budget, then exact against the model.
  auto k = static_cast<std::size_t>((-b + std::sqrt(b * b + 4 * c * kKernelCompileBudgetS)) / (2 * c));
  while (k > 1 && kernel_compile_s(k, d) > kKernelCompileBudgetS) --k;
  while (kernel_compile_s(k + 1, d) <= kKernelCompileBudgetS) ++k;
  return k < 1 ? 1 : k;
}

}  // namespace fuseplan
