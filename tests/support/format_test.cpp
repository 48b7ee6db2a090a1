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

// Issue 33 rows 6 and 11: model names with invalid UTF-8 broke JSON output,
// and control bytes reached terminals raw. escape_name keeps printable ASCII
// and printable UTF-8 and writes every other byte as \xNN.
TEST(EscapeName, KeepsPrintableTextAndEscapesEveryOtherByte) {
  EXPECT_EQ(escape_name("conv1/Relu_0:0 a-b.c \\ \"q\""), "conv1/Relu_0:0 a-b.c \\ \"q\"");
  EXPECT_EQ(escape_name("gr\xC3\xBC\xC3\x9F \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80"),
            "gr\xC3\xBC\xC3\x9F \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80");  // grüß 日本 😀
  EXPECT_EQ(escape_name("x\xFF"), "x\\xFF");
  EXPECT_EQ(escape_name("\x1B[31mred\x1B]0;title\x07"), "\\x1B[31mred\\x1B]0;title\\x07");
  EXPECT_EQ(escape_name("a\nb\tc\rd\x7F"), "a\\x0Ab\\x09c\\x0Dd\\x7F");
  EXPECT_EQ(escape_name(std::string("n\0ul", 4)), "n\\x00ul");
  EXPECT_EQ(escape_name("\xC2\x9B" "1m"), "\\xC2\\x9B1m");           // C1 control CSI, U+009B
  EXPECT_EQ(escape_name("\xC0\xAF"), "\\xC0\\xAF");                  // overlong '/'
  EXPECT_EQ(escape_name("\xED\xA0\x80"), "\\xED\\xA0\\x80");         // surrogate U+D800
  EXPECT_EQ(escape_name("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(escape_name("\xE6\x97"), "\\xE6\\x97");                  // truncated sequence
  // Every byte string escapes to printable ASCII or valid UTF-8, and escaping is idempotent.
  uint32_t seed = 7;
  for (int k = 0; k < 2000; ++k) {
    std::string s;
    for (int i = 0; i < 12; ++i) s += static_cast<char>((seed = seed * 1103515245u + 12345u) >> 24);
    const std::string e = escape_name(s);
    EXPECT_EQ(escape_name(e), e);
    for (unsigned char c : e) EXPECT_TRUE(c >= 0x20 && c != 0x7F) << e;
  }
}

}  // namespace
}  // namespace fuseplan
