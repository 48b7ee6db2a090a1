// The reference executor: runs a graph unfused, primitive by primitive, with
// straightforward loops. It is the ground truth every emitted plan is
// verified against; orders of reductions and contractions are the CPU
// backend's canonical ones (emit/cpu/runtime.h), so fused CPU plans match it
// bit for bit.
#pragma once

#include <map>
#include <vector>

#include "graph/graph.h"
#include "exec/tensor_data.h"

namespace fuseplan {

/// Values of every primitive (indexed by NodeId; sources copied from
/// `sources`). Throws Error for an opaque primitive ("cannot execute opaque
/// primitive 'NAME' (op OP)"), an unknown op, an unsupported dtype, or a
/// source without data.
std::vector<Tensor> run_reference(const Graph& g, const std::map<NodeId, Tensor>& sources);

/// Computes one primitive from its operand values (exposed for tests).
Tensor eval_primitive(const Graph& g, NodeId n, const std::vector<const Tensor*>& operands);

}  // namespace fuseplan
