// The CUDA backend's profiler: runs a plan through run_plan_cuda
// (exec/cuda_run.h) with the CUPTI Activity API recording every kernel
// (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: start/end, registers and local
// memory per thread), correlated to plan groups by kernel name (the CUDA
// printer names group i's kernels fp_g<i>_k<j>), then, when performance
// counters are permitted, once more under the CUPTI Range Profiler (auto
// range per kernel, kernel replay) for the metrics below. Where counters need
// privileges it says so in one line and keeps the Activity timings. Built
// only with the CUDA toolkit (FUSEPLAN_HAVE_CUDA); elsewhere profile() throws.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profiling/profiler.h"

namespace fuseplan {

/// Range Profiler metrics collected per kernel.
inline const std::vector<std::string>& cupti_metric_names() {
  static const std::vector<std::string> m = {
      "dram__bytes_read.sum",
      "dram__bytes_write.sum",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",  // local-memory (spill) loads
      "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",  // local-memory (spill) stores
  };
  return m;
}

/// Group id of a kernel named fp_g<id>_k<j> (nullopt for other kernels).
std::optional<int> group_of_kernel(const std::string& kernel_name);

/// Whether this build can use CUPTI, and a device is present; `reason` says
/// why not in one line. Never throws.
struct CuptiStatus {
  bool available = false;
  std::string reason;
};
CuptiStatus cupti_status();

class CuptiProfiler : public Profiler {
 public:
  std::string name() const override { return "cupti"; }
  ProfileResult profile(const Graph& g, const Plan& plan, const DeviceSpec& d, const ProfileOptions& o) override;
};

}  // namespace fuseplan
