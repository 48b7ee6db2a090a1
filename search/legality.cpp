#include "search/legality.h"

#include <algorithm>
#include <cstdint>
#include <vector>
#include <unordered_set>

#include "costmodel/compile_time.h"
#include "costmodel/cost.h"
#include "support/error.h"
#include "support/format.h"
#include "graph/op_traits.h"
#include "search/nested_reduction.h"

namespace fuseplan {

namespace {

// In the order of Blocker; docs/blockers.md documents each.
constexpr std::string_view kBlockerNames[] = {
    "none", "layout_mismatch", "indirect_access", "scan_recurrence", "graph_output",
    "multi_consumer", "control_flow", "reduction_barrier", "graph_break", "cycle",
    "two_contractions", "epilogue_not_elementwise", "contraction_broadcast", "prologue_not_cheap",
    "expensive_broadcast", "horizontal_contraction", "iteration_space", "register_pressure",
    "shared_memory", "compile_time", "group_size", "unprofitable"};
static_assert(std::size(kBlockerNames) == static_cast<std::size_t>(Blocker::unprofitable) + 1,
              "one name per Blocker, unprofitable last");

// Above this many elements a group is no longer launch-bound on any configured
// GPU (4 MiB of f32 at ~3 TB/s ≈ 1.3 µs ≈ one launch): block-index dispatch of
// groups with different iteration spaces is only worth it below. Estimate.
constexpr int64_t kSmallGroupElems = int64_t{1} << 20;

std::string q(const std::string& s) { return "'" + s + "'"; }

bool is_cheap_class(OpClass c) {
  return c == OpClass::elementwise || c == OpClass::broadcast || c == OpClass::reshape ||
         c == OpClass::injective;
}

/// Whether layout op p is read only as MatMul B operands by the consumer
/// group (`in_c`), on a CPU: the backend passes B to oneDNN as a strided
/// view of p's source instead of transposing it (graph/view.h
/// strided_matmul_operand; GPT-2's Kᵀ), so neither layout_mismatch nor the
/// prologue and broadcast rules for non-cheap ops apply. Where the final
/// group leaves no such view, the backend computes B whole before the call
/// (a prologue pass, priced as one).
template <class InC>
bool read_as_strided_b(const Graph& g, NodeId p, InC in_c, const DeviceSpec& d) {
  if (!d.cpu || g.op_class(p) != OpClass::layout) return false;
  bool read = false;
  for (const OutEdge& e : g.out_edges(p)) {
    if (!in_c(e.dst)) continue;
    const auto ops = g.operands(e.dst);
    if (g.node(e.dst).kind != Op::MatMul || e.operand != 1 || ops[0] == p) return false;
    read = true;
  }
  return read;
}

/// Elements of one reduced row: input numel / output numel.
int64_t reduction_row(const Graph& g, NodeId r) {
  const auto ops = g.operands(r);
  if (ops.empty()) return 1;
  int64_t in = g.numel(ops[0]), out = std::max<int64_t>(1, g.numel(r));
  return std::max<int64_t>(1, in / out);
}

/// Membership of the two node sets of a merge question without hashing:
/// per-thread marks indexed by NodeId (bit 1: producer side, bit 2:
/// consumer side), cleared again on destruction. Not reentrant.
class SideMarks {
 public:
  SideMarks(const Graph& g, std::span<const NodeId> a, std::span<const NodeId> b) : a_(a), b_(b) {
    if (marks().size() < g.size()) marks().resize(g.size(), 0);
    for (NodeId n : a) marks()[n] |= 1;
    for (NodeId n : b) marks()[n] |= 2;
  }
  ~SideMarks() {
    for (NodeId n : a_) marks()[n] = 0;
    for (NodeId n : b_) marks()[n] = 0;
  }
  SideMarks(const SideMarks&) = delete;
  SideMarks& operator=(const SideMarks&) = delete;
  bool in_a(NodeId n) const { return marks()[n] & 1; }
  bool in_b(NodeId n) const { return marks()[n] & 2; }

