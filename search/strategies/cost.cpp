// `cost`: fuseplan's own search, a local search from two starts.
//  1. Unfused start: priority-driven vertical fusion with duplication of cheap
//     multi-consumer producers, a refinement pass (single-primitive moves and
//     re-cuts of adjacent groups), vertical fusion again, then horizontal
//     fusion of launch-bound groups.
//  2. XLA start: XLA-style priority fusion (the `xla` strategy's decisions,
//     priced with 1 µs launches, producer into all consumers or none),
//     replayed on fuseplan's own cost model, then horizontal fusion (both
//     starts keep max_group_primitives: the compile-time budget, or the
//     user's --max-group-size when smaller).
// The start whose result is predicted faster wins (an exact tie is settled by
// the two plans' make_plan totals; then the first). Both
// starts are linear-time passes; the XLA start runs on graphs of at most
// kXlaStartMaxPrimitives primitives (a time budget: it doubles the search).
#include <algorithm>

#include "search/passes.h"
#include "search/strategies/registry.h"
#include "search/strategies/xla_fusion.h"

namespace fuseplan {

namespace {
// The XLA start roughly doubles the search time (XLA's own priority fusion is
// about half of the unfused start's time), so it runs on graphs up to this
// many primitives — every shared model — and larger graphs (synthetic
// 10k/100k-primitive stacks) rely on the unfused start alone.
constexpr std::size_t kXlaStartMaxPrimitives = 4096;

void improve(WorkState& ws, const SearchOptions& o) {
  greedy_vertical_pass(ws, o, /*allow_duplication=*/true);
  std::vector<int> changed;
  if (refine_pass(ws, o, &changed) > 0) greedy_vertical_pass_around(ws, o, changed, true);
  horizontal_pass(ws, o);
}

double total_us(WorkState& ws) {
  double t = 0;
  for (int gid : ws.alive_groups()) t += ws.cost_of(gid).predicted_us;
  return t;
}

class CostStrategy : public Strategy {
 public:
  std::string name() const override { return "cost"; }
  std::string description() const override {
    return "fuseplan: greedy by predicted saving + duplication + refinement + horizontal, from unfused and XLA starts";
  }
  std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec& d, const SearchOptions& o) override {
    WorkState own(g, d);
    improve(own, o);
    std::size_t prims = 0;
    for (NodeId n = 0; n < g.size(); ++n) prims += g.op_class(n) != OpClass::source;
    if (prims > kXlaStartMaxPrimitives) return own.partition();
    WorkState seeded(g, d);
    strategies::replay_xla_fusion(seeded, strategies::xla_fusion_log(g, d, o.max_group_size));
    horizontal_pass(seeded, o);
    const double a = total_us(own), b = total_us(seeded);
    if (a != b) return a < b ? own.partition() : seeded.partition();
    auto pa = own.partition(), pb = seeded.partition();
    const double ea = make_plan(g, d, pa, name(), PartitionSource::strategy).totals.predicted_us;
    const double eb = make_plan(g, d, pb, name(), PartitionSource::strategy).totals.predicted_us;
    return ea <= eb ? pa : pb;
  }
};
}  // namespace

std::unique_ptr<Strategy> make_cost_strategy() { return std::make_unique<CostStrategy>(); }

}  // namespace fuseplan
