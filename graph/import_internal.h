// Internal to graph/: the state shared by the importer's passes (loading,
// dim binding, shape inference, folding, lowering).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "graph/graph.h"
#include "graph/import.h"
#include "graph/op.h"

namespace fuseplan::detail {

/// Largest tensor (elements) the importer evaluates at import time.
inline constexpr int64_t kFoldLimit = 65536;
/// Newest default-domain opset the importer accepts.
inline constexpr int64_t kMaxOpset = 22;

/// A tensor value known at import time. Integer/bool dtypes use `i`, float
/// dtypes use `f`; `fill` (with both empty) repeats one value over the shape.
struct Const {
  TensorType type;
  std::vector<int64_t> i;
  std::vector<double> f;
  std::optional<double> fill;
  bool is_float() const;
  int64_t size() const;  // element count held (or numel for a fill)
  double at_f(int64_t k) const;
  int64_t at_i(int64_t k) const;
  std::vector<int64_t> ints() const;  // values as int64 (floats truncated)
};
using ConstPtr = std::shared_ptr<const Const>;

/// One ONNX tensor during import.
struct Tensor {
  enum class Kind { data_input, weight, constant, computed };
  Kind kind = Kind::computed;
  TensorType type;
  bool known = true;             // false downstream of data-dependent ops
  int taint_root = -1;           // index into Ctx::roots when !known
  ConstPtr k;                    // value when known and small enough (or a fill)
  ConstData wdata;               // weight data (initializers, may be large)
  NodeId node = kNoNode;         // primitive producing it, created lazily for sources
};

/// Read-only view of a node's attributes.
struct Attrs {
  const onnx::NodeProto& n;
  const onnx::AttributeProto* find(const std::string& k) const;
  bool has(const std::string& k) const { return find(k) != nullptr; }
  int64_t i(const std::string& k, int64_t d) const;
  double f(const std::string& k, double d) const;
  std::string s(const std::string& k, const std::string& d = "") const;
  std::vector<int64_t> ints(const std::string& k) const;
  std::vector<double> floats(const std::string& k) const;
};

struct Ctx {
  Graph g;
  ImportOptions opts;
  int64_t opset = 1;
  std::unordered_map<std::string, Tensor> t;
  std::map<std::string, int64_t> dims;  // bound dim_params
  std::set<std::string> warned_ops;
  struct Root { std::string what; int64_t count = 0; };
  std::vector<Root> roots;
  // current node (for origin/onnx_op of emitted primitives)
  const onnx::NodeProto* cur = nullptr;
  std::string origin;

  Tensor& tensor(const std::string& name);  // throws Error when absent
  bool has(const std::string& name) const { return !name.empty() && t.count(name); }
  /// The primitive producing `name`, creating its source primitive on first use.
  NodeId use(const std::string& name);
  /// Adds a primitive of op `op` for the current node, classifies it, wires operands.
  NodeId emit(const std::string& name, Op op, const TensorType& out, const std::vector<NodeId>& operands,
              std::map<std::string, AttrValue> attrs = {});
  /// As emit, for an op named by the model: the node's own op type when it
  /// is lowered 1:1, or an opaque op ("domain:Op" outside the default domain).
  NodeId emit(const std::string& name, const std::string& op, const TensorType& out,
              const std::vector<NodeId>& operands, std::map<std::string, AttrValue> attrs = {});
  /// A new source primitive (Weight/Constant) holding `c`, named `name`.
  NodeId emit_const(const std::string& name, const Const& c, bool weight);
  /// Scalar float Constant named origin/suffix.
  NodeId scalar(const std::string& suffix, double v, DType dt = DType::f32);
  /// origin + "/" + suffix, made unique against every ONNX tensor name.
  std::string sub(const std::string& suffix) const;
  std::unordered_set<std::string> reserved;  // every ONNX tensor name of the model
  void warn(const std::string& line) { g.warnings.push_back(line); }
};

// ---- import.cpp
/// The op type of `n`, prefixed with its domain outside the default domain
/// ("Add", "com.microsoft:Attention"); op_from_name of it is the node's Op.
std::string onnx_op_name(const onnx::NodeProto& n);

// ---- onnx_load.cpp
onnx::ModelProto load_binary(std::string_view bytes);
onnx::ModelProto load_text(std::string_view text);
int64_t check_opset(const onnx::ModelProto& m);  // returns default-domain opset
/// Every string of `m` that fuseplan prints or writes through escape_name
/// (support/format.h), in place; load_binary and load_text apply it. Throws
/// Error when two tensor names escape alike.
void escape_model_names(onnx::ModelProto& m);

// ---- tensor_data.cpp
/// Converts an initializer / Constant value. Large tensors give only wdata.
void read_tensor(const onnx::TensorProto& tp, Tensor& out, bool keep_const);
ConstData to_const_data(const Const& c);
ConstPtr make_const(DType dt, std::vector<int64_t> shape, std::vector<int64_t> i, std::vector<double> f);

// ---- bind_dims.cpp
/// Graph inputs that are data inputs (not initializers, not weight placeholders).
std::vector<bool> data_input_mask(const onnx::GraphProto& g);
/// Binds every graph input's type into ctx.t (data inputs and weight placeholders).
void bind_inputs(Ctx& ctx, const onnx::GraphProto& g);
/// Binds a declared type (value_info) with the same dim table; nullopt if not concrete.
std::optional<TensorType> bind_declared(const Ctx& ctx, const onnx::TypeProto& tp);

// ---- shape_infer.cpp
/// Output types of a node from its input tensors (nullptr for absent optional
/// inputs). Returns nullopt for an op it does not know. An entry with
/// known=false means the output shape is data dependent.
/// `op` is op_from_name(onnx_op_name(n)).
std::optional<std::vector<TensorType>> infer_shapes(const onnx::NodeProto& n, Op op,
                                                    const std::vector<const Tensor*>& in, int64_t opset);
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
int64_t norm_axis(int64_t axis, int64_t rank);

/// Slice parameters {starts, ends, axes, steps}, normalised and clamped to the
/// input shape (axes non-negative; with a negative step an end of -1 means
/// "through index 0"). ok=false when an operand is not constant.
std::vector<std::vector<int64_t>> slice_params(const onnx::NodeProto& n, const std::vector<const Tensor*>& in,
                                               int64_t opset, bool& ok);

// ---- fold.cpp
/// Evaluates a node (of op `op`) whose inputs are constants; nullopt if not foldable.
std::optional<std::vector<ConstPtr>> fold_node(const onnx::NodeProto& n, Op op, const std::vector<const Tensor*>& in,
                                               const std::vector<TensorType>& out_types, int64_t opset);

// ---- lower.cpp / decompose.cpp
/// Emits the primitives of one node of op `op` (shapes in ctx.t for its outputs already set).
void lower_node(Ctx& ctx, const onnx::NodeProto& n, Op op);
/// Composite ops; returns false when `op` is not one of them.
bool decompose_node(Ctx& ctx, const onnx::NodeProto& n, Op op);
/// One opaque primitive per output.
void emit_opaque(Ctx& ctx, const onnx::NodeProto& n);

// ---- import.cpp
Graph import_proto(const onnx::ModelProto& m, const ImportOptions& opts, const std::string& name);

}  // namespace fuseplan::detail
