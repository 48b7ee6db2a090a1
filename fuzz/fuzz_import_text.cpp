// libFuzzer target: ONNX text syntax -> import_onnx_text. Any fuseplan::Error
// is an expected outcome; anything else is a finding.
#include <cstdint>
#include <string_view>

#include "graph/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuseplan::ImportOptions o;
  o.batch = 2;
  o.dims = {{"seq", 8}, {"N", 4}, {"C", 8}, {"S", 8}, {"V", 16}, {"D", 4}, {"B", 4}};
  try {
    fuseplan::import_onnx_text(std::string_view(reinterpret_cast<const char*>(data), size), o, "fuzz");
  } catch (const fuseplan::Error&) {
  }
  return 0;
}
