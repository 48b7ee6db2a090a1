// Probe of the CPU backend's serial reduction chains: the reduce loop the
// backend emits for a float ReduceSum (acc = acc + x, one element after the
// other in the canonical order, docs/numerics.md) and for a ReduceMax
// (acc = fprt::max_(acc, x)), compiled as it compiles kernels
// (emit/cpu/compiler.h) and timed on one thread. Each step waits for the
// previous one (no reassociation under -fno-fast-math), so a long row costs
// its latency chain, not its bandwidth: the cost model prices it as
// reduction_steps × reduce_step_ns and select_steps × select_step_ns
// (costmodel/flops.cpp, CpuSpec). A row in kReduceLanes lanes
// (graph/op_attrs.h reduce_lanes) is a chain of vector steps, each waiting
// on the add as a scalar step does: the same price per step.
#pragma once

#include <string>

namespace fuseplan {

struct ReductionChainTiming {
  double sum_ns = 0;  // ns per element of an adding chain (CpuSpec::reduce_step_ns)
  double max_ns = 0;  // ns per element of a max chain (CpuSpec::select_step_ns)
  std::string note;   // one line: sizes, rounds, both values
};

/// The slope of each chain's time between rows of 255 and 2047 elements (8
/// rows each, 8 and 64 KiB: in the private caches, so the time is the
/// chain's), best of 5 calls × 101 rounds that time both kinds and sizes in
/// turn. Throws Error when the compiler or the loaded kernel fails, or a
/// longer row took no longer (the caller keeps 0: fitted by calibration).
ReductionChainTiming reduction_chain_ns();

/// The timed source (without the runtime text): its accumulator start and
/// step are the printer's reduce_loop's, copied; tests/probe/probe_test.cpp
/// holds the two to the same text.
std::string reduction_chain_source();

}  // namespace fuseplan
