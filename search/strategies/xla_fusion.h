// XLA priority fusion as a reusable start (internal): the `cost` strategy
// replays XLA's fusion decisions on its own WorkState and refines them.
#pragma once

#include <vector>

#include "costmodel/device.h"
#include "graph/graph.h"
#include "search/work_state.h"

namespace fuseplan::strategies {

/// Fuses group p into all of its consumer groups (merged into a single
/// consumer, duplicated into several); returns those consumers.
std::vector<int> fuse_into_all_consumers(WorkState& ws, int p);

/// Runs the `xla` strategy's priority fusion and returns the producer group
/// ids it fused, in order. Group ids are those of a fresh WorkState(g, ·):
/// merges and duplications keep ids, so the log replays exactly. No group
/// grows past max_group_primitives(d, max_group_size) primitives (copies
/// included; `max_group_size`: the user's cap, 0 none).
std::vector<int> xla_fusion_log(const Graph& g, const DeviceSpec& d, int max_group_size);

/// Applies a log from xla_fusion_log to a fresh WorkState of the same graph
/// (any device): afterwards it holds the `xla` strategy's partition.
void replay_xla_fusion(WorkState& ws, const std::vector<int>& log);

}  // namespace fuseplan::strategies
