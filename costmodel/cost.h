// The analytic roofline cost model: numbers only, never decisions.
#pragma once

#include <functional>
#include <optional>
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
  double contraction_calls = 0; // contraction library calls the group's kernel makes (one per contraction node)
  double t_calls_us = 0;        // contraction_calls × CpuSpec::contraction_call_us, µs
  double sources_read = 0;      // source tensors (weights, constants, graph inputs) the group reads
  double bytes_read_sources = 0;  // bytes of bytes_read from those sources (CPU: priced at the DRAM bandwidth)
  double t_sources_us = 0;      // sources_read × CpuSpec::source_read_us, µs
  double graph_bytes = 0;       // graph_footprint_bytes of the group's graph, bytes (the store stall's regime)
  double libm_cold_calls = 0;   // distinct libm routines the group calls in a graph beyond the LLC (CPU)
  double t_libm_cold_us = 0;    // libm_cold_calls × CpuSpec::libm_cold_us, µs
  double t_store_stall_us = 0;  // store_stalls × CpuSpec::store_stall_us (CPU: a group writing in a graph
                                // beyond the LLC), µs
  double predicted_us = 0;      // max(t_mem, t_compute) + launch + t_calls + t_sources + t_store_stall
                                // + t_libm_cold, µs
  std::string bound;            // "memory", "compute" or "launch" (launch, calls, sources, stall, cold libm)
  std::string breakdown;        // one human-readable line per term (filled only when asked)
  // Registers/spills: the analytic estimate, and a backend's measurement
  // (ResourceOracle) when one was taken. regs_per_thread, spill_bytes and
  // occupancy above hold whichever priced the group (`measured`).
  int regs_estimate = 0;             // estimated registers per thread
  double spill_bytes_estimate = 0;   // estimated spill traffic, bytes
  int regs_measured = -1;            // measured registers per thread (max over the group's kernels), -1: none
  double spill_bytes_measured = -1;  // spill traffic from the measured per-thread spill bytes, bytes; -1: none
  bool measured = false;             // true: priced with the measurement

  double bytes() const { return bytes_read + bytes_written; }
};

/// Registers and spills of a group as a backend really compiles it (CUDA:
/// ptxas -v through NVRTC, emit/cuda). Per thread, over the group's kernels.
struct MeasuredResources {
  int regs_per_thread = 0;              // max over the kernels
  double spill_bytes_per_thread = 0;    // spill stores + loads, summed over the kernels
  double smem_bytes = 0;                // static shared memory per block, max over the kernels
};

/// Measures a group; std::nullopt when it cannot (the estimate then stays).
/// Must be deterministic for a given group (callers cache by source).
using ResourceOracle = std::function<std::optional<MeasuredResources>(const Graph&, const Group&, const DeviceSpec&)>;

/// When cost() asks an installed oracle (GPU devices only):
/// `constrained`: only groups whose register estimate constrains them (above
/// the per-thread limit, spilling, or occupancy below
/// min_occupancy_for_full_bw): the only groups whose price or legality a
/// register figure changes downward; bounds compiles during a search.
/// `every_group`: every group (pricing a final plan).
enum class OracleUse { constrained, every_group };

/// Installs `oracle` for cost() calls on this thread until destruction
/// (restores the previous one; an empty oracle installs nothing).
class ScopedResourceOracle {
 public:
  explicit ScopedResourceOracle(const ResourceOracle& oracle, OracleUse use = OracleUse::constrained);
  ~ScopedResourceOracle();
  ScopedResourceOracle(const ScopedResourceOracle&) = delete;
  ScopedResourceOracle& operator=(const ScopedResourceOracle&) = delete;

 private:
  const ResourceOracle* prev_;
  OracleUse prev_use_;
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

/// Bytes of every tensor of `g` (sources and each node's output) at its bound
/// shapes: the working set of its unfused plan. Cached per graph revision.
double graph_footprint_bytes(const Graph& g);

/// FLOP-equivalents of one evaluation of a primitive over its whole output
/// (transcendentals cost more than adds; table and sources in costmodel/flops.cpp).
double primitive_flops(const Graph& g, NodeId n);

/// Whether a row of `row_bytes` bytes can stay resident in one block (registers
/// + shared memory) on device d: the multipass legality condition.
bool fits_row_resident(double row_bytes, const DeviceSpec& d);

}  // namespace fuseplan
