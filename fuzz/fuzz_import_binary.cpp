// libFuzzer target: binary ModelProto bytes -> import_onnx_binary. Any
// fuseplan::Error is an expected outcome; anything else is a finding.
#include <cstdint>
#include <string_view>

#include "graph/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuseplan::ImportOptions o;
  o.batch = 2;
  o.dims = {{"seq", 8}, {"sequence", 8}, {"N", 2}, {"C", 8}, {"S", 8}};
  try {
    fuseplan::import_onnx_binary(std::string_view(reinterpret_cast<const char*>(data), size), o, "fuzz");
  } catch (const fuseplan::Error&) {
  }
  return 0;
}
