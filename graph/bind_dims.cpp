// Graph inputs: which are data inputs and which are weight placeholders, and
// binding their symbolic dims (--batch, --dim NAME=V). See graph/README.md.
#include <algorithm>
#include <unordered_set>

#include "graph/import_internal.h"

namespace fuseplan::detail {
namespace {
bool dim_static(const onnx::TensorShapeProto::Dimension& d) { return d.has_dim_value() && d.dim_value() > 0; }

// Operand slots that carry activations, never weights: an input read there
// is data. `op` is the node's op type in any domain.
bool activation_slot(Op op, int slot) {
  if (slot == 0)
    return one_of(op, {Op::Conv, Op::ConvTranspose, Op::MatMul, Op::Gemm, Op::BatchNormalization,
                       Op::InstanceNormalization, Op::LayerNormalization, Op::MaxPool, Op::AveragePool,
                       Op::GlobalAveragePool, Op::GlobalMaxPool, Op::Softmax, Op::LogSoftmax, Op::Loop, Op::If,
                       Op::Scan, Op::NonZero, Op::TopK});
  return slot == 1 && one_of(op, {Op::Gather, Op::GatherElements, Op::GatherND});
}

// Named dims of `vi` (a declared tensor type) appended to `out` once each.
void add_dim_params(const onnx::ValueInfoProto& vi, std::vector<std::string>& out) {
  if (!vi.type().tensor_type().has_shape()) return;
  for (const auto& d : vi.type().tensor_type().shape().dim())
    if (d.has_dim_param() && !d.dim_param().empty() &&
        std::find(out.begin(), out.end(), d.dim_param()) == out.end())
      out.push_back(d.dim_param());
}

// The dim_params of the declared types --dim also binds (bind_declared):
// outputs, value_info, and every subgraph's inputs, outputs and value_info.
// Recurses per subgraph level: loading refused models deeper than kMaxSubgraphDepth.
void add_declared_dims(const onnx::GraphProto& g, std::vector<std::string>& out, bool with_inputs, int depth = 0) {
  FUSEPLAN_ASSERT(depth <= kMaxSubgraphDepth,
                  "subgraph depth " + std::to_string(depth) + " past the limit checked at loading");
  if (with_inputs)
    for (const auto& vi : g.input()) add_dim_params(vi, out);
  for (const auto& vi : g.output()) add_dim_params(vi, out);
  for (const auto& vi : g.value_info()) add_dim_params(vi, out);
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g()) add_declared_dims(a.g(), out, true, depth + 1);
      for (const auto& sub : a.graphs()) add_declared_dims(sub, out, true, depth + 1);
    }
}

// Graph::symbolic_dims (graph.h): the inputs' dims first ("x:k" for an
// unnamed one), then the declared types'.
std::vector<std::string> symbolic_dim_names(const onnx::GraphProto& g) {
  std::unordered_set<std::string> inits;
  for (const auto& i : g.initializer()) inits.insert(i.name());
  std::vector<std::string> out;
  for (const auto& in : g.input()) {
    if (inits.count(in.name()) || !in.type().tensor_type().has_shape()) continue;
    const auto& sh = in.type().tensor_type().shape();
    for (int d = 0; d < sh.dim_size(); ++d) {
      if (dim_static(sh.dim(d))) continue;
      const auto& dim = sh.dim(d);
      const std::string name =
          dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param() : in.name() + ":" + std::to_string(d);
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
  }
  add_declared_dims(g, out, false);
  return out;
}

// With known_dims_only: a --dim NAME the model does not have is an error.
void check_known_dims(const ImportOptions& opts, const std::vector<std::string>& known) {
  if (!opts.known_dims_only) return;
  for (const auto& [name, v] : opts.dims) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw Error("--dim " + name + ": the model has no symbolic dim '" + name + "' (" +
                (known.empty() ? std::string("its shapes are all static") : "its symbolic dims: " + list) + ")");
  }
}

