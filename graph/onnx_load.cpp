// Loading a ModelProto from binary protobuf or ONNX text syntax, and the
// opset check. Every failure is one fuseplan::Error line.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <onnx/defs/parser.h>

#include "graph/import_internal.h"
#include "support/input_file.h"

namespace fuseplan::detail {
namespace {
std::string one_line(std::string s, std::size_t max = 200) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += (static_cast<unsigned char>(c) < 32) ? '?' : c;
  }
  if (out.size() > max) out = out.substr(0, max) + "...";
  return out;
}
}  // namespace

onnx::ModelProto load_binary(std::string_view bytes) {
  if (bytes.empty()) throw Error("empty model: no bytes to parse");
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX)) throw Error("model larger than 2 GiB: not supported");
  onnx::ModelProto m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error("not a valid ONNX model: protobuf parse failed (truncated or corrupt file?)");
  if (!m.has_graph()) throw Error("not a valid ONNX model: no graph");
  if (m.graph().node_size() == 0 && m.graph().output_size() == 0)
    throw Error("not a valid ONNX model: the graph has no nodes and no outputs");
  return m;
}

onnx::ModelProto load_text(std::string_view text) {
  if (text.empty()) throw Error("empty model: no text to parse");
  std::string s(text);  // the parser needs a NUL-terminated buffer
  if (s.find('\0') != std::string::npos) throw Error("ONNX text syntax error: NUL byte in text");
  onnx::ModelProto m;
  onnx::Common::Status st;
  try {
    st = onnx::OnnxParser::Parse(m, s.c_str());
  } catch (const std::exception& e) {
    throw Error("ONNX text syntax error: " + one_line(e.what()));
  }
  if (!st.IsOK()) throw Error("ONNX text syntax error: " + one_line(st.ErrorMessage()));
  if (m.graph().node_size() == 0 && m.graph().output_size() == 0)
    throw Error("ONNX text syntax error: no graph (expected '<header> name (inputs) => (outputs) { nodes }')");
  return m;
}

int64_t check_opset(const onnx::ModelProto& m) {
  int64_t v = -1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") v = std::max(v, static_cast<int64_t>(o.version()));
  if (v < 0) {
    if (m.opset_import_size() == 0) return 1;  // IR 1/2 models without opset_import
    return kMaxOpset;  // only custom domains: default-domain ops use the newest rules
  }
  if (v > kMaxOpset)
    throw Error("model uses opset " + std::to_string(v) + " of the default domain; newest supported is " +
                std::to_string(kMaxOpset));
  if (v < 1) throw Error("invalid opset version " + std::to_string(v));
  return v;
}

}  // namespace fuseplan::detail

namespace fuseplan {

Graph import_onnx_binary(std::string_view bytes, const ImportOptions& opts, const std::string& name) {
  return detail::import_proto(detail::load_binary(bytes), opts, name);
}

Graph import_onnx_text(std::string_view text, const ImportOptions& opts, const std::string& name) {
  return detail::import_proto(detail::load_text(text), opts, name);
}

Graph import_model(const std::string& path, const ImportOptions& opts) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error("model '" + path + "' is a directory, not a model file (.onnx or .onnxtxt)");
  std::string bytes = read_input_file(path, "model file", kMaxModelFileBytes);
  if (bytes.empty()) throw Error("model file '" + path + "' is empty");
  std::string stem = path.substr(path.find_last_of('/') + 1);
  auto dot = stem.find_last_of('.');
  std::string ext = dot == std::string::npos ? "" : stem.substr(dot);
  if (dot != std::string::npos) stem = stem.substr(0, dot);
  try {
    if (ext == ".onnxtxt" || ext == ".txt") return import_onnx_text(bytes, opts, stem);
    return import_onnx_binary(bytes, opts, stem);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace fuseplan
