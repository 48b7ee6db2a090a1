// Probe of the CPU backend's contraction library (exec/onednn.h, oneDNN
// matmul), timed in this process on one thread.
#pragma once

#include <string>

namespace fuseplan {

/// The fixed cost of one 6 × 16 tile of C (the cost model's gemm micro-kernel
/// run), ns per tile, apart from its FLOPs: the slope of matmul(M, 16, K) over
/// M (M = 6 and 384: 1 and 64 tiles, best of 201 calls each) at K = 1 and
/// K = 16, extrapolated linearly to K = 0. `note` receives a one-line
/// description of the measurement. Throws Error when oneDNN fails (the caller
/// leaves the term at 0).
double gemm_microkernel_ns(std::string& note);

}  // namespace fuseplan
