// Probe of the CPU backend's pooling routine (emit/cpu/runtime.h fprt::pool,
// which every MaxPool and AveragePool kernel calls): ns per window element
// (output elements × kernel window), what the cost model prices as
// pool_steps × pool_step_ns (costmodel/flops.cpp, CpuSpec). Without it the
// prior priced a pool at its bytes alone: ShuffleNet v2's stem MaxPool (3x3
// stride 2 over 24 × 112²) was predicted 20 µs and measured 373 µs on a
// Zen 4 thread.
#pragma once

#include <string>

namespace fuseplan {

struct PoolWindowTiming {
  double ns = 0;     // ns per window element (CpuSpec::pool_step_ns)
  std::string note;  // one line: shapes, rounds, the value
};

/// The slope of a 3x3 stride-2 pad-1 MaxPool's time (the stem pool of
/// ResNet-50 and ShuffleNet v2) between 8 channels of 56² and of 112² input
/// (100 and 400 KiB: in the private caches, so the time is the routine's,
/// not the memory's), compiled as the backend compiles kernels, one thread,
/// best of 5 calls × 31 rounds. Throws Error when the compiler or the loaded
/// kernel fails, or the larger pool took no longer (the caller keeps 0:
/// fitted by calibration).
PoolWindowTiming pool_window_ns();

}  // namespace fuseplan
