// Loading a ModelProto from binary protobuf or ONNX text syntax, and the
// opset check. Every failure is one fuseplan::Error line.
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include <google/protobuf/io/coded_stream.h>
#include <onnx/defs/parser.h>

#include "graph/import_internal.h"
#include "support/format.h"
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
    out += c;
  }
  if (out.size() > max) return escape_name(out.substr(0, max)) + "...";
  return escape_name(out);
}

[[noreturn]] void too_deep() {
  throw Error("model nests subgraphs deeper than " + std::to_string(kMaxSubgraphDepth) +
              " (If/Loop/Scan bodies inside bodies; the limit bounds the importer's recursion)");
}

// The subgraph depth of serialized ModelProto bytes, read from the wire
// format without recursion, so that a model nested too deep for protobuf's
// recursive parser is refused by name (too_deep) rather than as a failed
// parse. Follows only the fields that lead to subgraphs: ModelProto.graph (7)
// and .functions (25), GraphProto.node (1), FunctionProto.node (7) and
// .attribute_proto (11), NodeProto.attribute (5), AttributeProto.g (6) and
// .graphs (11). Stops quietly at a malformed field: the parse reports it.
void check_binary_depth(std::string_view b) {
  enum class M { model, graph, function, node, attribute };
  struct Frame { M m; std::size_t end; int depth; };
  std::vector<Frame> stack{{M::model, b.size(), 0}};
  std::size_t pos = 0;
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && pos < stack.back().end; shift += 7) {
      const auto c = static_cast<unsigned char>(b[pos++]);
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return true;
    }
    return false;
  };
  while (!stack.empty()) {
    if (pos >= stack.back().end) {
      pos = stack.back().end;
      stack.pop_back();
      continue;
    }
    uint64_t tag = 0, v = 0;
    if (!varint(tag)) return;
    const uint64_t field = tag >> 3;
    switch (tag & 7) {
      case 0: if (!varint(v)) return; break;
      case 1: pos += 8; break;
      case 5: pos += 4; break;
      case 2: {
        if (!varint(v) || v > stack.back().end - pos) return;
        const Frame& f = stack.back();
        std::optional<M> child;
        int depth = f.depth;
        if (f.m == M::model && field == 7) child = M::graph;
        else if (f.m == M::model && field == 25) child = M::function;
        else if ((f.m == M::graph && field == 1) || (f.m == M::function && field == 7)) child = M::node;
        else if ((f.m == M::node && field == 5) || (f.m == M::function && field == 11)) child = M::attribute;
        else if (f.m == M::attribute && (field == 6 || field == 11)) child = M::graph, ++depth;
        if (depth > kMaxSubgraphDepth) too_deep();
        if (child) stack.push_back({*child, pos + v, depth});
        else pos += v;
        break;
      }
      default: return;  // groups (3, 4) are not in onnx.proto
    }
    if (pos > stack.back().end) return;
  }
}

// Before the ONNX text parser, which recurses per bracket: a graph body is a
// { } block, so a subgraph at depth d opens d + 1 braces (d + 2 around a
// tensor literal in it). Strings and # comments are skipped, and "=>" is no
// bracket. The exact depth is checked on the parsed model (check_depth).
void check_text_nesting(std::string_view t) {
  constexpr int kMaxBraces = kMaxSubgraphDepth + 2;
  constexpr int kMaxBrackets = 4 * kMaxBraces;  // with ( [ < per level and nested types
  int braces = 0, brackets = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"') {
      for (++i; i < t.size() && t[i] != '"'; ++i)
        if (t[i] == '\\') ++i;
    } else if (c == '#') {
      while (i < t.size() && t[i] != '\n') ++i;
    } else if (c == '=' && i + 1 < t.size() && t[i + 1] == '>') {
      ++i;
    } else if (c == '{' || c == '(' || c == '[' || c == '<') {
      if (c == '{' && ++braces > kMaxBraces) too_deep();
      if (++brackets > kMaxBrackets)
        throw Error("ONNX text syntax error: brackets nested deeper than " + std::to_string(kMaxBrackets));
    } else if (c == '}' || c == ')' || c == ']' || c == '>') {
      if (c == '}') braces = std::max(0, braces - 1);
      brackets = std::max(0, brackets - 1);
    }
  }
}

// The exact subgraph depth of a parsed model (its graph and its functions),
// walked with an explicit stack.
void check_depth(const onnx::ModelProto& m) {
  std::vector<std::pair<const onnx::NodeProto*, int>> todo;
  auto add_nodes = [&](const auto& nodes, int depth) {
    for (const auto& n : nodes) todo.emplace_back(&n, depth);
  };
  add_nodes(m.graph().node(), 0);
  for (const auto& f : m.functions()) add_nodes(f.node(), 0);
  while (!todo.empty()) {
    auto [n, depth] = todo.back();
    todo.pop_back();
    for (const auto& a : n->attribute()) {
      if (!a.has_g() && a.graphs_size() == 0) continue;
      if (depth + 1 > kMaxSubgraphDepth) too_deep();
      if (a.has_g()) add_nodes(a.g().node(), depth + 1);
      for (const auto& g : a.graphs()) add_nodes(g.node(), depth + 1);
    }
  }
}
// Every string of a model that fuseplan may print or write, through
// escape_name (support/format.h): names of tensors, nodes, graphs and
// functions, op types and domains, dim_params, string attributes. Tensor
// names must stay distinct: two that escape alike are refused. Recurses per
// subgraph level (at most kMaxSubgraphDepth, checked first) and per nested
// type (bounded by the parsers' nesting limits).
class NameEscaper {
 public:
  void model(onnx::ModelProto& m) {
    esc(m.mutable_producer_name());
    esc(m.mutable_domain());
    for (auto& o : *m.mutable_opset_import()) esc(o.mutable_domain());
    graph(*m.mutable_graph());
    for (auto& f : *m.mutable_functions()) {
      esc(f.mutable_name());
      esc(f.mutable_domain());
      for (auto& x : *f.mutable_input()) esc(&x);
      for (auto& x : *f.mutable_output()) esc(&x);
      for (auto& x : *f.mutable_attribute()) esc(&x);
      for (auto& n : *f.mutable_node()) node(n);
    }
  }

