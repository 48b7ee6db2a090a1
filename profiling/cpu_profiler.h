// The CPU backend's profiler: runs a plan through run_plan (exec/cpu_run.h:
// emit, cached compile, load) and measures each group with the steady clock
// over repetitions, flushing the caches between repetitions when the plan's
// buffers would stay hot, and reading perf_event counters per group call.
#pragma once

#include <cstddef>
#include <span>

#include "profiling/profiler.h"

namespace fuseplan {

class CpuProfiler : public Profiler {
 public:
  std::string name() const override { return "cpu"; }
  ProfileResult profile(const Graph& g, const Plan& plan, const DeviceSpec& d, const ProfileOptions& o) override;
};

/// Bytes of every buffer the plan touches (sources + materialised tensors).
double plan_footprint_bytes(const Graph& g, const Plan& plan);

/// Bytes the flush writes: twice the largest cache capacity of `d` (the
/// effective last-level cache the probe measured), at least 32 MiB.
double flush_bytes(const DeviceSpec& d);

/// Evicts `buffers` from every cache level: each 64-byte line is written
/// back if dirty and invalidated (x86-64 CLFLUSH, then MFENCE). Unlike
/// writing a scratch buffer of twice the LLC, it evicts exactly the plan's
/// data whatever the cache size, leaves no dirty scratch lines behind, and
/// costs time in proportion to the plan's footprint, not a 2×LLC write.
/// Returns false where the CPU has no such instruction (nothing evicted).
bool evict_lines(std::span<const std::span<const std::byte>> buffers);

}  // namespace fuseplan
