#include "emit/trace.h"

#include <nlohmann/json.hpp>

namespace fuseplan {

std::string trace_json(const std::vector<TraceEvent>& events, const std::map<int64_t, std::string>& process_names,
                       const std::map<std::pair<int64_t, int64_t>, std::string>& thread_names,
                       const std::map<std::string, std::string>& other) {
  using nlohmann::ordered_json;
  ordered_json list = ordered_json::array();
  for (const auto& [pid, name] : process_names)
    list.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}});
  for (const auto& [lane, name] : thread_names)
    list.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", lane.first}, {"tid", lane.second}, {"args", {{"name", name}}}});
  for (const auto& e : events) {
    ordered_json j = {{"name", e.name}, {"cat", e.cat}, {"ph", "X"}, {"ts", e.ts_us},
                      {"dur", e.dur_us}, {"pid", e.pid}, {"tid", e.tid}};
    ordered_json args = ordered_json::object();
    for (const auto& [k, v] : e.args) args[k] = v;
    j["args"] = args;
    list.push_back(std::move(j));
  }
  ordered_json root;
  root["traceEvents"] = list;
  root["displayTimeUnit"] = "ns";
  ordered_json o = ordered_json::object();
  for (const auto& [k, v] : other) o[k] = v;
  root["otherData"] = o;
  return root.dump(1) + "\n";
}

}  // namespace fuseplan
