// Helpers for the strategy tests: inline ONNX-text graphs, plans, group lookups.
#pragma once

#include <string>
#include <vector>

#include "costmodel/device.h"
#include "graph/import.h"
#include "search/strategy.h"

namespace fuseplan::testing {

inline DeviceSpec h100() { return load_device("h100-sxm"); }

inline Graph graph(const std::string& text, std::map<std::string, int64_t> dims = {}) {
  ImportOptions o;
  o.dims = std::move(dims);
  return import_onnx_text(text, o);
}

/// Ids of the groups of `plan` that hold primitive `name`.
inline std::vector<int> groups_holding(const Graph& g, const Plan& plan, const std::string& name) {
  const NodeId n = g.at(name);
  std::vector<int> out;
  for (const auto& grp : plan.groups)
    if (grp.contains(n)) out.push_back(grp.id);
  return out;
}

inline bool same_group(const Graph& g, const Plan& plan, const std::vector<std::string>& names) {
  for (const auto& grp : plan.groups) {
    bool all = true;
    for (const auto& nm : names) all = all && grp.contains(g.at(nm));
    if (all) return true;
  }
  return false;
}

}  // namespace fuseplan::testing