// --batch B binds the batch dim (graph/README.md, "Binding dims"): the
// leading dim of the first data input whose leading dim is symbolic, by name
// wherever that name appears (an unnamed one by position). Another data
// input's symbolic leading dim under a different name (or unnamed) is bound
// too only when that name indexes no other axis of any graph input (as
// tf2onnx's unk__N, one per input), with one warning line naming them; a
// name that does ([S, S] masks, S of x[N, S, D]) is left to --dim. --dim
// wins. Returns the batch dim as "'N' of 'x'" ("" when no input has one).
std::string bind_batch(Ctx& ctx, const onnx::GraphProto& g, const std::vector<bool>& mask, std::vector<int>& batch_dim) {
  std::unordered_set<std::string> inits, inner;  // inner: names at a non-leading axis of some graph input
  for (const auto& i : g.initializer()) inits.insert(i.name());
  for (const auto& in : g.input()) {
    if (inits.count(in.name()) || !in.type().tensor_type().has_shape()) continue;
    const auto& sh = in.type().tensor_type().shape();
    for (int d = 1; d < sh.dim_size(); ++d)
      if (sh.dim(d).has_dim_param() && !sh.dim(d).dim_param().empty()) inner.insert(sh.dim(d).dim_param());
  }
  auto describe = [](const std::string& name, const std::string& input) {
    return (name.empty() ? std::string("unnamed dim 0") : "'" + name + "'") + " of '" + input + "'";
  };
  std::optional<std::string> batch_name;
  std::string batch_input, also;
  for (int k = 0; k < g.input_size(); ++k) {
    const auto& in = g.input(k);
    if (!mask[k] || inits.count(in.name()) || !in.type().tensor_type().has_shape()) continue;
    const auto& sh = in.type().tensor_type().shape();
    if (sh.dim_size() == 0 || dim_static(sh.dim(0))) continue;
    const std::string name = sh.dim(0).has_dim_param() ? sh.dim(0).dim_param() : "";
    if (!batch_name) {
      batch_name = name;
      batch_input = in.name();
    } else if (name != *batch_name) {
      if (ctx.opts.dims.count(name.empty() ? in.name() + ":0" : name)) continue;  // --dim binds it
      if (!name.empty() && inner.count(name)) continue;  // not a batch dim: the unbound-dim error says so
      also += (also.empty() ? "" : ", ") + describe(name, in.name());
    }
    if (name.empty()) batch_dim[k] = 0;
    else if (!ctx.dims.count(name)) ctx.dims[name] = *ctx.opts.batch;
  }
  if (!batch_name) return "";
  const std::string batch = describe(*batch_name, batch_input);
  // --dim wins over --batch (README: binding rule); say so, or `tune --batch
  // 1,64 --dim N=3` tunes N=3 twice and names the plans b1 and b64.
  if (auto it = ctx.opts.dims.find(*batch_name);
      !batch_name->empty() && it != ctx.opts.dims.end() && it->second != *ctx.opts.batch)
    ctx.warn("--batch " + std::to_string(*ctx.opts.batch) + " is ignored: --dim " + it->first + "=" +
             std::to_string(it->second) + " binds the batch dim " + batch);
  if (!also.empty())
    ctx.warn("--batch binds the batch dim " + batch + " and also the leading dims " + also +
             " (named differently, but at no other axis of any input; --dim NAME=V binds one otherwise)");
  return batch;
}
}  // namespace

std::vector<bool> data_input_mask(const onnx::GraphProto& g) {
  std::unordered_set<std::string> inits;
  for (const auto& i : g.initializer()) inits.insert(i.name());
  std::unordered_set<std::string> act;
  for (const auto& n : g.node()) {
    const Op op = op_from_name(n.op_type());
    for (int s = 0; s < n.input_size(); ++s)
      if (activation_slot(op, s)) act.insert(n.input(s));
  }
  std::vector<bool> mask(g.input_size(), false);
  bool first = true;
  for (int k = 0; k < g.input_size(); ++k) {
    const auto& in = g.input(k);
    if (inits.count(in.name())) continue;
    bool data = first;
    first = false;
    const auto& tt = in.type().tensor_type();
    if (!in.type().has_tensor_type() || !tt.has_shape()) data = true;
    else
      for (const auto& d : tt.shape().dim())
        if (!dim_static(d)) data = true;
    if (act.count(in.name())) data = true;
    mask[k] = data;
  }
  return mask;
}

