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
#include "profiling/tensor_data.h"
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
};

struct CudaRunResult {
  std::map<std::string, Tensor> outputs;  // graph outputs by name
  double median_us = 0;                   // whole plan, CUDA events
  double max_rel_error = 0;               // vs run_reference over all graph outputs
  int64_t launches = 0;
};

/// Throws Error when no device is available or a driver call fails.
CudaRunResult run_plan_cuda(const Graph& g, const Plan& plan, const DeviceSpec& d,
                            const std::map<NodeId, Tensor>& sources, const CudaRunOptions& o = {});

/// max_i |a_i - r_i| / max(|r_i|, 1e-6) over float tensors of equal shape;
/// integers compare exactly (0 or inf).
double max_relative_error(const Tensor& a, const Tensor& ref);

}  // namespace fuseplan
