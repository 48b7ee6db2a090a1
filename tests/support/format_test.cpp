// fixed_text(x, d) is printf("%.*f", d, x) byte for byte: its fast paths
// against std::to_chars on integers, exact ties, and random doubles.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "support/format.h"

namespace fuseplan {
namespace {



std::string reference(double x, int d) {
  char buf[400];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, d);
  return ec == std::errc{} ? std::string(buf, end) : std::string("?");
}

TEST(FixedText, MatchesPrintfOnHandPickedValues) {
  EXPECT_EQ(fixed_text(16781312, 0), "16781312");
  EXPECT_EQ(fixed_text(3350, 1), "3350.0");
  EXPECT_EQ(fixed_text(0.8, 2), "0.80");
  EXPECT_EQ(fixed_text(0.125, 2), "0.12");  // exact tie: to even
  EXPECT_EQ(fixed_text(0.375, 2), "0.38");
  EXPECT_EQ(fixed_text(2.5, 0), "2");
  EXPECT_EQ(fixed_text(3.5, 0), "4");
  EXPECT_EQ(fixed_text(0.9996, 3), "1.000");
  EXPECT_EQ(fixed_text(-0.0, 0), "-0");
  EXPECT_EQ(fixed_text(-1.5, 1), "-1.5");
  EXPECT_EQ(fixed_text(1e300, 0), reference(1e300, 0));
  EXPECT_EQ(fixed_text(std::numeric_limits<double>::infinity(), 2), reference(std::numeric_limits<double>::infinity(), 2));
}

TEST(FixedText, MatchesToCharsOnTiesAndRandomDoubles) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> expo(-14, 17);
  std::uniform_int_distribution<uint64_t> bits;
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    double x;
    switch (i % 4) {
      case 0: x = std::pow(10.0, expo(rng)); break;                         // any magnitude
      case 1: x = static_cast<double>(bits(rng) % 100000) / 8; break;       // exact ties at 1-2 decimals
      case 2: x = static_cast<double>(bits(rng) % 1000000) / 2048; break;   // exact ties at 3 decimals and below
      default: x = std::round(std::pow(10.0, expo(rng))) + 0.0005 * static_cast<double>(bits(rng) % 3); break;
    }
    for (int d = 0; d <= 4; ++d) {
      ASSERT_EQ(fixed_text(x, d), reference(x, d)) << "x = " << x << ", decimals = " << d;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 1000000);
}

}  // namespace
}  // namespace fuseplan
