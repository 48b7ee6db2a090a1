// The working set of a graph's unfused plan (cost.h graph_footprint_bytes):
// the store stall's regime (in the LLC or beyond it).
#include <cstdint>

#include "costmodel/cost.h"

namespace fuseplan {

double graph_footprint_bytes(const Graph& g) {
  auto sum = [&g] {
    double b = 0;
    for (NodeId n = 0; n < g.size(); ++n) b += static_cast<double>(g.bytes(n));
    return b;
  };
  if (g.revision() == 0) return sum();  // not finalized, or changed since: nothing to cache by
  thread_local uint64_t revision = 0;
  thread_local double bytes = 0;
  if (revision != g.revision()) {
    revision = g.revision();
    bytes = sum();
  }
  return bytes;
}

}  // namespace fuseplan
