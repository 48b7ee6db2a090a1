// A probe kernel compiled and timed as the CPU backend compiles kernels: the
// shared step of the probes that time emitted code (probe/transcendental.h,
// probe/reduction_chain.h, probe/pool_window.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fuseplan {

/// Compiles `source` after the CPU runtime's text (emit/cpu/compiler.h, the
/// backend's flags), calls its extern "C" entry `symbol` once to warm up
/// (page faults, libm's first calls) and then `calls` times. The entry
/// writes one time per slot into the double[slots] passed as b[0], in the
/// unit the caller's kernel uses (ns). Returns each slot's minimum over the
/// calls: a busy sibling hyperthread slows the slots by different factors,
/// so each is taken where it ran alone. Throws Error when the compiler or
/// the loaded kernel fails.
std::vector<double> best_of_calls(const std::string& source, const char* symbol, std::size_t slots, int calls);

}  // namespace fuseplan
