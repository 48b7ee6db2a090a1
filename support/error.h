// The two kinds of failure fuseplan reports (README "Exit codes"):
//  - Error: the user's input is wrong (model, plan, device, flags). One line,
//    no trailing newline; the CLI prints "fuseplan: error: <what()>" and
//    exits 2.
//  - EnvironmentError: the machine refused what fuseplan needs (the C++
//    compiler FUSEPLAN_CXX names fails or is not a compiler, a file system
//    error). The CLI prints "fuseplan: error: <what()>" and exits 3.
//  - InternalError: an invariant of fuseplan itself failed. The CLI prints
//    "fuseplan: internal error: <what()>" with what to report and exits 70
//    (EX_SOFTWARE, sysexits.h). Raise it through FUSEPLAN_ASSERT.
#pragma once

#include <stdexcept>
#include <string>

namespace fuseplan {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws InternalError("<file>:<line>: <condition>: <what>").
[[noreturn]] void internal_error(const char* file, int line, const std::string& what);

}  // namespace fuseplan

/// Checks an invariant of fuseplan's own (never the user's input, which gets
/// an Error): on failure throws InternalError naming the file, line, the
/// condition and `what`. Kept in release builds: a broken invariant must not
/// produce a silently wrong plan.
#define FUSEPLAN_ASSERT(cond, what) \
  do {                              \
    if (!(cond)) ::fuseplan::internal_error(__FILE__, __LINE__, std::string(#cond) + ": " + (what)); \
  } while (0)
