// FLOP-equivalents per primitive, and a group's FLOPs with recomputation
// (times computed) of fused producers.
//
// One FLOP-equivalent = one FP32 add/mul/FMA issue slot. Elementwise ops are
// priced per output element by their row of the op-traits table
// (graph/op_traits.h `flops`, with its provenance: throughput relative to an
// FMA); the other classes from their shapes below. These are estimates
// (issue-slot counts), not measurements: calibration corrects them through
// e_cmp.
#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <optional>
#include <string_view>

#include "costmodel/contraction.h"
#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"
#include "graph/op_attrs.h"
#include "graph/op_traits.h"

namespace fuseplan {

namespace {

// Linear Resize: bilinear weights + 4 taps ≈ 8 FLOP per output (estimate).
constexpr double kResizeLinear = 8;
// ReduceMean / AveragePool: one extra multiply by 1/count per output.
constexpr double kMeanScale = 1;

double prod(const std::vector<int64_t>& v, std::size_t from = 0) {
  double p = 1;
  for (std::size_t i = from; i < v.size(); ++i) p *= static_cast<double>(v[i]);
  return p;
}

// Operand k's tensor type, nullptr if absent.
const TensorType* operand_type(const Graph& g, NodeId n, int k) {
  for (const InEdge& e : g.in_edges(n))
    if (e.operand == k) return &g.node(e.src).out;
  return nullptr;
}

// Reduction dim K of a MatMul (operand A's contracted axis).
double matmul_k(const Graph& g, NodeId n) {
  const TensorType* a = operand_type(g, n, 0);
  if (!a || a->shape.empty()) return 1;
  const Primitive& p = g.node(n);
  bool trans_a = p.attr_int("transA", 0) != 0;
  if (a->rank() == 1) return static_cast<double>(a->shape[0]);
  return static_cast<double>(trans_a ? a->shape[a->rank() - 2] : a->shape[a->rank() - 1]);
}

// Output dims M and N of a MatMul/Conv as an implicit GEMM (batch folded into M).
std::pair<double, double> gemm_mn(const Graph& g, NodeId n) {
  const Primitive& p = g.node(n);
  double numel = static_cast<double>(g.numel(n));
  if (p.kind == Op::MatMul) {
    double nn = p.out.rank() >= 1 ? static_cast<double>(p.out.shape.back()) : 1;
    return {nn > 0 ? numel / nn : 0, nn};
  }
  // Conv/ConvTranspose: output [N, K, P, Q...]: GEMM M = N·P·Q, N = K.
  double k = p.out.rank() >= 2 ? static_cast<double>(p.out.shape[1]) : 1;
  return {k > 0 ? numel / k : 0, k};
}

}  // namespace

bool costmodel_detail::is_transcendental(std::string_view op) { return traits(op_from_name(op)).transcendental(); }

double primitive_flops(const Graph& g, NodeId n) {
  const Primitive& p = g.node(n);
  if (!p.out.known) return 0;
  double out = static_cast<double>(g.numel(n));
  switch (p.op_class) {
    case OpClass::source:
    case OpClass::reshape:
    case OpClass::layout:
    case OpClass::gather:
      return 0;  // pure data movement: priced as bytes, not FLOPs
    case OpClass::injective:
      return p.kind == Op::Resize && p.attr_string("mode", "nearest") == "linear" ? out * kResizeLinear : 0;
    case OpClass::elementwise:
    case OpClass::broadcast:
      if (const int muls = pow_multiplies(g, n)) return out * muls;
      return out * traits(p).flops;
    case OpClass::reduction: {
      if (p.kind == Op::MaxPool || p.kind == Op::AveragePool) {
        double window = prod(p.attr_ints("kernel_shape"));
        return out * (window + (p.kind == Op::AveragePool ? kMeanScale : 0));
      }
      const TensorType* in = operand_type(g, n, 0);
      double in_elems = in ? static_cast<double>(in->numel()) : out;
      bool mean = traits(p).reduce == ReduceKind::mean;  // ReduceMean, GlobalAveragePool
      return in_elems + (mean ? out * kMeanScale : 0);  // one op per input element
    }
    case OpClass::contraction: {
      const TensorType* w = operand_type(g, n, 1);
      if (p.kind == Op::MatMul) return 2 * out * matmul_k(g, n);
      if (!w || w->rank() < 2) return 0;
      if (p.kind == Op::ConvTranspose) {  // 2 · input numel · (K/group)·R·S
        const TensorType* x = operand_type(g, n, 0);
        return 2 * (x ? static_cast<double>(x->numel()) : 0) * prod(w->shape, 1);
      }
      return 2 * out * prod(w->shape, 1);  // Conv: 2·N·K·P·Q · (C/group)·R·S
    }
    case OpClass::scan:
      return out;  // one add per element
    case OpClass::scatter: {
      const TensorType* upd = operand_type(g, n, 2);  // (data, indices, updates)
      bool accumulates = p.attr_string("reduction", "none") != "none";
      return accumulates && upd ? static_cast<double>(upd->numel()) : 0;
    }
    case OpClass::opaque:
      return out;  // untraced: one op per output element (estimate)
  }
  return 0;
}

namespace costmodel_detail {

namespace {
// NodeFacts' consumer half: the factors demand() multiplies by.
void consumer_facts(const Graph& g, NodeId c, NodeFacts& f) {
  const Primitive& cp = g.node(c);
  if (cp.op_class == OpClass::reduction && (cp.kind == Op::MaxPool || cp.kind == Op::AveragePool)) {
    f.is_pool = true;
    f.pool_window = prod(cp.attr_ints("kernel_shape"));
  }
  if (cp.op_class != OpClass::contraction) return;
  // Prologue: recomputed once per output tile that reads it.
  auto [m, nn] = gemm_mn(g, c);
  f.prologue_tiles = std::max(1.0, std::ceil(nn / kTileN));
  f.weight_tiles = std::max(1.0, std::ceil(m / kTileM));
  // Conv: each input element feeds R·S/stride kernel taps.
  if (cp.kind == Op::Conv) {
    for (const InEdge& e : g.in_edges(c)) {
      if (e.operand != 0) continue;
      const double n_elems = static_cast<double>(g.numel(e.src));
      const TensorType* w = operand_type(g, c, 1);
      double group = static_cast<double>(cp.attr_int("group", 1));
      if (w && w->rank() >= 2 && n_elems > 0) f.prologue_taps = std::max(1.0, m * prod(w->shape, 1) * group / n_elems);
      break;
    }
  }
}
}  // namespace

const NodeFacts& node_facts(const Graph& g, NodeId n) {
  auto compute = [&] {
    const Primitive& p = g.node(n);
    NodeFacts f;
    f.flops = primitive_flops(g, n);
    if (const std::optional<ContractionClass> c = contraction_class(g, n)) f.contraction_class = static_cast<int>(*c);
    f.work_elems = p.op_class == OpClass::source ? 0 : work_elems(g, n);
    f.transcendental = calls_transcendental(g, n);
    if (const TensorType* in = operand_type(g, n, 0); in && traits(p).reduce != ReduceKind::none)
      f.reduce_lanes = static_cast<double>(reduce_lanes(reduce_params(p, in->rank()), in->shape, in->dtype));
    consumer_facts(g, n, f);
    for (NodeId c : g.consumers(n)) f.read_in_part = f.read_in_part || reads_in_part(g, c, n);
    return f;
  };
  if (g.revision() == 0) {
    thread_local NodeFacts fresh;
    fresh = compute();
    return fresh;
  }
  thread_local uint64_t revision = 0;
  thread_local std::vector<NodeFacts> facts;
  thread_local std::vector<char> known;
  if (revision != g.revision()) {
    revision = g.revision();
    facts.assign(g.size(), NodeFacts{});
    known.assign(g.size(), 0);
  }
  if (!known[n]) {
    facts[n] = compute();
    known[n] = 1;
  }
  return facts[n];
}

namespace {

// Stages are computed once per element of their own output and kept (a
// buffer, kernel scratch, registers): reductions, contractions, stateful or
// untraced ops, and every materialised node. Every other node is inlined
// into each stage that uses it and re-evaluated there, as emit/kernel_plan.h
// plans the kernel: a softmax's exp(x - max) runs in its sum stage and again
// in its output stage, a layer norm's sqrt(var + eps) once per output element.
bool is_stage_op(OpClass c) {
  return c == OpClass::reduction || c == OpClass::contraction || c == OpClass::scan ||
         c == OpClass::scatter || c == OpClass::opaque;
}

// Evaluations of producer n (operand k of consumer c, c computed `c_times`
// times over its output) that c needs. (The products keep their order: the
// factors come from node_facts(c).)
double demand(const Graph& g, NodeId n, NodeId c, int k, double c_times) {
  const Primitive& cp = g.node(c);
  double n_elems = static_cast<double>(g.numel(n));
  double c_elems = static_cast<double>(g.numel(c));
  switch (cp.op_class) {
    case OpClass::reduction: {
      const NodeFacts& cf = node_facts(g, c);
      if (cf.is_pool) return c_times * c_elems * cf.pool_window;  // every window re-reads
      return c_times * n_elems;  // once per reduction step
    }
    case OpClass::contraction: {
      const NodeFacts& cf = node_facts(g, c);
      if (k == 0) return c_times * n_elems * cf.prologue_taps * cf.prologue_tiles;
      if (k == 1) return c_times * n_elems * cf.weight_tiles;
      return c_times * n_elems;
    }
    default:
      return c_times * c_elems;  // once per consumer element (broadcast recomputes)
  }
}

}  // namespace

double transcendental_weight(std::string_view op, const DeviceSpec& d) {
  if (!d.cpu) return traits(op_from_name(op)).flops;
  if (auto it = d.cpu->transcendental_ns.find(op); it != d.cpu->transcendental_ns.end())
    return it->second * d.fp32_TFLOPs * 1000 / std::max(1, d.cpu->cores);
  return traits(op_from_name(op)).flops;
}

std::map<std::string, double, std::less<>> transcendental_elems(const GroupView& v, const GroupFlops& f) {
  std::map<std::string, double, std::less<>> out;
  for (std::size_t i = 0; i < v.order.size(); ++i) {
    NodeId n = v.order[i];
    const NodeFacts& nf = node_facts(v.g, n);
    if (!nf.transcendental || nf.flops <= 0) continue;
    out[v.g.node(n).op] += static_cast<double>(v.g.numel(n)) * f.times[i];
  }
  return out;
}

namespace {
// An op's libm routine (its row's; an op that calls none counts as exp).
LibmRoutine routine_of(Op op) {
  const LibmRoutine r = traits(op).libm;
  return r == LibmRoutine::none ? LibmRoutine::exp : r;
}
// Bit of a libm routine in a set of routines.
unsigned routine_bit(LibmRoutine r) { return 1u << static_cast<unsigned>(r); }
}  // namespace

std::string_view libm_routine(std::string_view op) { return to_string(routine_of(op_from_name(op))); }

double libm_routines(const std::map<std::string, double, std::less<>>& elems) {
  unsigned routines = 0;
  for (const auto& [op, n] : elems)
    if (n > 0) routines |= routine_bit(routine_of(op_from_name(op)));
  return std::popcount(routines);
}

double libm_routines(const GroupView& v, const GroupFlops& f) {
  unsigned routines = 0;  // as transcendental_elems counts elements, without building the map
  for (std::size_t i = 0; i < v.order.size(); ++i) {
    const NodeId n = v.order[i];
    const NodeFacts& nf = node_facts(v.g, n);
    if (nf.transcendental && nf.flops > 0 && v.g.numel(n) > 0 && f.times[i] > 0)
      routines |= routine_bit(routine_of(v.g.node(n).kind));
  }
  return std::popcount(routines);
}

double transcendental_flops(const std::map<std::string, double, std::less<>>& elems, const DeviceSpec& d) {
  double total = 0;
  for (const auto& [op, n] : elems) total += n * transcendental_weight(op, d);
  return total;
}

GroupFlops group_flops(const GroupView& v, const DeviceSpec* d) {
  const Graph& g = v.g;
  const std::size_t k = v.order.size();
  GroupFlops out;
  out.times.assign(k, 0.0);
  PooledVector<char> stage;
  stage.assign(k, 0);
  for (std::size_t i = 0; i < k; ++i) stage[i] = is_stage_op(g.op_class(v.order[i]));
  for (NodeId m : v.grp.materialised)
    if (int p = v.pos(m); p >= 0) stage[p] = 1;
  // The CPU backend computes a library routine's in-group operand once,
  // whole, before the call (for_each_computed_library_operand).
  if (d && d->cpu)
    for_each_computed_library_operand(g, v.grp.nodes, [&](NodeId o) { return v.pos(o) >= 0; },
                                      [&](NodeId, NodeId o) { stage[v.pos(o)] = 1; });
  // Per stage s, backwards over the nodes it inlines: a pure value is
  // evaluated as often as its hungriest consumer in that stage needs it
  // (consumers in one stage share the register); the stages add up.
  PooledVector<double> in_stage;
  in_stage.assign(k, 0.0);
  for (std::size_t s = 0; s < k; ++s) {
    if (!stage[s]) continue;
    out.times[s] = 1;
    std::fill(in_stage.begin(), in_stage.begin() + s, 0.0);
    in_stage[s] = 1;
    for (std::size_t r = s; r-- > 0;) {
      if (stage[r]) continue;
      NodeId n = v.order[r];
      double need = 0;
      for (const OutEdge& e : g.out_edges(n)) {
        int cp = v.pos(e.dst);
        if (cp < 0 || static_cast<std::size_t>(cp) > s || in_stage[cp] == 0) continue;
        need = std::max(need, demand(g, n, e.dst, e.operand, in_stage[cp]));
      }
      double n_elems = static_cast<double>(g.numel(n));
      in_stage[r] = need > 0 ? std::max(1.0, n_elems > 0 ? need / n_elems : 1.0) : 0.0;
      out.times[r] += in_stage[r];
    }
    // A stage that evaluates a float transcendental op vectorises: the
    // backend calls libfuseplan_vmath's SIMD variants (emit/cpu/vmath.h).
    // So does a reduction stage in lanes (graph/op_attrs.h reduce_lanes:
    // each lane its own accumulator, the loop `omp simd`). Not so a
    // reduction stage folding one element at a time (its accumulator runs
    // in order, without -ffast-math) nor a double one (a libm call): there
    // every elementwise op evaluated in the loop, the transcendental
    // included, issues one lane at a time (a vector call's time per
    // element, lanes times over).
    const bool reduction_stage =
        g.op_class(v.order[s]) == OpClass::reduction && node_facts(g, v.order[s]).reduce_lanes <= 1;
    bool scalar_call = false;
    for (std::size_t r = 0; r <= s && !scalar_call; ++r)
      scalar_call = in_stage[r] > 0 && node_facts(g, v.order[r]).transcendental &&
                    (reduction_stage || g.node(v.order[r]).out.dtype != DType::f32);
    if (!scalar_call) continue;
    for (std::size_t r = 0; r <= s; ++r) {  // in_stage is 0 for other stages and unread nodes
      if (in_stage[r] == 0) continue;
      const OpClass c = g.op_class(v.order[r]);
      if (c == OpClass::elementwise || c == OpClass::broadcast) out.scalar += node_facts(g, v.order[r]).flops * in_stage[r];
    }
  }
  for (double& t : out.times) t = std::max(t, 1.0);  // a node no stage reads (none in a valid group)
  for (std::size_t i = 0; i < k; ++i) {
    NodeId n = v.order[i];
    const NodeFacts& nf = node_facts(g, n);
    double f = nf.flops * out.times[i];
    const bool contraction = g.op_class(n) == OpClass::contraction;
    (contraction ? out.contraction : out.other) += f;
    if (contraction) {
      // By class, as the library's vectors issue them: a MatMul of fewer
      // columns than the vector's lanes fills only some of them.
      if (nf.contraction_class >= 0)
        out.contraction_by_class[nf.contraction_class] +=
            f / (d && d->cpu ? contraction_lane_fill(g, n, d->cpu->contraction_lanes) : 1.0);
      out.contraction_calls += out.times[i];  // one library call per computation (a stage: once)
    } else if (f > 0 && nf.transcendental) {
      if (d && d->cpu && !d->cpu->transcendental_ns.empty()) {  // the device's measured weight in place of the estimate
        const std::string& op = g.node(n).op;
        const double on_device = static_cast<double>(g.numel(n)) * out.times[i] * transcendental_weight(op, *d);
        out.other += on_device - f;
        f = on_device;
      }
      out.transcendental += f;
    }
    // Serial reduction chains (emitted reduce loops), pooling-library window
    // steps (CpuSpec::reduce_step_ns, select_step_ns, pool_step_ns).
    const Primitive& p = g.node(n);
    if (p.op_class == OpClass::scan && p.kind == Op::CumSum && p.out.known && p.out.rank() > 0) {
      // cumsum() runs each chain along the axis as acc = acc + x: serial
      // steps like an adding reduction's row (emit/cpu/runtime.h).
      const int axis = static_cast<int>(p.attr_int("axis", 0));
      const double len = axis >= 0 && axis < p.out.rank() ? static_cast<double>(p.out.shape[axis]) : 0;
      if (len > 0)
        out.reduction_steps += static_cast<double>(g.numel(n)) / len * std::max(0.0, len - kReduceOverlapSteps) * out.times[i];
      continue;
    }
    if (p.op_class != OpClass::reduction) continue;
    if (nf.is_pool)
      out.pool_steps += static_cast<double>(g.numel(n)) * nf.pool_window * out.times[i];
    else if (g.numel(n) > 0) {
      // Per output a chain of its row's steps; in lanes row / lanes vector
      // steps and the log2(lanes) steps of fprt::fold_lanes' tree.
      const double outs = static_cast<double>(g.numel(n)), row = nf.work_elems / outs;
      const double chain = nf.reduce_lanes > 1 ? row / nf.reduce_lanes + std::log2(nf.reduce_lanes) : row;
      if (p.kind == Op::ReduceMax || p.kind == Op::ReduceMin)
        out.select_steps += outs * chain * out.times[i];
      else
        out.reduction_steps += outs * std::max(0.0, chain - kReduceOverlapSteps) * out.times[i];
    }
  }
  return out;
}

}  // namespace costmodel_detail
}  // namespace fuseplan
