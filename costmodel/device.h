// Target device description: datasheet figures plus the named efficiency
// parameters the cost model uses (and calibration fits). Loaded from
// configs/devices/<name>.json; every figure there carries a `sources` entry.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fuseplan {

/// One CPU cache level (or DRAM, with bytes = 0 meaning unbounded).
struct CacheLevel {
  std::string name;        // "L1", "L2", "L3", "DRAM"
  double bytes = 0;        // capacity in bytes (per core for L1/L2, total for L3)
  double bw_GBps = 0;      // sustained triad bandwidth, GB/s (all cores)
};

struct DeviceSpec {
  std::string name;        // "h100-sxm", "host-cpu", ...
  std::string kind;        // "gpu" or "cpu"
  std::string arch;        // "sm_90", "x86-64-avx2", ...

  // --- memory ---
  double dram_bw_GBps = 0;        // peak DRAM bandwidth, GB/s (1e9 bytes/s)
  double l2_bytes = 0;            // last-level on-chip cache, bytes
  std::vector<CacheLevel> caches; // CPU: measured by `fuseplan probe`, ascending size

  // --- compute ---
  int sm_count = 0;               // GPU SMs, or CPU cores
  double clock_GHz = 0;
  double fp32_TFLOPs = 0;         // FP32 non-tensor peak, TFLOP/s
  double tensor_TFLOPs = 0;       // dense BF16/FP16 tensor-core peak, TFLOP/s (0 on CPU)

  // --- registers, shared memory, threads ---
  int regs_per_sm = 65536;        // 32-bit registers per SM
  int max_regs_per_thread = 255;  // per-thread limit (CPU: vector registers, 16 on AVX2)
  double smem_per_sm_bytes = 0;
  double smem_per_block_bytes = 0;
  int max_threads_per_sm = 2048;
  int threads_per_block = 256;    // block size the emitters use
  int elems_per_thread = 4;       // elements per thread of a loop kernel (16-byte vectors)

