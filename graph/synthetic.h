// Synthetic models for search-scaling benchmarks and `fuseplan gen`: stacked
// transformer blocks (LayerNormalization, projections with bias, Softmax
// scores, GELU MLP, residuals; [128,768] activations) and ResNet-like conv
// blocks (3x3 Conv with bias, BatchNormalization, Relu, twice, residual Add,
// Relu; [1,64,56,56] activations), or both side by side ("mixed": two inputs,
// two outputs). Shapes are fixed (no symbolic dims); weights are graph
// inputs without data. The model is produced as ONNX text syntax and imports
// with exactly the requested number of primitives (trailing Relu ops pad the
// last block).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "graph/graph.h"

namespace fuseplan {

enum class SyntheticKind { transformer, conv, mixed };

/// "transformer" | "conv" | "mixed"; throws Error naming the known kinds.
SyntheticKind synthetic_kind_from_string(std::string_view s);
std::string_view to_string(SyntheticKind k);

/// Largest primitive count the generator accepts (the text is ~30 bytes per primitive).
inline constexpr int64_t kMaxSyntheticPrimitives = 2'000'000;

/// Smallest primitive count of `kind` (one block of each trunk).
int64_t min_synthetic_primitives(SyntheticKind kind);

/// ONNX text (.onnxtxt) of a model that imports with exactly `primitives`
/// primitives (non-source nodes). Throws Error when `primitives` is below
/// min_synthetic_primitives(kind) or above kMaxSyntheticPrimitives.
std::string synthetic_onnx_text(SyntheticKind kind, int64_t primitives);

/// The same model as a serialised binary ModelProto (.onnx).
std::string synthetic_onnx_binary(SyntheticKind kind, int64_t primitives);

/// The same model imported (no dims to bind).
Graph synthetic_graph(SyntheticKind kind, int64_t primitives);

}  // namespace fuseplan
