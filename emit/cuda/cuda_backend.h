// The CUDA backend's entry points for a whole plan: one translation unit per
// group, NVRTC compilation for the plan's device, and the resource table
// (estimated vs measured registers and spills per group).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "costmodel/cost.h"
#include "costmodel/device.h"
#include "emit/cuda/cuda_printer.h"
#include "emit/cuda/lowering.h"
#include "emit/cuda/nvrtc.h"
#include "search/plan.h"

namespace fuseplan::cuda {

/// Launch geometry taken from the device (threads_per_block).
CudaOptions cuda_options(const DeviceSpec& d);
/// NVRTC options for the device's arch; throws Error for a CPU device.
NvrtcOptions nvrtc_options(const DeviceSpec& d, bool allow_fma = false);

/// The note a group holding an opaque primitive (a graph break: an op
/// fuseplan does not compute) gets instead of kernels.
inline constexpr const char* kOpaqueNote = "opaque: runs outside fuseplan's kernels";
/// The first opaque primitive of grp, kNoNode if none.
NodeId opaque_member(const Graph& g, const Group& grp);

/// One translation unit per group, in plan order (checks the plan fits g).
/// A group holding an opaque primitive gets a comment-only source with no
/// launches (kOpaqueNote); every other group is printed.
/// `canonical`: every group is printed as group 0 without the title comment,
/// so a group's source (and its NVRTC cache entry) depends only on the group,
/// not on its position or the strategy (the runner's mode: one module per group).
/// `lib`: contraction groups the libraries take (lowering.h) print only
/// their epilogue kernel (none when the call covers the whole group).
std::vector<CudaGroupSource> plan_sources(const Graph& g, const Plan& plan, const DeviceSpec& d,
                                          bool canonical = false, const LibraryOptions& lib = {});

// LibraryMatch / match_cublaslt / lower_group: emit/cuda/lowering.h.

/// Registers/spills of one group: the cost model's estimate next to NVRTC's.
struct GroupResources {
  int group_id = 0;
  std::string kind;
  std::string last_primitive;  // escaped for Markdown by the writer
  int regs_estimate = 0;
  double spill_estimate_bytes = 0;
  std::vector<CudaLaunch> launches;
  std::vector<ResourceUsage> measured;  // per launch, same order
  LibraryMatch library;                 // what cuBLASLt's fused epilogues would cover (informative)
  GroupLowering lowering;               // how the group runs under measure_plan's `lib`
  std::string note;                     // kOpaqueNote, or a library call covering the whole group: no launches
  bool skipped() const { return !note.empty(); }
  int regs_measured() const;            // max over launches
  int spill_bytes_measured() const;     // sum of stores + loads over launches
};

/// Compiles every group (under `lib`: the epilogue kernels of library groups; cache misses compile in parallel on up to
/// hardware_concurrency threads) and returns the table; `cubins` (optional)
/// receives each group's CUBIN (empty for a skipped opaque group, which
/// has no launches and `note` set). `canonical` as for plan_sources.
std::vector<GroupResources> measure_plan(const Graph& g, const Plan& plan, const DeviceSpec& d,
                                         const NvrtcOptions& o, std::vector<std::string>* cubins = nullptr,
                                         std::vector<CudaGroupSource>* sources = nullptr, bool canonical = false,
                                         const LibraryOptions& lib = {});

/// What an NVRTC resource oracle did (shared with its copies).
struct OracleStats {
  int asked = 0;       // distinct groups measured (memoised by node set)
  int compiled = 0;    // NVRTC compilations (cache misses)
  int cache_hits = 0;  // sources found in the NVRTC cache
  int failed = 0;      // groups the printer or NVRTC could not handle (estimate kept)
  int library = 0;     // groups a library call runs (lower_group; estimate kept, nothing compiled)
  std::string first_failure;
};

/// The cost model's ResourceOracle (costmodel/cost.h) for a CUDA device:
/// prints the group as this backend emits it (id 0, no title, so the source
/// depends only on the group), compiles it with NVRTC under `o` (cached by
/// source hash on disk, memoised in memory) and returns the ptxas registers
/// (max over the group's launches), spill stores+loads and static shared
/// memory. Groups it cannot print or compile return nullopt. So do groups
/// `lib` leaves to a library call (lower_group): their contraction runs in
/// cuBLASLt's/cuDNN's kernel, whose registers are not ours to measure, and
/// the estimate (costmodel/registers.cpp: a 128x128-tile GEMM) models such
/// a kernel. Emitted and fallback contraction groups are compiled as
/// printed. Thread-safe.
ResourceOracle nvrtc_resource_oracle(const NvrtcOptions& o, std::shared_ptr<OracleStats> stats = nullptr,
                                     const LibraryOptions& lib = {});

std::string resources_json(const std::vector<GroupResources>& t, const DeviceSpec& d, const NvrtcOptions& o);
std::string resources_markdown(const std::vector<GroupResources>& t, const DeviceSpec& d, const NvrtcOptions& o);

}  // namespace fuseplan::cuda