  // --- overheads ---
  double launch_us = 0;           // per-kernel launch (stream) or dispatch (CPU thread pool), µs
  double graph_launch_us = 0;     // per node in a CUDA graph, µs (0 if not applicable)
  // Per library GEMM call inside a kernel (CPU backend: a MatMul's or Conv's
  // entry into emit/cpu/runtime.h, and each batch entry of a batched MatMul
  // and each (image, group) of a Conv, one call of its gemm(): an OpenMP
  // region entered, packing set-up, scratch lookup, edge tiles), µs.
  // Default 0 (no such term; GPU devices: cuBLAS/CUTLASS batch in one
  // launch); fitted by calibration on CPU devices (docs/calibration.md).
  double gemm_call_us = 0;
  // First touch of each source tensor (weight, constant, graph input) a
  // group reads, µs per tensor: a source is produced by no group of the
  // run, so after a cache flush (one cold inference, how fuseplan measure
  // runs a plan) its first lines come from DRAM at latency, before the
  // hardware prefetcher streams the rest. Outside the roofline, like
  // launch. Default 0 (no such term); fitted by calibration on CPU devices
  // (docs/calibration.md).
  double source_read_us = 0;
  // CPU: a cold libm routine, µs per distinct routine a group calls in a
  // graph beyond the LLC (costmodel_detail::libm_cold_calls): the groups
  // before it streamed the routine's code and tables out of every cache
  // level, and the probe (transcendental_ns) timed them hot. Outside the
  // roofline, like source_read_us. Default 0 (no such term); measured by
  // `fuseplan probe` (probe/transcendental.h libm_cold_us) and held
  // by calibration, never fitted (docs/calibration.md, "The fit").
  double libm_cold_us = 0;
  // CPU: bandwidth of stores to lines no cache holds, GB/s. A store to such
  // a line first reads it (write-allocate, a read-for-ownership), so a group
  // writing a tensor the flush (or the plan's own streaming) evicted pays for
  // the line fill whatever level its working set fits. When > 0, the bytes a
  // group writes beyond store_buffer_bytes are priced at this bandwidth
  // instead of the working-set level's. Default 0: writes are priced with the
  // reads at the level (GPU devices: 0, stores are write-back through L2).
  // Measured by `fuseplan probe` (stores into flushed lines); fitted by
  // calibration (docs/calibration.md).
  double write_allocate_bw_GBps = 0;
  // CPU: bytes of stores the store queue takes without waiting for their
  // line fills: in a graph within the LLC a group writing no more than this
  // pays no write-allocate time (the fills complete after the group's clock
  // stops); in a graph beyond it the queue is taken by the earlier groups'
  // stores and every written byte pays. Zen 3 has 64 store-queue entries
  // (AMD Software Optimization Guide for Family 19h), 2 KiB of 32-byte AVX2
  // stores; Golden Cove (Sapphire Rapids) 114 (Intel 64 and IA-32
  // Architectures Optimization Reference Manual, ch. 2), 3.6 KiB. Used only
  // with write_allocate_bw_GBps > 0.
  double store_buffer_bytes = 0;
  // CPU: a group that writes in a graph beyond the LLC stalls once for a
  // line fill from memory before its stores drain at write_allocate_bw_GBps,
  // µs per group (graph_footprint_bytes > llc_bytes: each written line
  // first evicts a dirty one; in a graph that fits, the stores drain without
  // waiting). Outside the roofline, like source_read_us. Used only with
  // write_allocate_bw_GBps > 0; default 0 (no such term); fitted by
  // calibration (docs/calibration.md).
  double store_stall_us = 0;
  // CPU: micro-tile of the CPU backend's gemm() (emit/cpu/runtime.h: kGemmMR
  // = 6 rows × 2 vectors of kGemmVW floats, the vector width -march=native
  // gives: 6 × 16 with AVX2, 6 × 32 with AVX-512). gemm() computes whole
  // tiles on zero-padded panels, so each call's contraction FLOPs are priced
  // at its M rounded up to gemm_tile_m and its N to gemm_tile_n (M: rows of a
  // MatMul's A, output channels per group of a Conv; N: columns of a MatMul's
  // output, output pixels of a Conv). 0 = no padding (GPU devices).
  int gemm_tile_m = 0;
  int gemm_tile_n = 0;

