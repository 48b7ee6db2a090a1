// Runs a plan's CUDA kernels on the GPU through the driver API (loaded at
// run time from libcuda.so.1, so binaries start without a driver): NVRTC
// CUBINs per group, one device buffer per tensor, launches in plan order,
// CUDA-event timing (median over repetitions), outputs copied back and
// compared with the CPU reference executor (max relative error).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "emit/cuda/lowering.h"
#include "exec/tensor_data.h"
#include "search/plan.h"

namespace fuseplan {

/// Whether a CUDA device can be used here; `reason` says why not in one line.
struct CudaDeviceStatus {
  bool available = false;
  std::string reason;
  std::string name;  // device 0
  int cc_major = 0, cc_minor = 0;
};
/// Never throws: loads libcuda.so.1, cuInit(0), cuDeviceGetCount.
CudaDeviceStatus cuda_device_status();

struct CudaRunOptions {
  int warmup = 2;
  int repeat = 20;        // timed runs of the whole plan; median reported
  bool allow_fma = false;
  bool verify = true;     // max_rel_error vs run_reference (CPU; slow on large models); never a bit comparison
  bool time_groups = false;  // also time each group alone (median of `repeat`)
  /// How contraction groups run (emit/cuda/lowering.h has the rule).
  /// Default: cublasLtMatmul for MatMul and cudnnConvolutionForward for
  /// Conv, plus emitted prologue/epilogue kernels for the rest of the group;
  /// a fused and an unfused plan make the same library calls, so they are
  /// bit-identical to each other, not to the CPU reference (another
  /// summation order: `max_rel_error` is reported for callers to bound,
  /// docs/numerics.md).
  /// Shapes a library refuses run the emitted fallback. `fused_epilogue`
  /// adds cuBLASLt's BIAS/RELU/GELU epilogues (other rounding, tolerance
  /// only); LibraryOptions::none() emits every GEMM/conv in the CPU's k
  /// order. Libraries are loaded with dlopen; Error when one that a group
  /// calls cannot be loaded.
  cuda::LibraryOptions library;
};

struct CudaRunResult {
  std::map<std::string, Tensor> outputs;  // graph outputs by name
  double median_us = 0;                   // whole plan, CUDA events
  double max_rel_error = 0;               // vs run_reference over all graph outputs (verify)
  int64_t launches = 0;
  std::vector<double> group_median_us;    // time_groups: per plan group, its launches alone
  int64_t library_calls = 0;              // cuBLASLt / cuDNN calls per plan run
};

/// Whether libcublasLt can be loaded here (never throws); `reason` when not.
bool cublaslt_available(std::string* reason = nullptr);

/// Device-to-device copy bandwidth (cuMemcpyDtoD of `bytes`, median of
/// `repeat` after a warm-up), counting bytes read + bytes written, GB/s:
/// the bandwidth ceiling memory-bound kernels are compared with. Throws
/// Error without a device.
double cuda_copy_bandwidth_GBps(int64_t bytes = int64_t{1} << 30, int repeat = 20);

/// Throws Error when the graph holds an opaque primitive (checked first, so
/// also without a GPU: no kernel exists for it), when no device is available
/// or a driver call fails.
CudaRunResult run_plan_cuda(const Graph& g, const Plan& plan, const DeviceSpec& d,
                            const std::map<NodeId, Tensor>& sources, const CudaRunOptions& o = {});

/// max_i |a_i - r_i| / max(|r_i|, 1e-6) over float tensors of equal shape;
/// integers compare exactly (0 or inf).
double max_relative_error(const Tensor& a, const Tensor& ref);

}  // namespace fuseplan
