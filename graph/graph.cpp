#include "graph/graph.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <sstream>
#include <unordered_set>

#include <boost/graph/topological_sort.hpp>

namespace fuseplan {

int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::f64: return 8;
    case DType::i8: return 1;
    case DType::u8: return 1;
    case DType::i16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
    case DType::string: return 0;
    case DType::unknown: return 0;
  }
  return 0;
}

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::i16: return "i16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
    case DType::string: return "string";
    case DType::unknown: return "unknown";
  }
  return "unknown";
}

DType dtype_from_onnx(int e) {
  // Values of onnx::TensorProto_DataType (onnx.proto).
  switch (e) {
    case 1: return DType::f32;
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 5: return DType::i16;
    case 6: return DType::i32;
    case 7: return DType::i64;
    case 8: return DType::string;
    case 9: return DType::boolean;
    case 10: return DType::f16;
    case 11: return DType::f64;
    case 16: return DType::bf16;
    default: return DType::unknown;
  }
}

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("negative dimension " + std::to_string(d) + " in shape " + str());
    // The search calls this per candidate: an overflow-checked multiply, not a division.
    if (__builtin_mul_overflow(n, d, &n)) throw Error("element count of shape " + str() + " overflows int64");
  }
  return n;
}

int64_t TensorType::bytes() const {
  int64_t n = numel();
  int64_t b = dtype_bytes(dtype);
  if (__builtin_mul_overflow(n, b, &b)) throw Error("byte size of shape " + str() + " overflows int64");
  return b;
}

std::string TensorType::str() const {
  std::ostringstream os;
  os << to_string(dtype) << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  if (!known) os << "?";
  return os.str();
}

namespace {
constexpr std::string_view kOpClassNames[kNumOpClasses] = {
    "elementwise", "broadcast", "reshape", "injective", "layout",      "reduction",
    "gather",      "scatter",   "scan",    "contraction", "opaque", "source"};
}

std::string_view to_string(OpClass c) { return kOpClassNames[static_cast<int>(c)]; }

OpClass op_class_from_string(std::string_view s) {
  for (int i = 0; i < kNumOpClasses; ++i)
    if (kOpClassNames[i] == s) return static_cast<OpClass>(i);
  throw Error("unknown op class '" + std::string(s) + "'");
}

int64_t Primitive::attr_int(const std::string& k, int64_t dflt) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return dflt;
  if (auto p = std::get_if<int64_t>(&it->second)) return *p;
  if (auto p = std::get_if<double>(&it->second)) return static_cast<int64_t>(*p);
  return dflt;
}

double Primitive::attr_float(const std::string& k, double dflt) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return dflt;
  if (auto p = std::get_if<double>(&it->second)) return *p;
  if (auto p = std::get_if<int64_t>(&it->second)) return static_cast<double>(*p);
  return dflt;
}

std::vector<int64_t> Primitive::attr_ints(const std::string& k) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return {};
  if (auto p = std::get_if<std::vector<int64_t>>(&it->second)) return *p;
  if (auto p = std::get_if<int64_t>(&it->second)) return {*p};
  return {};
}

std::string Primitive::attr_string(const std::string& k, const std::string& dflt) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return dflt;
  if (auto p = std::get_if<std::string>(&it->second)) return *p;
  return dflt;
}

NodeId Graph::add_node(Primitive p) {
  if (by_name_.count(p.name)) throw Error("duplicate tensor name '" + p.name + "'");
  p.kind = op_from_name(p.op);
  p.onnx_kind = op_from_name(p.onnx_op);
  std::string nm = p.name;
  NodeId v = boost::add_vertex(std::move(p), g_);
  by_name_.emplace(std::move(nm), v);
  adjacency_cached_ = false;
  revision_ = 0;
  return v;
}

void Graph::add_use(NodeId producer, NodeId consumer, int operand) {
  boost::add_edge(producer, consumer, Use{operand}, g_);
  adjacency_cached_ = false;
  revision_ = 0;
}

