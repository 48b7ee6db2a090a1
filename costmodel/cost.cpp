// Roofline cost of one fusion group: bytes, FLOP-equivalents, registers →
// t_mem, t_compute, launch. Formulas and parameter provenance:
// costmodel/README.md. Numbers only; the search decides.
#include "costmodel/cost.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "costmodel/cost_detail.h"

namespace fuseplan {

namespace costmodel_detail {

namespace {
// GroupView's position table: NodeId -> position, -1 everywhere outside the
// view that holds it (`busy`).
struct PositionTable {
  std::vector<int> pos;
  bool busy = false;
};
thread_local PositionTable t_positions;
}  // namespace

GroupView::GroupView(const Graph& graph, const Group& group) : g(graph), grp(group) {
  order.assign(group.nodes.begin(), group.nodes.end());
  for (NodeId n : order)
    if (n >= g.size()) throw Error("group " + std::to_string(grp.id) + " holds node " + std::to_string(n) +
                                   " which is not in graph '" + g.name + "'");
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return g.topo_index(a) < g.topo_index(b); });
  order.erase(std::unique(order.begin(), order.end()), order.end());
  if (!t_positions.busy) {
    t_positions.busy = true;
    if (t_positions.pos.size() < g.size()) t_positions.pos.resize(g.size(), -1);
    table_ = t_positions.pos.data();
    table_size_ = t_positions.pos.size();
    for (std::size_t i = 0; i < order.size(); ++i) table_[order[i]] = static_cast<int>(i);
    return;
  }
  index_.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) index_.emplace_back(order[i], static_cast<int>(i));
  std::sort(index_.begin(), index_.end());
}

GroupView::~GroupView() {
  if (!table_) return;
  for (NodeId n : order) table_[n] = -1;
  t_positions.busy = false;
}

int GroupView::pos_in_index(NodeId n) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(n, -1));
  return it != index_.end() && it->first == n ? it->second : -1;
}

double work_elems(const Graph& g, NodeId n) {
  const Primitive& p = g.node(n);
  if (p.op_class == OpClass::reduction && p.kind != Op::MaxPool && p.kind != Op::AveragePool) {
    for (const InEdge& e : g.in_edges(n))
      if (e.operand == 0) return static_cast<double>(g.numel(e.src));
  }
  return static_cast<double>(g.numel(n));
}

namespace {
// Widest reduction: (row elements, row bytes).
std::pair<double, double> widest_row(const GroupView& v) {
  std::pair<double, double> best{0, 0};
  for (NodeId n : v.order) {
    const Primitive& p = v.g.node(n);
    if (p.op_class != OpClass::reduction) continue;
    double out = static_cast<double>(v.g.numel(n));
    if (out <= 0) continue;
    double row = node_facts(v.g, n).work_elems / out;
    double elem_bytes = static_cast<double>(dtype_bytes(p.out.dtype));
    for (const InEdge& e : v.g.in_edges(n))
      if (e.operand == 0) elem_bytes = static_cast<double>(dtype_bytes(v.g.node(e.src).out.dtype));
    if (row > best.first) best = {row, row * elem_bytes};
  }
  return best;
}
}  // namespace

double reduction_row_elems(const GroupView& v) { return widest_row(v).first; }
double reduction_row_bytes(const GroupView& v) { return widest_row(v).second; }

bool reads_in_part(const Graph& g, NodeId c, NodeId n) {
  const Primitive& p = g.node(c);
  if (p.kind != Op::Slice && p.op_class != OpClass::gather) return false;
  const std::vector<NodeId>& ops = g.operands(c);
  return !ops.empty() && ops[0] == n && std::count(ops.begin(), ops.end(), n) == 1;
}

double input_bytes_read(const Graph& g, const GroupView& v, NodeId n) {
  const double full = static_cast<double>(g.bytes(n));
  // Most tensors have no partial reader: no walk over their consumers (a
  // shared constant can have thousands).
  if (!node_facts(g, n).read_in_part) return full;
  double part = 0;
  bool read_here = false;
  for (NodeId c : g.consumers(n)) {
    if (v.pos(c) < 0) continue;
    if (!reads_in_part(g, c, n)) return full;
    part += static_cast<double>(g.bytes(c));  // output elements × the operand's dtype
    read_here = true;
  }
  return read_here ? std::min(full, part) : full;
}

}  // namespace costmodel_detail

