// Nested reductions: the rule of search/nested_reduction.h.
#include "search/nested_reduction.h"

#include <algorithm>
#include <string>

#include "graph/op_attrs.h"
#include "graph/op_traits.h"

namespace fuseplan {

namespace {

std::string q(const std::string& s) { return "'" + s + "'"; }

template <class T>
std::string list_text(const std::vector<T>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

FusionDecision refuse(std::string why) { return FusionDecision::forbid(Blocker::reduction_barrier, std::move(why)); }

int64_t input_numel(const Graph& g, NodeId r) {
  const auto& ops = g.operands(r);
  return ops.empty() ? 0 : g.numel(ops[0]);
}

const std::vector<int64_t>& input_shape(const Graph& g, NodeId r) { return g.node(g.operands(r)[0]).out.shape; }

// A per-element op at `shape`: it reads its operands of that shape at its own
// coordinates, so a nested reduction's value passes through it unchanged in count.
bool is_per_element_at(const Primitive& p, const std::vector<int64_t>& shape) {
  return (traits(p).is_scalar() || p.kind == Op::Cast) && p.out.known && p.out.shape == shape;
}

// For each output axis of a reduction with input rank n, the input axis it keeps.
std::vector<int> kept_axis_origin(const ReduceParams& rp, int n) {
  std::vector<int> o;
  for (int d = 0; d < n; ++d)
    if (rp.keepdims || !std::binary_search(rp.axes.begin(), rp.axes.end(), d)) o.push_back(d);
  return o;
}

// Whether each row of `inner` lies inside one output element of `outer`, the
// axes of inner's input ordered [kept by both | reduced by outer | reduced by
// inner] (axes of size 1 aside), and both rows longer than one element.
FusionDecision check_contiguous(const Graph& g, NodeId inner, NodeId outer) {
  const Primitive& pi = g.node(inner);
  const Primitive& po = g.node(outer);
  const std::vector<int64_t>& x = input_shape(g, inner);
  const std::vector<int64_t>& mid = input_shape(g, outer);  // inner's output shape
  const int n = static_cast<int>(x.size());
  const ReduceParams ri = reduce_params(pi, n);
  const ReduceParams ro = reduce_params(po, static_cast<int>(mid.size()));
  int64_t row_i = 1, row_o = 1;
  for (int a : ri.axes) row_i *= x[a];
  for (int a : ro.axes) row_o *= mid[a];
  if (row_i <= 1) return refuse(q(pi.name) + " reduces rows of one element: nothing to nest in " + q(po.name));
  if (row_o <= 1) return refuse(q(po.name) + " reduces rows of one element of " + q(pi.name) + ": nothing to nest");
  const std::vector<int> origin = kept_axis_origin(ri, n);
  std::vector<int> role(n, 0);  // 0: kept by both, 1: reduced by outer, 2: reduced by inner
  for (int a : ri.axes) role[a] = 2;
  for (int a : ro.axes) role[origin[a]] = std::max(role[origin[a]], 1);
  int last = 0;
  for (int d = 0; d < n; ++d) {
    if (x[d] == 1) continue;
    if (role[d] < last)
      return refuse(q(pi.name) + " reduces axes " + list_text(ri.axes) + " of " + list_text(x) + " and " + q(po.name) +
                    " axes " + list_text(ro.axes) + " of its result " + list_text(mid) + ": the rows of " +
                    q(pi.name) + " do not lie contiguously inside one output element of " + q(po.name) +
                    " (nesting needs the kept axes, then the outer reduction's, then the inner's)");
    last = role[d];
  }
  return FusionDecision::allow();
}

}  // namespace

bool reduce_same_rows(const Graph& g, std::span<const NodeId> reductions) {
  int64_t rows_out = -1, row_len = 0;
  for (NodeId r : reductions) {
    const int64_t out = g.numel(r), in = input_numel(g, r);
    if (rows_out < 0) {
      rows_out = out;
      row_len = std::max<int64_t>(1, in / std::max<int64_t>(1, out));
    } else if (out != rows_out || in != rows_out * row_len) {
      return false;
    }
  }
  return true;
}

FusionDecision can_nest_reductions(const Graph& g, std::span<const NodeId> nodes, ReductionNest* nest) {
  std::vector<NodeId> members(nodes.begin(), nodes.end());
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  auto member = [&](NodeId n) { return std::binary_search(members.begin(), members.end(), n); };
  std::vector<NodeId> reds;
  for (NodeId n : members)
    if (g.op_class(n) == OpClass::reduction) reds.push_back(n);
  std::sort(reds.begin(), reds.end(), [&](NodeId a, NodeId b) { return g.topo_index(a) < g.topo_index(b); });
  for (NodeId r : reds) {
    const Primitive& p = g.node(r);
    if (!traits(p).is_reduce()) return refuse(q(p.name) + " (" + p.op + ") is a windowed reduction: only Reduce* ops nest");
    if (!p.out.known || g.operands(r).empty() || !g.node(g.operands(r)[0]).out.known)
      return refuse("the shapes of reduction " + q(p.name) + " are not known");
  }
  if (reds.size() < 2) {
    if (nest) *nest = ReductionNest{reds, {}};
    return FusionDecision::allow();
  }
  // Per reduction: the per-element ops of its output shape that carry its
  // result (its level), the reduction reading them (its outer), and the
  // first other member reading them (stray).
  const std::size_t k = reds.size();
  std::vector<NodeId> outer(k, kNoNode), stray(k, kNoNode);
  std::vector<std::vector<NodeId>> level(k);
  for (std::size_t i = 0; i < k; ++i) {
    const std::vector<int64_t>& shape = g.node(reds[i]).out.shape;
    std::vector<NodeId> carry = {reds[i]};
    for (std::size_t j = 0; j < carry.size(); ++j)
      for (NodeId c : g.consumers(carry[j])) {
        if (!member(c) || std::find(carry.begin(), carry.end(), c) != carry.end()) continue;
        if (g.op_class(c) == OpClass::reduction && g.operands(c)[0] == carry[j]) {
          if (outer[i] != kNoNode && outer[i] != c)
            return refuse(q(g.node(reds[i]).name) + " feeds two reductions, " + q(g.node(outer[i]).name) + " and " +
                          q(g.node(c).name) + ": it can nest in one only");
          outer[i] = c;
        } else if (is_per_element_at(g.node(c), shape)) {
          carry.push_back(c);
        } else if (stray[i] == kNoNode) {
          stray[i] = c;
        }
      }
    level[i].assign(carry.begin() + 1, carry.end());
    if (outer[i] == kNoNode) continue;
    // Every op of the level feeds the outer reduction: the outer loop is
    // what computes (and, if materialised, writes) it.
    std::vector<NodeId> feeding = {g.operands(outer[i])[0]};
    for (std::size_t j = 0; j < feeding.size(); ++j)
      for (NodeId o : g.operands(feeding[j]))
        if (std::find(level[i].begin(), level[i].end(), o) != level[i].end() &&
            std::find(feeding.begin(), feeding.end(), o) == feeding.end())
          feeding.push_back(o);
    for (NodeId e : level[i])
      if (std::find(feeding.begin(), feeding.end(), e) == feeding.end())
        return refuse(q(g.node(e).name) + " reads the result of " + q(g.node(reds[i]).name) + " but does not feed " +
                      q(g.node(outer[i]).name) + ", the reduction it nests in");
  }
  // The outermost reduction is the last in topological order: every other
  // one must nest, in one reduction each.
  const std::size_t root = k - 1;
  for (std::size_t i = 0; i < k; ++i) {
    const std::string& name = g.node(reds[i]).name;
    const std::string& into = g.node(outer[i] != kNoNode ? outer[i] : reds[root]).name;
    if (i != root && stray[i] != kNoNode) {
      const Primitive& s = g.node(stray[i]);
      return refuse(q(s.name) + " (" + s.op + " " + s.out.str() + ") reads the result of " + q(name) + " " +
                    g.node(reds[i]).out.str() + " other than per element at its shape, so " + q(name) +
                    " cannot nest in " + q(into) + ", which reduces different rows");
    }
    if (i != root && outer[i] == kNoNode)
      return refuse("reductions " + q(name) + " and " + q(into) + " reduce different rows and neither reads the other's result");
    std::size_t nested_here = 0;
    for (std::size_t j = 0; j < k; ++j) nested_here += outer[j] == reds[i];
    if (nested_here > 1)
      return refuse(q(name) + " reads " + std::to_string(nested_here) +
                    " reductions of rows different from its own: one reduction nests per level");
  }
  // Nothing reads the chain's result back at a larger shape.
  const NodeId top = reds[root];
  std::vector<NodeId> below = {top};
  for (std::size_t j = 0; j < below.size(); ++j)
    for (NodeId c : g.consumers(below[j])) {
      if (!member(c) || std::find(below.begin(), below.end(), c) != below.end()) continue;
      if (g.numel(c) > g.numel(top))
        return refuse(q(g.node(c).name) + " reads the result of nested reduction " + q(g.node(top).name) +
                      " back at a larger shape (" + std::to_string(g.numel(c)) + " > " +
                      std::to_string(g.numel(top)) + " elements): a nested kernel keeps no row resident");
      below.push_back(c);
    }
  // The chain, innermost first; each pair nests contiguously.
  std::size_t first = k;
  for (std::size_t i = 0; i < k && first == k; ++i)
    if (std::find(outer.begin(), outer.end(), reds[i]) == outer.end()) first = i;
  ReductionNest out;
  for (std::size_t i = first;;) {
    out.chain.push_back(reds[i]);
    if (outer[i] == kNoNode) break;
    FusionDecision c = check_contiguous(g, reds[i], outer[i]);
    if (!c.ok()) return c;
    out.inner.push_back(reds[i]);
    out.inner.insert(out.inner.end(), level[i].begin(), level[i].end());
    i = static_cast<std::size_t>(std::find(reds.begin(), reds.end(), outer[i]) - reds.begin());
  }
  if (nest) *nest = std::move(out);
  return FusionDecision::allow();
}

}  // namespace fuseplan
