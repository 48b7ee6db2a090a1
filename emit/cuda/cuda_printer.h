// CUDA C++ source of one fusion group. The group walk (stages, loads,
// stores, index expressions) comes from emit/kernel_plan.h; this file only
// decides how the stages map to threads and blocks:
//  - elem phase: one thread per output element (grid-stride), 16-byte float4
//    loads/stores when the group is purely elementwise f32 and contiguous;
//    a GEMM/conv/pool leader is computed per output element (canonical k
//    order) and its epilogue stays in registers;
//  - block phase: one block per output element of a reduction over the
//    innermost axis (fprt::block_reduce), epilogue by thread 0;
//  - column reductions (innermost axis kept): a thread per output element,
//    sequential over the reduced elements, adjacent threads on adjacent
//    elements (coalesced);
//  - row phase (KernelPlan::row_dims > 0): one block per row, the row's
//    scratch in shared memory, stages separated by __syncthreads;
//  - horizontal groups: each branch is a __device__ body, one __global__
//    dispatches on the block index (one launch).
// Stages that cannot share a phase get their own launch (listed in order).
// Every identifier is generated; model names appear only in escaped comments.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "costmodel/group.h"
#include "graph/graph.h"

namespace fuseplan::cuda {

/// The device runtime prepended to every translation unit (no system headers).
extern const char* const kDeviceRuntimeText;

struct CudaLaunch {
  std::string kernel;          // extern "C" __global__ name
  int64_t grid = 1;            // blocks
  int block = 256;             // threads per block
  std::vector<NodeId> params;  // the buffer of each pointer parameter, in order
  std::string shape;           // "elem", "elem/vec4", "block-reduce", "row", "horizontal(3)", ...
};

struct CudaGroupSource {
  int group_id = 0;
  std::string source;                // complete translation unit
  std::vector<CudaLaunch> launches;  // in launch order
  /// Library groups (emit/cuda/lowering.h): the library call runs before
  /// launches[library_slot] (== launches.size(): after every launch); -1: no call.
  int library_slot = -1;
};

struct CudaOptions {
  int threads_per_block = 256;     // DeviceSpec::threads_per_block
  int64_t max_grid = 65536;        // grid-stride loops cap the grid (guessed: 8+ waves on 132 SMs)
  int64_t smem_row_bytes = 45056;  // row scratch held in shared memory up to this (48 KiB static limit - reduce slots)
};

/// Appends the node comments, phases and __global__ kernels of `grp` to `os`
/// (no header, no device runtime), kernels named <prefix>_k<i>, and their
/// launches to `launches`. Throws Error as print_cuda_group.
void print_group_kernels(const Graph& g, const Group& grp, const CudaOptions& o, const std::string& prefix,
                         std::ostream& os, std::vector<CudaLaunch>* launches);

/// Source of group `grp` (its id names the kernels: fp_g<id>_k<i>).
/// Throws Error for a primitive the CUDA backend cannot compute.
CudaGroupSource print_cuda_group(const Graph& g, const Group& grp, const CudaOptions& o = {},
                                 std::string_view title = "");

}  // namespace fuseplan::cuda
