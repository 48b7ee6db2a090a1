// `unfused`: one kernel per primitive; the baseline every strategy is compared to.
#include "search/strategies/registry.h"

namespace fuseplan {

namespace {
class Unfused : public Strategy {
 public:
  std::string name() const override { return "unfused"; }
  std::string description() const override { return "one kernel per primitive (baseline)"; }
  std::vector<std::vector<NodeId>> partition(const Graph& g, const DeviceSpec&, const SearchOptions&) override {
    std::vector<std::vector<NodeId>> out;
    for (NodeId n : g.topo_order())
      if (g.op_class(n) != OpClass::source) out.push_back({n});
    return out;
  }
};
}  // namespace

std::unique_ptr<Strategy> make_unfused_strategy() { return std::make_unique<Unfused>(); }

}  // namespace fuseplan
