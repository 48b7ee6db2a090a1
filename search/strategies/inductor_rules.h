// Inductor's realize-or-inline rule for pointwise primitives (internal to the
// `inductor` strategy; exposed for its tests).
#pragma once

#include <vector>

#include "graph/graph.h"

namespace fuseplan::strategies {

inline constexpr int kRealizeReadsThreshold = 4;     // torch/_inductor/config.py realize_reads_threshold
inline constexpr int kRealizeOpcountThreshold = 30;  // realize_opcount_threshold
inline constexpr int kRealizeAccReadsThreshold = 8;  // realize_acc_reads_threshold

/// realized[n]: n's output becomes a buffer (written to memory) rather than
/// being inlined into its users. Non-pointwise primitives are always realized.
std::vector<char> inductor_realized(const Graph& g);

}  // namespace fuseplan::strategies
