// fuseplan graph IR: a DAG of primitives on a Boost.Graph bidirectional
// adjacency_list. One vertex = one primitive with exactly one output tensor;
// one edge = one use of that tensor as operand `operand` of the consumer.
// Sources (graph inputs, weights, folded constants) are vertices of class
// `source`. The graph is built once by the importer and then read-only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "graph/op.h"
#include "support/error.h"

namespace fuseplan {


enum class DType { f32, f16, bf16, f64, i8, u8, i16, i32, i64, boolean, string, unknown };

/// Size of one element in bytes (bool: 1; string/unknown: 0).
int64_t dtype_bytes(DType t);
std::string_view to_string(DType t);
/// Maps an ONNX TensorProto::DataType value; unsupported values give DType::unknown.
DType dtype_from_onnx(int onnx_elem_type);

/// A tensor's element type and fully bound shape (after dims are bound every
/// shape is concrete; `known` is false only downstream of data-dependent ops).
struct TensorType {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  bool known = true;

  /// Number of elements (1 for a scalar). Throws Error on int64 overflow.
  int64_t numel() const;
  /// numel() × dtype_bytes, in bytes. Throws Error on int64 overflow.
  int64_t bytes() const;
  int rank() const { return static_cast<int>(shape.size()); }
  std::string str() const;  // e.g. "f32[4096,1024]"
};

/// Op classes after TVM op patterns / DNNFusion mapping types (docs/vocabulary.md).
enum class OpClass {
  elementwise, broadcast, reshape, injective, layout, reduction, gather, scatter, scan,
  contraction, opaque, source
};
std::string_view to_string(OpClass c);
/// Parses the vocabulary word; throws Error on an unknown word.
OpClass op_class_from_string(std::string_view s);
inline constexpr int kNumOpClasses = 12;

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

/// Constant data carried by a source primitive (or a folded constant).
/// Exactly one of the vectors is filled, matching the dtype family, or `fill`
/// holds a single value repeated over the whole shape (ConstantOfShape weights).
struct ConstData {
  std::vector<float> f32;
  std::vector<int64_t> i64;
  std::optional<double> fill;
  bool empty() const { return f32.empty() && i64.empty() && !fill; }
};

enum class SourceKind { none, graph_input, weight, constant };

/// One primitive. `name` is unique in the graph and equals the name of its
/// output tensor. `origin` is the first output name of the ONNX node it came
/// from (primitives of a decomposed op share `origin`; the last of them keeps
/// the ONNX output name, the others get `origin` + "/" + suffix).
struct Primitive {
  std::string name;
  std::string op;  // primitive op: ONNX op name where 1:1 ("Add", "Relu"), else e.g. "ReduceMax", "MatMul"
  /// `op` resolved (graph/op.h; Op::unknown for an opaque op): Graph::add_node
  /// sets it, and finalize() again, so a node_mut() change of `op` follows.
  /// Ask the op's facts with traits(p) (graph/op_traits.h).
  Op kind = Op::unknown;
  OpClass op_class = OpClass::opaque;
  std::string origin;
  std::string onnx_op;  // op type of the ONNX node it came from ("Softmax" for its 5 primitives)
  Op onnx_kind = Op::unknown;  // `onnx_op` resolved, as `kind`
  TensorType out;
  std::map<std::string, AttrValue> attrs;
  SourceKind source = SourceKind::none;
  bool is_graph_output = false;
  ConstData data;  // sources only, when known

  int64_t attr_int(const std::string& k, int64_t dflt) const;
  double attr_float(const std::string& k, double dflt) const;
  std::vector<int64_t> attr_ints(const std::string& k) const;  // empty if absent
  std::string attr_string(const std::string& k, const std::string& dflt = "") const;
};

/// Edge property: the consumer reads the producer's output as operand `operand`.
struct Use {
  int operand = 0;
};

using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Primitive, Use>;
using NodeId = std::size_t;  // == boost vertex descriptor (vecS)
inline constexpr NodeId kNoNode = static_cast<NodeId>(-1);

/// An operand edge as seen from its consumer: `src`'s output is read as operand `operand`.
struct InEdge {
  NodeId src;
  int operand;
};
/// An operand edge as seen from its producer: `dst` reads it as operand `operand`.
struct OutEdge {
  NodeId dst;
  int operand;
};

/// The primitive DAG. Build with add_node/add_use, then call finalize()
/// (checks acyclicity, computes topological order, resolves every node's
/// `kind` and `onnx_kind` from its names). Throws Error on a cycle or a
/// duplicate name.
class Graph {
 public:
  std::string name;
  std::vector<std::string> warnings;  // import warnings, one line each
  /// What --dim can bind, for messages: the dim_params of the graph inputs,
  /// then of outputs and value_info (subgraphs too), and "x:k" for an unnamed
  /// symbolic dim k of input x; first occurrence order.
  std::vector<std::string> symbolic_dims;
  /// The batch dim: the dim_param of the first data input's symbolic leading
  /// dim (what --batch binds), whether or not it was bound by --batch; ""
  /// when that dim is unnamed or no data input has a symbolic leading dim.
  std::string batch_dim;

