#include "profiling/perf_counters.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace fuseplan {

namespace {
int open_counter(uint32_t type, uint64_t config) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.disabled = 1;
  a.inherit = 1;  // OpenMP workers created later count too
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
}

std::string paranoid_level() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  std::string s;
  return in >> s ? s : "unknown";
}
}  // namespace

PerfCounters::PerfCounters() {
  const uint64_t configs[3] = {PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CACHE_MISSES};
  for (int i = 0; i < 3; ++i) {
    fds_[i] = open_counter(PERF_TYPE_HARDWARE, configs[i]);
    if (fds_[i] < 0 && i == 0) {
      int e = errno;
      reason_ = "hardware counters unavailable: perf_event_open failed (" + std::string(std::strerror(e)) +
                "; kernel.perf_event_paranoid = " + paranoid_level() +
                (e == ENOENT || e == EOPNOTSUPP ? ", no PMU exposed to this VM" : "") + ")";
      return;
    }
  }
}

PerfCounters::~PerfCounters() {
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

void PerfCounters::start() {
  for (int fd : fds_)
    if (fd >= 0) {
      ioctl(fd, PERF_EVENT_IOC_RESET, 0);
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
}

CounterValues PerfCounters::stop() {
  double v[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) {
    if (fds_[i] < 0) continue;
    ioctl(fds_[i], PERF_EVENT_IOC_DISABLE, 0);
    uint64_t buf[3] = {0, 0, 0};  // value, time enabled, time running
    if (read(fds_[i], buf, sizeof buf) != static_cast<ssize_t>(sizeof buf)) continue;
    v[i] = buf[2] > 0 ? static_cast<double>(buf[0]) * static_cast<double>(buf[1]) / static_cast<double>(buf[2]) : 0;
  }
  return {v[0], v[1], v[2]};
}

}  // namespace fuseplan
