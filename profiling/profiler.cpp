#include "profiling/profiler.h"

#include "profiling/cpu_profiler.h"
#include "profiling/cupti_profiler.h"

namespace fuseplan {

std::unique_ptr<Profiler> make_profiler(const DeviceSpec& d) {
  if (d.is_gpu()) return std::make_unique<CuptiProfiler>();
  return std::make_unique<CpuProfiler>();
}

}  // namespace fuseplan
