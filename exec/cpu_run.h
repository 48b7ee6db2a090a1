// Runs a whole model through the CPU backend's emitted kernels: groups in
// plan order over buffers of the materialised tensors, timed per group, and
// optionally verified bit for bit against the reference executor.
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "search/plan.h"

namespace fuseplan {

struct RunOptions {
  bool verify = false;
  int repeat = 5;        // K: timed repetitions of the whole plan (median per group)
  int warmup = 1;        // untimed runs first (the first also faults pages in)
  // Keep repeating past `repeat` until the timed repetitions (flush hooks
  // included) have taken min_time_s seconds of wall time, at most
  // kMaxRepeat in all; 0 = exactly `repeat`. On the shared development VM
  // a core's throughput changes from one second to the next (an expf loop
  // 3.8 or 5.3 ns an element; docs/calibration.md), so the minimum of a few
  // back-to-back repetitions of a short plan depends on when they ran; a
  // second of them samples both states (cf. Google Benchmark's
  // --benchmark_min_time).
  double min_time_s = 0;
  static constexpr int kMaxRepeat = 20000;  // bounds the samples kept: 8 B per group per repetition
  std::string inputs;    // --inputs: a directory of NAME.npy or NAME=FILE.npy,...; "" = seeded random
  int threads = 0;        // OpenMP threads for the kernels; 0 = the OpenMP default (OMP_NUM_THREADS)
  bool keep_source = false;  // copy the generated C++ into RunResult::kernel_source
  // Untimed hooks for profilers (profiling/cpu_profiler.h): before each timed
  // repetition of the whole plan (e.g. a cache flush; `buffers` are the
  // plan's buffers: every source and materialised tensor, each once), and
  // around each timed group call (after = false just before the clock
  // starts, true just after it stops; e.g. hardware counters).
  std::function<void(int repetition, std::span<const std::span<const std::byte>> buffers)> before_repetition;
  std::function<void(std::size_t group, bool after)> around_group;
  // Polled while the kernels compile (every 20 ms) and between group calls
  // (outside the timed window); true = abandon the run: cpu::Cancelled is
  // thrown (emit/cpu/compiler.h). Empty = never.
  std::function<bool()> cancelled;
};

struct GroupTiming {
  int group = 0;
  std::string kind;           // GroupKind word
  std::string label;          // first..last primitive names
  int64_t primitives = 0;
  double measured_us = 0;     // median of K
  std::vector<double> samples_us;  // the K timings, in repetition order
  double predicted_us = 0;    // Plan::costs[i].predicted_us (0 when the plan has no costs)
};

/// Verification of one graph output against the reference executor.
struct OutputCheck {
  std::string name;
  bool identical = true;
  int64_t mismatches = 0;
  int64_t max_ulp = 0;        // float outputs; integer outputs: max absolute difference
  int64_t first_index = -1;   // flat index of the first differing element
  double got = 0, want = 0;   // values at first_index
};

struct RunResult {
  std::vector<GroupTiming> groups;
  double measured_us = 0;     // Σ per-group medians
  double predicted_us = 0;
  double compile_ms = 0;      // 0 on a cache hit
  bool cache_hit = false;
  std::string so_path, source_path, kernel_source;
  bool verified = false;      // verification ran
  bool ok = true;             // every output bit-identical (true when not verified)
  std::vector<OutputCheck> outputs;
  std::string reference_note; // e.g. the reason verification could not run
};

/// Sets OMP_WAIT_POLICY=PASSIVE unless the environment already sets it; must
/// run before the first kernel library loads libgomp (run_plan calls it).
void set_passive_wait_policy();

/// Emits, compiles (cached), loads and runs the plan. Throws Error for a plan
/// that does not match the model, an opaque primitive, a compiler failure or
/// bad inputs. A verification mismatch does not throw: `ok` is false and
/// `outputs` say where; verify_message() renders it.
RunResult run_plan(const Graph& g, const Plan& plan, const RunOptions& opts);

/// One line per failing output: "output 'y': 3 of 4096 elements differ, max
/// 2 ULP; first at index 17: got 0.25, reference 0.2500001".
std::string verify_message(const RunResult& r);

/// The result as JSON (the CLI's --json).
std::string run_result_json(const RunResult& r);

/// ULP distance between two floats (ordered-integer difference; 0 for equal bits).
int64_t ulp_distance(float a, float b);

}  // namespace fuseplan
