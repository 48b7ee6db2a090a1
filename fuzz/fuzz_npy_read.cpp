// libFuzzer target: .npy file -> read_npy (what --inputs reads). Any
// fuseplan::Error is an expected outcome; anything else is a finding.
#include "exec/tensor_data.h"
#include "fuzz/fuzz_file_readers.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuseplan::fuzz::scratch_file(data, size, ".npy");
  try {
    (void)fuseplan::read_npy(path);
  } catch (const fuseplan::Error&) {
  }
  return 0;
}
