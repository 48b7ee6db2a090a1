// Pricing: features × device parameters → µs, term by term, from the table
// of costmodel/terms.cpp. Each regime sums its terms in table order (a row
// that joins the one before it is summed with it first, and a partial sum
// in ns is converted to µs once), then
//   predicted = max(t_mem, t_compute) + (1 − overlap)·min(t_mem, t_compute) + fixed.
// Reference: docs/cost-model.md.
#include <algorithm>
#include <cctype>
#include <limits>

#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"

namespace fuseplan {

namespace {

constexpr double kUsPerNs = 1e-3;  // µs per ns

bool is_core_private(const std::string& name) {  // L1/L2 capacities are per core
  return name.size() == 2 && std::toupper(static_cast<unsigned char>(name[0])) == 'L' && (name[1] == '1' || name[1] == '2');
}

}  // namespace

namespace costmodel_detail {

int cpu_level_index(double bytes, const DeviceSpec& d) {
  const std::vector<CacheLevel>& caches = d.cpu->caches;
  for (std::size_t i = 0; i < caches.size(); ++i) {
    const CacheLevel& c = caches[i];
    double cap = c.bytes * (is_core_private(c.name) ? std::max(1, d.cpu->cores) : 1);
    if ((c.bytes <= 0 || bytes <= cap) && c.bw_GBps > 0) return static_cast<int>(i);
  }
  return -1;
}

double level_bw(int level, const DeviceSpec& d) { return level < 0 ? d.dram_bw_GBps : d.cpu->caches[level].bw_GBps; }

double cpu_dram_bw(const DeviceSpec& d) {
  return level_bw(cpu_level_index(std::numeric_limits<double>::infinity(), d), d);
}

double transcendental_flops_on(const CostFeatures& f, const DeviceSpec& d) {
  return f.transcendental_elems.empty() ? f.flops_transcendental : transcendental_flops(f.transcendental_elems, d);
}

double libm_routines_of(const CostFeatures& f) {
  return f.transcendental_elems.empty() ? f.libm_routines : libm_routines(f.transcendental_elems);
}

}  // namespace costmodel_detail

double llc_bytes(const DeviceSpec& d) {
  if (d.gpu) return d.gpu->l2_bytes;
  double llc = 0;
  for (const CacheLevel& c : d.cpu->caches)
    llc = std::max(llc, c.bytes * (is_core_private(c.name) ? std::max(1, d.cpu->cores) : 1));
  return llc;
}

bool term_applies(const CostTerm& t, const DeviceSpec& d) {
  return t.applies == Applies::both || (t.applies == Applies::gpu) == d.is_gpu();
}

double term_parameter(const CostTerm& t, const DeviceSpec& d) {
  if (!t.field) return 0;
  // field() hands out a writable pointer (the loader and calibration set
  // parameters through it); here it is only read.
  const double* p = t.field(const_cast<DeviceSpec&>(d));
  return p ? *p : 0;
}

TermPrices price(const CostFeatures& f, const DeviceSpec& d) {
  TermPrices p;
  const std::span<const CostTerm> terms = cost_terms();
  double total[3] = {0, 0, 0};  // by Regime
  // The open partial sum: its rows (those that price on d) and its value.
  std::array<int, kTermCount> members{};
  int open = 0;
  double part = 0;
  auto close = [&] {
    if (open == 0) return;
    const CostTerm& first = terms[members[0]];
    const double us = first.in_ns ? part * kUsPerNs : part;
    total[static_cast<int>(first.regime)] += us;
    for (int k = 0; k < open; ++k) p.part_us[members[k]] = us;
    open = 0;
  };
  for (int i = 0; i < kTermCount; ++i) {
    const CostTerm& t = terms[i];
    p.amount[i] = t.amount(f, d);
    if (!term_applies(t, d)) continue;
    p.raw[i] = t.raw(p.amount[i], f, d);
    if (t.joins_previous && open > 0 && terms[members[open - 1]].regime == t.regime) {
      part += p.raw[i];
    } else {
      close();
      part = p.raw[i];
    }
    members[open++] = i;
  }
  close();
  p.t_mem_us = total[static_cast<int>(Regime::memory)];
  p.t_compute_us = total[static_cast<int>(Regime::compute)];
  p.fixed_us = total[static_cast<int>(Regime::fixed)];
  p.predicted_us = overlapped_us(p.t_mem_us, p.t_compute_us, group_overlap(f, d, d.overlap)) + p.fixed_us;
  // The bound names the largest part: the per-kernel and per-call latencies
  // ("launch"), or the roofline body.
  p.bound = p.fixed_us > std::max(p.t_mem_us, p.t_compute_us) ? "launch"
                                                               : (p.t_mem_us >= p.t_compute_us ? "memory" : "compute");
  return p;
}

double predict_us(const CostFeatures& f, const DeviceSpec& d) { return price(f, d).predicted_us; }

double overlapped_us(double t_mem_us, double t_compute_us, double p) {
  return std::max(t_mem_us, t_compute_us) + (1 - p) * std::min(t_mem_us, t_compute_us);
}

double group_overlap(const CostFeatures& f, const DeviceSpec& d, double device_p) {
  return d.cpu && (f.contraction_calls > 0 || f.prologue_passes > 0) ? 0.0 : device_p;
}

std::string memory_level(double bytes, const DeviceSpec& d) {
  if (d.is_gpu()) return "DRAM";
  const int i = costmodel_detail::cpu_level_index(bytes, d);
  return i < 0 ? "DRAM" : d.cpu->caches[i].name;
}

}  // namespace fuseplan
