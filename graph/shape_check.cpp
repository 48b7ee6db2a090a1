// libonnx shape inference as an independent check of graph/shape_infer.cpp.
#include "graph/shape_check.h"

#include <onnx/shape_inference/implementation.h>

#include "graph/import_internal.h"
#include "support/input_file.h"

namespace fuseplan {

std::vector<std::string> cross_check_shapes(const std::string& path, const Graph& g, int* compared) {
  if (compared) *compared = 0;
  const std::string bytes = read_input_file(path, "model file", kMaxModelFileBytes);
  bool text = path.size() > 8 && (path.ends_with(".onnxtxt") || path.ends_with(".txt"));
  onnx::ModelProto m = text ? detail::load_text(bytes) : detail::load_binary(bytes);
  if (detail::check_opset(m) > kLibOnnxMaxOpset) return {};
  auto* gp = m.mutable_graph();
  gp->clear_value_info();
  for (auto& o : *gp->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  for (auto& in : *gp->mutable_input()) {
    NodeId v = g.find(in.name());
    if (v == kNoNode || !g.node(v).out.known) continue;
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : g.node(v).out.shape) shape->add_dim()->set_dim_value(d);
  }
  try {
    onnx::ShapeInferenceOptions opts(false, 0, true);
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception&) {
    return {};
  }
  std::vector<std::string> out;
  auto check = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().tensor_type().has_shape()) return;
    std::vector<int64_t> s;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    NodeId v = g.find(vi.name());
    if (v == kNoNode || !g.node(v).out.known || g.node(v).op_class == OpClass::source) return;
    if (compared) ++*compared;
    if (g.node(v).out.shape != s)
      out.push_back("tensor '" + vi.name() + "': fuseplan " + g.node(v).out.str() + ", libonnx " +
                    TensorType{g.node(v).out.dtype, s}.str());
  };
  for (const auto& vi : m.graph().value_info()) check(vi);
  for (const auto& vi : m.graph().output()) check(vi);
  return out;
}

}  // namespace fuseplan
