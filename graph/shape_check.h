// Cross-check of fuseplan's shape inference against libonnx's
// (onnx::shape_inference::InferShapes), for models whose default-domain
// opset libonnx 1.12 knows (<= 17).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/import.h"

namespace fuseplan {

/// Newest default-domain opset libonnx's shape inference is run on.
inline constexpr int kLibOnnxMaxOpset = 17;

/// Runs libonnx shape inference on the model at `path` (format by extension,
/// as import_model) with every graph input bound to the shape it has in `g`
/// (the graph import_model(path, opts) returned), and compares every tensor
/// shape libonnx infers fully with the primitive of the same name in `g`.
/// Returns one line per mismatch. Declared value_info and output shapes are
/// dropped first (they may be wrong). Returns no lines when the opset is newer
/// than kLibOnnxMaxOpset or libonnx throws (never throws itself, except
/// fuseplan::Error when the file cannot be read or parsed).
std::vector<std::string> cross_check_shapes(const std::string& path, const Graph& g, int* compared = nullptr);

}  // namespace fuseplan
