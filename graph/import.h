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
/// `batch`: binds the batch dim: the leading dim of the first *data* graph
/// input (not a weight placeholder) whose leading dim is symbolic (a
/// dim_param or -1/0/unset), by name wherever that name appears (unnamed: that
/// input's leading dim). Another data input's symbolic leading dim with a
/// different name is bound too only when that name is at no other axis of any
/// graph input (tf2onnx's unk__N per input), adding one line to
/// Graph::warnings; one that is ([S, S] masks) is left to `dims`. Only leading
/// dims: x[1, S] is not touched.
/// `dims`: binds a named dim_param anywhere; it wins over `batch`.
/// `known_dims_only`: a `dims` name that is none of Graph::symbolic_dims is an
/// error naming it and listing them (the CLI's --dim); off, it is ignored (one
/// set of dims for many models: tests, fuzzers, `measure MODEL...`).
/// `batch` binding nothing (no data input has a symbolic leading dim) adds
/// one line to Graph::warnings.
struct ImportOptions {
  std::optional<int64_t> batch;
  std::map<std::string, int64_t> dims;
  bool known_dims_only = false;
};

/// Deepest nesting of subgraphs a model may have: a node's graph attribute
/// (If's branches, Loop's and Scan's bodies) is depth 1, a subgraph inside
/// it depth 2, and so on. The ONNX text parser, protobuf's parser and
/// destructors, libonnx's shape inference and the importer's own walks over
/// subgraphs recurse once or more per level, so an unbounded depth overflows
/// the stack (a text model nesting If 5000 deep crashed with SIGSEGV). Real
/// models nest a few levels; a deeper one is refused at loading, in either
/// format, with the Error "model nests subgraphs deeper than 64"
/// (docs/ir.md, "Limits").
inline constexpr int kMaxSubgraphDepth = 64;

/// Imports a model file; the format is chosen by extension (.onnxtxt/.txt =
/// text syntax, else binary protobuf). Throws Error (one line) for a missing,
/// empty, truncated or corrupt file, a text syntax error, a cycle, a dangling
/// tensor name, an unbound symbolic dim (naming it), an invalid or
/// overflowing shape, subgraphs nested deeper than kMaxSubgraphDepth, or an
/// opset newer than 22. Unknown ops never throw: they
/// become `opaque` primitives with one warning each in Graph::warnings.
Graph import_model(const std::string& path, const ImportOptions& opts);
/// Same, from the bytes of a binary ModelProto.
Graph import_onnx_binary(std::string_view bytes, const ImportOptions& opts, const std::string& name = "model");
/// Same, from ONNX text syntax.
Graph import_onnx_text(std::string_view text, const ImportOptions& opts, const std::string& name = "model");

}  // namespace fuseplan
