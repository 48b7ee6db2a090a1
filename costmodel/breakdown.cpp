// The breakdown text of a priced group (cost.h explain_cost): what it reads,
// writes and computes, its registers and occupancy, then one line per
// regime and per fixed term, each row's words from the table of terms
// (terms.cpp), and the prediction. About 1 KB per group.
#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"
#include "costmodel/text_out.h"

namespace fuseplan::costmodel_detail {

namespace {

// "name: bytes, name: bytes" of the tensors `ns`; with `reader`, the bytes
// that group reads of each (input_bytes_read), "of" the whole when a part.
template <class Nodes>
void put_tensor_list(TextOut& o, const Graph& g, const Nodes& ns, const GroupView* reader = nullptr) {
  bool first = true;
  for (NodeId n : ns) {
    if (!first) o << ", ";
    first = false;
    const double full = static_cast<double>(g.bytes(n));
    const double read = reader ? input_bytes_read(g, *reader, n) : full;
    o << g.node(n).name << ": " << fixed(read);
    if (read < full) o << " of " << fixed(full);
  }
}

// The group's own lines: kind, bytes read and written, FLOPs per node,
// registers, occupancy.
void put_group(TextOut& o, const GroupView& v, const GroupAnalysis& a, const GroupCost& c, const DeviceSpec& d) {
  const Graph& g = v.g;
  const RegisterEstimate& r = a.regs;
  o << "kind = " << to_string(v.grp.kind) << ", " << v.order.size() << " primitives on " << d.name << "\n";
  o << "bytes_read = " << fixed(c.bytes_read) << " (";
  put_tensor_list(o, g, a.inputs, &v);
  if (!a.immediates.empty()) {
    o << (a.inputs.empty() ? "" : "; ") << "immediates ";
    for (std::size_t i = 0; i < a.immediates.size(); ++i) o << (i ? ", " : "") << g.node(a.immediates[i]).name;
    o << ": 0";
  }
  if (a.passes > 1) o << "; × " << fixed(a.passes) << " passes, row not resident";
  if (r.spill_bytes > 0) o << "; spill loads " << fixed(r.spill_bytes / 2);
  o << ")\n";
  o << "bytes_written = " << fixed(c.bytes_written) << " (";
  put_tensor_list(o, g, v.grp.materialised);
  if (r.spill_bytes > 0) o << "; spill stores " << fixed(r.spill_bytes / 2);
  o << ")\n";
  o << "flops = " << fixed(c.flops) << " (";
  const bool probed = d.cpu && !d.cpu->transcendental_ns.empty();
  for (std::size_t i = 0; i < v.order.size(); ++i) {
    double pf = primitive_flops(g, v.order[i]);
    if (pf <= 0) continue;
    if (node_facts(g, v.order[i]).transcendental && probed)
      pf = static_cast<double>(g.numel(v.order[i])) * transcendental_weight(g.node(v.order[i]).op, d);
    if (o.text().back() != '(') o << ", ";
    o << g.node(v.order[i]).name << ": " << fixed(pf);
    if (a.flops.times[i] != 1) o << " × " << fixed(a.flops.times[i], 2);
  }
  o << ")\n";
  const int limit = d.gpu ? d.gpu->max_regs_per_thread : d.cpu->vector_regs;
  if (c.measured) {
    o << "regs_per_thread = " << r.regs << " (measured; estimate " << c.regs_estimate << " = live " << r.live_regs
      << " + address " << r.base_regs << " + extra " << r.extra_regs << "; limit " << limit << ")";
  } else {
    o << "regs_per_thread = " << r.regs << " (live " << r.live_regs << " + address " << r.base_regs
      << " + accumulators/row/fragments " << r.extra_regs << "; limit " << limit << ")";
  }
  if (r.spill_bytes > 0) o << ", spill_bytes = " << fixed(r.spill_bytes);
  o << "\n";
  o << "occupancy = " << fixed(r.occupancy, 3);
  if (r.smem_bytes > 0) o << " (row in shared memory: " << fixed(r.smem_bytes) << " B)";
  o << "\n";
}

}  // namespace

void write_breakdown(std::string& out, const GroupView& v, const GroupAnalysis& a, const GroupCost& c,
                     const TermPrices& p, const DeviceSpec& d) {
  out.reserve(1024);  // a breakdown is about 1 KB
  TextOut o(out);
  put_group(o, v, a, c, d);
  const TermContext x{a.features, d, c, p};
  // One line per regime with its rows' words inside, then a line per fixed term.
  for (Regime regime : {Regime::memory, Regime::compute, Regime::fixed}) {
    if (regime == Regime::memory) o << "t_mem = " << fixed(c.t_mem_us, 3) << " us (";
    if (regime == Regime::compute) o << "t_compute = " << fixed(c.t_compute_us, 3) << " us (";
    for (const CostTerm& t : cost_terms())
      if (t.regime == regime) t.explain(o, x);
    if (regime != Regime::fixed) o << ")\n";
  }
  o << "predicted = " << fixed(c.predicted_us, 3) << " us (" << c.bound << "-bound";
  const double overlap = group_overlap(a.features, d, d.overlap);
  if (overlap == 0 && d.overlap > 0) o << "; t_mem + t_compute + fixed: the library call and its passes run in turn";
  else if (overlap < 1) o << "; max(t_mem, t_compute) + " << fixed(1 - overlap, 3) << " x min + fixed";
  o << ")";
}

}  // namespace fuseplan::costmodel_detail
