// The analytic roofline cost model: numbers only, never decisions.
#pragma once

#include <string>

#include "costmodel/device.h"
#include "costmodel/group.h"
#include "graph/graph.h"

namespace fuseplan {

/// Predicted cost of one fusion group as one kernel, term by term.
struct GroupCost {
  double bytes_read = 0;        // bytes: each external input once (+ spill loads)
  double bytes_written = 0;     // bytes: each materialised output once (+ spill stores)
  double flops = 0;             // FLOP-equivalents: Σ primitive flops × times computed
  double spill_bytes = 0;       // bytes of local-memory traffic from register spills
  int regs_per_thread = 0;      // estimated registers per thread
  double occupancy = 1.0;       // fraction of max resident threads per SM (GPU) / 1 on CPU
  double t_mem_us = 0;          // µs
  double t_compute_us = 0;      // µs
  double launch_us = 0;         // µs
  double predicted_us = 0;      // max(t_mem, t_compute) + launch, µs
  std::string bound;            // "memory", "compute" or "launch"
  std::string breakdown;        // one human-readable line per term (filled only when asked)

  double bytes() const { return bytes_read + bytes_written; }
};

/// Prices `grp` on device `d`. Numbers only and cheap (the search calls it
/// per candidate): `breakdown` stays empty unless `with_breakdown` is true.
/// Trusts grp.materialised (the search adds graph outputs and tensors read
/// outside the group). Throws Error only on an internal inconsistency (a
/// node of the group missing from the graph).
GroupCost cost(const Graph& g, const Group& grp, const DeviceSpec& d, bool with_breakdown = false);

/// The breakdown text of cost(g, grp, d, true): one line per term, e.g.
/// "bytes_read = 16781312 (x: 16777216, bias: 4096)".
std::string explain_cost(const Graph& g, const Group& grp, const DeviceSpec& d);

/// FLOP-equivalents of one evaluation of a primitive over its whole output
/// (transcendentals cost more than adds; table and sources in costmodel/flops.cpp).
double primitive_flops(const Graph& g, NodeId n);

/// Whether a row of `row_bytes` bytes can stay resident in one block (registers
/// + shared memory) on device d: the multipass legality condition.
bool fits_row_resident(double row_bytes, const DeviceSpec& d);

}  // namespace fuseplan