 private:
  static std::vector<uint8_t>& marks() {
    thread_local std::vector<uint8_t> m;
    return m;
  }
  std::span<const NodeId> a_, b_;
};

/// Graph::has_path_outside(from, to) on marked sets (same answer): a path from
/// a `from` node to a `to` node through a node in neither set, exploring only
/// nodes before the last `to` node in topological order.
bool path_outside(const Graph& g, const SideMarks& m, bool from_is_a, std::span<const NodeId> from,
                  std::span<const NodeId> to) {
  if (from.empty() || to.empty()) return false;
  auto in_from = [&](NodeId n) { return from_is_a ? m.in_a(n) : m.in_b(n); };
  auto in_to = [&](NodeId n) { return from_is_a ? m.in_b(n) : m.in_a(n); };
  std::size_t limit = 0;
  for (NodeId t : to) limit = std::max(limit, g.topo_index(t));
  thread_local std::vector<uint8_t> seen;
  thread_local std::vector<NodeId> stack, visited;
  if (seen.size() < g.size()) seen.resize(g.size(), 0);
  stack.clear();
  visited.clear();
  for (NodeId f : from)
    for (const OutEdge& e : g.out_edges(f)) {
      const NodeId w = e.dst;
      if (!in_from(w) && !in_to(w) && g.topo_index(w) < limit) stack.push_back(w);
    }
  bool found = false;
  while (!stack.empty() && !found) {
    const NodeId v = stack.back();
    stack.pop_back();
    if (seen[v]) continue;
    seen[v] = 1;
    visited.push_back(v);
    for (const OutEdge& e : g.out_edges(v)) {
      const NodeId w = e.dst;
      if (in_to(w)) {
        found = true;
        break;
      }
      if (!in_from(w) && !seen[w] && g.topo_index(w) < limit) stack.push_back(w);
    }
  }
  for (NodeId v : visited) seen[v] = 0;
  return found;
}

}  // namespace

std::string_view to_string(Blocker b) {
  const auto i = static_cast<std::size_t>(b);
  FUSEPLAN_ASSERT(i < std::size(kBlockerNames), "a Blocker value without a name");
  return kBlockerNames[i];
}

Blocker blocker_from_string(std::string_view s) {
  for (std::size_t i = 0; i < std::size(kBlockerNames); ++i)
    if (kBlockerNames[i] == s) return static_cast<Blocker>(i);
  throw Error("unknown blocker code '" + std::string(s) + "'");
}

FusionDecision FusionDecision::operator&&(const FusionDecision& o) const {
  if (!legal) return *this;
  if (!o.legal) return o;
  if (blocker != Blocker::none) return *this;
  return o;
}

int64_t iteration_space(const Graph& g, std::span<const NodeId> nodes) {
  int64_t best = 0;
  for (NodeId n : nodes) {
    const Primitive& p = g.node(n);
    if (!p.out.known) continue;
    best = std::max(best, g.numel(n));
    if (p.op_class == OpClass::reduction || p.op_class == OpClass::contraction)
      for (NodeId o : g.operands(n))
        if (g.node(o).out.known) best = std::max(best, g.numel(o));
  }
  return best;
}

FusionDecision can_fuse_edge(const Graph& g, NodeId producer, NodeId consumer) {
  const Primitive& P = g.node(producer);
  const Primitive& C = g.node(consumer);
  if (P.op_class == OpClass::source) return FusionDecision::allow();
  for (const Primitive* x : {&P, &C}) {
    if (x->op_class != OpClass::opaque) continue;
    if (traits(*x).control_flow)
      return FusionDecision::forbid(Blocker::control_flow,
                                    q(x->name) + " is control flow (" + x->op + "): " + q(P.name) + " -> " +
                                        q(C.name) + " cannot share a kernel");
    return FusionDecision::forbid(Blocker::graph_break, q(x->name) + " is opaque (" + x->op +
                                                            "): a graph break between " + q(P.name) +
                                                            " and " + q(C.name));
  }
  if (P.op_class == OpClass::scatter)
    return FusionDecision::forbid(Blocker::indirect_access,
                                  q(C.name) + " reads scatter output " + q(P.name) +
                                      " whose elements are written through data-dependent indices");
  if (C.op_class == OpClass::scatter)
    return FusionDecision::forbid(Blocker::indirect_access,
                                  "scatter " + q(C.name) + " writes " + q(P.name) +
                                      "'s values through data-dependent indices");
  if (C.op_class == OpClass::gather) {
    auto ops = g.operands(consumer);
    if (!ops.empty() && ops[0] == producer)
      return FusionDecision::forbid(Blocker::indirect_access,
                                    q(C.name) + " reads " + q(P.name) +
                                        " through data-dependent indices (gather data operand)");
  }
  if (P.op_class == OpClass::scan || C.op_class == OpClass::scan) {
    const Primitive& s = P.op_class == OpClass::scan ? P : C;
    return FusionDecision::forbid(Blocker::scan_recurrence,
                                  q(s.name) + " (" + s.op + ") carries state along axis " +
                                      std::to_string(s.attr_int("axis", 0)) + ": " + q(P.name) + " -> " +
                                      q(C.name) + " cannot share its kernel");
  }
  if (P.op_class == OpClass::layout || C.op_class == OpClass::layout) {
    const Primitive& t = P.op_class == OpClass::layout ? P : C;
    return FusionDecision::forbid(Blocker::layout_mismatch,
                                  q(t.name) + " (" + t.op + ") moves the fastest-varying axis: " + q(P.name) +
                                      " -> " + q(C.name) + " would need a transpose inside the kernel");
  }
  return FusionDecision::allow();
}

FusionDecision can_merge_vertical(const Graph& g, std::span<const NodeId> pg, std::span<const NodeId> cg,
                                  const DeviceSpec& d, bool check_cycles) {
  const SideMarks side(g, pg, cg);
  auto in_p_count = [&](NodeId n) { return side.in_a(n); };
  auto in_c_count = [&](NodeId n) { return side.in_b(n); };
  FusionDecision out = FusionDecision::allow();
  NodeId any_p = kNoNode, any_c = kNoNode;
  // 1. Every crossing edge must be fusable.
  // (Edges straight from the adjacency lists, not consumers(): a consumer
  // reading twice is asked twice, with the same answer, and nothing is allocated.)
  for (NodeId p : pg) {
    for (const OutEdge& e : g.out_edges(p)) {
      const NodeId c = e.dst;
      if (!in_c_count(c)) continue;
      if (any_p == kNoNode) any_p = p, any_c = c;
      FusionDecision edge = can_fuse_edge(g, p, c);
      if (!edge.ok() && !read_as_strided_b(g, p, in_c_count, d)) return edge;
    }
  }
  for (NodeId c : cg)
    for (const OutEdge& e : g.out_edges(c))
      if (const NodeId p = e.dst; in_p_count(p) && !in_c_count(p))
        return FusionDecision::forbid(Blocker::cycle, q(g.node(c).name) + " feeds " + q(g.node(p).name) +
                                                          " and is fed by its group");
  if (any_p == kNoNode) any_p = pg.front(), any_c = cg.front();
  // The edge named in a refusal; built only when one is given (this runs per candidate).
  auto edge_name = [&] { return q(g.node(any_p).name) + " -> " + q(g.node(any_c).name); };

  auto find_class = [&](std::span<const NodeId> s, OpClass c) {
    for (NodeId n : s)
      if (g.op_class(n) == c) return n;
    return kNoNode;
  };
  const NodeId p_con = find_class(pg, OpClass::contraction), c_con = find_class(cg, OpClass::contraction);
  const int64_t dom_p = iteration_space(g, pg), dom_c = iteration_space(g, cg);

  // 2. Contractions: one per kernel, elementwise epilogues, cheap prologues.
  if (p_con != kNoNode && c_con != kNoNode)
    return FusionDecision::forbid(Blocker::two_contractions,
                                  edge_name() + ": both groups hold a contraction (" + g.node(p_con).name + ", " +
                                      g.node(c_con).name + "); one library GEMM per kernel");
  if (p_con != kNoNode) {
    const int64_t out_elems = g.numel(p_con);
    for (NodeId c : cg) {
      const Primitive& C = g.node(c);
      if (C.op_class == OpClass::reduction)
        return FusionDecision::forbid(Blocker::reduction_barrier,
                                      q(C.name) + " reduces the output of contraction " + q(g.node(p_con).name) +
                                          "; a GEMM tile holds only a block of it");
      if (!is_cheap_class(C.op_class))
        return FusionDecision::forbid(Blocker::epilogue_not_elementwise,
                                      q(C.name) + " (" + std::string(to_string(C.op_class)) +
                                          ") is not an elementwise epilogue of contraction " +
                                          q(g.node(p_con).name));
    }
    if (dom_c > out_elems)
      return FusionDecision::forbid(Blocker::contraction_broadcast,
                                    edge_name() + ": consumer broadcasts contraction output " + q(g.node(p_con).name) +
                                        " to a larger shape (" + std::to_string(dom_c) + " > " +
                                        std::to_string(out_elems) + " elements)");
  }
  if (c_con != kNoNode) {
    for (NodeId p : pg) {
      const Primitive& P = g.node(p);
      if (!is_cheap_class(P.op_class) && !read_as_strided_b(g, p, in_c_count, d))
        return FusionDecision::forbid(Blocker::prologue_not_cheap,
                                      q(P.name) + " (" + std::string(to_string(P.op_class)) +
                                          ") is not a cheap prologue of contraction " + q(g.node(c_con).name));
    }
  }

  // 3. Reductions: epilogue, prologue, row-resident multipass (one row
  // class), or nested (reductions of different rows, one inside the other:
  // search/nested_reduction.h).
  std::vector<NodeId> reds;
  for (auto s : {pg, cg})
    for (NodeId n : s)
      if (g.op_class(n) == OpClass::reduction) reds.push_back(n);
  if (!reduce_same_rows(g, reds)) {
    std::vector<NodeId> merged(pg.begin(), pg.end());
    merged.insert(merged.end(), cg.begin(), cg.end());
    FusionDecision nest = can_nest_reductions(g, merged);
    if (!nest.ok()) return FusionDecision::forbid(Blocker::reduction_barrier, edge_name() + ": " + nest.reason);
  } else if (!reds.empty()) {
    // Reductions that read another reduction's broadcast-back result, or
    // consumers that broadcast a reduction result back to the row shape,
    // make the group a multipass (row-resident) kernel.
    bool multipass = reds.size() > 1;
    for (NodeId r : reds)
      for (NodeId c : g.consumers(r))
        if ((in_p_count(c) || in_c_count(c)) && g.numel(c) > g.numel(r)) multipass = true;
    if (multipass) {
      const NodeId r0 = reds.front();
      const int64_t row_len = reduction_row(g, r0);
      const double row_bytes = static_cast<double>(row_len) * dtype_bytes(g.node(r0).out.dtype);
      if (!fits_row_resident(row_bytes, d))
        return FusionDecision::forbid(Blocker::reduction_barrier,
                                      edge_name() + ": row of " + std::to_string(row_len) + " elements (" +
                                          std::to_string(static_cast<int64_t>(row_bytes)) + " bytes) of " +
                                          q(g.node(r0).name) + " does not fit one block on " + d.name +
                                          "; the normalisation needs a second pass");
    }
  }

  // 4. Iteration spaces: a consumer may broadcast a cheap group, nothing else.
  if (dom_c > dom_p && p_con == kNoNode && reds.empty()) {
    for (NodeId p : pg)
      if (!is_cheap_class(g.op_class(p)) && !read_as_strided_b(g, p, in_c_count, d))
        return FusionDecision::forbid(Blocker::expensive_broadcast,
                                      edge_name() + ": consumer broadcasts " + q(g.node(p).name) + " to a larger shape");
  }

  // 5. Cycles: a path from one group to the other through a third.
  if (check_cycles && (path_outside(g, side, true, pg, cg) || path_outside(g, side, false, cg, pg)))
    return FusionDecision::forbid(Blocker::cycle, edge_name() + ": another kernel lies on a path between the two groups");

  for (NodeId p : pg)
    if (g.node(p).is_graph_output)
      out = out && FusionDecision::note(Blocker::graph_output,
                                        q(g.node(p).name) + " is a graph output: fused, but its write stays");
  return out;
}

FusionDecision can_duplicate(const Graph& g, std::span<const NodeId> pg, std::span<const NodeId> cg,
                             const DeviceSpec& d) {
  for (NodeId p : pg) {
    const Primitive& P = g.node(p);
    if (!is_cheap_class(P.op_class))
      return FusionDecision::forbid(Blocker::multi_consumer,
                                    q(P.name) + " (" + std::string(to_string(P.op_class)) +
                                        ") is too expensive to recompute in each consumer: kept");
  }
  FusionDecision v = can_merge_vertical(g, pg, cg, d);
  if (!v.ok()) return v;
  return FusionDecision::note(Blocker::multi_consumer, "");
}

double resident_row_bytes(const Graph& g, std::span<const NodeId> nodes) {
  std::unordered_set<NodeId> in(nodes.begin(), nodes.end());
  double best = 0;
  for (NodeId r : nodes) {
    if (g.op_class(r) != OpClass::reduction || !g.node(r).out.known) continue;
    for (NodeId c : g.consumers(r))
      if (in.count(c) && g.node(c).out.known && g.numel(c) > g.numel(r))
        best = std::max(best, static_cast<double>(reduction_row(g, r)) * dtype_bytes(g.node(r).out.dtype));
  }
  return best;
}

FusionDecision check_resources(const GroupCost& c, const DeviceSpec& d, const std::string& what) {
  // GPU only: a CPU kernel above its 16 vector registers spills to L1, which
  // the cost model prices (costmodel/registers.cpp); that is a cost, not a limit.
  if (d.gpu && c.regs_per_thread > d.gpu->max_regs_per_thread)
    return FusionDecision::forbid(Blocker::register_pressure,
                                  what + " needs ~" + std::to_string(c.regs_per_thread) +
                                      " registers per thread (limit " + std::to_string(d.gpu->max_regs_per_thread) +
                                      " on " + d.name + ")");
  return FusionDecision::allow();
}

std::size_t max_group_primitives(const DeviceSpec& d, int user_cap) {
  const std::size_t budget = compile_time_max_primitives(d);
  return user_cap > 0 ? std::min(budget, static_cast<std::size_t>(user_cap)) : budget;
}

FusionDecision check_group_size(std::size_t primitives, const DeviceSpec& d, int user_cap, const std::string& what) {
  const std::size_t budget = compile_time_max_primitives(d);
  const bool user_binds = user_cap > 0 && static_cast<std::size_t>(user_cap) <= budget;
  if (user_binds && primitives > static_cast<std::size_t>(user_cap))
    return FusionDecision::forbid(Blocker::group_size, what + " makes a kernel of " + std::to_string(primitives) +
                                                           " primitives, over the user's --max-group-size " +
                                                           std::to_string(user_cap));
  if (primitives > budget) {
    const CompileTimeModel& m = compile_time_model(d);
    return FusionDecision::forbid(
        Blocker::compile_time,
        what + " makes a kernel of " + std::to_string(primitives) + " primitives: ~" +
            fixed_text(kernel_compile_s(primitives, d), 2) + " s to compile with " + m.compiler + ", over the " +
            fixed_text(kKernelCompileBudgetS, 2) + " s budget per kernel (" + std::to_string(budget) + " primitives on " +
            d.name + ")");
  }
  return FusionDecision::allow();
}

FusionDecision can_merge_horizontal(const Graph& g, std::span<const NodeId> a, std::span<const NodeId> b,
                                    bool independent, const DeviceSpec* d) {
  const std::string pair = q(g.node(a.front()).name) + " || " + q(g.node(b.front()).name);
  if (!independent)
    return FusionDecision::forbid(Blocker::cycle, pair + ": one group depends on the other");
  for (auto s : {a, b})
    for (NodeId n : s) {
      const Primitive& p = g.node(n);
      if (p.op_class == OpClass::opaque)
        return FusionDecision::forbid(Blocker::graph_break, pair + ": " + q(p.name) + " is opaque");
      if (p.op_class == OpClass::contraction)
        return FusionDecision::forbid(Blocker::horizontal_contraction,
                                      pair + ": contraction " + q(p.name) + " is launched by the GEMM library");
    }
  const int64_t da = iteration_space(g, a), db = iteration_space(g, b);
  if (da != db && (da > kSmallGroupElems || db > kSmallGroupElems))
    return FusionDecision::forbid(Blocker::iteration_space,
                                  pair + ": iteration spaces differ (" + std::to_string(da) + " vs " +
                                      std::to_string(db) + " elements) and are too large for block-index dispatch");
  if (d && d->gpu) {
    const double rows = resident_row_bytes(g, a) + resident_row_bytes(g, b);
    const double smem = d->gpu->smem_per_block_bytes > 0 ? d->gpu->smem_per_block_bytes : d->gpu->smem_per_sm_bytes;
    if (rows > 0 && smem > 0 && rows > smem)
      return FusionDecision::forbid(Blocker::shared_memory,
                                    pair + ": resident rows need " + std::to_string(static_cast<int64_t>(rows)) +
                                        " bytes of shared memory together (block limit " +
                                        std::to_string(static_cast<int64_t>(smem)) + " on " + d->name + ")");
  }
  return FusionDecision::allow();
}

}  // namespace fuseplan
