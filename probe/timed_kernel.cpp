#include "probe/timed_kernel.h"

#include <algorithm>

#include "emit/cpu/compiler.h"
#include "emit/cpu/cpp_printer.h"

namespace fuseplan {

std::vector<double> best_of_calls(const std::string& source, const char* symbol, std::size_t slots, int calls) {
  auto lib = cpu::compile_and_load(std::string(cpu::kRuntimeText) + source);
  std::vector<double> best(slots, 1e30), call(slots, 0.0);
  void* args[1] = {call.data()};
  auto fn = lib->kernel(symbol);
  fn(args);  // warm-up
  for (int c = 0; c < calls; ++c) {
    fn(args);
    for (std::size_t f = 0; f < slots; ++f) best[f] = std::min(best[f], call[f]);
  }
  return best;
}

}  // namespace fuseplan