  // --- named efficiency parameters (fitted by calibration) ---
  double e_mem = 0.85;            // achievable fraction of DRAM bandwidth at full occupancy
  double e_cmp = 0.7;             // achievable fraction of FP32 peak for elementwise math
  double e_contraction = 0.6;     // achievable fraction of tensor/FP32 peak for GEMM/conv
  // Achievable fraction of FP32 peak for the FLOP-equivalents of
  // transcendental ops (exp, log, tanh, erf, sin, cos, pow, sigmoid,
  // softplus, elu; costmodel/flops.cpp). 0 = e_cmp (default: no separate
  // term). The CPU backend calls scalar libm for them (-fno-fast-math), far
  // below the vector mul/add rate e_cmp describes; calibration fits it on CPU devices.
  double e_transcendental = 0;
  // CPU: measured time of each transcendental op per element, ns, one core
  // (op name → ns; `fuseplan probe`: the scalar call the CPU backend emits,
  // in its loop, inputs uniform in [-1, 1]; probe/transcendental.h).
  // An op listed here is priced at ns × (fp32_TFLOPs / sm_count) × 1000
  // FLOP-equivalents per element (the FP32 issue slots it occupies) instead
  // of costmodel/flops.cpp's estimate; e_transcendental then scales them all
  // (1 = the probe's speed). Empty: the estimates.
  std::map<std::string, double, std::less<>> transcendental_ns;
  // Serial accumulation step of an adding reduction primitive (ReduceSum/
  // Mean/Prod, GlobalAveragePool; not max/min, not the pooling library), ns
  // per reduced input element beyond the first kReduceOverlapSteps of each
  // row (costmodel/cost_detail.h), on top of its FLOPs. The CPU backend
  // emits a reduction as a scalar loop `acc = acc + x` in the canonical
  // order (no reassociation: -fno-fast-math), which the compiler may not
  // vectorise: one dependent scalar step per element instead of the vector
  // rate e_cmp describes. Default 0 (no such term; GPU devices reduce in
  // parallel trees); fitted by calibration on CPU devices
  // (docs/calibration.md; 0.51 ns on the development VM).
  double reduce_step_ns = 0;
  // Step of a ReduceMax/ReduceMin chain, ns per reduced input element: the
  // emitted `acc = fprt::max_(acc, x)` is a NaN-propagating compare-select
  // (emit/cpu/runtime.h), a data-dependent branch per element, several times
  // slower than an adding step. Default 0 (no such term); fitted by
  // calibration on CPU devices (docs/calibration.md).
  double select_step_ns = 0;
  // Window step of the CPU runtime's pooling library (fprt::pool, MaxPool and
  // AveragePool: a generic N-d window loop with a padding test per tap), ns
  // per window element (output elements × kernel window). Default 0 (no such
  // term: the window FLOPs at e_cmp only); fitted by calibration on CPU devices.
  double pool_step_ns = 0;
  // im2col of the CPU runtime's conv (emit/cpu/runtime.h conv_epilogue: a
  // scalar gather with a padding test per element, written to scratch before
  // the GEMM and not overlapped with it), ns per im2col matrix element
  // (N·C·kernel volume·output pixels; 1×1 stride-1 unpadded convs have none).
  // Default 0 (no such term); fitted by calibration on CPU devices
  // (docs/calibration.md).
  double im2col_elem_ns = 0;
  // Packing of the CPU runtime's gemm() (emit/cpu/runtime.h: per block of C
  // it copies A's and B's panels, zero-padded to whole micro-tiles, with a
  // scalar strided loop, serial before the micro-kernels), ns per element
  // packed. Default 0 (no such term); fitted by calibration on CPU devices
  // (docs/calibration.md).
  double gemm_pack_elem_ns = 0;
  // Fixed cost of one micro-kernel run of the CPU runtime's gemm() (one
  // tm × tn tile of C over one K block: zeroing or loading the accumulators,
  // storing them, edge-tile copies), ns per run, on top of its FLOPs. Small
  // next to a K block of 256 steps, so calibration on large GEMMs cannot see
  // it; `fuseplan probe` measures it (the slope of gemm(M, 16, K) over M,
  // extrapolated to K = 0) and calibration holds it at that value by
  // default. Default 0 (no such term).
  double gemm_microkernel_ns = 0;
  double spill_penalty = 1.0;     // multiplier on spill (local-memory) traffic
  double min_occupancy_for_full_bw = 0.5;  // below this occupancy bandwidth drops linearly

  std::map<std::string, std::string> sources;  // figure name -> datasheet / measurement
  bool calibrated = false;

  bool is_gpu() const { return kind == "gpu"; }
};

/// Loads a device: `name_or_path` is a path to a JSON file, or a name looked
/// up as configs/devices/<name>.json under the data directory (FUSEPLAN_DATA_DIR
/// env var, else the source tree the binary was built from). Throws Error on a
/// missing file, malformed JSON or a missing required field.
DeviceSpec load_device(const std::string& name_or_path);
/// Names of the configured devices (file stems under configs/devices).
std::vector<std::string> list_devices();
/// Serialises a device back to JSON text (used by probe and calibrate).
std::string device_to_json(const DeviceSpec& d);
/// Capacity of d's largest cache level, bytes (all cores: an L1/L2 level's
/// per-core capacity × sm_count, as the CPU working-set level counts it);
/// d.l2_bytes when larger or no levels are set. Defined in cost.cpp.
double llc_bytes(const DeviceSpec& d);
/// Directory holding configs/ and examples/ (see load_device).
std::string data_dir();

}  // namespace fuseplan
