// Hardware counters through perf_event_open(2): cycles, instructions and
// last-level-cache misses of the calling thread (and threads it creates
// after opening). When the kernel refuses (perf_event_paranoid, seccomp,
// no PMU in a VM) `available()` is false and `reason()` says why in one line.
#pragma once

#include <cstdint>
#include <string>

namespace fuseplan {

struct CounterValues {
  double cycles = -1, instructions = -1, llc_misses = -1;  // < 0: that counter is unavailable
};

class PerfCounters {
 public:
  PerfCounters();  // opens the counters (disabled); never throws
  ~PerfCounters();
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;

  bool available() const { return fds_[0] >= 0; }
  const std::string& reason() const { return reason_; }
  void start();          // reset + enable
  CounterValues stop();  // disable + read (scaled for multiplexing)

 private:
  int fds_[3] = {-1, -1, -1};
  std::string reason_;
};

}  // namespace fuseplan
