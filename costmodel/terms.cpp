// The table of cost terms (costmodel/terms.h): one row per term, with its
// feature, its device parameter, how it prices, what the breakdown says of
// it and how calibration fits it. Each row's `raw` keeps the floating-point
// order of the term's formula: predicted times are compared bit for bit.
// Reference: docs/cost-model.md.
#include "costmodel/terms.h"

#include <algorithm>
#include <limits>
#include <string>

#include "costmodel/contraction.h"
#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"
#include "costmodel/text_out.h"

namespace fuseplan {

namespace {

using namespace costmodel_detail;

// µs per byte at 1 GB/s, per FLOP at 1 TFLOP/s and at 1 GFLOP/s, per ns.
constexpr double kUsPerByteAtGBps = 1e-3;
constexpr double kUsPerFlopAtTFLOPs = 1e-6;
constexpr double kUsPerFlopAtGFLOPs = 1e-3;
constexpr double kUsPerNs = 1e-3;

double safe_div(double a, double b) { return b > 0 ? a / b : 0; }

// CPU: the first level with a bandwidth (ascending size: L1).
double l1_bw(const DeviceSpec& d) {
  for (const CacheLevel& c : d.cpu->caches)
    if (c.bw_GBps > 0) return c.bw_GBps;
  return d.dram_bw_GBps;
}
double peak_contraction(const DeviceSpec& d) {
  return d.gpu && d.gpu->tensor_TFLOPs > 0 ? d.gpu->tensor_TFLOPs : d.fp32_TFLOPs;
}
// CPU with the contraction library's throughput per class (contraction_GFLOPs).
bool has_class_table(const DeviceSpec& d) { return d.cpu && d.cpu->has_contraction_table(); }
// Whether f's contraction FLOPs price by class on d: d has the table and f
// knows its classes (a record written before them does not).
bool priced_by_class(const CostFeatures& f, const DeviceSpec& d) {
  if (!has_class_table(d)) return false;
  for (double flops : f.contraction_class_flops)
    if (flops > 0) return true;
  return false;
}
// µs of f's contractions at e_contraction = 1 on a device with the table:
// each class's FLOPs at its GFLOP/s, FLOPs of no class (a contraction whose
// operand shapes are unknown) at the peak.
double class_contraction_us(const CostFeatures& f, const DeviceSpec& d) {
  double us = 0, classed = 0;
  for (int i = 0; i < kContractionClassCount; ++i) {
    us += f.contraction_class_flops[i] * kUsPerFlopAtGFLOPs / d.cpu->contraction_GFLOPs[i];
    classed += f.contraction_class_flops[i];
  }
  const double rest = f.flops_contraction - classed;
  return rest > 0 ? us + rest * kUsPerFlopAtTFLOPs / peak_contraction(d) : us;
}
// GPU: bandwidth lost below min_occupancy_for_full_bw.
double occupancy_factor(const CostFeatures& f, const DeviceSpec& d) {
  const double min_occ = d.gpu->min_occupancy_for_full_bw;
  return min_occ > 0 ? std::min(1.0, f.occupancy / min_occ) : 1.0;
}
double spill_bytes(const CostFeatures& f, const DeviceSpec& d) { return f.spill_bytes_raw * d.spill_penalty; }
int working_set_level(const CostFeatures& f, const DeviceSpec& d) {
  return cpu_level_index(f.bytes_read + f.bytes_written, d);
}
int dram_level(const CostFeatures&, const DeviceSpec& d) {
  return cpu_level_index(std::numeric_limits<double>::infinity(), d);
}
double written_allocating(const CostFeatures& f, const DeviceSpec& d) {
  return write_allocate_bytes(f.bytes_written, f.graph_bytes, d);
}

// Parameter accessors and conversions, by where the parameter lives.
template <double DeviceSpec::*M>
double* common_field(DeviceSpec& d) {
  return &(d.*M);
}
template <double CpuSpec::*M>
double* cpu_field(DeviceSpec& d) {
  return d.cpu ? &((*d.cpu).*M) : nullptr;
}
// amount × a µs parameter, and × an ns parameter (ns).
template <double CpuSpec::*M>
double us_raw(double amount, const CostFeatures&, const DeviceSpec& d) {
  return amount * ((*d.cpu).*M);
}
template <double CpuSpec::*M>
double ns_raw(double amount, const CostFeatures&, const DeviceSpec& d) {
  return amount * ((*d.cpu).*M);
}
// Calibration's x: a µs parameter is x itself; an ns parameter x / 1e-3; a
// bandwidth 1e-3 / (x · e_mem); an efficiency 1e-6 / (x · peak).
template <double CpuSpec::*M>
double us_x(const DeviceSpec& d, int) {
  return (*d.cpu).*M;
}
double us_value(double x, const DeviceSpec&, int) { return x; }
template <double CpuSpec::*M>
double ns_x(const DeviceSpec& d, int) {
  return ((*d.cpu).*M) * kUsPerNs;
}
double ns_value(double x, const DeviceSpec&, int) { return x / kUsPerNs; }
double bw_value(double x, const DeviceSpec& d, int) { return safe_div(kUsPerByteAtGBps, x * d.e_mem); }
double level_x(const DeviceSpec& d, int level) { return safe_div(kUsPerByteAtGBps, level_bw(level, d) * d.e_mem); }

// Breakdown pieces shared by the per-count fixed terms:
// "<label> = <n><what> × <parameter> <unit> = <µs> us".
void count_line(TextOut& o, const TermContext& x, TermId id, std::string_view label, std::string_view what,
                std::string_view unit) {
  const int i = static_cast<int>(id);
  o << label << " = " << fixed(x.p.amount[i]) << what << " × " << fixed(term_parameter(cost_term(id), x.d), 3) << " "
    << unit << " = " << fixed(x.p.part_us[i], 3) << " us";
}

constexpr ParamRange kUs{};                                  // >= 0, at most 1e9
constexpr ParamRange kFraction{.hi = 1.5, .floor = 1e-6, .zero_ok = false, .fraction = true, .zero_means = ""};
constexpr double kUnbounded = std::numeric_limits<double>::infinity();

constexpr CostTerm kTerms[] = {
    // ---------------- memory ----------------
    {.id = TermId::gpu_memory,
     .name = "t_mem (GPU)",
     .feature = "bytes_read + bytes_written + spill_bytes_raw · spill_penalty; occupancy",
     .parameter = "dram_bw_GBps",
     .regime = Regime::memory,
     .unit = "GB/s",
     .applies = Applies::gpu,
     .formula = "bytes / (dram_bw_GBps · e_mem · min(1, occupancy / min_occupancy_for_full_bw)) · 1e-3",
     .amount = [](const CostFeatures& f, const DeviceSpec& d) {
       const double spill = spill_bytes(f, d);
       return (f.bytes_read + spill / 2) + (f.bytes_written + spill / 2);
     },
     .raw = [](double bytes, const CostFeatures& f, const DeviceSpec& d) {
       return safe_div(bytes * kUsPerByteAtGBps, d.dram_bw_GBps * d.e_mem * occupancy_factor(f, d));
     },
     .explain = [](TextOut& o, const TermContext& x) {
       if (!x.d.gpu) return;
       o << fixed(x.c.bytes()) << " B / (DRAM " << fixed(x.d.dram_bw_GBps, 1) << " GB/s × e_mem " << fixed(x.d.e_mem, 2)
         << " × occupancy factor " << fixed(occupancy_factor(x.f, x.d), 2) << ")";
     },
     .part = ParamPart::common,
     .field = common_field<&DeviceSpec::dram_bw_GBps>,
     .range = {.hi = kUnbounded, .floor = 1e-6, .zero_ok = false, .fraction = false, .zero_means = ""},
     .required = true,
     .column = 1,
     .coefficient = [](const CostFeatures& f, const DeviceSpec& d) {
       const double spill = spill_bytes(f, d);
       return safe_div((f.bytes_read + spill / 2) + (f.bytes_written + spill / 2), occupancy_factor(f, d));
     },
     .x_of = [](const DeviceSpec& d, int) { return safe_div(kUsPerByteAtGBps, d.dram_bw_GBps * d.e_mem); },
     .value_of_x = bw_value},
    {.id = TermId::level,
     .name = "t_mem (CPU level)",
     .feature = "bytes_read − bytes_read_sources + bytes_written − write-allocated bytes",
     .parameter = "caches[level].bw_GBps",
     .regime = Regime::memory,
     .unit = "GB/s",
     .applies = Applies::cpu,
     .formula = "bytes / (bw of the smallest level holding bytes_read + bytes_written · e_mem) · 1e-3",
     .amount = [](const CostFeatures& f, const DeviceSpec& d) {
       return d.cpu ? f.bytes_read - f.bytes_read_sources + f.bytes_written - written_allocating(f, d) : 0.0;
     },
     .raw = [](double bytes, const CostFeatures& f, const DeviceSpec& d) {
       return safe_div(bytes * kUsPerByteAtGBps, level_bw(working_set_level(f, d), d) * d.e_mem);
     },
     .explain = [](TextOut& o, const TermContext& x) {
       if (!x.d.cpu) return;
       const int level = working_set_level(x.f, x.d);
       o << fixed(x.c.bytes()) << " B / (" << (level < 0 ? std::string_view("DRAM") : x.d.cpu->caches[level].name)
         << " " << fixed(level_bw(level, x.d), 1) << " GB/s × e_mem " << fixed(x.d.e_mem, 2) << ")";
     },
     .part = ParamPart::levels,
     .column = 1,
     .x_of = level_x,
     .value_of_x = bw_value,
     .level_of = working_set_level},
    {.id = TermId::source_bytes,
     .name = "t_mem (CPU sources)",
     .feature = "bytes_read_sources",
     .parameter = "caches[DRAM].bw_GBps",
     .regime = Regime::memory,
     .unit = "GB/s",
     .applies = Applies::cpu,
     .formula = "bytes_read_sources / (DRAM bw · e_mem) · 1e-3",
     .amount = [](const CostFeatures& f, const DeviceSpec& d) { return d.cpu ? f.bytes_read_sources : 0.0; },
     .raw = [](double bytes, const CostFeatures&, const DeviceSpec& d) {
       return safe_div(bytes * kUsPerByteAtGBps, cpu_dram_bw(d) * d.e_mem);
     },
     .cost_amount = &GroupCost::bytes_read_sources,
     .explain = [](TextOut& o, const TermContext& x) {
       if (x.c.bytes_read_sources > 0 && x.d.cpu)
         o << ", of which " << fixed(x.c.bytes_read_sources) << " B read from sources at DRAM "
           << fixed(cpu_dram_bw(x.d), 1) << " GB/s";
     },
     .part = ParamPart::levels,
     .column = 1,
     .x_of = level_x,
     .value_of_x = bw_value,
     .level_of = dram_level},
    {.id = TermId::write_allocate,
     .name = "t_mem (CPU write-allocate)",
     .feature = "bytes_written beyond store_buffer_bytes (graph within the LLC), or all of them (beyond it)",
     .parameter = "write_allocate_bw_GBps",
     .regime = Regime::memory,
     .unit = "GB/s",
     .applies = Applies::cpu,
     .formula = "write-allocated bytes / (write_allocate_bw_GBps · e_mem) · 1e-3",
     .amount = written_allocating,
     .raw = [](double bytes, const CostFeatures&, const DeviceSpec& d) {
       return safe_div(bytes * kUsPerByteAtGBps, d.cpu->write_allocate_bw_GBps * d.e_mem);
     },
     .explain = [](TextOut& o, const TermContext& x) {
       const double wa = x.p.amount[static_cast<int>(TermId::write_allocate)];
       if (wa > 0)
         o << ", of which " << fixed(wa) << " B written "
           << (fits_llc(x.c.graph_bytes, x.d)
                   ? "beyond the " + fixed_text(x.d.cpu->store_buffer_bytes, 0) + " B store queue"
                   : std::string("in a graph beyond the LLC"))
           << " at write-allocate " << fixed(x.d.cpu->write_allocate_bw_GBps, 1) << " GB/s";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::write_allocate_bw_GBps>,
     .range = {.hi = kUnbounded, .floor = 1e-6, .zero_means = "0 = writes priced at the working-set level"},
     .column = 2,
     .x_of = [](const DeviceSpec& d, int) {
       return safe_div(kUsPerByteAtGBps, d.cpu->write_allocate_bw_GBps * d.e_mem);
     },
     .value_of_x = bw_value,
     .write_allocate_only = true},
    {.id = TermId::spill,
     .name = "t_mem (CPU spill)",
     .feature = "spill_bytes_raw · spill_penalty",
     .parameter = "spill_penalty",
     .regime = Regime::memory,
     .unit = "× spill traffic",
     .applies = Applies::cpu,
     .formula = "spill_bytes_raw · spill_penalty / (L1 bw · e_mem) · 1e-3",
     .amount = spill_bytes,
     .raw = [](double bytes, const CostFeatures&, const DeviceSpec& d) {
       return safe_div(bytes * kUsPerByteAtGBps, l1_bw(d) * d.e_mem);
     },
     .explain = [](TextOut&, const TermContext&) {},
     .part = ParamPart::common,
     .field = common_field<&DeviceSpec::spill_penalty>,
     .range = {.hi = 1e6, .floor = 0, .zero_ok = true, .fraction = false, .zero_means = ""},
     .column = 3,
     .coefficient = [](const CostFeatures& f, const DeviceSpec&) { return f.spill_bytes_raw; },
     .x_of = [](const DeviceSpec& d, int) {
       return d.spill_penalty * safe_div(kUsPerByteAtGBps, l1_bw(d) * d.e_mem);
     },
     .value_of_x = [](double x, const DeviceSpec& d, int) { return x / safe_div(kUsPerByteAtGBps, l1_bw(d) * d.e_mem); }},
    // ---------------- compute ----------------
    {.id = TermId::contraction,
     .name = "t_contraction",
     .feature = "contraction_class_flops (flops_contraction by contraction class)",
     .parameter = "e_contraction",
     .regime = Regime::compute,
     .unit = "fraction of contraction_GFLOPs (CPU with the table), else of tensor_TFLOPs (GPU) or fp32_TFLOPs",
     .applies = Applies::both,
     .formula = "Σ_class flops / (contraction_GFLOPs[class] · e_contraction) · 1e-3; without the table "
                "flops_contraction / (peak · e_contraction) · 1e-6",
     .amount = [](const CostFeatures& f, const DeviceSpec&) { return f.flops_contraction; },
     .raw = [](double flops, const CostFeatures& f, const DeviceSpec& d) {
       if (priced_by_class(f, d)) return safe_div(class_contraction_us(f, d), d.e_contraction);
       return safe_div(flops * kUsPerFlopAtTFLOPs, peak_contraction(d) * d.e_contraction);
     },
     .explain = [](TextOut& o, const TermContext& x) {
       const double flops = x.p.amount[static_cast<int>(TermId::contraction)];
       if (!priced_by_class(x.f, x.d)) {
         o << "contraction " << fixed(flops) << " / (" << fixed(peak_contraction(x.d), 1) << " TFLOP/s × e_contraction "
           << fixed(x.d.e_contraction, 2) << ")";
         return;
       }
       o << "contraction (";
       const char* sep = "";
       double classed = 0;
       for (ContractionClass k : contraction_classes()) {
         const int i = static_cast<int>(k);
         if (!(x.f.contraction_class_flops[i] > 0)) continue;
         o << sep << contraction_class_name(k) << " " << fixed(x.f.contraction_class_flops[i]) << " / "
           << fixed(x.d.cpu->contraction_GFLOPs[i], 1) << " GFLOP/s";
         classed += x.f.contraction_class_flops[i];
         sep = " + ";
       }
       o << ") / e_contraction " << fixed(x.d.e_contraction, 2);
       if (classed > flops * (1 + 1e-9))
         o << ", of " << fixed(flops) << " FLOPs: MatMul columns fill part of the library's " << x.d.cpu->contraction_lanes
           << " lanes";
     },
     .part = ParamPart::common,
     .field = common_field<&DeviceSpec::e_contraction>,
     .range = kFraction,
     .column = 8,
     // With the class table x = 1 / e_contraction over a coefficient of µs
     // at e = 1; without it, µs per FLOP over FLOPs.
     .coefficient = [](const CostFeatures& f, const DeviceSpec& d) {
       if (priced_by_class(f, d)) return class_contraction_us(f, d);
       return has_class_table(d) ? safe_div(f.flops_contraction * kUsPerFlopAtTFLOPs, peak_contraction(d))
                                 : f.flops_contraction;
     },
     .x_of = [](const DeviceSpec& d, int) {
       return has_class_table(d) ? safe_div(1.0, d.e_contraction)
                                 : safe_div(kUsPerFlopAtTFLOPs, peak_contraction(d) * d.e_contraction);
     },
     .value_of_x = [](double x, const DeviceSpec& d, int) {
       return has_class_table(d) ? safe_div(1.0, x) : safe_div(kUsPerFlopAtTFLOPs, x * peak_contraction(d));
     }},
    {.id = TermId::other,
     .name = "t_other",
     .feature = "flops_other − flops_transcendental + flops_scalar · (vector_lanes − 1) (CPU)",
     .parameter = "e_cmp",
     .regime = Regime::compute,
     .unit = "fraction of fp32_TFLOPs",
     .applies = Applies::both,
     .formula = "flops / (fp32_TFLOPs · e_cmp) · 1e-6",
     .amount = [](const CostFeatures& f, const DeviceSpec& d) {
       return f.flops_other - f.flops_transcendental + f.flops_scalar * scalar_extra_flops(d);
     },
     .raw = [](double flops, const CostFeatures&, const DeviceSpec& d) {
       return safe_div(flops * kUsPerFlopAtTFLOPs, d.fp32_TFLOPs * d.e_cmp);
     },
     .explain = [](TextOut& o, const TermContext& x) {
       o << " + other " << fixed(x.f.flops_other) << " / (" << fixed(x.d.fp32_TFLOPs, 1) << " TFLOP/s × e_cmp "
         << fixed(x.d.e_cmp, 2) << ")";
     },
     .part = ParamPart::common,
     .field = common_field<&DeviceSpec::e_cmp>,
     .range = kFraction,
     .column = 9,
     .x_of = [](const DeviceSpec& d, int) { return safe_div(kUsPerFlopAtTFLOPs, d.fp32_TFLOPs * d.e_cmp); },
     .value_of_x = [](double x, const DeviceSpec& d, int) { return safe_div(kUsPerFlopAtTFLOPs, x * d.fp32_TFLOPs); }},
    {.id = TermId::transcendental,
     .name = "t_transcendental",
     .feature = "transcendental FLOPs at the device's weights (transcendental_elems, else flops_transcendental)",
     .parameter = "e_transcendental",
     .regime = Regime::compute,
     .unit = "fraction of fp32_TFLOPs (0 = e_cmp)",
     .applies = Applies::both,
     .formula = "flops / (fp32_TFLOPs · (e_transcendental, or e_cmp when 0 or on a GPU)) · 1e-6",
     .amount = transcendental_flops_on,
     .raw = [](double flops, const CostFeatures&, const DeviceSpec& d) {
       return safe_div(flops * kUsPerFlopAtTFLOPs, d.fp32_TFLOPs * transcendental_efficiency(d));
     },
     .joins_previous = true,
     .explain = [](TextOut& o, const TermContext& x) {
       const double flops = x.p.amount[static_cast<int>(TermId::transcendental)];
       if (x.d.cpu && flops > 0 && x.d.cpu->e_transcendental > 0) {
         o << ", of which transcendental " << fixed(flops);
         if (!x.d.cpu->transcendental_ns.empty()) o << " (probe-measured ns per element × one core's FP32 rate)";
         o << " at e_transcendental " << fixed(x.d.cpu->e_transcendental, 3);
       }
       if (x.f.flops_scalar > 0 && scalar_extra_flops(x.d) > 0)
         o << ", of which " << fixed(x.f.flops_scalar) << " in reduction or double loops calling a transcendental, one lane at a time (× "
           << x.d.cpu->vector_lanes << ")";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::e_transcendental>,
     .range = {.hi = 1.5, .floor = 1e-6, .fraction = true, .zero_means = "0 = e_cmp"},
     .column = 10,
     .x_of = [](const DeviceSpec& d, int) {
       return safe_div(kUsPerFlopAtTFLOPs, d.fp32_TFLOPs * transcendental_efficiency(d));
     },
     .value_of_x = [](double x, const DeviceSpec& d, int) { return safe_div(kUsPerFlopAtTFLOPs, x * d.fp32_TFLOPs); },
     .effective = transcendental_efficiency,
     .fold_into = TermId::other},
    {.id = TermId::reduce_steps,
     .name = "t_reduce_steps",
     .feature = "reduction_steps",
     .parameter = "reduce_step_ns",
     .regime = Regime::compute,
     .unit = "ns per step",
     .applies = Applies::cpu,
     .formula = "(reduction_steps · reduce_step_ns + select_steps · select_step_ns + pool_steps · pool_step_ns) · 1e-3",
     .amount = [](const CostFeatures& f, const DeviceSpec&) { return f.reduction_steps; },
     .raw = ns_raw<&CpuSpec::reduce_step_ns>,
     .in_ns = true,
     .explain = [](TextOut& o, const TermContext& x) {
       if (x.p.part_us[static_cast<int>(TermId::reduce_steps)] > 0)
         o << " + reduction steps " << fixed(x.f.reduction_steps) << " × " << fixed(x.d.cpu->reduce_step_ns, 3) << " ns";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::reduce_step_ns>,
     .range = kUs,
     .column = 11,
     .x_of = ns_x<&CpuSpec::reduce_step_ns>,
     .value_of_x = ns_value,
     .at_zero = "no per-step cost"},
    {.id = TermId::select_steps,
     .name = "t_select_steps",
     .feature = "select_steps",
     .parameter = "select_step_ns",
     .regime = Regime::compute,
     .unit = "ns per step",
     .applies = Applies::cpu,
     .formula = "(with t_reduce_steps)",
     .amount = [](const CostFeatures& f, const DeviceSpec&) { return f.select_steps; },
     .raw = ns_raw<&CpuSpec::select_step_ns>,
     .joins_previous = true,
     .in_ns = true,
     .explain = [](TextOut& o, const TermContext& x) {
       if (x.p.part_us[static_cast<int>(TermId::select_steps)] > 0)
         o << " + max/min steps " << fixed(x.f.select_steps) << " × " << fixed(x.d.cpu->select_step_ns, 3) << " ns";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::select_step_ns>,
     .range = kUs,
     .column = 12,
     .x_of = ns_x<&CpuSpec::select_step_ns>,
     .value_of_x = ns_value,
     .at_zero = "no per-step cost"},
    {.id = TermId::pool_steps,
     .name = "t_pool_steps",
     .feature = "pool_steps",
     .parameter = "pool_step_ns",
     .regime = Regime::compute,
     .unit = "ns per window element",
     .applies = Applies::cpu,
     .formula = "(with t_reduce_steps)",
     .amount = [](const CostFeatures& f, const DeviceSpec&) { return f.pool_steps; },
     .raw = ns_raw<&CpuSpec::pool_step_ns>,
     .joins_previous = true,
     .in_ns = true,
     .explain = [](TextOut& o, const TermContext& x) {
       if (x.p.part_us[static_cast<int>(TermId::pool_steps)] > 0)
         o << " + pool steps " << fixed(x.f.pool_steps) << " × " << fixed(x.d.cpu->pool_step_ns, 3) << " ns";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::pool_step_ns>,
     .range = kUs,
     .column = 13,
     .x_of = ns_x<&CpuSpec::pool_step_ns>,
     .value_of_x = ns_value,
     .at_zero = "no per-step cost"},
    // ---------------- fixed ----------------
    {.id = TermId::launch,
     .name = "launch",
     .feature = "1 (per kernel)",
     .parameter = "launch_us",
     .regime = Regime::fixed,
     .unit = "µs per kernel",
     .applies = Applies::both,
     .formula = "launch_us",
     .amount = [](const CostFeatures&, const DeviceSpec&) { return 1.0; },
     .raw = [](double, const CostFeatures&, const DeviceSpec& d) { return d.launch_us; },
     .cost_us = &GroupCost::launch_us,
     .explain = [](TextOut& o, const TermContext& x) { o << "launch = " << fixed(x.c.launch_us, 3) << " us\n"; },
     .part = ParamPart::common,
     .field = common_field<&DeviceSpec::launch_us>,
     .range = kUs,
     .required = true,
     .column = 0,
     .x_of = [](const DeviceSpec& d, int) { return d.launch_us; },
     .value_of_x = us_value,
     .at_zero = "no dispatch overhead"},
    {.id = TermId::contraction_calls,
     .name = "t_calls",
     .feature = "contraction_calls",
     .parameter = "contraction_call_us",
     .regime = Regime::fixed,
     .unit = "µs per call",
     .applies = Applies::cpu,
     .formula = "contraction_calls · contraction_call_us",
     .amount = [](const CostFeatures& f, const DeviceSpec&) { return f.contraction_calls; },
     .raw = us_raw<&CpuSpec::contraction_call_us>,
     .cost_amount = &GroupCost::contraction_calls,
     .cost_us = &GroupCost::t_calls_us,
     .explain = [](TextOut& o, const TermContext& x) {
       if (!(x.c.t_calls_us > 0)) return;
       count_line(o, x, TermId::contraction_calls, "contraction_calls", "", "us");
       o << "\n";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::contraction_call_us>,
     .range = kUs,
     .column = 4,
     .x_of = us_x<&CpuSpec::contraction_call_us>,
     .value_of_x = us_value,
     .probe_measured = true},
    {.id = TermId::sources_read,
     .name = "t_sources",
     .feature = "sources_read",
     .parameter = "source_read_us",
     .regime = Regime::fixed,
     .unit = "µs per source tensor",
     .applies = Applies::cpu,
     .formula = "sources_read · source_read_us",
     .amount = [](const CostFeatures& f, const DeviceSpec&) { return f.sources_read; },
     .raw = us_raw<&CpuSpec::source_read_us>,
     .cost_amount = &GroupCost::sources_read,
     .cost_us = &GroupCost::t_sources_us,
     .explain = [](TextOut& o, const TermContext& x) {
       if (!(x.c.t_sources_us > 0)) return;
       count_line(o, x, TermId::sources_read, "sources_read", "", "us");
       o << "\n";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::source_read_us>,
     .range = kUs,
     .column = 5,
     .x_of = us_x<&CpuSpec::source_read_us>,
     .value_of_x = us_value,
     .probe_measured = true},
    {.id = TermId::store_stall,
     .name = "t_store_stall",
     .feature = "1 when the group writes in a graph beyond the LLC (write_allocate_bw_GBps > 0), else 0",
     .parameter = "store_stall_us",
     .regime = Regime::fixed,
     .unit = "µs per group",
     .applies = Applies::cpu,
     .formula = "store_stalls · store_stall_us",
     .amount = [](const CostFeatures& f, const DeviceSpec& d) { return store_stalls(f.bytes_written, f.graph_bytes, d); },
     .raw = us_raw<&CpuSpec::store_stall_us>,
     .cost_us = &GroupCost::t_store_stall_us,
     .explain = [](TextOut& o, const TermContext& x) {
       if (x.c.t_store_stall_us > 0)
         o << "store_stall = " << fixed(x.c.t_store_stall_us, 3)
           << " us (graph beyond the LLC: one line fill, evicting a dirty line, before its stores drain)\n";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::store_stall_us>,
     .range = kUs,
     .column = 7,
     .x_of = us_x<&CpuSpec::store_stall_us>,
     .value_of_x = us_value,
     .write_allocate_only = true},
    {.id = TermId::libm_cold,
     .name = "t_libm_cold",
     .feature = "libm routines called, in a graph beyond the LLC (else 0)",
     .parameter = "libm_cold_us",
     .regime = Regime::fixed,
     .unit = "µs per routine",
     .applies = Applies::cpu,
     .formula = "libm_cold_calls · libm_cold_us",
     .amount = [](const CostFeatures& f, const DeviceSpec& d) {
       return libm_cold_calls(libm_routines_of(f), f.graph_bytes, d);
     },
     .raw = us_raw<&CpuSpec::libm_cold_us>,
     .cost_amount = &GroupCost::libm_cold_calls,
     .cost_us = &GroupCost::t_libm_cold_us,
     .explain = [](TextOut& o, const TermContext& x) {
       if (!(x.c.t_libm_cold_us > 0)) return;
       count_line(o, x, TermId::libm_cold, "libm_cold", " routine(s)", "us");
       o << " (code and tables evicted: graph beyond the LLC)\n";
     },
     .part = ParamPart::cpu,
     .field = cpu_field<&CpuSpec::libm_cold_us>,
     .range = kUs,
     .column = 6,
     .x_of = us_x<&CpuSpec::libm_cold_us>,
     .value_of_x = us_value,
     .probe_measured = true},
};

static_assert(std::size(kTerms) == kTermCount, "kTermCount counts the table's rows");

// The table is indexed by TermId: each row at its id's position.
constexpr bool rows_in_id_order() {
  for (int i = 0; i < kTermCount; ++i)
    if (static_cast<int>(kTerms[i].id) != i) return false;
  return true;
}
static_assert(rows_in_id_order(), "each row of kTerms sits at its TermId");

}  // namespace

std::span<const CostTerm> cost_terms() { return kTerms; }

}  // namespace fuseplan
