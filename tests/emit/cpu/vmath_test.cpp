// The CPU backend's float transcendentals (emit/cpu/vmath.h): a generated
// loop that GCC vectorises returns the bits the reference executor's
// scalar call returns, for every op, over inputs from every exponent; the
// results stay within SLEEF's 1 ULP of the double-precision libm result,
// and special values are C99's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "emit/cpu/compiler.h"
#include "emit/cpu/cpp_printer.h"
#include "emit/cpu/runtime.h"
#include "emit/cpu/vmath.h"

namespace fuseplan {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Inputs: 65521-strided bit patterns (every exponent, many mantissas, both
// signs, NaNs and denormals included) and the special values; a length
// that is no multiple of 16, so the vector loop's remainder runs too.
std::vector<float> sweep() {
  std::vector<float> x;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) {
    float f;
    const uint32_t v = static_cast<uint32_t>(u);
    std::memcpy(&f, &v, 4);
    x.push_back(f);
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, std::nanf(""), -1e9f, -104.0f, 88.7f, 89.0f, 1.0f, -1.0f, 0.5f,
                  3.0f, -2.0f, 1e-40f, -std::numeric_limits<float>::max()})
    x.push_back(f);
  x.push_back(0.25f);  // odd length
  return x;
}

struct UnaryCase {
  const char* fn;             // the fprt function the emitted code calls
  float (*host)(float);       // the reference executor's call
  double (*exact)(double);    // double-precision libm, for the ULP bound
};

TEST(Vmath, VectorisedKernelLoopsReturnTheReferenceBits) {
  const std::vector<float> x = sweep();
  const UnaryCase unary[] = {
      {"fprt::exp_", [](float v) { return fprt::exp_(v); }, [](double v) { return std::exp(v); }},
      {"fprt::log_", [](float v) { return fprt::log_(v); }, [](double v) { return std::log(v); }},
      {"fprt::tanh_", [](float v) { return fprt::tanh_(v); }, [](double v) { return std::tanh(v); }},
      {"fprt::erf_", [](float v) { return fprt::erf_(v); }, [](double v) { return std::erf(v); }},
      {"fprt::sin_", [](float v) { return fprt::sin_(v); }, [](double v) { return std::sin(v); }},
      {"fprt::cos_", [](float v) { return fprt::cos_(v); }, [](double v) { return std::cos(v); }},
  };
  // One kernel per op, the shape of an emitted single-op group; Pow with a
  // broadcast exponent (GPT-2's x^3) and an elementwise one.
  std::string src = std::string(cpu::kRuntimeText) + "\n";
  const std::string n = std::to_string(x.size());
  int k = 0;
  for (const auto& u : unary)
    src += "extern \"C\" void fp_t" + std::to_string(k++) + "(void** b) {\n  const float* __restrict x = (const float*)b[0];\n"
           "  float* __restrict y = (float*)b[1];\n  for (int64_t i = 0; i < " + n + "; ++i) y[i] = (float)" + u.fn +
           "(x[i]);\n}\n";
  src += "extern \"C\" void fp_pow3(void** b) {\n  const float* __restrict x = (const float*)b[0];\n"
         "  float* __restrict y = (float*)b[1];\n  for (int64_t i = 0; i < " + n + "; ++i) y[i] = fprt::pow_(x[i], 3.0f);\n}\n"
         "extern \"C\" void fp_powxx(void** b) {\n  const float* __restrict x = (const float*)b[0];\n"
         "  float* __restrict y = (float*)b[1];\n  for (int64_t i = 0; i < " + n + "; ++i) y[i] = fprt::pow_(x[i], x[" + n +
         " - 1 - i]);\n}\n";
  auto lib = cpu::compile_and_load(src);
  // The loops were vectorised: the library calls a vector variant of every
  // function (x86 vector-function ABI, _ZGV<isa>N<lanes>v_fp_<fn>f).
  std::ifstream so(lib->so_path(), std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(so)), std::istreambuf_iterator<char>());
  for (const char* f : {"expf", "logf", "tanhf", "erff", "sinf", "cosf"})
    EXPECT_TRUE(std::regex_search(image, std::regex(std::string("_ZGV[bcde]N(4|8|16)v_fp_") + f))) << f;
  EXPECT_TRUE(std::regex_search(image, std::regex("_ZGV[bcde]N(4|8|16)vv_fp_powf")));
  std::vector<float> y(x.size());
  void* b[2] = {const_cast<float*>(x.data()), y.data()};
  k = 0;
  for (const auto& u : unary) {
    SCOPED_TRACE(u.fn);
    lib->kernel("fp_t" + std::to_string(k++))(b);
    int worse_than_1ulp = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float ref = u.host(x[i]);
      ASSERT_EQ(bits(y[i]), bits(ref)) << "x = " << x[i] << " (bits " << bits(x[i]) << ")";
      // NaN results are canonical whatever the input's payload (a Zen 4's
      // AVX-512 logf kept a signalling NaN's payload).
      if (std::isnan(ref)) {
        ASSERT_EQ(bits(y[i]), 0x7FC00000u) << "x bits " << bits(x[i]);
      }
      const double e = u.exact(x[i]);
      if (std::isnan(e) || std::isinf(e) || std::fabs(e) < std::numeric_limits<float>::min()) continue;
      const double ulp = std::nextafter(static_cast<float>(std::fabs(e)), INFINITY) - static_cast<float>(std::fabs(e));
      // SLEEF's sin/cos hold 1 ULP only inside their documented range.
      if ((std::string(u.fn) == "fprt::sin_" || std::string(u.fn) == "fprt::cos_") && std::fabs(x[i]) > 1e6f) continue;
      // 1.001: tanh(x) = x for tiny x sits exactly 1.000 ULP from tanh's double.
      worse_than_1ulp += std::fabs(y[i] - e) > 1.001 * ulp;
    }
    EXPECT_EQ(worse_than_1ulp, 0);
  }
  // x^3 is (x*x)*x (graph/op_attrs.h pow_multiplies), in the vector loop too.
  lib->kernel("fp_pow3")(b);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float sq = x[i] * x[i];
    ASSERT_EQ(bits(y[i]), bits(sq * x[i])) << x[i];
  }
  EXPECT_EQ(fprt::pow_(-2.0f, 3.0f), -8.0f);  // a negative base with an integer exponent
  lib->kernel("fp_powxx")(b);
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(bits(y[i]), bits(fprt::pow_(x[i], x[x.size() - 1 - i]))) << x[i];
}

