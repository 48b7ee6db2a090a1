// A fusion group: the set of primitives emitted as one kernel. Lives in
// costmodel/ because the cost model prices it; search/ builds and chooses them.
#pragma once

#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/view.h"
#include "graph/op_attrs.h"

namespace fuseplan {

/// Group kinds of docs/vocabulary.md.
enum class GroupKind { single, loop, reduction, contraction, horizontal, multipass };
std::string_view to_string(GroupKind k);
/// Throws Error on an unknown word.
GroupKind group_kind_from_string(std::string_view s);

struct Group {
  int id = 0;
  GroupKind kind = GroupKind::single;
  /// Primitives computed in this kernel, in topological order. A duplicated
  /// producer appears in every group that recomputes it.
  std::vector<NodeId> nodes;
  /// Subset of `nodes` whose output this group writes to memory.
  std::vector<NodeId> materialised;
  /// Subset of `nodes` that are recomputed here although another group also
  /// computes them (duplicated producers).
  std::vector<NodeId> duplicated;
  /// Horizontal groups only: the independent branches (each a subset of nodes).
  std::vector<std::vector<NodeId>> branches;
  /// Source tensors (weights, constants, graph inputs) this group reads that
  /// an earlier group of its plan reads too, ascending: their first lines
  /// are cached when this group runs, so they pay no first touch
  /// (CpuSpec::source_read_us; `fuseplan measure` flushes the caches before
  /// each repetition of the plan, not between its groups). Set by make_plan
  /// from the plan's order; empty for a group priced alone (the search's
  /// candidates), which counts every source it reads as cold.
  std::vector<NodeId> warm_sources;

  bool contains(NodeId n) const;
};

/// Distinct producers outside the group whose outputs the group reads
/// (sources included), in ascending id order.
std::vector<NodeId> group_inputs(const Graph& g, const Group& grp);

/// Calls f(p, o) for each operand o of a library routine p (is_library_op:
/// a contraction, pooling, scan, ... called on whole buffers) that the group
/// computes itself (`member(o)`): the kernel computes o whole into a buffer
/// before the call (kernel scratch unless o is materialised) and the routine
/// reads it back, where a GPU tile loop would recompute it per tile.
/// emit/kernel_plan.cpp makes each such o a stage; the CPU cost model
/// computes it once and prices its write and read (costmodel/features.cpp).
template <class Member, class F>
void for_each_library_operand(const Graph& g, const std::vector<NodeId>& nodes, Member member, F f) {
  for (NodeId p : nodes) {
    if (!is_library_op(g.node(p))) continue;
    for (NodeId o : g.operands(p))
      if (member(o)) f(p, o);
  }
}

/// Whether operand o of library routine p is a MatMul's B that the CPU
/// backend passes to the library as a strided view of a buffer outside the
/// group (graph/view.h strided_matmul_operand) instead of computing it.
template <class Member>
bool passed_as_view(const Graph& g, NodeId p, NodeId o, Member member) {
  const auto& ops = g.operands(p);
  return g.node(p).kind == Op::MatMul && ops.size() > 1 && o == ops[1] && o != ops[0] &&
         strided_matmul_operand(g, p, member).has_value();
}

/// for_each_library_operand as the CPU backend computes them: f is not
/// called for an operand passed as a view (passed_as_view).
template <class Member, class F>
void for_each_computed_library_operand(const Graph& g, const std::vector<NodeId>& nodes, Member member, F f) {
  for_each_library_operand(g, nodes, member, [&](NodeId p, NodeId o) {
    if (!passed_as_view(g, p, o, member)) f(p, o);
  });
}

/// Kind a set of primitives would get as one kernel: contraction if it holds
/// a contraction, else multipass if it holds a reduction whose result is read
/// again by a node of the group together with the reduced input (softmax,
/// layer norm), else reduction if it holds a reduction, else loop (several
/// primitives) or single (one).
GroupKind infer_group_kind(const Graph& g, const std::vector<NodeId>& nodes);

}  // namespace fuseplan
