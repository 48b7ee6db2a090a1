// Regression tests of the adversarial trial's rows that a whole run
// reproduces: integer INT_MIN / -1 (row 1) and negative pads (row 7).
#include <gtest/gtest.h>

#include "tests/cli/cli_util.h"

namespace fuseplan::test {
namespace {

// A v1 .npy file of `descr` ('<i8', '<f4') and 1-D or 2-D `shape` holding `bytes`.
std::string npy(const std::string& descr, const std::string& shape, const std::string& bytes) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  return std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xff) + char(h.size() >> 8) + h + bytes;
}

// Row 1: INT64_MIN / -1 and INT64_MIN % -1 crashed the reference executor
// and the emitted kernels with SIGFPE. Integer division is total
// (docs/numerics.md): the quotient wraps to INT64_MIN, the remainder is 0.
TEST(CliReliability, IntMinDividedByMinusOneWrapsInsteadOfCrashing) {
  const std::string dir = fresh_dir("intmin");
  // a is an input (not folded): the kernels compute it; c is folded from constants.
  const std::string model = write(dir, "m.onnxtxt", R"(<ir_version: 8, opset_import: ["" : 17]>
m (int64[2] a) => (int64[2] q, int64[2] r, int64[1] c) {
  b = Constant<value = int64[1] {-1}>()
  m = Constant<value = int64[1] {-9223372036854775808}>()
  q = Div(a, b)
  r = Mod(a, b)
  c = Div(m, b)
})");
  const int64_t v[2] = {INT64_MIN, 7};
  const std::string a = write(dir, "a.npy", npy("<i8", "(2,)", std::string(reinterpret_cast<const char*>(v), sizeof v)));
  for (const std::string strategy : {"unfused", "cost"}) {
    SCOPED_TRACE(strategy);
    Result r = fuseplan({"run", model, "--device", "host-cpu", "--strategy", strategy, "--verify", "--inputs",
                         "a=" + a, "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("\"verified\": true"), std::string::npos) << r.out;
  }
}

// Row 7: Pad with negative pads (a crop) emitted "(i0)--1", which the C++
// compiler refused, reported as the user's error.
TEST(CliReliability, NegativePadsRunAndVerify) {
  const std::string dir = fresh_dir("negpad");
  const std::string model = write(dir, "m.onnxtxt", R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[4, 6] x) => (float[4, 3] y) {
  p = Constant<value = int64[4] {0, -1, 0, -2}>()
  y = Pad(x, p)
})");
  Result r = fuseplan({"run", model, "--device", "host-cpu", "--verify", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"verified\": true"), std::string::npos) << r.out;
}

// Row 15: --inputs naming a weight placeholder (a graph input the importer
// treats as a weight) said "not a graph input". Its values can be given
// like a data input's; naming a computed tensor says what it is.
TEST(CliReliability, InputsFeedWeightPlaceholdersAndNameWhatTheyCannotFeed) {
  const std::string dir = fresh_dir("feed-weight");
  const std::string model = write(dir, "m.onnxtxt", R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[2, 4] x, float[4, 3] w) => (float[2, 3] y) {
  t = MatMul(x, w)
  y = Relu(t)
})");
  const std::string ones(4 * 3 * sizeof(float), '\0');
  const std::string w = write(dir, "w.npy", npy("<f4", "(4, 3)", ones));
  Result r = fuseplan({"run", model, "--device", "host-cpu", "--verify", "--json", "--inputs", "w=" + w});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string t = write(dir, "t.npy", npy("<f4", "(2, 3)", std::string(2 * 3 * sizeof(float), '\0')));
  expect_refused(fuseplan({"run", model, "--device", "host-cpu", "--inputs", "t=" + t}),
                 "--inputs names 't', a tensor the model computes (op MatMul), not a graph input");
  expect_refused(fuseplan({"run", model, "--device", "host-cpu", "--inputs", "nope=" + t}),
                 "--inputs names 'nope', which is no tensor of the model");
}

}  // namespace
}  // namespace fuseplan::test
