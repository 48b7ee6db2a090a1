// Target device description: datasheet (or probe-measured) figures plus the
// named efficiency and overhead parameters the cost model prices with (and
// calibration fits). A device is a GPU or a CPU: the figures both have sit
// in DeviceSpec itself, the rest in its GpuSpec or CpuSpec part (exactly one
// is set). Loaded from configs/devices/<name>.json; every figure there
// carries a `sources` entry. The parameters of the cost terms, and their
// JSON names, are listed once in costmodel/terms.h (docs/cost-model.md).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "costmodel/contraction.h"

namespace fuseplan {

/// One CPU cache level (or DRAM, with bytes = 0 meaning unbounded).
struct CacheLevel {
  std::string name;        // "L1", "L2", "L3", "DRAM"
  double bytes = 0;        // capacity in bytes (per core for L1/L2, total for L3)
  double bw_GBps = 0;      // sustained triad bandwidth, GB/s (all cores)
};

/// The figures only a GPU (CUDA) device has: geometry of its SMs, register
/// file and shared memory, and the emitters' launch shape.
struct GpuSpec {
  int sm_count = 0;                  // streaming multiprocessors
  double l2_bytes = 0;               // L2 cache (the last level), bytes
  double tensor_TFLOPs = 0;          // dense BF16/FP16 tensor-core peak, TFLOP/s (contractions are priced at it)
  int regs_per_sm = 65536;           // 32-bit registers per SM
  int max_regs_per_thread = 255;     // per-thread register limit
  double smem_per_sm_bytes = 0;      // shared memory per SM, bytes
  double smem_per_block_bytes = 0;   // shared memory one block may use, bytes
  int max_threads_per_sm = 2048;     // resident threads per SM
  int threads_per_block = 256;       // block size the emitters use
  int elems_per_thread = 4;          // elements per thread of a loop kernel (16-byte vectors)
  double graph_launch_us = 0;        // per node of a CUDA graph, µs
  double min_occupancy_for_full_bw = 0.5;  // below this occupancy DRAM bandwidth drops linearly (0 = never)
};

/// The figures only a CPU device (the C++ backend, emit/cpu) has: its cache
/// levels, vector registers, its contraction library's throughput per class,
/// and the parameters of the CPU backend's cost terms (each 0 = no such term;
/// see costmodel/terms.h for the term each one prices and its unit).
struct CpuSpec {
  int cores = 0;                     // cores the backend runs on (OMP threads)
  std::vector<CacheLevel> caches;    // ascending size, DRAM (bytes 0) last; measured by `fuseplan probe`
  int vector_regs = 16;              // architectural vector registers per core (x86-64: 16 xmm/ymm); more live
                                     // values spill to L1
  int vector_lanes = 4;              // fp32 lanes of one vector register (4: 16-byte SSE, the x86-64 baseline;
                                     // 8 with AVX2)
  // Throughput of the contraction library (exec/onednn.h) per contraction
  // class (costmodel/contraction.h, indexed by ContractionClass), GFLOP/s =
  // 1e9 FLOP/s on the device's threads, the primitive alone (the activation
  // reorders around a blocked convolution excluded): measured by `fuseplan
  // probe` (probe/contraction.h) on representative shapes. All 0: no table,
  // contractions priced at fp32_TFLOPs · e_contraction. A device JSON gives
  // every class or none.
  std::array<double, kContractionClassCount> contraction_GFLOPs{};
  bool has_contraction_table() const { return contraction_GFLOPs[0] > 0; }
  // fp32 lanes of the contraction library's vectors (oneDNN's effective ISA
  // on this machine, exec/onednn.h onednn_fp32_lanes: 16 with AVX-512, 8
  // with AVX2), which a MatMul of fewer columns fills only in part
  // (costmodel/contraction.h contraction_lane_fill). 0: unknown, no such
  // loss priced. Used only with the class table.
  int contraction_lanes = 0;
  // Bytes of stores the store queue takes without waiting for their line
  // fills (Zen 3: 64 entries × 32-byte AVX2 stores = 2 KiB, AMD Software
  // Optimization Guide for Family 19h; Golden Cove: 114 entries, Intel
  // Optimization Reference Manual ch. 2). Used only with
  // write_allocate_bw_GBps > 0.
  double store_buffer_bytes = 0;
  // Measured time of each transcendental op per element, ns, one core (op
  // name → ns; `fuseplan probe`, probe/transcendental.h). A listed op is
  // priced at ns × (fp32_TFLOPs / cores) × 1000 FLOP-equivalents per element
  // instead of costmodel/flops.cpp's estimate. Empty: the estimates.
  std::map<std::string, double, std::less<>> transcendental_ns;

