// Post-dominator tree of the primitive DAG (internal to the `tvm` strategy):
// Boost.Graph's Lengauer–Tarjan dominator tree on the reversed graph with a
// virtual sink that feeds every graph output and every primitive without
// consumers. Sources are left out (they have no post-dominator).
#pragma once

#include <vector>

#include "graph/graph.h"

namespace fuseplan::strategies {

struct PostDominators {
  /// Immediate post-dominator of each node; kNoNode for sources, graph
  /// outputs and nodes only the virtual sink post-dominates (TVM: parent == nullptr).
  std::vector<NodeId> ipdom;
  /// Depth in the post-dominator tree (children of the virtual root: 1).
  std::vector<int> depth;
};

PostDominators post_dominators(const Graph& g);

}  // namespace fuseplan::strategies
