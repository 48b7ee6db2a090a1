#include "tune/diff.h"

#include <map>
#include <optional>

namespace fuseplan {

bool same_graph_shapes(const Graph& a, const Graph& b) {
  if (a.size() != b.size()) return false;
  for (NodeId n = 0; n < a.size(); ++n) {
    const auto &x = a.node(n), &y = b.node(n);
    if (x.name != y.name || x.op != y.op || x.out.shape != y.out.shape || x.out.dtype != y.out.dtype) return false;
  }
  return true;
}

namespace {
using Edge = std::pair<std::string, std::string>;

std::map<Edge, Action> actions(const Plan& p) {
  std::map<Edge, Action> out;
  for (const auto& r : p.decisions) out[{r.producer, r.consumer}] = r.action;
  return out;
}
}  // namespace

void label_flip_causes(std::vector<DecisionFlip>& flips, const std::vector<PlanAt>& kept,
                       const std::vector<PlanAt>& same_device, const std::string& device,
                       const std::vector<bool>& kept_is_search) {
  std::map<int64_t, std::size_t> index;  // batch -> position in kept / same_device
  for (std::size_t i = 0; i < kept.size(); ++i) index[kept[i].batch] = i;
  std::vector<std::map<Edge, Action>> same;
  for (const auto& p : same_device) same.push_back(actions(*p.plan));
  auto same_action = [&](std::size_t i, const Edge& e) -> std::optional<Action> {
    if (i >= same.size()) return std::nullopt;
    auto it = same[i].find(e);
    if (it == same[i].end()) return std::nullopt;
    return it->second;
  };
  for (auto& f : flips) {
    f.cause.clear();
    const Edge e{f.producer, f.consumer};
    for (std::size_t k = 1; k < f.at.size(); ++k) {
      const DecisionAt &a = f.at[k - 1], &b = f.at[k];
      if (a.action == b.action) continue;
      const std::string pair = std::to_string(a.batch) + "→" + std::to_string(b.batch);
      std::string clause;
      auto ia = index.find(a.batch), ib = index.find(b.batch);
      if (ia == index.end() || ib == index.end()) continue;
      const PlanAt &ka = kept[ia->second], &kb = kept[ib->second];
      auto searched = [&](std::size_t i) { return i >= kept_is_search.size() || kept_is_search[i]; };
      const bool chosen = !searched(ia->second) || !searched(ib->second);
      const std::string measured_choice =
          "measured choice (" + pair + ": tune kept a plan it measured faster, another round's or a peer "
          "strategy's, at " + (!searched(ia->second) && !searched(ib->second) ? "both sizes"
                               : !searched(ia->second)                        ? std::to_string(a.batch)
                                                                              : std::to_string(b.batch));
      if (ka.graph && kb.graph && same_graph_shapes(*ka.graph, *kb.graph) && chosen) {
        clause = measured_choice + "; the graph is identical at both sizes)";
      } else if (ka.graph && kb.graph && same_graph_shapes(*ka.graph, *kb.graph)) {
        clause = "recalibration (" + pair + ": the graph is identical at both sizes; only the calibrated device changed)";
      } else {
        auto sa = same_action(ia->second, e), sb = same_action(ib->second, e);
        if (!sa || !sb)
          clause = "batch size (" + pair + ": the edge exists at one size only)";
        else if (*sa == a.action && *sb == b.action)
          clause = "batch size (" + pair + ": searched on one device, " + device + ", it flips the same way)";
        else if (*sa != *sb)
          // The batch size flips it on one device, but not the way the kept
          // plans do: the devices they were searched on matter too.
          clause = std::string(chosen ? "batch size and measured choice (" : "batch size and recalibration (") + pair +
                   ": on one device, " + device + ", it flips the other way: " + std::string(to_string(*sa)) + " → " +
                   std::string(to_string(*sb)) + ")";
        else if (chosen)
          clause = measured_choice + "; searched on one device, " + device + ", both sizes agree: " +
                   std::string(to_string(*sa)) + ")";
        else
          clause = "recalibration (" + pair + ": searched on one device, " + device + ", both sizes agree: " +
                   std::string(to_string(*sa)) + ")";
      }
      f.cause += (f.cause.empty() ? "" : "; ") + clause;
    }
  }
}

}  // namespace fuseplan
