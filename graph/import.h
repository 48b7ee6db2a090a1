// ONNX import: binary protobuf (.onnx) and ONNX text syntax (.onnxtxt) through
// libonnx, symbolic-dim binding, fuseplan's own shape inference, constant
// folding of shape computations, decomposition of composite ops into
// primitives and op-class classification. See graph/README.md and docs/ir.md
// for the primitive ops and their attributes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "graph/graph.h"

namespace fuseplan {

/// How symbolic dims are bound.
/// `batch`: binds the leading dim of every *data* graph input (not weight
/// placeholders) when that dim is symbolic (a dim_param or -1/0/unset).
/// `dims`: binds a named dim_param anywhere; it wins over `batch`.
struct ImportOptions {
  std::optional<int64_t> batch;
  std::map<std::string, int64_t> dims;
};

/// Imports a model file; the format is chosen by extension (.onnxtxt/.txt =
/// text syntax, else binary protobuf). Throws Error (one line) for a missing,
/// empty, truncated or corrupt file, a text syntax error, a cycle, a dangling
/// tensor name, an unbound symbolic dim (naming it), an invalid or
/// overflowing shape, or an opset newer than 21. Unknown ops never throw: they
/// become `opaque` primitives with one warning each in Graph::warnings.
Graph import_model(const std::string& path, const ImportOptions& opts);
/// Same, from the bytes of a binary ModelProto.
Graph import_onnx_binary(std::string_view bytes, const ImportOptions& opts, const std::string& name = "model");
/// Same, from ONNX text syntax.
Graph import_onnx_text(std::string_view text, const ImportOptions& opts, const std::string& name = "model");

}  // namespace fuseplan