// Pow with exponent 2 or 3 is multiplies (graph/op_attrs.h pow_multiplies),
// for a float or double base and whatever the exponent's type; ONNX Runtime
// and PyTorch return these bits. 2.5 and 4 stay the libm pow.
TEST(Vmath, PowTwoAndThreeAreMultiplies) {
  const std::vector<float> x = sweep();
  for (float v : x) {
    const float sq = v * v;
    ASSERT_EQ(bits(fprt::pow_(v, 2.0f)), bits(sq)) << v;
    ASSERT_EQ(bits(fprt::pow_(v, 3.0f)), bits(sq * v)) << v;
    ASSERT_EQ(bits(fprt::pow_(v, int64_t{3})), bits(sq * v)) << v;
    ASSERT_EQ(bits(fprt::pow_(v, 4.0f)), bits(fp_powf(v, 4.0f))) << v;
    const double d = v, dsq = d * d, dcube = dsq * d, dp = fprt::pow_(d, 3.0f);
    ASSERT_EQ(std::memcmp(&dp, &dcube, sizeof dp), 0) << v;
  }
  EXPECT_EQ(bits(fprt::pow_(-0.0f, 3.0f)), bits(-0.0f));
  EXPECT_EQ(bits(fprt::pow_(-0.0f, 2.0f)), bits(0.0f));
  EXPECT_EQ(fprt::pow_(-INFINITY, 3.0f), -INFINITY);
  EXPECT_EQ(fprt::pow_(2.0f, 2.5f), fp_powf(2.0f, 2.5f));
}

TEST(Vmath, SpecialValuesAreC99s) {
  EXPECT_EQ(bits(fprt::exp_(-1e9f)), 0u);  // +0, not -0: a masked softmax position
  EXPECT_EQ(bits(fprt::exp_(-INFINITY)), 0u);
  EXPECT_EQ(fprt::exp_(INFINITY), INFINITY);
  EXPECT_EQ(fprt::exp_(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(fprt::exp_(std::nanf(""))));
  EXPECT_EQ(fprt::log_(0.0f), -INFINITY);
  EXPECT_TRUE(std::isnan(fprt::log_(-1.0f)));
  EXPECT_EQ(fprt::log_(1.0f), 0.0f);
  EXPECT_EQ(bits(fprt::tanh_(-0.0f)), bits(-0.0f));
  EXPECT_EQ(fprt::tanh_(INFINITY), 1.0f);
  EXPECT_EQ(fprt::erf_(-INFINITY), -1.0f);
  EXPECT_EQ(bits(fprt::erf_(-0.0f)), bits(-0.0f));
  EXPECT_EQ(fprt::pow_(0.0f, 0.0f), 1.0f);
  EXPECT_EQ(fprt::pow_(2.0f, 10.0f), 1024.0f);
  // Double stays on libm, with exp_'s underflow shortcut.
  EXPECT_EQ(fprt::exp_(-1000.0), 0.0);
  EXPECT_EQ(fprt::exp_(1.0), std::exp(1.0));
  EXPECT_EQ(fprt::erf_(0.5), std::erf(0.5));
  EXPECT_NE(std::string(fp_vmath_family()).find("SLEEF"), std::string::npos);
}

}  // namespace
}  // namespace fuseplan
