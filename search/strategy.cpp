#include "search/strategy.h"

#include <algorithm>
#include <chrono>

#include "search/strategies/registry.h"

namespace fuseplan {

namespace {
struct Entry {
  const char* name;
  std::unique_ptr<Strategy> (*make)();
};
// Presentation order: the baseline first, fuseplan's own last.
constexpr Entry kStrategies[] = {
    {"unfused", make_unfused_strategy},
    {"elementwise", make_elementwise_strategy},
    {"tvm", make_tvm_strategy},
    {"xla", make_xla_strategy},
    {"inductor", make_inductor_strategy},
    {"optimal", make_optimal_strategy},
    {"cost", make_cost_strategy},
};
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const auto& e : kStrategies) out.push_back(e.name);
  return out;
}

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  for (const auto& e : kStrategies)
    if (name == e.name) return e.make();
  std::string known;
  for (const auto& e : kStrategies) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw Error("unknown strategy '" + name + "' (known: " + known + ")");
}

Plan search(const Graph& g, const DeviceSpec& d, const std::string& strategy, const SearchOptions& o) {
  auto s = make_strategy(strategy);
  const ScopedResourceOracle oracle(o.resource_oracle);  // every cost() below may ask it
  const auto t0 = std::chrono::steady_clock::now();
  auto part = s->partition(g, d, o);
  Plan plan = make_plan(g, d, std::move(part), s->name(), PartitionSource::strategy, o.max_group_size);
  plan.status = s->status();
  plan.totals.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

}  // namespace fuseplan
