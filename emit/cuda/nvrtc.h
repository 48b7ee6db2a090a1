// NVRTC compilation of emitted CUDA source for a device architecture, with
// ptxas resource usage (registers, spills, stack frame, shared memory) parsed
// from the `--ptxas-options=-v` log. Needs the CUDA toolkit's NVRTC, never a
// GPU. Results (CUBIN + resource table + log) are cached by the SHA-256 of
// source, options and NVRTC version under cache_dir().
#pragma once

#include <string>
#include <vector>

namespace fuseplan::cuda {

/// ptxas figures of one kernel (entry function).
struct ResourceUsage {
  std::string kernel;
  int regs_per_thread = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_frame_bytes = 0;
  int smem_bytes = 0;  // static shared memory
  int spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

struct NvrtcOptions {
  std::string arch = "sm_90";  // DeviceSpec::arch
  bool allow_fma = false;      // docs/numerics.md: -fmad=false unless the user asks
  int max_regs = 0;            // > 0: --maxrregcount (forces spills; tests and what-if runs)
  bool use_cache = true;
  std::string cache_dir;       // empty: cache_dir()
};

struct CompileResult {
  std::string cubin;                   // bytes
  std::vector<ResourceUsage> kernels;  // entry functions, in log order
  std::string log;                     // NVRTC program log
  std::string hash;                    // cache key
  bool cache_hit = false;
  const ResourceUsage* find(const std::string& kernel) const;
};

/// Compiles `source` (name used in diagnostics). Throws Error with one line:
/// the first error of the log and the path of the full log.
CompileResult compile_cuda(const std::string& source, const std::string& name, const NvrtcOptions& o = {});

/// Parses ptxas -v lines ("Compiling entry function 'k'", "Function
/// properties for k", "N bytes stack frame, N bytes spill stores, N bytes
/// spill loads", "Used N registers, ..., N bytes smem").
std::vector<ResourceUsage> parse_ptxas_log(const std::string& log);

/// $FUSEPLAN_CACHE_DIR, else $XDG_CACHE_HOME/fuseplan, else ~/.cache/fuseplan.
std::string cache_dir();

/// "13.0" (the NVRTC library's version).
std::string nvrtc_version();

/// Throws Error naming the architectures NVRTC can target when `arch`
/// ("sm_90", "sm_90a") is not one of them (nvrtcGetSupportedArchs); no-op
/// without the CUDA toolkit (compile_cuda refuses then).
void check_nvrtc_arch(const std::string& arch);

}  // namespace fuseplan::cuda