void bind_inputs(Ctx& ctx, const onnx::GraphProto& g) {
  for (auto& [k, v] : ctx.opts.dims)
    if (v <= 0) throw Error("invalid value " + std::to_string(v) + " for dim '" + k + "' (must be >= 1)");
  if (ctx.opts.batch && *ctx.opts.batch <= 0)
    throw Error("invalid batch " + std::to_string(*ctx.opts.batch) + " (must be >= 1)");
  ctx.g.symbolic_dims = symbolic_dim_names(g);
  check_known_dims(ctx.opts, ctx.g.symbolic_dims);
  ctx.dims = ctx.opts.dims;
  std::unordered_set<std::string> inits;
  for (const auto& i : g.initializer()) inits.insert(i.name());
  std::vector<bool> mask = data_input_mask(g);
  for (int k = 0; k < g.input_size(); ++k) {  // Graph::batch_dim: as bind_batch picks it
    const auto& in = g.input(k);
    if (!mask[k] || inits.count(in.name()) || !in.type().tensor_type().has_shape()) continue;
    const auto& sh = in.type().tensor_type().shape();
    if (sh.dim_size() == 0 || dim_static(sh.dim(0))) continue;
    ctx.g.batch_dim = sh.dim(0).has_dim_param() ? sh.dim(0).dim_param() : "";
    break;
  }
  // --batch: the batch dim (bind_batch); unnamed leading dims it binds by position.
  std::vector<int> batch_dim(g.input_size(), -1);
  const std::string batch = ctx.opts.batch ? bind_batch(ctx, g, mask, batch_dim) : "";
  if (ctx.opts.batch && batch.empty())
    ctx.warn("--batch " + std::to_string(*ctx.opts.batch) +
             " is ignored: no data input has a symbolic leading (batch) dim" +
             (ctx.g.symbolic_dims.empty() ? std::string(" (the model's shapes are static)") : ""));
  const std::string batch_note = batch.empty() ? "" : "; --batch binds only the batch dim " + batch;
  // Without --batch, an unbound leading dim of a data input is what --batch binds.
  auto use = [&](int k, int d, const std::string& dim_arg) {
    if (!ctx.opts.batch && d == 0 && mask[k]) return "use --batch B to bind the batch dim, or --dim " + dim_arg + "=V";
    return "use --dim " + dim_arg + "=V" + batch_note;
  };
  for (int k = 0; k < g.input_size(); ++k) {
    const auto& in = g.input(k);
    if (inits.count(in.name())) continue;
    if (ctx.t.count(in.name())) throw Error("graph input '" + in.name() + "' is declared twice");
    if (in.name().empty()) throw Error("graph input " + std::to_string(k) + " has an empty name");
    Tensor t;
    t.kind = mask[k] ? Tensor::Kind::data_input : Tensor::Kind::weight;
    if (!in.type().has_tensor_type()) throw Error("graph input '" + in.name() + "' is not a tensor");
    const auto& tt = in.type().tensor_type();
    t.type.dtype = dtype_from_onnx(tt.elem_type());
    if (!tt.has_shape()) throw Error("graph input '" + in.name() + "' has no shape (rank unknown)");
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() < -1)
        throw Error("graph input '" + in.name() + "' has negative dim " + std::to_string(dim.dim_value()));
      auto pos = ctx.opts.dims.find(in.name() + ":" + std::to_string(d));
      if (dim_static(dim)) t.type.shape.push_back(dim.dim_value());
      else if (pos != ctx.opts.dims.end()) t.type.shape.push_back(pos->second);
      else if (dim.has_dim_param() && !dim.dim_param().empty() && ctx.dims.count(dim.dim_param()))
        t.type.shape.push_back(ctx.dims.at(dim.dim_param()));
      else if (d == batch_dim[k]) t.type.shape.push_back(*ctx.opts.batch);
      else if (dim.has_dim_param() && !dim.dim_param().empty())
        throw Error("unbound symbolic dim '" + dim.dim_param() + "' of input '" + in.name() + "' (" +
                    use(k, d, dim.dim_param()) + ")");
      else
        throw Error("unbound unnamed dim " + std::to_string(d) + " of input '" + in.name() + "' (" +
                    use(k, d, in.name() + ":" + std::to_string(d)) + ")");
    }
    t.type.numel();  // overflow check
    ctx.t.emplace(in.name(), std::move(t));
  }
}

std::optional<TensorType> bind_declared(const Ctx& ctx, const onnx::TypeProto& tp) {
  if (!tp.has_tensor_type() || !tp.tensor_type().has_shape()) return std::nullopt;
  TensorType t;
  t.dtype = dtype_from_onnx(tp.tensor_type().elem_type());
  for (const auto& d : tp.tensor_type().shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) t.shape.push_back(d.dim_value());
    else if (d.has_dim_param() && ctx.dims.count(d.dim_param())) t.shape.push_back(ctx.dims.at(d.dim_param()));
    else return std::nullopt;
  }
  return t;
}

}  // namespace fuseplan::detail
