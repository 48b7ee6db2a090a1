// Probe of the CPU backend's own GEMM (emit/cpu/runtime.h gemm()), compiled
// as the backend compiles its kernels (emit/cpu/compiler.h: -O3
// -march=native -fopenmp) and timed on one thread.
#pragma once

#include <string>

namespace fuseplan {

/// The fixed cost of one gemm() micro-kernel run, ns per run (one 6 × 2-vector
/// tile of C over one K block: zeroing the accumulators, storing them, the
/// call), apart from its FLOPs and its A-panel packing. Measured as the slope
/// of gemm(M, 2 vectors, K) over M (M = 6 and 384: 1 and 64 runs, best of 201
/// calls each) at K = 1 and K = 16, extrapolated linearly to K = 0. `note`
/// receives a one-line description of the measurement. Throws Error when the
/// compiler or the loaded kernel fails (the caller leaves the term at 0).
double gemm_microkernel_ns(std::string& note);

}  // namespace fuseplan
