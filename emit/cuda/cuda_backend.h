// The CUDA backend's entry points for a whole plan: one translation unit per
// group, NVRTC compilation for the plan's device, and the resource table
// (estimated vs measured registers and spills per group).
#pragma once

#include <string>
#include <vector>

#include "costmodel/device.h"
#include "emit/cuda/cuda_printer.h"
#include "emit/cuda/nvrtc.h"
#include "search/plan.h"

namespace fuseplan::cuda {

/// Launch geometry taken from the device (threads_per_block).
CudaOptions cuda_options(const DeviceSpec& d);
/// NVRTC options for the device's arch; throws Error for a CPU device.
NvrtcOptions nvrtc_options(const DeviceSpec& d, bool allow_fma = false);

/// One translation unit per group, in plan order (checks the plan fits g).
std::vector<CudaGroupSource> plan_sources(const Graph& g, const Plan& plan, const DeviceSpec& d);

/// How a contraction group maps onto cuBLASLt: the matmul epilogue that
/// covers the primitives right after the GEMM ("BIAS", "RELU_BIAS", "RELU",
/// "GELU_BIAS", "GELU" for tanh-GELU only, "DEFAULT"), and how many of the
/// group's primitives remain for the one fused epilogue kernel. `epilogue`
/// is empty for groups that are not a 2-D f32 MatMul contraction.
struct LibraryMatch {
  std::string epilogue;
  int covered = 0;    // primitives cuBLASLt computes (GEMM included)
  int remaining = 0;  // primitives left to the emitted epilogue kernel
};
LibraryMatch match_cublaslt(const Graph& g, const Group& grp);

/// Registers/spills of one group: the cost model's estimate next to NVRTC's.
struct GroupResources {
  int group_id = 0;
  std::string kind;
  std::string last_primitive;  // escaped for Markdown by the writer
  int regs_estimate = 0;
  double spill_estimate_bytes = 0;
  std::vector<CudaLaunch> launches;
  std::vector<ResourceUsage> measured;  // per launch, same order
  LibraryMatch library;
  int regs_measured() const;            // max over launches
  int spill_bytes_measured() const;     // sum of stores + loads over launches
};

/// Compiles every group (cached) and returns the table; `cubins` (optional)
/// receives each group's CUBIN.
std::vector<GroupResources> measure_plan(const Graph& g, const Plan& plan, const DeviceSpec& d,
                                         const NvrtcOptions& o, std::vector<std::string>* cubins = nullptr,
                                         std::vector<CudaGroupSource>* sources = nullptr);

std::string resources_json(const std::vector<GroupResources>& t, const DeviceSpec& d, const NvrtcOptions& o);
std::string resources_markdown(const std::vector<GroupResources>& t, const DeviceSpec& d, const NvrtcOptions& o);

}  // namespace fuseplan::cuda