  // --- parameters of the CPU backend's cost terms (costmodel/terms.h) ---
  double write_allocate_bw_GBps = 0;  // stores into lines no cache holds, GB/s (0: writes at the working-set level)
  double e_transcendental = 0;        // fraction of FP32 peak for transcendental FLOPs (0 = e_cmp)
  double reduce_step_ns = 0;          // ns per serial step of an adding reduction
  double select_step_ns = 0;          // ns per step of a ReduceMax/ReduceMin chain
  double pool_step_ns = 0;            // ns per window element of the runtime's pool()
  double contraction_call_us = 0;     // µs per contraction library call beyond its FLOPs (probe-measured)
  double source_read_us = 0;          // µs per source tensor a group reads (first touch after a flush)
  double store_stall_us = 0;          // µs per group that writes in a graph beyond the LLC
  double libm_cold_us = 0;            // µs per distinct libm routine called in a graph beyond the LLC (probe-measured)
};

struct DeviceSpec {
  std::string name;        // "h100-sxm", "host-cpu", ...
  std::string arch;        // "sm_90", "x86-64-avx2", ...

  double dram_bw_GBps = 0;   // DRAM bandwidth, GB/s (1e9 bytes/s): datasheet peak (GPU), measured triad (CPU)
  double clock_GHz = 0;      // core clock, GHz (informative; no term uses it)
  double fp32_TFLOPs = 0;    // FP32 non-tensor peak, TFLOP/s
  double launch_us = 0;      // per kernel: stream launch (GPU) or thread-pool dispatch (CPU), µs
  double e_mem = 0.85;       // achievable fraction of each bandwidth (held by calibration)
  double e_cmp = 0.7;        // achievable fraction of FP32 peak for elementwise math
  double e_contraction = 0.6;  // GEMM/conv: fraction of the CPU's contraction_GFLOPs where it has the table
                               // (1 = the probe's speed), else of tensor_TFLOPs (GPU) or fp32_TFLOPs
  double spill_penalty = 1.0;  // multiplier on register-spill traffic
  /// Fraction p of the shorter of t_mem and t_compute hidden under the
  /// longer: predicted = max + (1 − p)·min + fixed. A device JSON may set it
  /// (`overlap`, in [0, 1]); without it 1, the ideal roofline. Calibration
  /// fits it per device from measured groups (a grid over [0.5, 1],
  /// costmodel/calibrate.h). XLA's GPU performance model uses 0.95 (its
  /// memory/compute parallelism). Not shipped below 1: on an elementwise
  /// chain, groups whose costs differ by the unhidden share made CBC's proof
  /// of the `optimal` strategy 15x slower (docs/cost-model.md).
  double overlap = 1.0;

  std::optional<GpuSpec> gpu;  // set on a GPU device
  std::optional<CpuSpec> cpu;  // set on a CPU device

  std::map<std::string, std::string> sources;  // figure name -> datasheet / measurement
  bool calibrated = false;

  bool is_gpu() const { return gpu.has_value(); }
  /// "gpu" or "cpu" (the JSON's `kind`).
  std::string_view kind() const { return gpu ? "gpu" : "cpu"; }
};

/// A GPU device with GpuSpec's defaults (name, figures and parameters to be set).
DeviceSpec make_gpu_device();
/// A CPU device with CpuSpec's defaults.
DeviceSpec make_cpu_device();

/// Loads a device: `name_or_path` is a path to a JSON file, or a name looked
/// up as configs/devices/<name>.json under the data directory (FUSEPLAN_DATA_DIR
/// env var, else the source tree the binary was built from). Throws Error on a
/// missing file, malformed JSON, a missing required field, a field out of
/// range, or a field of the other kind of device ("'cores' is for CPU devices").
/// The names "host" and "host-cpu" mean this machine as probed, which only
/// probe/host_device.h's resolve_device() measures and caches: here they are
/// an Error that names it (the shipped figure is "host-cpu-reference").
DeviceSpec load_device(const std::string& name_or_path);
/// Names of the configured devices (file stems under configs/devices).
std::vector<std::string> list_devices();
/// Serialises a device back to JSON text (used by probe and calibrate): the
/// common figures, then its kind's own, then every cost-term parameter it
/// has (costmodel/terms.h), then `sources`.
std::string device_to_json(const DeviceSpec& d);
/// Capacity of d's last-level cache, bytes: GPU l2_bytes; CPU the largest
/// cache level at all cores (an L1/L2 level's per-core capacity × cores, as
/// the working-set level counts it). Defined in cost.cpp.
double llc_bytes(const DeviceSpec& d);
/// Directory holding configs/ and examples/ (see load_device).
std::string data_dir();

}  // namespace fuseplan
