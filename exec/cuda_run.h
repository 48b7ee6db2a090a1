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
  bool verify = true;     // compare with run_reference (CPU; slow on large models)
  bool time_groups = false;  // also time each group alone (median of `repeat`)
  /// Library mode (emit/cuda/lowering.h has the rule): contraction groups
  /// run cublasLtMatmul (`cublaslt`; cuBLASLt's fused BIAS/RELU/GELU
  /// epilogues only with `fused_epilogue`) or cudnnConvolutionForward
  /// (`cudnn`), plus one emitted kernel for the rest of the group. Without
  /// fused_epilogue a fused and an unfused plan make the same library call:
  /// bit-identical to each other, though not to the all-emitted default
  /// (other summation order). Libraries are loaded with dlopen; Error when
  /// one that is enabled cannot be loaded. Default: all off (emitted kernels).
  cuda::LibraryOptions library;
};

struct CudaRunResult {
  std::map<std::string, Tensor> outputs;  // graph outputs by name
  double median_us = 0;                   // whole plan, CUDA events
  double max_rel_error = 0;               // vs run_reference over all graph outputs (verify)
  int64_t launches = 0;
  std::vector<double> group_median_us;    // time_groups: per plan group, its launches alone
  int64_t library_calls = 0;              // library mode: cuBLASLt / cuDNN calls per plan run
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
