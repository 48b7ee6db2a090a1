// printf("%.*f") text of a double, fast for the values a plan's breakdown
// prints (byte and FLOP counts, times with up to three decimals).
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "support/format.h"

namespace fuseplan {

namespace {
constexpr uint64_t kPow10[] = {1, 10, 100, 1000};
constexpr double kTwo53 = 9007199254740992.0;  // 2^53: every integer below is a double

// The general path: std::to_chars (specified to match printf in the C
// locale), snprintf if the buffer is short (it is not: 400 bytes hold the
// longest finite double in fixed notation, 309 digits + sign + decimals).
void append_general(std::string& s, double x, int decimals) {
  char buf[400];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, decimals);
  if (ec != std::errc{}) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
    s += buf;
    return;
  }
  s.append(buf, end);
}

// `q` as d.ddd with `decimals` digits after the point (q = value × 10^decimals).
void append_scaled(std::string& s, uint64_t q, int decimals) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, q / kPow10[decimals]);
  s.append(buf, end);
  if (decimals == 0) return;
  s.push_back('.');
  uint64_t frac = q % kPow10[decimals];
  for (int i = decimals - 1; i >= 0; --i) {
    buf[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  s.append(buf, static_cast<std::size_t>(decimals));
}
}  // namespace

void append_fixed(std::string& s, double x, int decimals) {
  // Fast paths, exact by construction (tests/costmodel/fixed_text_test.cpp
  // checks them against std::to_chars): positive finite x below 2^53 and at
  // most three decimals. Anything else (negative, -0, huge, NaN) takes the
  // general path.
  if (!(x >= 0 && x < kTwo53) || decimals < 0 || decimals > 3 || std::signbit(x)) {
    append_general(s, x, decimals);
    return;
  }
  if (x == std::floor(x)) {  // an integer: its digits, then `decimals` zeros
    append_scaled(s, static_cast<uint64_t>(x) * kPow10[decimals], decimals);
    return;
  }
  // x = m · 2^-k with integer m < 2^53 and k > 0 (x is not an integer).
  // x · 10^d = m · 10^d / 2^k exactly, with m · 10^d < 2^63; rounding the
  // quotient to nearest, ties to even, is what printf does with the exact
  // binary value (glibc and std::to_chars both round exact ties to even).
  int exp = 0;
  const double mant = std::frexp(x, &exp);       // x = mant · 2^exp, 0.5 <= mant < 1
  const uint64_t m = static_cast<uint64_t>(std::ldexp(mant, 53));  // exact: 53 significant bits
  const int k = 53 - exp;                          // x = m · 2^-k
  if (k >= 64) {  // x < 2^-11: leave to the general path (the shift below needs k < 64)
    append_general(s, x, decimals);
    return;
  }
  const uint64_t n = m * kPow10[decimals];
  uint64_t q = n >> k;
  const uint64_t rem = n & ((uint64_t{1} << k) - 1), half = uint64_t{1} << (k - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  append_scaled(s, q, decimals);
}

std::string fixed_text(double x, int decimals) {
  std::string s;
  append_fixed(s, x, decimals);
  return s;
}

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 4) b /= 1024, ++u;
  return fixed_text(b, u == 0 ? 0 : 1) + " " + units[u];
}

std::string escape_name(std::string_view s) {
  // Length of the valid UTF-8 sequence of a printable code point at s[i], or
  // 0 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
  auto sequence = [&](std::size_t i) -> std::size_t {
    const auto b = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
    const unsigned c = b(0);
    auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return b(k) >= lo && b(k) <= hi; };
    if (c >= 0x20 && c < 0x7F) return 1;
    if (c == 0xC2) return cont(1, 0xA0) ? 2 : 0;  // U+0080..U+009F are C1 controls
    if (c >= 0xC3 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
    if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t n = sequence(i)) {
      out.append(s, i, n);
      i += n;
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      const auto c = static_cast<unsigned char>(s[i++]);
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace fuseplan
