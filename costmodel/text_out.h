// Internal: the breakdown text's writer. Appends to one string without
// temporaries (a plan writes about 1 KB of breakdown per group): `<<
// fixed(x, d)` prints printf("%.*f", d, x) (support/format.h append_fixed),
// an integer prints as std::to_string does.
#pragma once

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

#include "support/format.h"

namespace fuseplan::costmodel_detail {

struct Fixed {
  double x;
  int decimals;
};
inline Fixed fixed(double x, int decimals = 0) { return {x, decimals}; }

class TextOut {
 public:
  explicit TextOut(std::string& s) : s_(s) {}
  TextOut& operator<<(std::string_view x) {
    s_.append(x);
    return *this;
  }
  TextOut& operator<<(Fixed f) {
    append_fixed(s_, f.x, f.decimals);
    return *this;
  }
  TextOut& operator<<(int i) { return integer(i); }
  TextOut& operator<<(std::size_t i) { return integer(i); }
  /// The text written so far.
  const std::string& text() const { return s_; }

 private:
  template <class I>
  TextOut& integer(I i) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, i);
    s_.append(buf, end);
    return *this;
  }
  std::string& s_;
};

}  // namespace fuseplan::costmodel_detail
