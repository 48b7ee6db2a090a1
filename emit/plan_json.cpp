#include "emit/plan_json.h"

#include <set>

#include <nlohmann/json.hpp>

namespace fuseplan {

using ordered_json = nlohmann::ordered_json;

namespace {

std::vector<std::string> names(const Graph& g, const std::vector<NodeId>& ids) {
  std::vector<std::string> out;
  for (NodeId n : ids) out.push_back(g.node(n).name);
  return out;
}

ordered_json cost_json(const GroupCost& c) {
  ordered_json j;
  j["bytes_read"] = c.bytes_read;
  j["bytes_written"] = c.bytes_written;
  j["flops"] = c.flops;
  j["spill_bytes"] = c.spill_bytes;
  j["regs_per_thread"] = c.regs_per_thread;
  j["regs_estimate"] = c.regs_estimate;
  j["regs_measured"] = c.regs_measured >= 0 ? ordered_json(c.regs_measured) : ordered_json(nullptr);
  j["spill_bytes_estimate"] = c.spill_bytes_estimate;
  j["spill_bytes_measured"] = c.spill_bytes_measured >= 0 ? ordered_json(c.spill_bytes_measured) : ordered_json(nullptr);
  j["resources"] = c.measured ? "measured" : "estimate";
  j["occupancy"] = c.occupancy;
  j["t_mem_us"] = c.t_mem_us;
  j["t_compute_us"] = c.t_compute_us;
  j["launch_us"] = c.launch_us;
  j["predicted_us"] = c.predicted_us;
  j["bound"] = c.bound;
  j["breakdown"] = c.breakdown;
  return j;
}

[[noreturn]] void bad(const std::string& what) { throw Error("malformed plan: " + what); }

const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) bad(where + " has no '" + key + "'");
  return j.at(key);
}

}  // namespace

std::string plan_to_json(const Graph& g, const Plan& plan) {
  ordered_json j;
  j["schema"] = kPlanSchema;
  j["model"] = {{"path", plan.model_path}, {"sha256", plan.model_sha256}};
  j["device"] = plan.device;
  ordered_json dims = ordered_json::object();
  for (auto& [k, v] : plan.dims) dims[k] = v;
  j["dims"] = dims;
  j["strategy"] = plan.strategy;
  j["status"] = plan.status;
  ordered_json groups = ordered_json::array();
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    const Group& grp = plan.groups[i];
    ordered_json gj;
    gj["id"] = grp.id;
    gj["kind"] = std::string(to_string(grp.kind));
    gj["nodes"] = names(g, grp.nodes);
    std::vector<std::string> origins;
    std::set<std::string> seen;
    for (NodeId n : grp.nodes)
      if (seen.insert(g.node(n).origin).second) origins.push_back(g.node(n).origin);
    gj["origins"] = origins;
    gj["inputs"] = names(g, group_inputs(g, grp));
    gj["outputs"] = names(g, grp.materialised);
    gj["materialised"] = names(g, grp.materialised);
    gj["duplicated"] = names(g, grp.duplicated);
    if (grp.kind == GroupKind::horizontal) {
      ordered_json br = ordered_json::array();
      for (auto& b : grp.branches) br.push_back(names(g, b));
      gj["branches"] = br;
    }
    gj["cost"] = cost_json(plan.costs[i]);
    groups.push_back(std::move(gj));
  }
  j["groups"] = groups;
  ordered_json decs = ordered_json::array();
  for (const auto& d : plan.decisions) {
    ordered_json dj;
    dj["producer"] = d.producer;
    dj["consumer"] = d.consumer;
    dj["action"] = std::string(to_string(d.action));
    dj["blocker"] = d.blocker == Blocker::none ? ordered_json(nullptr) : ordered_json(std::string(to_string(d.blocker)));
    dj["reason"] = d.reason;
    dj["delta_us"] = d.delta_us;
    decs.push_back(std::move(dj));
  }
  j["decisions"] = decs;
  j["totals"] = {{"kernels", plan.totals.kernels},
                 {"bytes", plan.totals.bytes},
                 {"flops", plan.totals.flops},
                 {"predicted_us", plan.totals.predicted_us},
                 {"search_ms", plan.totals.search_ms}};
  return j.dump(2) + "\n";
}