void Graph::finalize() {
  topo_.clear();
  std::vector<NodeId> rev;
  rev.reserve(size());
  try {
    boost::topological_sort(g_, std::back_inserter(rev));
  } catch (const boost::not_a_dag&) {
    throw Error("graph '" + name + "' contains a cycle");
  }
  topo_.assign(rev.rbegin(), rev.rend());
  topo_pos_.assign(size(), 0);
  for (std::size_t i = 0; i < topo_.size(); ++i) topo_pos_[topo_[i]] = i;
  sizes_.assign(size(), Sizes{});
  for (NodeId n = 0; n < size(); ++n) {
    g_[n].kind = op_from_name(g_[n].op);  // node_mut() may have changed the op
    g_[n].onnx_kind = op_from_name(g_[n].onnx_op);
    try {
      sizes_[n] = {g_[n].out.numel(), g_[n].out.bytes()};
    } catch (const Error&) {
      // Left uncached: numel()/bytes() throw when (and if) someone asks.
    }
  }
  operands_.assign(size(), {});
  consumers_.assign(size(), {});
  std::vector<std::pair<int, NodeId>> ops;
  for (NodeId n = 0; n < size(); ++n) {
    ops.clear();
    for (auto [it, end] = boost::in_edges(n, g_); it != end; ++it) ops.emplace_back(g_[*it].operand, boost::source(*it, g_));
    std::sort(ops.begin(), ops.end());
    operands_[n].reserve(ops.size());
    for (auto& [i, p] : ops) operands_[n].push_back(p);
    auto& cs = consumers_[n];
    for (auto [it, end] = boost::out_edges(n, g_); it != end; ++it) cs.push_back(boost::target(*it, g_));
    std::sort(cs.begin(), cs.end());
    cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
  }
  in_.clear();
  out_.clear();
  in_begin_.assign(size() + 1, 0);
  out_begin_.assign(size() + 1, 0);
  op_class_.resize(size());
  for (NodeId n = 0; n < size(); ++n) {
    in_begin_[n] = in_.size();
    for (auto [it, end] = boost::in_edges(n, g_); it != end; ++it) in_.push_back({boost::source(*it, g_), g_[*it].operand});
    out_begin_[n] = out_.size();
    for (auto [it, end] = boost::out_edges(n, g_); it != end; ++it) out_.push_back({boost::target(*it, g_), g_[*it].operand});
    op_class_[n] = g_[n].op_class;
  }
  in_begin_[size()] = in_.size();
  out_begin_[size()] = out_.size();
  adjacency_cached_ = true;
  static std::atomic<uint64_t> next_revision{0};
  revision_ = ++next_revision;
}

NodeId Graph::find(std::string_view nm) const {
  auto it = by_name_.find(std::string(nm));
  return it == by_name_.end() ? kNoNode : it->second;
}

NodeId Graph::at(std::string_view nm) const {
  NodeId n = find(nm);
  if (n == kNoNode) throw Error("no primitive named '" + std::string(nm) + "'");
  return n;
}

void Graph::throw_stale_adjacency() const {
  throw Error("graph '" + name + "' changed since finalize(): call finalize() before walking its edges");
}

const std::vector<NodeId>& Graph::operands(NodeId n) const {
  if (!adjacency_cached_) throw Error("graph '" + name + "' changed since finalize(): call finalize() before operands()");
  return operands_[n];
}

const std::vector<NodeId>& Graph::consumers(NodeId n) const {
  if (!adjacency_cached_) throw Error("graph '" + name + "' changed since finalize(): call finalize() before consumers()");
  return consumers_[n];
}

bool Graph::has_indirect_path(NodeId p, NodeId c) const {
  std::size_t limit = topo_pos_[c];
  std::vector<NodeId> stack;
  std::vector<char> seen(size(), 0);
  for (NodeId s : consumers(p))
    if (s != c && topo_pos_[s] < limit) stack.push_back(s);
  while (!stack.empty()) {
    NodeId v = stack.back();
    stack.pop_back();
    if (seen[v]) continue;
    seen[v] = 1;
    for (auto [it, end] = boost::out_edges(v, g_); it != end; ++it) {
      NodeId w = boost::target(*it, g_);
      if (w == c) return true;
      if (!seen[w] && topo_pos_[w] < limit) stack.push_back(w);
    }
  }
  return false;
}

bool Graph::has_path_outside(std::span<const NodeId> from, std::span<const NodeId> to) const {
  if (from.empty() || to.empty()) return false;
  std::unordered_set<NodeId> in_from(from.begin(), from.end()), in_to(to.begin(), to.end());
  std::size_t limit = 0;
  for (NodeId t : to) limit = std::max(limit, topo_pos_[t]);
  std::vector<NodeId> stack;
  std::unordered_set<NodeId> seen;
  for (NodeId f : from)
    for (auto [it, end] = boost::out_edges(f, g_); it != end; ++it) {
      NodeId w = boost::target(*it, g_);
      if (!in_from.count(w) && !in_to.count(w) && topo_pos_[w] < limit) stack.push_back(w);
    }
  while (!stack.empty()) {
    NodeId v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    for (auto [it, end] = boost::out_edges(v, g_); it != end; ++it) {
      NodeId w = boost::target(*it, g_);
      if (in_to.count(w)) return true;
      if (!in_from.count(w) && !seen.count(w) && topo_pos_[w] < limit) stack.push_back(w);
    }
  }
  return false;
}

std::vector<NodeId> Graph::graph_inputs() const {
  std::vector<NodeId> out;
  for (NodeId v = 0; v < size(); ++v)
    if (g_[v].source == SourceKind::graph_input) out.push_back(v);
  return out;
}

std::vector<NodeId> Graph::graph_outputs() const { return outputs_; }

void Graph::set_graph_outputs(std::vector<NodeId> outs) {
  for (NodeId o : outputs_) g_[o].is_graph_output = false;
  outputs_ = std::move(outs);
  for (NodeId o : outputs_) g_[o].is_graph_output = true;
}

std::map<OpClass, int64_t> op_class_histogram(const Graph& g) {
  std::map<OpClass, int64_t> h;
  for (NodeId v = 0; v < g.size(); ++v) h[g.node(v).op_class]++;
  return h;
}

}  // namespace fuseplan
