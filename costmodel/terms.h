// The cost model's terms, listed once. A group's predicted time is
//   max(t_mem, t_compute) + Σ fixed terms
// where t_mem sums the memory terms, t_compute the compute terms; each term
// multiplies one feature of the group (costmodel/features.h) by one device
// parameter (costmodel/device.h). The table below drives pricing (price()),
// the breakdown text (cost.h explain_cost), calibration's design-matrix
// columns (calibrate.cpp) and the device JSON's parameter fields (device.cpp).
// Reference page with every row and its formula: docs/cost-model.md.
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>

#include "costmodel/device.h"
#include "costmodel/features.h"

namespace fuseplan {

struct GroupCost;
namespace costmodel_detail {
class TextOut;
}

/// The part of the time a term adds to.
enum class Regime {
  memory,   // summed into t_mem
  compute,  // summed into t_compute
  fixed,    // added after max(t_mem, t_compute): latencies and serial passes
};

/// The devices a term prices on (elsewhere it is 0, its parameter absent).
enum class Applies { gpu, cpu, both };

/// Where a term's parameter lives in DeviceSpec.
enum class ParamPart {
  common,  // DeviceSpec itself: every device has it
  gpu,     // GpuSpec
  cpu,     // CpuSpec
  levels,  // CpuSpec::caches[].bw_GBps, one per cache level (read with the caches)
};

/// The rows of the table, in pricing order (the order the terms are summed).
enum class TermId {
  gpu_memory,      // t_mem on a GPU: all bytes at DRAM
  level,           // CPU: bytes at the working set's cache level
  source_bytes,    // CPU: source bytes at DRAM
  write_allocate,  // CPU: written bytes at the write-allocate bandwidth
  spill,           // CPU: spill traffic at L1
  contraction,     // GEMM/conv FLOPs
  other,           // other FLOPs
  transcendental,  // transcendental FLOPs
  reduce_steps,    // CPU: serial reduction steps
  select_steps,    // CPU: max/min chain steps
  pool_steps,      // CPU: pooling window steps
  launch,          // per kernel
  contraction_calls,  // CPU: per contraction library call
  sources_read,    // CPU: first touch of each source tensor
  store_stall,     // CPU: one line fill beyond the LLC
  libm_cold,       // CPU: cold libm routines beyond the LLC
};
inline constexpr int kTermCount = 16;

/// The range a parameter's JSON value must lie in (device.cpp checks it;
/// each error names the field and the value).
struct ParamRange {
  double hi = 1e9;               // largest value: figures beyond any machine overflow a kernel's time
  double floor = 0;              // smallest nonzero value (bandwidths, efficiencies: 1e-6), 0: none
  bool zero_ok = true;           // false: must be positive
  bool fraction = false;         // an efficiency: "in (0, hi]" or, with zero_ok, "in [0, hi]"
  std::string_view zero_means;   // what 0 means, in the error ("0 = e_cmp")
};

/// Per-row results of price(): what each term multiplied and added.
struct TermPrices {
  std::array<double, kTermCount> amount{};   // the feature quantity (bytes, FLOPs, calls, ...); 0 off its devices
  std::array<double, kTermCount> raw{};      // amount × parameter in the row's unit (µs, or ns when in_ns)
  std::array<double, kTermCount> part_us{};  // µs of the partial sum the row belongs to (its own µs when alone)
  double t_mem_us = 0;      // Σ memory terms
  double t_compute_us = 0;  // Σ compute terms
  double fixed_us = 0;      // Σ fixed terms
  double predicted_us = 0;  // max(t_mem, t_compute) + fixed
  std::string_view bound;   // "memory", "compute" or "launch"
};

/// What a row's breakdown text reads.
struct TermContext {
  const CostFeatures& f;
  const DeviceSpec& d;
  const GroupCost& c;  // the group's cost (bytes with spill, totals)
  const TermPrices& p;
};

/// One row of the table. Function pointers take the features and the device
/// being priced.
struct CostTerm {
  TermId id;
  std::string_view name;       // "t_calls": the breakdown's and the docs' name
  std::string_view feature;    // what it counts: "contraction_calls" (CostFeatures fields or an expression of them)
  std::string_view parameter;  // the device parameter it prices with, as named in the device JSON
  Regime regime;
  std::string_view unit;       // the parameter's unit: "µs per call"
  Applies applies;
  std::string_view formula;    // its time in µs, for docs/cost-model.md
  // --- pricing ---
  double (*amount)(const CostFeatures&, const DeviceSpec&);  // the feature quantity it multiplies
  double (*raw)(double amount, const CostFeatures&, const DeviceSpec&);  // amount × parameter: µs (ns when in_ns)
  bool joins_previous = false;  // summed with the row before it first (the formula's parentheses)
  bool in_ns = false;           // raw is in ns: its partial sum is converted to µs once
  double GroupCost::*cost_amount = nullptr;  // GroupCost field that reports its amount (fixed terms)
  double GroupCost::*cost_us = nullptr;      // GroupCost field that reports its µs (fixed terms)
  void (*explain)(costmodel_detail::TextOut&, const TermContext&) = nullptr;  // its part of the breakdown
  // --- the parameter (device JSON) ---
  ParamPart part = ParamPart::common;
  double* (*field)(DeviceSpec&) = nullptr;  // the parameter in d; nullptr when d has none (or `levels`)
  ParamRange range{};
  bool required = false;        // a device JSON must give it (else absent = 0, no such term)
  // --- calibration (docs/calibration.md) ---
  int column = -1;  // rank of its column in the design matrix (-1: none); rows of one rank share it
  // Its coefficient in a design row (nullptr: amount), and x, the µs per
  // unit of coefficient that calibration solves for, with its inverse.
  // `level` is the cache level (index into CpuSpec::caches, -1: dram_bw_GBps)
  // of a `levels` row, else unused.
  double (*coefficient)(const CostFeatures&, const DeviceSpec&) = nullptr;
  double (*x_of)(const DeviceSpec&, int level) = nullptr;
  double (*value_of_x)(double x, const DeviceSpec&, int level) = nullptr;
  int (*level_of)(const CostFeatures&, const DeviceSpec&) = nullptr;  // `levels` rows: the level it prices at
  // The parameter's effective value where 0 stands for another's
  // (e_transcendental 0: e_cmp); nullptr: its value.
  double (*effective)(const DeviceSpec&) = nullptr;
  bool write_allocate_only = false;  // a column only when the prior sets write_allocate_bw_GBps
  bool probe_measured = false;       // measured by `fuseplan probe`; calibration holds it
  std::string_view at_zero = "infinite throughput";  // what a fit at 0 would mean (the refusal names it)
  TermId fold_into = TermId::launch;  // with no column of its own on a device (parameter absent): the
                                      // column that takes its coefficient (transcendental on a GPU: other)
};

/// The table, indexed by TermId.
std::span<const CostTerm> cost_terms();
inline const CostTerm& cost_term(TermId id) { return cost_terms()[static_cast<int>(id)]; }
/// Whether row t prices on d.
bool term_applies(const CostTerm& t, const DeviceSpec& d);
/// The value of t's parameter on d, 0 when d has none.
double term_parameter(const CostTerm& t, const DeviceSpec& d);

/// Prices features on a device: every term's amount and µs, t_mem,
/// t_compute, the fixed terms, the predicted µs and the bound. Sums each
/// regime's terms in table order (partial sums first for joined rows).
TermPrices price(const CostFeatures& f, const DeviceSpec& d);

/// price(f, d).predicted_us: what cost(g, grp, d) predicts for a group with
/// the features f (exactly, for f = its cost_features on a device without
/// a probe-measured transcendental table; to rounding otherwise).
double predict_us(const CostFeatures& f, const DeviceSpec& d);

/// The roofline body of a group, µs: max(t_mem, t_compute) + (1 − p)·min,
/// p the part of the shorter time the longer hides (group_overlap). p = 1
/// is the ideal roofline max(t_mem, t_compute), p = 0 their sum.
double overlapped_us(double t_mem_us, double t_compute_us, double p);

/// The overlap p of a group with features f on d at the device overlap
/// `device_p` (DeviceSpec::overlap, or a value calibration tries): 0 for a
/// CPU group that calls the contraction library (contraction_calls > 0) or
/// computes a library routine's operand in a pass of its own
/// (prologue_passes > 0), whose passes (activation reorders, the prologue,
/// the call, an emitted epilogue) run one after another, so its memory time
/// adds to the compute; device_p otherwise. A pooling routine alone keeps
/// device_p: its window steps overlap its own streaming (no overlap there
/// made light_inception_v2's cost plan 7.9% slower). trt_residual_block's
/// stem, BN+ReLU computed as the MaxPool's prologue pass: 0.86 ms
/// measured, 0.51 predicted at device_p, 0.68 at 0 (one Zen 4 thread).
/// Contraction groups, measured on one Zen 4 thread
/// (resnet50_bottleneck's four conv groups of its cost plan, oneDNN 2.6):
/// t_mem + t_compute predicted each 3-19% under its time, max(t_mem,
/// t_compute) 8-46% under.
double group_overlap(const CostFeatures& f, const DeviceSpec& d, double device_p);

/// Name of the memory level (cache level or "DRAM") a working set of `bytes`
/// is priced at on a CPU device; "DRAM" on a GPU.
std::string memory_level(double bytes, const DeviceSpec& d);

namespace costmodel_detail {
/// CPU: index into d.cpu->caches of the level a working set of `bytes` is
/// priced at (the smallest whose all-core capacity holds it), -1 for
/// dram_bw_GBps when none does.
int cpu_level_index(double bytes, const DeviceSpec& d);
/// CPU: the bandwidth of cache level `level` (cpu_level_index), GB/s.
double level_bw(int level, const DeviceSpec& d);
/// CPU: the bandwidth a working set no cache holds is priced at (the caches'
/// unbounded entry, else dram_bw_GBps): where source bytes come from.
double cpu_dram_bw(const DeviceSpec& d);
/// The transcendental FLOP-equivalents of f on d: from transcendental_elems
/// at d's weights when present, else flops_transcendental.
double transcendental_flops_on(const CostFeatures& f, const DeviceSpec& d);
/// The distinct libm routines of f: from transcendental_elems when present,
/// else libm_routines.
double libm_routines_of(const CostFeatures& f);
}  // namespace costmodel_detail

}  // namespace fuseplan