Plan load_plan(const std::string& text, const Graph& g, const DeviceSpec& d, const std::string& model_sha256,
               const std::map<std::string, int64_t>& dims) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    bad("not JSON (" + msg + ")");
  }
  try {
    const auto& schema = field(j, "schema", "plan");
    if (!schema.is_string() || schema.get<std::string>() != kPlanSchema)
      bad("schema is " + schema.dump() + ", expected \"" + kPlanSchema + "\"");
    if (!model_sha256.empty() && j.contains("model") && j["model"].is_object() && j["model"].contains("sha256")) {
      const std::string h = j["model"]["sha256"].get<std::string>();
      if (!h.empty() && h != model_sha256)
        throw Error("plan was made for another model (sha256 " + h.substr(0, 12) + "…, this model " +
                    model_sha256.substr(0, 12) + "…)");
    }
    if (j.contains("dims") && !dims.empty()) {
      for (auto& [k, v] : field(j, "dims", "plan").items()) {
        auto it = dims.find(k);
        // A partition holds at any batch size: tune's dispatch.json serves a
        // range of sizes with one plan, re-priced here at the model's size.
        if (k == "batch") continue;
        if (it != dims.end() && it->second != v.get<int64_t>())
          throw Error("plan was made for " + k + "=" + std::to_string(v.get<int64_t>()) + ", not " + k + "=" +
                      std::to_string(it->second));
      }
    }
    const auto& groups = field(j, "groups", "plan");
    if (!groups.is_array()) bad("'groups' is not an array");
    std::vector<std::vector<NodeId>> partition;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const std::string where = "group " + std::to_string(i);
      const auto& kind = field(groups[i], "kind", where);
      if (!kind.is_string()) bad(where + ": 'kind' is not a string");
      group_kind_from_string(kind.get<std::string>());
      const auto& nodes = field(groups[i], "nodes", where);
      if (!nodes.is_array() || nodes.empty()) bad(where + ": 'nodes' is not a non-empty array");
      std::vector<NodeId> part;
      for (const auto& n : nodes) {
        if (!n.is_string()) bad(where + ": node names must be strings");
        const NodeId id = g.find(n.get<std::string>());
        if (id == kNoNode) bad(where + ": no primitive named '" + n.get<std::string>() + "' in the model");
        part.push_back(id);
      }
      partition.push_back(std::move(part));
    }
    if (j.contains("decisions")) {
      const auto& decs = j["decisions"];
      if (!decs.is_array()) bad("'decisions' is not an array");
      for (const auto& dj : decs) action_from_string(field(dj, "action", "decision").get<std::string>());
    }
    std::string strategy = j.contains("strategy") && j["strategy"].is_string() ? j["strategy"].get<std::string>() : "";
    Plan plan = make_plan(g, d, std::move(partition), strategy);
    if (j.contains("status") && j["status"].is_string()) plan.status = j["status"].get<std::string>();
    if (j.contains("model") && j["model"].is_object()) {
      if (j["model"].contains("path") && j["model"]["path"].is_string()) plan.model_path = j["model"]["path"];
      if (j["model"].contains("sha256") && j["model"]["sha256"].is_string()) plan.model_sha256 = j["model"]["sha256"];
    }
    if (j.contains("dims") && j["dims"].is_object())
      for (auto& [k, v] : j["dims"].items()) plan.dims[k] = v.get<int64_t>();
    for (const auto& [k, v] : dims)
      if (plan.dims.count(k)) plan.dims[k] = v;  // where it is instantiated (a batch size may differ)
    return plan;
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    bad(msg);
  }
}

}  // namespace fuseplan
