// Host CPU probe: measures THIS machine (cores, cache sizes, STREAM-style
// triad bandwidth per cache level and DRAM, FP32 throughput, fork-join
// dispatch overhead, the contraction library per class, transcendental ops)
// and returns it as a DeviceSpec of kind "cpu" named "host-cpu" whose
// `sources` say "measured by fuseplan probe on <date>". It also measures how
// busy the machine was (other processes' CPU use, the spread of repeated
// measurements) so that a caller can refuse to keep a figure taken under
// load (probe/host_device.h caches the probed host per machine).
// `fuseplan probe -o FILE` writes it with write_device_file().
// Nothing here prints to stdout; progress goes to the optional log stream.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "costmodel/device.h"

namespace fuseplan {

/// One cache level as the OS reports it (no bandwidth).
struct HostCache {
  std::string name;        // "L1", "L2", "L3"
  std::size_t bytes = 0;   // capacity of one instance
  int shared_by = 1;       // logical CPUs sharing one instance (1 = private per core)
};

/// Static facts about the host: online cores and data/unified caches,
/// ascending, from /sys/devices/system/cpu/cpu0/cache/index* (fallback sysconf).
struct HostInfo {
  int cores = 1;
  std::vector<HostCache> caches;
  double clock_GHz = 0;    // /proc/cpuinfo "cpu MHz" (0 when unknown)
  bool avx2 = false;       // kernels below use 256-bit vectors when true
  std::size_t mem_available_bytes = 0;
};
HostInfo host_info();

/// Total working-set bytes (three arrays together) the probe uses for DRAM:
/// four times the last-level cache, at least 256 MiB, at most a quarter of
/// available memory and 2 GiB.
std::size_t dram_working_set_bytes(const HostInfo& h);

/// STREAM-style triad a[i] = b[i] + s*c[i] in float64 over `bytes` total
/// (three arrays of bytes/3 each) on `threads` threads of a persistent
/// fork-join pool; each thread first-touches its own slice. Bandwidth counts
/// 3 x 8 bytes per element like STREAM (no write-allocate traffic); best of
/// `samples` timed samples, each at least ~20 ms. GB/s = 1e9 bytes/s.
double stream_triad_GBps(std::size_t bytes, int threads, int samples = 5);

/// Independent second measurement of the same quantity: the triad in
/// float32, threads spawned and joined afresh per sample (no pool), static
/// block partition, separately allocated arrays. Used to cross-check
/// stream_triad_GBps ("probe triad within X% of independent measurement").
double independent_triad_GBps(std::size_t bytes, int threads, int samples = 5);

/// Bandwidth of stores into lines no cache holds, GB/s (1e9 bytes/s) over
/// `threads` threads of a pool: each thread's `bytes_per_thread` are flushed
/// (CLFLUSH) before each sample, so every line is read before it is written
/// (write-allocate). Best of `samples`. CpuSpec::write_allocate_bw_GBps.
double write_allocate_GBps(std::size_t bytes_per_thread, int threads, int samples = 11);

/// FP32 throughput in GFLOP/s on `threads` threads: independent mul+add
/// chains (no FMA) on 256-bit vectors when AVX2 is present.
double fp32_GFLOPs(int threads);

/// Mean cost in µs of one fork-join parallel-for with an empty body on a
/// persistent pool of `threads` threads (caller + threads-1 workers that spin
/// briefly, then sleep on a futex): the CPU backend's per-kernel dispatch.
double pool_dispatch_us(int threads);
/// Mean cost in µs of spawning and joining threads-1 std::threads (the
/// alternative dispatch model, reported for comparison).
double spawn_join_us(int threads);
/// Minimum in µs over `reps` repetitions of a steady-clock pair around an
/// indirect call of an empty kernel: what a one-thread group costs at least
/// as exec/cpu_run.cpp times it (no fork-join; the timer's own floor
/// included, 0.02 µs on the development VM, docs/calibration.md, "The
/// fit"). The one-thread device's launch_us.
double timed_call_us(int reps = 20000);

/// A reading of how much CPU time the machine and this process have used,
/// for others_busy_cores().
struct BusyMark {
  double wall_s = 0;      // steady clock, seconds
  double all_busy_s = -1; // /proc/stat: busy time of every CPU (user, nice, system, irq, softirq, steal), seconds;
                          // -1 when /proc/stat cannot be read
  double own_s = 0;       // this process's CPU time, its threads and its waited-for children (getrusage), seconds
};
BusyMark busy_mark();
/// Cores other processes (and, on a VM, other guests: steal time) kept busy
/// between `a` and `b`: (Δ all_busy_s − Δ own_s) / Δ wall_s, at least 0.
/// -1 when either mark has no /proc/stat reading or no time passed.
double others_busy_cores(const BusyMark& a, const BusyMark& b);

/// Spread of repeated timings of one measurement, percent: 100 × (median /
/// minimum − 1) of `times` (seconds per sample, or 1 / bandwidth: smaller is
/// better). 0 for fewer than two samples. A quiet machine gives a few
/// percent; other work on the cores stretches the typical sample away from
/// the best one.
double spread_pct(std::vector<double> times);

/// How run_probe measures.
struct ProbeOptions {
  /// Threads the device's kernels will run on (OMP_NUM_THREADS; 0 = every
  /// core): launch_us is the fork-join of a pool of that many threads
  /// (pool_dispatch_us), or with 1 thread, which forks nothing,
  /// timed_call_us(); the contraction library's throughput per class runs
  /// on that many threads too (probe/contraction.h), and so do the triad
  /// bandwidths, the private caches' capacity, the write-allocate stores and
  /// the FP32 rate; the device's `cores` is that count, so a one-thread
  /// device prices one thread (transcendental_weight divides a core's share
  /// of fp32_TFLOPs by it).
  int threads = 0;
  /// The quick probe `--device host` runs on first use: fewer samples per
  /// figure, a DRAM working set of at most 512 MiB and a shared-cache
  /// sweep of at most 4 steps; the same figures, in well under a minute on
  /// a 2-core machine.
  bool quick = false;
};

/// Everything one probe run measured.
struct ProbeResult {
  DeviceSpec device;              // kind "cpu", name "host-cpu"
  double triad_dram_GBps = 0;     // = device.dram_bw_GBps
  double independent_dram_GBps = 0;
  double agreement_pct = 0;       // |triad - independent| / independent * 100
  double spawn_join_us = 0;
  double timed_call_us = 0;       // timed_call_us(): a one-thread group's floor
  double seconds = 0;             // wall time of the whole probe
  bool quick = false;             // ProbeOptions::quick
  // How busy the machine was (probe/host_device.h decides from these whether
  // the figures may be cached):
  double load_average_before = -1;  // kernel 1-minute load average at the start (/proc/loadavg; -1 unknown)
  double load_average_after = -1;   // ... at the end (it counts the probe's own threads too)
  double others_busy_before = -1;   // cores other processes kept busy in the 0.5 s before the probe (-1 unknown)
  double others_busy_during = -1;   // cores other processes kept busy while it ran (-1 unknown)
  double spread = 0;                // largest spread_pct() of the repeated measurements, percent
  std::string spread_of;            // which measurement that was ("DRAM triad", "FP32")
};

/// Measures the host: the full probe in under a minute, the quick one
/// (options.quick) in about half that. `log` (may be null) gets one line per
/// measurement, each starting "probe: ".
ProbeResult run_probe(std::ostream* log, const ProbeOptions& options);
/// run_probe(log, {threads, quick = false}).
ProbeResult run_probe(std::ostream* log, int threads = 0);
/// run_probe(log).device.
DeviceSpec probe_host(std::ostream* log);

/// Writes device_to_json(d) to `path` (creating parent directories).
/// Throws Error when the file cannot be written.
void write_device_file(const DeviceSpec& d, const std::string& path);

}  // namespace fuseplan
