// Hand-built model bytes for tests of the importers' limits: protobuf wire
// format fields and an ONNX text model nesting If subgraphs `depth` deep.
#pragma once

#include <cstdint>
#include <string>

namespace fuseplan::test {

/// Protobuf wire format: a varint, a length-delimited field.
inline std::string varint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += static_cast<char>((v & 0x7f) | 0x80);
  return s + static_cast<char>(v);
}
inline std::string field(int number, const std::string& payload) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}

/// ONNX text g(bool c, float[4] x) => (float[4] y0) whose If then_branch
/// nests `depth` levels deep.
inline std::string nested_if_text(int depth) {
  std::string open, close;
  for (int level = 1; level <= depth; ++level) {
    const std::string l = std::to_string(level);
    open += "y" + std::to_string(level - 1) + " = If(c) <then_branch = t" + l + " () => (float[4] y" + l + ") { ";
  }
  for (int level = depth; level >= 1; --level) {
    const std::string l = std::to_string(level);
    close += " }, else_branch = e" + l + " () => (float[4] z" + l + ") { z" + l + " = Identity(x) }>";
  }
  return "<ir_version: 8, opset_import: [\"\" : 17]>\ng (bool c, float[4] x) => (float[4] y0) {\n  " + open + "y" +
         std::to_string(depth) + " = Identity(x)" + close + "\n}\n";
}

}  // namespace fuseplan::test