 private:
  std::unordered_map<std::string, std::string> original_;  // escaped tensor name -> the name it came from

  static bool esc(std::string* s) {
    std::string e = escape_name(*s);
    if (e == *s) return false;
    *s = std::move(e);
    return true;
  }
  // A tensor name, escaped; refused when another name escapes alike.
  void tensor(std::string* s, bool check = true) {
    std::string from = *s;
    esc(s);
    if (!check || s->empty()) return;
    auto [it, fresh] = original_.emplace(*s, from);
    if (!fresh && it->second != from)
      throw Error("two tensor names read '" + *s + "' once their non-printable bytes are escaped as \\xNN; rename one");
  }
  void type(onnx::TypeProto& t) {
    esc(t.mutable_denotation());
    auto shape = [&](onnx::TensorShapeProto* sh) {
      for (auto& d : *sh->mutable_dim()) {
        if (d.has_dim_param()) esc(d.mutable_dim_param());
        esc(d.mutable_denotation());
      }
    };
    if (t.has_tensor_type() && t.tensor_type().has_shape()) shape(t.mutable_tensor_type()->mutable_shape());
    if (t.has_sparse_tensor_type() && t.sparse_tensor_type().has_shape())
      shape(t.mutable_sparse_tensor_type()->mutable_shape());
    if (t.has_sequence_type() && t.sequence_type().has_elem_type())
      type(*t.mutable_sequence_type()->mutable_elem_type());
    if (t.has_optional_type() && t.optional_type().has_elem_type())
      type(*t.mutable_optional_type()->mutable_elem_type());
    if (t.has_map_type() && t.map_type().has_value_type()) type(*t.mutable_map_type()->mutable_value_type());
  }
  void value_info(onnx::ValueInfoProto& vi, bool check = true) {
    tensor(vi.mutable_name(), check);
    if (vi.has_type()) type(*vi.mutable_type());
  }
  void attribute(onnx::AttributeProto& a) {
    esc(a.mutable_name());
    esc(a.mutable_ref_attr_name());
    if (a.has_s()) esc(a.mutable_s());
    for (auto& x : *a.mutable_strings()) esc(&x);
    if (a.has_t()) tensor(a.mutable_t()->mutable_name(), false);
    for (auto& t : *a.mutable_tensors()) tensor(t.mutable_name(), false);
    if (a.has_tp()) type(*a.mutable_tp());
    for (auto& t : *a.mutable_type_protos()) type(t);
    if (a.has_g()) graph(*a.mutable_g());
    for (auto& g : *a.mutable_graphs()) graph(g);
  }
  void node(onnx::NodeProto& n) {
    esc(n.mutable_name());
    esc(n.mutable_op_type());
    esc(n.mutable_domain());
    for (auto& x : *n.mutable_input()) tensor(&x);
    for (auto& x : *n.mutable_output()) tensor(&x);
    for (auto& a : *n.mutable_attribute()) attribute(a);
  }
  void graph(onnx::GraphProto& g) {
    esc(g.mutable_name());
    for (auto& t : *g.mutable_initializer()) tensor(t.mutable_name());
    for (auto& t : *g.mutable_sparse_initializer()) {
      tensor(t.mutable_values()->mutable_name());
      tensor(t.mutable_indices()->mutable_name(), false);
    }
    for (auto& vi : *g.mutable_input()) value_info(vi);
    for (auto& vi : *g.mutable_output()) value_info(vi);
    for (auto& vi : *g.mutable_value_info()) value_info(vi);
    for (auto& n : *g.mutable_node()) node(n);
  }
};
}  // namespace

void escape_model_names(onnx::ModelProto& m) { NameEscaper().model(m); }

onnx::ModelProto load_binary(std::string_view bytes) {
  if (bytes.empty()) throw Error("empty model: no bytes to parse");
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX)) throw Error("model larger than 2 GiB: not supported");
  check_binary_depth(bytes);
  onnx::ModelProto m;
  // protobuf's default limit (100 nested messages) stops near 31 subgraph
  // levels; each level is 3 (NodeProto, AttributeProto, GraphProto).
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(3 * kMaxSubgraphDepth + 32);
  if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw Error("not a valid ONNX model: protobuf parse failed (truncated or corrupt file?)");
  check_depth(m);
  escape_model_names(m);
  if (!m.has_graph()) throw Error("not a valid ONNX model: no graph");
  if (m.graph().node_size() == 0 && m.graph().output_size() == 0)
    throw Error("not a valid ONNX model: the graph has no nodes and no outputs");
  return m;
}

onnx::ModelProto load_text(std::string_view text) {
  if (text.empty()) throw Error("empty model: no text to parse");
  std::string s(text);  // the parser needs a NUL-terminated buffer
  if (s.find('\0') != std::string::npos) throw Error("ONNX text syntax error: NUL byte in text");
  check_text_nesting(s);
  onnx::ModelProto m;
  onnx::Common::Status st;
  try {
    st = onnx::OnnxParser::Parse(m, s.c_str());
  } catch (const std::exception& e) {
    throw Error("ONNX text syntax error: " + one_line(e.what()));
  }
  if (!st.IsOK()) throw Error("ONNX text syntax error: " + one_line(st.ErrorMessage()));
  check_depth(m);
  escape_model_names(m);
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
