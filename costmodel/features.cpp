// A group's features (costmodel/features.h): its bytes per source, FLOPs per
// class, library calls and serial steps, registers and spills (estimated,
// or measured through the installed ResourceOracle), as cost() and the
// measurement records see them. Formulas: docs/cost-model.md, "Features".
#include <algorithm>

#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"
#include "graph/layout.h"
#include "graph/op_attrs.h"

namespace fuseplan {

namespace {
thread_local const ResourceOracle* t_oracle = nullptr;
thread_local OracleUse t_oracle_use = OracleUse::constrained;

// Whether the register estimate constrains the group: over the limit,
// spilling, or occupancy low enough to cut bandwidth (GPU).
bool estimate_constrains(const costmodel_detail::RegisterEstimate& r, const GpuSpec& gpu) {
  return r.regs > gpu.max_regs_per_thread || r.spill_bytes > 0 ||
         (gpu.min_occupancy_for_full_bw > 0 && r.occupancy < gpu.min_occupancy_for_full_bw);
}
}  // namespace

ScopedResourceOracle::ScopedResourceOracle(const ResourceOracle& oracle, OracleUse use)
    : prev_(t_oracle), prev_use_(t_oracle_use) {
  if (oracle) {
    t_oracle = &oracle;
    t_oracle_use = use;
  }
}

ScopedResourceOracle::~ScopedResourceOracle() {
  t_oracle = prev_;
  t_oracle_use = prev_use_;
}

namespace costmodel_detail {

namespace {

// Inputs, bytes read and written, and the passes of a multipass group whose
// row fits no block (it re-reads its inputs once per reduction pass; the
// search should not form it: reduction_barrier). A nested reduction group
// (search/nested_reduction.h) is no multipass: one pass, its inner results
// in registers unless materialised.
void count_bytes(const GroupView& v, const DeviceSpec& d, GroupAnalysis& a) {
  const Graph& g = v.g;
  // External inputs (as group_inputs(), with the view's O(1) lookup);
  // sources placed inside the group are loads too. A scalar constant read
  // inline is an immediate (graph/op_attrs.h reads_as_immediate): compiled
  // into the kernel, no load; it is an input only where a member (a library
  // routine) reads its buffer.
  for (NodeId n : v.order) {
    if (g.op_class(n) == OpClass::source) a.inputs.push_back(n);
    for (const InEdge& e : g.in_edges(n)) {
      if (NodeId p = e.src; v.pos(p) < 0) {
        if (g.op_class(p) == OpClass::source && reads_as_immediate(g.node(n), g.node(p))) a.immediates.push_back(p);
        else a.inputs.push_back(p);
      }
    }
  }
  std::sort(a.inputs.begin(), a.inputs.end());
  a.inputs.erase(std::unique(a.inputs.begin(), a.inputs.end()), a.inputs.end());
  if (!a.immediates.empty()) {
    std::sort(a.immediates.begin(), a.immediates.end());
    a.immediates.erase(std::unique(a.immediates.begin(), a.immediates.end()), a.immediates.end());
    std::erase_if(a.immediates, [&](NodeId p) { return std::binary_search(a.inputs.begin(), a.inputs.end(), p); });
  }
  double read = 0, written = 0, read_sources = 0, sources = 0, prologue_passes = 0;
  for (NodeId n : a.inputs) {
    const double b = input_bytes_read(g, v, n);
    read += b;
    if (g.op_class(n) == OpClass::source) read_sources += b;
  }
  for (NodeId n : v.grp.materialised)
    if (g.op_class(n) != OpClass::source) written += static_cast<double>(g.bytes(n));
  if (v.grp.kind == GroupKind::multipass && !fits_row_resident(reduction_row_bytes(v), d)) {
    for (NodeId n : v.order) a.passes += g.op_class(n) == OpClass::reduction;
    read *= a.passes;
    read_sources *= a.passes;
  }
  // The CPU backend's conv reorders (graph/layout.h, docs/layouts.md): each
  // reordered activation is written to a temporary copy and read back.
  if (d.cpu) {
    const Layouts& lay = layouts_of(g);
    for (NodeId n : v.order)
      if (const int r = lay.reorders(g, n)) {
        const double b = (r & kReorderX ? static_cast<double>(g.bytes(g.operands(n)[0])) : 0) +
                         (r & kReorderY ? static_cast<double>(g.bytes(n)) : 0);
        read += b;
        written += b;
      }
    auto materialised = [&](NodeId o) {
      return std::find(v.grp.materialised.begin(), v.grp.materialised.end(), o) != v.grp.materialised.end();
    };
    // A library routine's in-group operand is computed whole into a buffer
    // (scratch unless materialised, then counted among the bytes written)
    // and read back by the routine. A MatMul's B passed as a strided view
    // (costmodel/group.h passed_as_view) is not computed: the library reads
    // its source, an input of the group, and packs it (oneDNN's copy of each
    // block of B before its GEMM kernel): its bytes read once more.
    auto member = [&](NodeId o) { return v.pos(o) >= 0; };
    for_each_library_operand(g, v.grp.nodes, member, [&](NodeId p, NodeId o) {
      const double b = static_cast<double>(g.bytes(o));
      read += b;
      if (passed_as_view(g, p, o, member)) return;
      ++prologue_passes;
      if (!materialised(o)) written += b;
    });
    // A tensor stored NCHW at the shape of a blocked tensor its kernel reads
    // or computes is computed blocked and reordered (graph/layout.h
    // unblocked_store): once more read and written.
    for (NodeId n : v.grp.materialised)
      if (unblocked_store(g, lay, n, v.order)) {
        read += static_cast<double>(g.bytes(n));
        written += static_cast<double>(g.bytes(n));
      }
    // A channel Concat's blocked operand computed in the kernel goes through
    // blocked scratch before its reorder into the output (graph/layout.h
    // concat_operand_blocked): once more written and read. A blocked buffer
    // (materialised, or a library routine's output) is reordered as it is.
    for (NodeId n : v.grp.materialised)
      for (NodeId o : g.operands(n))
        if (v.pos(o) >= 0 && !(lay.is_blocked(o) && (materialised(o) || is_library_op(g.node(o)))) &&
            concat_operand_blocked(g, lay, n, o, v.order)) {
          read += static_cast<double>(g.bytes(o));
          written += static_cast<double>(g.bytes(o));
        }
  }
  for (NodeId n : a.inputs)
    sources += g.op_class(n) == OpClass::source &&
               !std::binary_search(v.grp.warm_sources.begin(), v.grp.warm_sources.end(), n);
  CostFeatures& f = a.features;
  f.bytes_read = read;
  f.bytes_read_sources = read_sources;
  f.bytes_written = written;
  f.sources_read = sources;
  f.prologue_passes = prologue_passes;
  f.graph_bytes = graph_footprint_bytes(g);
}

// Registers and spills: the estimate, replaced by the installed oracle's
// measurement on a GPU when it asks (OracleUse).
void count_registers(const GroupView& v, const DeviceSpec& d, GroupAnalysis& a) {
  RegisterEstimate& r = a.regs;
  r = estimate_registers(v, d);
  a.regs_estimate = r.regs;
  a.spill_bytes_estimate = r.spill_bytes;
  if (d.gpu && t_oracle && (t_oracle_use == OracleUse::every_group || estimate_constrains(r, *d.gpu))) {
    if (std::optional<MeasuredResources> m = (*t_oracle)(v.g, v.grp, d)) {
      // The emitted kernels run threads_per_block threads per block; the
      // measured per-thread spill bytes are paid once per estimated thread.
      a.measured = true;
      a.regs_measured = m->regs_per_thread;
      r.regs = m->regs_per_thread;
      r.spill_bytes_raw = m->spill_bytes_per_thread * r.threads;
      r.spill_bytes = r.spill_bytes_raw * d.spill_penalty;
      a.spill_bytes_measured = r.spill_bytes;
      r.smem_bytes = m->smem_bytes;
      r.occupancy = gpu_occupancy(r.regs, d.gpu->threads_per_block, r.smem_bytes, d);
    }
  }
  a.features.spill_bytes_raw = r.spill_bytes_raw;
  a.features.occupancy = r.occupancy;
}

}  // namespace

void analyse_group(const GroupView& v, const DeviceSpec& d, GroupAnalysis& a) {
  count_bytes(v, d, a);
  a.flops = group_flops(v, &d);
  count_registers(v, d, a);
  CostFeatures& f = a.features;
  const GroupFlops& fl = a.flops;
  f.flops_contraction = fl.contraction;
  f.contraction_class_flops = fl.contraction_by_class;
  f.flops_other = fl.other;
  f.flops_transcendental = fl.transcendental;
  f.flops_scalar = fl.scalar;
  f.reduction_steps = fl.reduction_steps;
  f.select_steps = fl.select_steps;
  f.pool_steps = fl.pool_steps;
  f.contraction_calls = fl.contraction_calls;
  f.libm_routines = libm_routines(v, fl);
}

}  // namespace costmodel_detail

std::span<const FeatureField> recorded_features() {
  static constexpr FeatureField kFields[] = {
      {"bytes_read", &CostFeatures::bytes_read},
      {"bytes_read_sources", &CostFeatures::bytes_read_sources},
      {"bytes_written", &CostFeatures::bytes_written},
      {"spill_bytes_raw", &CostFeatures::spill_bytes_raw},
      {"occupancy", &CostFeatures::occupancy},
      {"flops_contraction", &CostFeatures::flops_contraction},
      {"flops_other", &CostFeatures::flops_other},
      {"flops_transcendental", &CostFeatures::flops_transcendental},
      {"flops_scalar", &CostFeatures::flops_scalar},
      {"reduction_steps", &CostFeatures::reduction_steps},
      {"select_steps", &CostFeatures::select_steps},
      {"pool_steps", &CostFeatures::pool_steps},
      {"contraction_calls", &CostFeatures::contraction_calls},
      {"prologue_passes", &CostFeatures::prologue_passes},
      {"sources_read", &CostFeatures::sources_read},
  };
  return kFields;
}

CostFeatures cost_features(const Graph& g, const Group& grp, const DeviceSpec& d) {
  using namespace costmodel_detail;
  GroupView v(g, grp);
  GroupAnalysis a;
  analyse_group(v, d, a);
  CostFeatures f = std::move(a.features);
  if (d.cpu && !d.cpu->transcendental_ns.empty()) {
    // The analysis priced the transcendental ops at d's probe-measured
    // weights; the features keep the estimates and the elements per op.
    const GroupFlops est = group_flops(v);
    f.flops_other = est.other;
    f.flops_transcendental = est.transcendental;
  }
  f.transcendental_elems = transcendental_elems(v, a.flops);
  return f;
}

}  // namespace fuseplan
