// libFuzzer target: plan JSON -> load_plan against a small fixed model (a
// bias+relu+softmax chain). Any fuseplan::Error is an expected outcome;
// anything else (crash, sanitizer report, other exception) is a finding.
#include <cstdint>
#include <string>

#include "costmodel/device.h"
#include "emit/plan_json.h"
#include "graph/import.h"

namespace {
const fuseplan::Graph& model() {
  static const fuseplan::Graph g = fuseplan::import_onnx_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\n"
      "m (float[8, 16] x, float[16] b) => (float[8, 16] y, float[8, 16] t) {\n"
      "  t = Add(x, b)\n  r = Relu(t)\n  y = Softmax<axis = -1>(r)\n}\n",
      {}, "fuzz");
  return g;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuseplan::DeviceSpec d = fuseplan::load_device("h100-sxm");
  try {
    fuseplan::load_plan(std::string(reinterpret_cast<const char*>(data), size), model(), d);
  } catch (const fuseplan::Error&) {
  }
  return 0;
}
