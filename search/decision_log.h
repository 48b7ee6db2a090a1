// The decision log of a plan: one record per producer -> consumer edge
// between primitives, saying what happened to it (fused, duplicated, kept,
// blocked), the blocker code (docs/blockers.md) and the predicted saving of
// merging the two kernels (µs).
#pragma once

#include <vector>

#include "costmodel/device.h"
#include "graph/graph.h"
#include "search/plan.h"

namespace fuseplan {

/// µs to write and read back a tensor of `bytes` at the device's effective
/// DRAM bandwidth (dram_bw_GBps × e_mem); 0 on a device without bandwidth.
double roundtrip_us(double bytes, const DeviceSpec& d);

/// One record per edge between two non-source primitives of `plan` (groups,
/// costs and totals filled, groups in topological order), in the
/// topological order of the consumer, its operands by id: fused /
/// duplicated inside a kernel (delta_us: the round trip saved, half of it
/// when the producer is written anyway), or kept / blocked across kernels
/// with the blocker and the predicted saving of merging the two kernels
/// (delta_us; ≤ 0: unprofitable).
std::vector<DecisionRecord> log_decisions(const Graph& g, const DeviceSpec& d, const Plan& plan);

}  // namespace fuseplan
