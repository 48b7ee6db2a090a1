// Graph inputs: which are data inputs and which are weight placeholders, and
// binding their symbolic dims (--batch, --dim NAME=V). See graph/README.md.
#include <unordered_set>

#include "graph/import_internal.h"

namespace fuseplan::detail {
namespace {
bool dim_static(const onnx::TensorShapeProto::Dimension& d) { return d.has_dim_value() && d.dim_value() > 0; }

// Operand slots that carry activations, never weights: an input read there is data.
bool activation_slot(const std::string& op, int slot) {
  static const std::unordered_set<std::string> first = {
      "Conv", "ConvTranspose", "MatMul", "Gemm", "BatchNormalization", "InstanceNormalization",
      "LayerNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Softmax",
      "LogSoftmax", "Loop", "If", "Scan", "NonZero", "TopK"};
  if (slot == 0 && first.count(op)) return true;
  if ((op == "Gather" || op == "GatherElements" || op == "GatherND") && slot == 1) return true;
  return false;
}
}  // namespace

std::vector<bool> data_input_mask(const onnx::GraphProto& g) {
  std::unordered_set<std::string> inits;
  for (const auto& i : g.initializer()) inits.insert(i.name());
  std::unordered_set<std::string> act;
  for (const auto& n : g.node())
    for (int s = 0; s < n.input_size(); ++s)
      if (activation_slot(n.op_type(), s)) act.insert(n.input(s));
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
  ctx.dims = ctx.opts.dims;
  std::unordered_set<std::string> inits;
  for (const auto& i : g.initializer()) inits.insert(i.name());
  std::vector<bool> mask = data_input_mask(g);
  // --batch: the first still-symbolic dim of every data input.
  std::vector<int> batch_dim(g.input_size(), -1);
  for (int k = 0; k < g.input_size(); ++k) {
    if (!mask[k] || !ctx.opts.batch) continue;
    const auto& tt = g.input(k).type().tensor_type();
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim_static(dim)) continue;
      if (ctx.dims.count(g.input(k).name() + ":" + std::to_string(d))) continue;
      if (dim.has_dim_param() && !dim.dim_param().empty()) {
        if (ctx.dims.count(dim.dim_param())) continue;
        ctx.dims[dim.dim_param()] = *ctx.opts.batch;
      } else {
        batch_dim[k] = d;
      }
      break;
    }
  }
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
        throw Error("unbound symbolic dim '" + dim.dim_param() + "' of input '" + in.name() + "' (use --dim " +
                    dim.dim_param() + "=V)");
      else
        throw Error("unbound unnamed dim " + std::to_string(d) + " of input '" + in.name() + "' (use --dim " +
                    in.name() + ":" + std::to_string(d) + "=V)");
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