namespace {

using namespace costmodel_detail;

// Register budget of a row-resident block: up to 64 registers per thread for
// row data (the rest for temporaries) over the largest block, 1024 threads
// (CUDA C Programming Guide, "Thread Hierarchy": max threads per block).
constexpr double kRowRegsPerThread = 64;
constexpr double kMaxThreadsPerBlock = 1024;
constexpr double kRegBytes = 4;
// µs per byte at 1 GB/s, and per FLOP at 1 TFLOP/s.
constexpr double kUsPerByteAtGBps = 1e-3;
constexpr double kUsPerFlopAtTFLOPs = 1e-6;
constexpr double kUsPerNs = 1e-3;

bool is_core_private(const std::string& name) {  // L1/L2 capacities are per core
  return name.size() == 2 && std::toupper(static_cast<unsigned char>(name[0])) == 'L' && (name[1] == '1' || name[1] == '2');
}

// CPU: the smallest cache level whose (all-core) capacity holds the working
// set; DRAM when none does. Returns (level name, GB/s).
std::pair<std::string_view, double> cpu_level(double working_set, const DeviceSpec& d) {
  for (const CacheLevel& c : d.caches) {
    double cap = c.bytes * (is_core_private(c.name) ? std::max(1, d.sm_count) : 1);
    if ((c.bytes <= 0 || working_set <= cap) && c.bw_GBps > 0) return {c.name, c.bw_GBps};
  }
  return {"DRAM", d.dram_bw_GBps};
}

}  // namespace

double llc_bytes(const DeviceSpec& d) {
  double llc = d.l2_bytes;
  for (const CacheLevel& c : d.caches) llc = std::max(llc, c.bytes * (is_core_private(c.name) ? std::max(1, d.sm_count) : 1));
  return llc;
}

double costmodel_detail::cpu_dram_bw(const DeviceSpec& d) {
  return cpu_level(std::numeric_limits<double>::infinity(), d).second;
}

namespace {

double cpu_l1_bw(const DeviceSpec& d) {
  for (const CacheLevel& c : d.caches)
    if (c.bw_GBps > 0) return c.bw_GBps;  // ascending size: the first is L1
  return d.dram_bw_GBps;
}

double safe_div(double a, double b) { return b > 0 ? a / b : 0; }

// The breakdown text, appended piece by piece to one string without
// temporaries (a plan writes about 1 KB of it per group): `<< fixed(x, d)`
// prints printf("%.*f", d, x) (fixed_text.cpp), an integer prints as
// std::to_string does.
struct Fixed {
  double x;
  int decimals;
};
Fixed fixed(double x, int decimals = 0) { return {x, decimals}; }

class TextOut {
 public:
  explicit TextOut(std::string& s) : s_(s) {}
  TextOut& operator<<(std::string_view x) {
    s_.append(x);
    return *this;
  }
  TextOut& operator<<(Fixed f) {
    append_fixed(s_, f.x, f.decimals);
    return *this;
  }
  TextOut& operator<<(int i) { return integer(i); }
  TextOut& operator<<(std::size_t i) { return integer(i); }

 private:
  template <class I>
  TextOut& integer(I i) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, i);
    s_.append(buf, end);
    return *this;
  }
  std::string& s_;
};

// "name: bytes, name: bytes" of the tensors `ns`; with `reader`, the bytes
// that group reads of each (input_bytes_read), "of" the whole when a part.
void put_tensor_list(TextOut& o, const Graph& g, const std::vector<NodeId>& ns, const GroupView* reader = nullptr) {
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

}  // namespace