  NodeId add_node(Primitive p);
  /// consumer reads producer's output as operand index `operand`.
  void add_use(NodeId producer, NodeId consumer, int operand);
  void finalize();

  std::size_t size() const { return boost::num_vertices(g_); }
  const Primitive& node(NodeId n) const { return g_[n]; }
  /// Mutable primitive: call finalize() again after changing what it computes.
  Primitive& node_mut(NodeId n) {
    revision_ = 0;
    return g_[n];
  }
  /// Identifies the graph's content as of the last finalize(): a number no
  /// other finalize() in this process returned (copies share it); 0 before
  /// finalize() or after node_mut(). Lets per-node caches outside the graph
  /// (the cost model's) know when to start over.
  uint64_t revision() const { return revision_; }
  /// kNoNode if absent.
  NodeId find(std::string_view name) const;
  /// Throws Error naming the primitive if absent.
  NodeId at(std::string_view name) const;

  /// Operands of n, ordered by operand index (a tensor read twice appears
  /// twice). Cached by finalize() (the search asks per candidate); throws
  /// Error when the graph changed since (add_node/add_use without finalize()).
  const std::vector<NodeId>& operands(NodeId n) const;
  /// Distinct consumers of n, in ascending id order (cached as operands()).
  const std::vector<NodeId>& consumers(NodeId n) const;
  std::size_t num_uses(NodeId n) const { return boost::out_degree(n, g_); }
  /// n's operand edges (boost::in_edges order) and its uses (boost::out_edges
  /// order), from contiguous per-graph arrays built by finalize(): the cost
  /// model and the search walk edges per candidate, and Boost's bidirectional
  /// adjacency keeps each edge's property in a separate list node. Valid
  /// after finalize(); throws Error as operands() when the graph changed since.
  std::span<const InEdge> in_edges(NodeId n) const {
    check_adjacency();
    return {in_.data() + in_begin_[n], in_.data() + in_begin_[n + 1]};
  }
  std::span<const OutEdge> out_edges(NodeId n) const {
    check_adjacency();
    return {out_.data() + out_begin_[n], out_.data() + out_begin_[n + 1]};
  }
  /// node(n).op_class from a compact per-node array (finalize()), else from the node.
  OpClass op_class(NodeId n) const { return revision_ != 0 ? op_class_[n] : g_[n].op_class; }

  /// node(n).out.numel() and .bytes(), cached by finalize() (the search asks
  /// per candidate; shapes do not change after it). Before finalize(), or for
  /// a shape whose count overflows, computed on the spot (and throws as numel()).
  int64_t numel(NodeId n) const { return n < sizes_.size() && sizes_[n].numel >= 0 ? sizes_[n].numel : g_[n].out.numel(); }
  int64_t bytes(NodeId n) const { return n < sizes_.size() && sizes_[n].bytes >= 0 ? sizes_[n].bytes : g_[n].out.bytes(); }

  /// Topological order (valid after finalize()); position via topo_index().
  const std::vector<NodeId>& topo_order() const { return topo_; }
  std::size_t topo_index(NodeId n) const { return topo_pos_[n]; }

  /// True if a path p -> ... -> c of length >= 2 exists (i.e. other than the
  /// direct edge). Prunes by topological index: O(nodes between p and c).
  bool has_indirect_path(NodeId p, NodeId c) const;
  /// True if any path from any node in `from` to any node in `to` passes
  /// through a node in neither set (the merge of the two sets would be cyclic).
  bool has_path_outside(std::span<const NodeId> from, std::span<const NodeId> to) const;

  std::vector<NodeId> graph_inputs() const;   // SourceKind::graph_input, in declaration order
  std::vector<NodeId> graph_outputs() const;  // declaration order
  void set_graph_outputs(std::vector<NodeId> outs);

  const BoostGraph& boost() const { return g_; }

 private:
  BoostGraph g_;
  std::unordered_map<std::string, NodeId> by_name_;
  std::vector<NodeId> topo_;
  std::vector<std::size_t> topo_pos_;
  std::vector<NodeId> outputs_;
  struct Sizes {
    int64_t numel = -1, bytes = -1;  // -1: not cached
  };
  std::vector<Sizes> sizes_;  // per node, filled by finalize()
  std::vector<std::vector<NodeId>> operands_, consumers_;  // per node, filled by finalize()
  std::vector<InEdge> in_;     // every node's operand edges, node by node (finalize())
  std::vector<OutEdge> out_;   // every node's uses, node by node
  std::vector<std::size_t> in_begin_, out_begin_;  // node -> first entry in in_ / out_ (+ one end entry)
  std::vector<OpClass> op_class_;  // per node (finalize())
  void check_adjacency() const {
    if (!adjacency_cached_) throw_stale_adjacency();
  }
  [[noreturn]] void throw_stale_adjacency() const;
  bool adjacency_cached_ = false;  // operands_/consumers_ match the edges
  uint64_t revision_ = 0;
};

/// Number of primitives per op class that are not sources, and sources separately.
std::map<OpClass, int64_t> op_class_histogram(const Graph& g);

}  // namespace fuseplan
