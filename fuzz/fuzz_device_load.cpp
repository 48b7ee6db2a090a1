// libFuzzer target: device JSON -> load_device (a path, as --device FILE
// reads it). Any fuseplan::Error is an expected outcome; anything else
// (crash, sanitizer report, other exception) is a finding.
#include "costmodel/device.h"
#include "fuzz/fuzz_file_readers.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuseplan::fuzz::scratch_file(data, size, ".json");
  try {
    fuseplan::DeviceSpec d = fuseplan::load_device(path);
    (void)fuseplan::device_to_json(d);  // what probe and calibrate write back
  } catch (const fuseplan::Error&) {
  }
  return 0;
}
