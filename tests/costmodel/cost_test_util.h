// Helpers for the cost-model tests: hand-built graphs, groups with the
// materialised set the search would choose, and device specs with datasheet
// figures (the same values as configs/devices/*.json).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "costmodel/cost.h"
#include "costmodel/device.h"
#include "costmodel/group.h"
#include "graph/graph.h"

namespace fuseplan::testing {

/// Builds a Graph by hand: sources, then primitives with their operands.
class GraphBuilder {
 public:
  NodeId input(const std::string& name, std::vector<int64_t> shape, DType t = DType::f32) {
    return source(name, "Input", SourceKind::graph_input, std::move(shape), t);
  }
  NodeId weight(const std::string& name, std::vector<int64_t> shape, DType t = DType::f32) {
    return source(name, "Weight", SourceKind::weight, std::move(shape), t);
  }
  /// A constant whose value the model holds (graph/op_attrs.h: an immediate
  /// when it has one element of a dtype the executors hold).
  NodeId constant(const std::string& name, std::vector<int64_t> shape, std::vector<float> data, DType t = DType::f32) {
    const NodeId n = source(name, "Constant", SourceKind::constant, std::move(shape), t);
    g.node_mut(n).data.f32 = std::move(data);
    return n;
  }
  NodeId op(const std::string& name, const std::string& op, OpClass cls, std::vector<int64_t> shape,
            std::initializer_list<NodeId> operands, std::map<std::string, AttrValue> attrs = {}) {
    Primitive p;
    p.name = name;
    p.op = op;
    p.op_class = cls;
    p.origin = name;
    p.onnx_op = op;
    p.out.shape = std::move(shape);
    p.attrs = std::move(attrs);
    NodeId n = g.add_node(std::move(p));
    int k = 0;
    for (NodeId o : operands) g.add_use(o, n, k++);
    return n;
  }
  /// Finalises with the given graph outputs.
  Graph finish(std::vector<NodeId> outputs) {
    g.finalize();
    g.set_graph_outputs(std::move(outputs));
    return std::move(g);
  }

 private:
  NodeId source(const std::string& name, const std::string& op, SourceKind k, std::vector<int64_t> shape, DType t) {
    Primitive p;
    p.name = name;
    p.op = op;
    p.op_class = OpClass::source;
    p.source = k;
    p.out.dtype = t;
    p.out.shape = std::move(shape);
    return g.add_node(std::move(p));
  }
  Graph g;
};

/// A group of `nodes` with the materialised set the search must choose:
/// graph outputs and tensors read by a node outside the group.
inline Group make_group(const Graph& g, std::vector<NodeId> nodes, int id = 0) {
  Group grp;
  grp.id = id;
  grp.nodes = std::move(nodes);
  grp.kind = infer_group_kind(g, grp.nodes);
  for (NodeId n : grp.nodes) {
    bool outside = g.node(n).is_graph_output;
    for (NodeId c : g.consumers(n)) outside = outside || !grp.contains(c);
    if (outside) grp.materialised.push_back(n);
  }
  return grp;
}

/// Same, by node names.
inline Group make_group(const Graph& g, std::initializer_list<const char*> names, int id = 0) {
  std::vector<NodeId> ns;
  for (const char* s : names) ns.push_back(g.at(s));
  return make_group(g, std::move(ns), id);
}

/// One single group per non-source primitive (the unfused plan).
inline std::vector<Group> unfused(const Graph& g) {
  std::vector<Group> out;
  for (NodeId n : g.topo_order())
    if (g.node(n).op_class != OpClass::source) out.push_back(make_group(g, std::vector<NodeId>{n}, static_cast<int>(out.size())));
  return out;
}

struct PlanTotals {
  double bytes = 0, flops = 0, predicted_us = 0;
};
inline PlanTotals totals(const Graph& g, const std::vector<Group>& groups, const DeviceSpec& d) {
  PlanTotals t;
  for (const Group& grp : groups) {
    GroupCost c = cost(g, grp, d);
    t.bytes += c.bytes();
    t.flops += c.flops;
    t.predicted_us += c.predicted_us;
  }
  return t;
}

/// GPU spec from datasheet figures (configs/devices/h100-sxm.json values).
inline DeviceSpec gpu_spec(const std::string& name, double bw, double fp32, double tensor, double smem_sm,
                           double smem_block, int max_threads_sm = 2048) {
  DeviceSpec d = make_gpu_device();
  d.name = name;
  d.dram_bw_GBps = bw;
  d.fp32_TFLOPs = fp32;
  d.gpu->tensor_TFLOPs = tensor;
  d.gpu->smem_per_sm_bytes = smem_sm;
  d.gpu->smem_per_block_bytes = smem_block;
  d.gpu->max_threads_per_sm = max_threads_sm;
  d.launch_us = 2.0;
  return d;  // regs 64K/SM, 255/thread, 256-thread blocks, 4 elems/thread, e_* defaults
}
inline DeviceSpec h100() { return gpu_spec("h100-sxm", 3350, 67, 989, 233472, 232448); }
inline std::vector<DeviceSpec> all_gpus() {
  return {h100(),
          gpu_spec("h200", 4800, 67, 989, 233472, 232448),
          gpu_spec("a100-80gb", 2039, 19.5, 312, 167936, 166912),
          gpu_spec("v100", 900, 15.7, 125, 98304, 98304),
          gpu_spec("l4", 300, 30.3, 121, 102400, 101376, 1536),
          gpu_spec("rtx4090", 1008, 82.6, 165, 102400, 101376, 1536)};
}

/// An x86-64 host: L1/L2 per core, L3 shared, DRAM; 16 vector registers
/// of 4 fp32 lanes (CpuSpec's defaults; figures are illustrative).
inline DeviceSpec cpu_spec() {
  DeviceSpec d = make_cpu_device();
  d.name = "host-cpu-reference";
  d.cpu->cores = 8;
  d.fp32_TFLOPs = 1.0;
  d.dram_bw_GBps = 50;
  d.cpu->caches = {{"L1", 48 * 1024.0, 2000}, {"L2", 2 * 1024 * 1024.0, 1000}, {"L3", 32 * 1024 * 1024.0, 400},
                   {"DRAM", 0, 50}};
  d.cpu->vector_regs = 16;
  d.launch_us = 5;
  d.e_mem = 1.0;
  return d;
}

}  // namespace fuseplan::testing
