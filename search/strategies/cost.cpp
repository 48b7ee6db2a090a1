// `cost`: fuseplan's own search. Priority-driven vertical fusion with
// duplication of cheap multi-consumer producers, a refinement pass that
// splits or moves primitives, then horizontal fusion of launch-bound groups.
#include "search/passes.h"
#include "search/strategies/registry.h"

namespace fuseplan {

namespace {
class CostStrategy : public Strategy {
 public:
  std::string name() const override { return "cost"; }
  std::string description() const override {
    return "fuseplan: greedy by predicted saving + duplication + refinement + horizontal";
  }
  std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec& d, const SearchOptions& o) override {
    WorkState ws(g, d);
    greedy_vertical_pass(ws, o, /*allow_duplication=*/true);
    if (refine_pass(ws, o) > 0) greedy_vertical_pass(ws, o, true);
    horizontal_pass(ws, o);
    return ws.partition();
  }
};
}  // namespace

std::unique_ptr<Strategy> make_cost_strategy() { return std::make_unique<CostStrategy>(); }

}  // namespace fuseplan
