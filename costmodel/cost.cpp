// Cost of one fusion group: its features (features.cpp) priced term by term
// (price.cpp, the table of terms.cpp), and the breakdown text
// (breakdown.cpp). Numbers only; the search decides. Reference:
// docs/cost-model.md.
#include "costmodel/cost.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "costmodel/cost_detail.h"

namespace fuseplan {

namespace {

// Register budget of a row-resident block: up to 64 registers per thread for
// row data (the rest for temporaries) over the largest block, 1024 threads
// (CUDA C Programming Guide, "Thread Hierarchy": max threads per block).
constexpr double kRowRegsPerThread = 64;
constexpr double kMaxThreadsPerBlock = 1024;
constexpr double kRegBytes = 4;

}  // namespace

bool fits_row_resident(double row_bytes, const DeviceSpec& d) {
  if (d.cpu) {
    // CPU: one core keeps the row in its private L2 (without an L2 level:
    // the last-level cache).
    double cap = llc_bytes(d);
    for (const CacheLevel& c : d.cpu->caches)
      if (c.name == "L2" || c.name == "l2") cap = c.bytes;
    return row_bytes <= cap;
  }
  const GpuSpec& gpu = *d.gpu;
  double threads = std::min<double>(kMaxThreadsPerBlock, gpu.max_threads_per_sm > 0 ? gpu.max_threads_per_sm : kMaxThreadsPerBlock);
  double reg_bytes = std::min(kRowRegsPerThread * threads, static_cast<double>(gpu.regs_per_sm)) * kRegBytes;
  double smem = gpu.smem_per_block_bytes > 0 ? gpu.smem_per_block_bytes : gpu.smem_per_sm_bytes;
  return row_bytes <= std::max(reg_bytes, smem);
}

GroupCost cost(const Graph& g, const Group& grp, const DeviceSpec& d, bool with_breakdown) {
  using namespace costmodel_detail;
  FUSEPLAN_ASSERT(d.gpu.has_value() != d.cpu.has_value(), "device '" + d.name + "' is neither one GPU nor one CPU");
  GroupView v(g, grp);
  GroupAnalysis a;
  analyse_group(v, d, a);
  const CostFeatures& f = a.features;
  const TermPrices p = price(f, d);

  GroupCost c;
  c.regs_estimate = a.regs_estimate;
  c.spill_bytes_estimate = a.spill_bytes_estimate;
  c.regs_measured = a.regs_measured;
  c.spill_bytes_measured = a.spill_bytes_measured;
  c.measured = a.measured;
  c.flops = a.flops.total();
  c.regs_per_thread = a.regs.regs;
  c.occupancy = a.regs.occupancy;
  c.spill_bytes = a.regs.spill_bytes;
  c.bytes_read = f.bytes_read + a.regs.spill_bytes / 2;        // spill loads
  c.bytes_written = f.bytes_written + a.regs.spill_bytes / 2;  // spill stores
  c.graph_bytes = f.graph_bytes;
  const std::span<const CostTerm> terms = cost_terms();
  for (int i = 0; i < kTermCount; ++i) {
    if (terms[i].cost_amount) c.*terms[i].cost_amount = p.amount[i];
    if (terms[i].cost_us) c.*terms[i].cost_us = p.part_us[i];
  }
  c.t_mem_us = p.t_mem_us;
  c.t_compute_us = p.t_compute_us;
  c.predicted_us = p.predicted_us;
  c.bound = p.bound;
  // A device figure far out of range (spill_penalty 1e308, a bandwidth of
  // 1e-300 GB/s) overflows the time: refuse it here, since an infinite or
  // NaN time makes every saving the search compares NaN.
  if (!std::isfinite(c.predicted_us) || !std::isfinite(c.bytes_read) || !std::isfinite(c.bytes_written))
    throw Error("device '" + d.name + "' prices kernel '" + g.node(grp.nodes.front()).name +
                "' at a non-finite time or byte count (t_mem " + fixed_text(c.t_mem_us, 2) + " us, t_compute " +
                fixed_text(c.t_compute_us, 2) + " us): a device figure is out of range");
  if (with_breakdown) write_breakdown(c.breakdown, v, a, c, p, d);
  return c;
}

std::string explain_cost(const Graph& g, const Group& grp, const DeviceSpec& d) {
  return cost(g, grp, d, true).breakdown;
}

}  // namespace fuseplan
