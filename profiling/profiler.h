// The profiler interface: run a plan's kernels and measure each fusion group
// (time statistics over repetitions, hardware counters where permitted).
// Implementations: cpu_profiler.h (CPU backend, steady clock, perf_event)
// and cupti_profiler.h (CUDA backend, CUPTI Activity + Range Profiler).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "graph/graph.h"
#include "search/plan.h"

namespace fuseplan {

/// Cache flushing between timed repetitions (CPU): `auto` flushes when the
/// plan's buffers would otherwise stay in the last-level cache from one
/// repetition to the next (each repetition then sees a cold start, like one
/// inference; data a group produces for the next stays hot, as in a real run).
enum class FlushPolicy { automatic, always, never };
FlushPolicy flush_policy_from_string(const std::string& s);  // "auto" | "always" | "never"; throws Error

struct ProfileOptions {
  int warmup = 2;        // untimed runs of the whole plan first
  int repeat = 11;       // timed repetitions (median per group)
  double min_time_s = 0; // CPU: repeat past `repeat` until this much wall time (RunOptions::min_time_s)
  FlushPolicy flush = FlushPolicy::automatic;
  bool counters = true;  // hardware counters when the OS / driver permits
  int threads = 0;       // CPU: OpenMP threads (0 = default)
};

/// Measurements of one group (one kernel, or its launches on a GPU).
struct GroupMeasurement {
  int group = 0;
  double median_us = 0, min_us = 0, max_us = 0;
  double spread_pct = 0;         // (max - min) / median × 100
  int repetitions = 0;
  bool flushed = false;          // caches flushed before each repetition
  // Hardware counters per call (median); < 0 = not measured.
  double cycles = -1, instructions = -1, llc_misses = -1;
  double measured_bytes_read = -1, measured_bytes_written = -1;  // DRAM bytes (GPU) / LLC misses × 64 (CPU, read+write in _read)
  double registers_per_thread = -1, local_bytes_per_thread = -1; // GPU (CUPTI activity)
  double warps_active_pct = -1, local_bytes = -1;                 // GPU (range profiler)
};

struct ProfileResult {
  std::vector<GroupMeasurement> groups;  // plan order
  double total_us = 0;                   // Σ medians
  std::vector<std::string> notes;        // one line each, e.g. why counters are unavailable
};

class Profiler {
 public:
  virtual ~Profiler() = default;
  virtual std::string name() const = 0;
  /// Runs and measures every group of `plan`. Throws Error when the plan
  /// cannot run (compile failure, no device).
  virtual ProfileResult profile(const Graph& g, const Plan& plan, const DeviceSpec& d, const ProfileOptions& o) = 0;
};

/// The profiler for a device: CPU for kind "cpu", CUPTI for kind "gpu".
std::unique_ptr<Profiler> make_profiler(const DeviceSpec& d);

/// Median / min / max / spread of samples (sorted copy).
GroupMeasurement summarise(const std::vector<double>& samples_us);

}  // namespace fuseplan
