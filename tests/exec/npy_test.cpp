// The .npy reader: round trips and one-line errors on bad files.
#include <gtest/gtest.h>

#include <filesystem>
#include <cmath>
#include <fstream>

#include "exec/tensor_data.h"

namespace fuseplan {
namespace {

std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("fuseplan-npy-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(Npy, RoundTripFloatIntBool) {
  Tensor f(DType::f32, {2, 3});
  for (int i = 0; i < 6; ++i) f.ptr<float>()[i] = 0.5f * static_cast<float>(i) - 1;
  Tensor n(DType::i64, {4});
  for (int i = 0; i < 4; ++i) n.ptr<int64_t>()[i] = -7 + 1000000000000LL * i;
  Tensor b(DType::boolean, {});
  b.ptr<uint8_t>()[0] = 1;
  for (const Tensor* t : {&f, &n, &b}) {
    std::string p = tmp("rt.npy");
    write_npy(p, *t);
    Tensor r = read_npy(p);
    EXPECT_EQ(r.dtype, t->dtype);
    EXPECT_EQ(r.shape, t->shape);
    EXPECT_EQ(r.data, t->data);
    std::filesystem::remove(p);
  }
}

TEST(Npy, ReadsVersion2Header) {
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  while ((12 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string p = tmp("v2.npy");
  std::ofstream f(p, std::ios::binary);
  f.write("\x93NUMPY\x02\x00", 8);
  uint32_t len = static_cast<uint32_t>(h.size());
  f.write(reinterpret_cast<const char*>(&len), 4);
  f << h;
  float v[2] = {1.5f, -2};
  f.write(reinterpret_cast<const char*>(v), 8);
  f.close();
  Tensor t = read_npy(p);
  EXPECT_EQ(t.shape, std::vector<int64_t>{2});
  EXPECT_EQ(t.ptr<float>()[1], -2.0f);
  std::filesystem::remove(p);
}

void expect_error(const std::string& bytes, const std::string& needle) {
  std::string p = tmp("bad.npy");
  std::ofstream(p, std::ios::binary) << bytes;
  try {
    read_npy(p);
    ADD_FAILURE() << "no error for " << needle;
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(needle), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
  std::filesystem::remove(p);
}

std::string v1(const std::string& dict, const std::string& data) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size()) + '\0' + h + data;
}

TEST(Npy, BadFilesGiveOneLineErrors) {
  expect_error("PK\x03\x04 not numpy", "not a .npy file");
  expect_error(std::string("\x93NUMPY\x01\x00\x50\x00{'descr'", 18), "truncated");
  expect_error(v1("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')), "unsupported .npy dtype");
  expect_error(v1("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", std::string(4, '\0')), "Fortran");
  expect_error(v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", std::string(4, '\0')), "data bytes");
  // Regression (fuzz_npy_read, allocation-size-too-big): a header may declare
  // any shape; the reader checks it against the data held before allocating.
  expect_error(v1("{'descr': '<f8', 'fortran_order': False, 'shape': (33333333333333333,), }", std::string(8, '\0')),
               "needs more");
  expect_error(v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", std::string(4, '\0')),
               "needs more");
  expect_error(v1("{'descr': '<f8', 'fortran_order': False, 'shape': (3333A33,), }", std::string(8, '\0')),
               "malformed .npy shape");
  {  // Regression (fuzz_npy_read, UBSan nonnull): an empty tensor copies no bytes.
    std::string p = tmp("empty.npy");
    std::ofstream(p, std::ios::binary) << v1("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", "");
    Tensor t = read_npy(p);
    EXPECT_EQ(t.shape, (std::vector<int64_t>{0, 3}));
    EXPECT_TRUE(t.data.empty());
    // ... and its other dims may be huge (UBSan: numel() overflowed before the 0).
    std::ofstream(p, std::ios::binary) << v1("{'descr': '|i1', 'fortran_order': False, 'shape': (9551615, 22, "
                                             "621708, 621708, 0), }", "");
    EXPECT_EQ(read_npy(p).numel(), 0);
    std::filesystem::remove(p);
  }
  try {
    read_npy(tmp("does-not-exist.npy"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

}  // namespace
}  // namespace fuseplan

#include "exec/cpu_run.h"

namespace fuseplan {
namespace {

TEST(Verify, UlpDistanceCountsRepresentableSteps) {
  EXPECT_EQ(ulp_distance(1.0f, 1.0f), 0);
  EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1);
  EXPECT_EQ(ulp_distance(-1.0f, std::nextafter(-1.0f, -2.0f)), 1);
  EXPECT_EQ(ulp_distance(std::nextafter(0.0f, 1.0f), std::nextafter(0.0f, -1.0f)), 2);
  RunResult r;
  r.outputs.push_back({"y", false, 3, 2, 17, 0.25, 0.5});
  EXPECT_EQ(verify_message(r), "output 'y': 3 elements differ, max 2 ULP; first at index 17: got 0.25, reference 0.5");
}

}  // namespace
}  // namespace fuseplan
