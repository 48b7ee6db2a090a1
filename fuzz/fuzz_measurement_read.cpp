// libFuzzer target: measurement records (JSONL) -> read_records, then the
// calibration sample of each record. Any fuseplan::Error is an expected
// outcome; anything else is a finding.
#include "fuzz/fuzz_file_readers.h"
#include "support/error.h"
#include "profiling/measurement.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuseplan::fuzz::scratch_file(data, size, ".jsonl");
  try {
    for (const auto& r : fuseplan::read_records(path)) (void)fuseplan::to_sample(r);
  } catch (const fuseplan::Error&) {
  }
  return 0;
}
