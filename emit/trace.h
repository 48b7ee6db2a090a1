// Chrome trace JSON (the trace-event format read by Perfetto and
// chrome://tracing): one complete event (ph "X") per measured kernel.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fuseplan {

struct TraceEvent {
  std::string name;
  std::string cat;                          // e.g. the group kind
  double ts_us = 0;                         // start, µs
  double dur_us = 0;                        // duration, µs
  int64_t pid = 0;                          // process lane (tune: the batch size)
  int64_t tid = 0;                          // thread lane (tune: 0 measured, 1 predicted)
  std::map<std::string, std::string> args;  // shown in the details pane
};

/// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}} with
/// process/thread name metadata events (ph "M") for every lane named in
/// `process_names` / `thread_names`.
std::string trace_json(const std::vector<TraceEvent>& events,
                       const std::map<int64_t, std::string>& process_names = {},
                       const std::map<std::pair<int64_t, int64_t>, std::string>& thread_names = {},
                       const std::map<std::string, std::string>& other = {});

}  // namespace fuseplan
