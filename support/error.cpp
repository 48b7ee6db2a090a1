#include "support/error.h"

namespace fuseplan {

void internal_error(const char* file, int line, const std::string& what) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

}  // namespace fuseplan