namespace {
thread_local const ResourceOracle* t_oracle = nullptr;
thread_local OracleUse t_oracle_use = OracleUse::constrained;

// Whether the register estimate constrains the group: over the limit,
// spilling, or occupancy low enough to cut bandwidth.
bool estimate_constrains(const RegisterEstimate& r, const DeviceSpec& d) {
  return r.regs > d.max_regs_per_thread || r.spill_bytes > 0 ||
         (d.min_occupancy_for_full_bw > 0 && r.occupancy < d.min_occupancy_for_full_bw);
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

bool fits_row_resident(double row_bytes, const DeviceSpec& d) {
  if (!d.is_gpu()) {
    // CPU: one core keeps the row in its private L2 (else the largest level).
    double cap = d.l2_bytes;
    for (const CacheLevel& c : d.caches)
      if (c.name == "L2" || c.name == "l2") cap = c.bytes;
    return row_bytes <= cap;
  }
  double threads = std::min<double>(kMaxThreadsPerBlock, d.max_threads_per_sm > 0 ? d.max_threads_per_sm : kMaxThreadsPerBlock);
  double reg_bytes = std::min(kRowRegsPerThread * threads, static_cast<double>(d.regs_per_sm)) * kRegBytes;
  double smem = d.smem_per_block_bytes > 0 ? d.smem_per_block_bytes : d.smem_per_sm_bytes;
  return row_bytes <= std::max(reg_bytes, smem);
}

GroupCost cost(const Graph& g, const Group& grp, const DeviceSpec& d, bool with_breakdown) {
  GroupView v(g, grp);
  GroupCost c;

  // --- bytes: external inputs once, materialised outputs once ---
  // External inputs (as group_inputs(), with the view's O(1) lookup);
  // sources placed inside the group are loads too.
  PooledVector<NodeId> inputs;
  for (NodeId n : v.order) {
    if (g.op_class(n) == OpClass::source) inputs.push_back(n);
    for (const InEdge& e : g.in_edges(n))
      if (NodeId p = e.src; v.pos(p) < 0) inputs.push_back(p);
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  double read = 0, written = 0, read_sources = 0;
  for (NodeId n : inputs) {
    const double b = input_bytes_read(g, v, n);
    read += b;
    if (g.op_class(n) == OpClass::source) read_sources += b;
  }
  for (NodeId n : grp.materialised)
    if (g.op_class(n) != OpClass::source) written += static_cast<double>(g.bytes(n));
  // A multipass group whose row fits no block re-reads its inputs once per
  // reduction pass (the search should not form it: reduction_barrier).
  double passes = 1;
  if (grp.kind == GroupKind::multipass && !fits_row_resident(reduction_row_bytes(v), d)) {
    for (NodeId n : v.order) passes += g.op_class(n) == OpClass::reduction;
    read *= passes;
    read_sources *= passes;
  }

  // --- FLOPs with recomputation, registers, spills, occupancy ---
  GroupFlops f = group_flops(v, d.gemm_tile_m, d.gemm_tile_n, &d);
  RegisterEstimate r = estimate_registers(v, d);
  c.regs_estimate = r.regs;
  c.spill_bytes_estimate = r.spill_bytes;
  if (d.is_gpu() && t_oracle && (t_oracle_use == OracleUse::every_group || estimate_constrains(r, d))) {
    if (std::optional<MeasuredResources> m = (*t_oracle)(g, grp, d)) {
      // The emitted kernels run d.threads_per_block threads per block; the
      // measured per-thread spill bytes are paid once per estimated thread.
      c.measured = true;
      c.regs_measured = m->regs_per_thread;
      c.spill_bytes_measured = m->spill_bytes_per_thread * r.threads * d.spill_penalty;
      r.regs = m->regs_per_thread;
      r.spill_bytes = c.spill_bytes_measured;
      r.smem_bytes = m->smem_bytes;
      r.occupancy = gpu_occupancy(r.regs, d.threads_per_block, r.smem_bytes, d);
    }
  }
  c.flops = f.total();
  c.regs_per_thread = r.regs;
  c.occupancy = r.occupancy;
  c.spill_bytes = r.spill_bytes;
  c.bytes_read = read + r.spill_bytes / 2;      // spill loads
  c.bytes_written = written + r.spill_bytes / 2;  // spill stores

  // --- time ---
  double bw = d.dram_bw_GBps;
  std::string_view level = "DRAM";
  double occ_factor = 1;
  double write_allocate = 0;  // CPU: written bytes the store queue does not take, at write_allocate_bw_GBps
  c.graph_bytes = graph_footprint_bytes(g);
  if (d.is_gpu()) {
    if (d.min_occupancy_for_full_bw > 0) occ_factor = std::min(1.0, r.occupancy / d.min_occupancy_for_full_bw);
    c.t_mem_us = safe_div(c.bytes() * kUsPerByteAtGBps, bw * d.e_mem * occ_factor);
  } else {
    std::tie(level, bw) = cpu_level(read + written, d);
    write_allocate = write_allocate_bytes(written, c.graph_bytes, d);
    // Sources start a plan's run in memory (tensors earlier groups wrote are
    // still in cache): their bytes at the DRAM rate, the rest at the level.
    c.bytes_read_sources = read_sources;
    c.t_mem_us = safe_div((read - read_sources + written - write_allocate) * kUsPerByteAtGBps, bw * d.e_mem) +
                 safe_div(read_sources * kUsPerByteAtGBps, cpu_dram_bw(d) * d.e_mem) +
                 safe_div(write_allocate * kUsPerByteAtGBps, d.write_allocate_bw_GBps * d.e_mem) +
                 safe_div(r.spill_bytes * kUsPerByteAtGBps, cpu_l1_bw(d) * d.e_mem);
  }
  double peak_c = d.tensor_TFLOPs > 0 ? d.tensor_TFLOPs : d.fp32_TFLOPs;
  double t_contraction = safe_div(f.contraction * kUsPerFlopAtTFLOPs, peak_c * d.e_contraction);
  // Transcendental FLOPs at their own efficiency (= e_cmp unless set).
  // Ops sharing a loop with a libm call run one lane at a time (CPU).
  double t_other = safe_div((f.other - f.transcendental + f.scalar * scalar_extra_flops(d)) * kUsPerFlopAtTFLOPs,
                            d.fp32_TFLOPs * d.e_cmp) +
                   safe_div(f.transcendental * kUsPerFlopAtTFLOPs, d.fp32_TFLOPs * transcendental_efficiency(d));
  // Serial reduction, max/min and pooling steps (CPU backend; 0 unless the
  // device sets them).
  double t_serial =
      (f.reduction_steps * d.reduce_step_ns + f.select_steps * d.select_step_ns + f.pool_steps * d.pool_step_ns) * kUsPerNs;
  c.t_compute_us = t_contraction + t_other + t_serial;
  c.launch_us = d.launch_us;
  // Per-call overhead of the library GEMMs inside the kernel (serial set-up
  // outside the roofline, like launch; d.gemm_call_us = 0 leaves it out).
  c.gemm_calls = f.gemm_calls;
  c.t_calls_us = f.gemm_calls * d.gemm_call_us;
  // Their panel packing, serial before the micro-kernels (CPU backend;
  // d.gemm_pack_elem_ns = 0 leaves it out).
  c.gemm_pack_elems = f.gemm_pack_elems;
  c.t_pack_us = f.gemm_pack_elems * d.gemm_pack_elem_ns * kUsPerNs;
  // And the fixed part of each micro-kernel run (CPU backend;
  // d.gemm_microkernel_ns = 0 leaves it out).
  c.gemm_microkernels = f.gemm_microkernels;
  c.t_microkernel_us = f.gemm_microkernels * d.gemm_microkernel_ns * kUsPerNs;
  // First touch of the source tensors read (latency outside the roofline,
  // like launch; d.source_read_us = 0 leaves it out).
  for (NodeId n : inputs) c.sources_read += g.op_class(n) == OpClass::source;
  c.t_sources_us = c.sources_read * d.source_read_us;
  double body = std::max(c.t_mem_us, c.t_compute_us);
  // One line-fill wait when the group writes in a graph beyond the LLC (CPU,
  // latency outside the roofline; d.store_stall_us = 0 leaves it out).
  c.t_store_stall_us = store_stalls(written, c.graph_bytes, d) * d.store_stall_us;
  // Each libm routine it calls, cold in a graph beyond the LLC (CPU, latency
  // outside the roofline; d.libm_cold_us = 0 leaves it out).
  c.libm_cold_calls = libm_cold_calls(libm_routines(v, f), c.graph_bytes, d);
  c.t_libm_cold_us = c.libm_cold_calls * d.libm_cold_us;
  // The convs' im2col pass, serial before their GEMMs (CPU backend;
  // d.im2col_elem_ns = 0 leaves it out).
  c.im2col_elems = f.im2col_elems;
  c.t_im2col_us = f.im2col_elems * d.im2col_elem_ns * kUsPerNs;
  double fixed_us =
      c.launch_us + c.t_calls_us + c.t_pack_us + c.t_microkernel_us + c.t_sources_us + c.t_store_stall_us +
      c.t_libm_cold_us + c.t_im2col_us;
  c.predicted_us = body + fixed_us;
  // A device figure far out of range (spill_penalty 1e308, a bandwidth of
  // 1e-300 GB/s) overflows the time: refuse it here, since an infinite or
  // NaN time makes every saving the search compares NaN.
  if (!std::isfinite(c.predicted_us) || !std::isfinite(c.bytes_read) || !std::isfinite(c.bytes_written))
    throw Error("device '" + d.name + "' prices kernel '" + g.node(grp.nodes.front()).name +
                "' at a non-finite time or byte count (t_mem " + fixed_text(c.t_mem_us, 2) + " us, t_compute " +
                fixed_text(c.t_compute_us, 2) + " us): a device figure is out of range");
  // The bound names the largest part: the per-kernel and per-call latencies
  // ("launch"), or the roofline body, where the serial im2col and packing
  // passes and micro-kernel runs count as compute (instructions, not waits).
  double serial_us = c.t_im2col_us + c.t_pack_us + c.t_microkernel_us, compute_us = c.t_compute_us + serial_us;
  double overhead_us = fixed_us - serial_us;
  c.bound = overhead_us > std::max(c.t_mem_us, compute_us) ? "launch" : (c.t_mem_us >= compute_us ? "memory" : "compute");

  if (!with_breakdown) return c;
  std::string& b = c.breakdown;
  b.reserve(1024);  // a breakdown is about 1 KB
  TextOut o(b);
  o << "kind = " << to_string(grp.kind) << ", " << v.order.size() << " primitives on " << d.name << "\n";
  o << "bytes_read = " << fixed(c.bytes_read) << " (";
  put_tensor_list(o, g, inputs, &v);
  if (passes > 1) o << "; × " << fixed(passes) << " passes, row not resident";
  if (r.spill_bytes > 0) o << "; spill loads " << fixed(r.spill_bytes / 2);
  o << ")\n";
  o << "bytes_written = " << fixed(c.bytes_written) << " (";
  put_tensor_list(o, g, grp.materialised);
  if (r.spill_bytes > 0) o << "; spill stores " << fixed(r.spill_bytes / 2);
  o << ")\n";
  o << "flops = " << fixed(c.flops) << " (";
  for (std::size_t i = 0; i < v.order.size(); ++i) {
    double pf = primitive_flops(g, v.order[i]);
    if (pf <= 0) continue;
    if (node_facts(g, v.order[i]).transcendental && !d.transcendental_ns.empty())
      pf = static_cast<double>(g.numel(v.order[i])) * transcendental_weight(g.node(v.order[i]).op, d);
    if (b.back() != '(') o << ", ";
    o << g.node(v.order[i]).name << ": " << fixed(pf);
    if (f.times[i] != 1) o << " × " << fixed(f.times[i], 2);
  }
  o << ")\n";
  if (c.measured) {
    o << "regs_per_thread = " << r.regs << " (measured; estimate " << c.regs_estimate << " = live " << r.live_regs
      << " + address " << r.base_regs << " + extra " << r.extra_regs << "; limit " << d.max_regs_per_thread << ")";
  } else {
    o << "regs_per_thread = " << r.regs << " (live " << r.live_regs << " + address " << r.base_regs
      << " + accumulators/row/fragments " << r.extra_regs << "; limit " << d.max_regs_per_thread << ")";
  }
  if (r.spill_bytes > 0) o << ", spill_bytes = " << fixed(r.spill_bytes);
  o << "\n";
  o << "occupancy = " << fixed(r.occupancy, 3);
  if (r.smem_bytes > 0) o << " (row in shared memory: " << fixed(r.smem_bytes) << " B)";
  o << "\n";
  o << "t_mem = " << fixed(c.t_mem_us, 3) << " us (" << fixed(c.bytes()) << " B / (" << level << " " << fixed(bw, 1)
    << " GB/s × e_mem " << fixed(d.e_mem, 2);
  if (d.is_gpu()) o << " × occupancy factor " << fixed(occ_factor, 2);
  o << ")";
  if (c.bytes_read_sources > 0 && !d.is_gpu())
    o << ", of which " << fixed(c.bytes_read_sources) << " B read from sources at DRAM " << fixed(cpu_dram_bw(d), 1)
      << " GB/s";
  if (write_allocate > 0)
    o << ", of which " << fixed(write_allocate) << " B written "
      << (fits_llc(c.graph_bytes, d) ? "beyond the " + fixed_text(d.store_buffer_bytes, 0) + " B store queue"
                                      : std::string("in a graph beyond the LLC"))
      << " at write-allocate " << fixed(d.write_allocate_bw_GBps, 1) << " GB/s";
  o << ")\n";
  o << "t_compute = " << fixed(c.t_compute_us, 3) << " us (contraction " << fixed(f.contraction) << " / ("
    << fixed(peak_c, 1) << " TFLOP/s × e_contraction " << fixed(d.e_contraction, 2) << ")";
  if (f.contraction > 0 && (d.gemm_tile_m > 0 || d.gemm_tile_n > 0))
    o << " [whole " << d.gemm_tile_m << " × " << d.gemm_tile_n << " gemm micro-tiles]";
  o << " + other " << fixed(f.other)
    << " / (" << fixed(d.fp32_TFLOPs, 1) << " TFLOP/s × e_cmp " << fixed(d.e_cmp, 2) << ")";
  if (f.transcendental > 0 && d.e_transcendental > 0) {
    o << ", of which transcendental " << fixed(f.transcendental);
    if (!d.transcendental_ns.empty()) o << " (probe-measured ns per element × one core's FP32 rate)";
    o << " at e_transcendental " << fixed(d.e_transcendental, 3);
  }
  if (f.scalar > 0 && scalar_extra_flops(d) > 0)
    o << ", of which " << fixed(f.scalar) << " in loops calling libm, one lane at a time (× " << d.elems_per_thread
      << ")";
  if (t_serial > 0)
    o << " + reduction steps " << fixed(f.reduction_steps) << " × " << fixed(d.reduce_step_ns, 3) << " ns + max/min steps "
      << fixed(f.select_steps) << " × " << fixed(d.select_step_ns, 3) << " ns + pool steps " << fixed(f.pool_steps)
      << " × " << fixed(d.pool_step_ns, 3) << " ns";
  o << ")\n";
  o << "launch = " << fixed(c.launch_us, 3) << " us\n";
  if (c.gemm_calls > 0)
    o << "gemm_calls = " << fixed(c.gemm_calls) << " × " << fixed(d.gemm_call_us, 3) << " us = " << fixed(c.t_calls_us, 3)
      << " us\n";
  if (c.t_pack_us > 0)
    o << "gemm_pack = " << fixed(c.gemm_pack_elems) << " elements × " << fixed(d.gemm_pack_elem_ns, 3) << " ns = "
      << fixed(c.t_pack_us, 3) << " us\n";
  if (c.t_microkernel_us > 0)
    o << "gemm_microkernel = " << fixed(c.gemm_microkernels) << " runs × " << fixed(d.gemm_microkernel_ns, 3) << " ns = "
      << fixed(c.t_microkernel_us, 3) << " us\n";
  if (c.t_sources_us > 0)
    o << "sources_read = " << fixed(c.sources_read) << " × " << fixed(d.source_read_us, 3) << " us = "
      << fixed(c.t_sources_us, 3) << " us\n";
  if (c.t_libm_cold_us > 0)
    o << "libm_cold = " << fixed(c.libm_cold_calls) << " routine(s) × " << fixed(d.libm_cold_us, 3) << " us = "
      << fixed(c.t_libm_cold_us, 3) << " us (code and tables evicted: graph beyond the LLC)\n";
  if (c.t_store_stall_us > 0)
    o << "store_stall = " << fixed(c.t_store_stall_us, 3)
      << " us (graph beyond the LLC: one line fill, evicting a dirty line, before its stores drain)\n";
  if (c.t_im2col_us > 0)
    o << "im2col = " << fixed(c.im2col_elems) << " elements × " << fixed(d.im2col_elem_ns, 3) << " ns = "
      << fixed(c.t_im2col_us, 3) << " us\n";
  o << "predicted = " << fixed(c.predicted_us, 3) << " us (" << c.bound << "-bound)";
  return c;
}

std::string explain_cost(const Graph& g, const Group& grp, const DeviceSpec& d) {
  return cost(g, grp, d, true).breakdown;
}

}  // namespace fuseplan
