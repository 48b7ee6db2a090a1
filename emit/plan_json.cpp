#include "emit/plan_json.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "costmodel/compile_time.h"
#include "graph/layout.h"
#include "support/format.h"

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

std::string string_field(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_string()) bad(where + ": '" + key + "' is not a string");
  return v.get<std::string>();
}

double number_field(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_number()) bad(where + ": '" + key + "' is not a number");
  return v.get<double>();
}

// The JSON library's message without its "[json.exception.parse_error.101]"
// tag and parser jargon: "line 2, column 1: unexpected end of input; ...".
std::string json_error(const nlohmann::json::exception& e) {
  std::string msg = e.what();
  const auto tag = msg.find("] ");
  if (msg.rfind("[json.exception.", 0) == 0 && tag != std::string::npos) msg = msg.substr(tag + 2);
  if (msg.rfind("parse error at ", 0) == 0) msg = msg.substr(std::string("parse error at ").size());
  const auto syntax = msg.find("syntax error while parsing ");
  const auto dash = syntax == std::string::npos ? syntax : msg.find(" - ", syntax);
  if (dash != std::string::npos) msg.erase(syntax, dash + 3 - syntax);
  for (char& ch : msg)
    if (ch == '\n') ch = ' ';
  return msg;
}

// Every string and key of a plan file through escape_name (support/format.h),
// as the importer escapes a model's names: a plan fuseplan wrote is unchanged
// (its names are escaped already, and escaping is idempotent); a hand-edited
// "\u001b" or newline reaches neither a terminal nor a table raw. Walks with
// an explicit stack: a plan file may nest arbitrarily deep.
void escape_strings(nlohmann::json& root) {
  std::vector<nlohmann::json*> todo{&root};
  while (!todo.empty()) {
    nlohmann::json& j = *todo.back();
    todo.pop_back();
    if (j.is_string()) {
      std::string e = escape_name(j.get_ref<const std::string&>());
      if (e != j.get_ref<const std::string&>()) j = std::move(e);
    } else if (j.is_object()) {
      bool keys_ok = true;
      for (const auto& [k, v] : j.items()) keys_ok = keys_ok && escape_name(k) == k;
      if (!keys_ok) {
        nlohmann::json o = nlohmann::json::object();
        for (auto& [k, v] : j.items()) o[escape_name(k)] = std::move(v);
        j = std::move(o);
      }
      for (auto& v : j) todo.push_back(&v);
    } else if (j.is_array()) {
      for (auto& v : j) todo.push_back(&v);
    }
  }
}

nlohmann::json parse_plan(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    bad("not JSON (" + escape_name(json_error(e)) + ")");
  }
  escape_strings(j);
  return j;
}

// What can be checked without the model: the schema, each group's kind and
// node names, and that every group computes a primitive no other group does
// (make_plan drops one that only recomputes others': the file would not be
// the plan that runs). Returns each group's node names.
std::vector<std::vector<std::string>> checked_groups(const nlohmann::json& j) {
  const auto& schema = field(j, "schema", "plan");
  if (!schema.is_string() || schema.get<std::string>() != kPlanSchema)
    bad("schema is " + schema.dump() + ", expected \"" + kPlanSchema + "\"");
  const auto& groups = field(j, "groups", "plan");
  if (!groups.is_array()) bad("'groups' is not an array");
  std::vector<std::vector<std::string>> out;
  std::map<std::string, std::vector<std::size_t>> holders;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string where = "group " + std::to_string(i);
    group_kind_from_string(string_field(groups[i], "kind", where));
    const auto& nodes = field(groups[i], "nodes", where);
    if (!nodes.is_array() || nodes.empty()) bad(where + ": 'nodes' is not a non-empty array");
    std::vector<std::string> names;
    for (const auto& n : nodes) {
      if (!n.is_string()) bad(where + ": node names must be strings");
      const std::string name = n.get<std::string>();
      if (std::find(names.begin(), names.end(), name) != names.end()) bad(where + " lists '" + name + "' twice");
      names.push_back(name);
      holders[name].push_back(i);
    }
    out.push_back(std::move(names));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    bool redundant = true;
    for (const auto& n : out[i]) redundant = redundant && holders[n].size() > 1;
    if (!redundant) continue;
    const auto& h = holders[out[i][0]];
    const std::size_t other = h[0] == i ? h[1] : h[0];
    bad("group " + std::to_string(i) + " is extra: every primitive of it is in another group too ('" + out[i][0] +
        "' is in group " + std::to_string(other) + "); remove it");
  }
  return out;
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
  if (plan.max_group_size > 0) j["max_group_size"] = plan.max_group_size;  // the user's cap (--max-group-size)
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
  // The CPU backend's activation layouts (graph/layout.h; informational: a
  // function of the model, recomputed wherever the plan runs).
  const Layouts& lay = layouts_of(g);
  std::vector<NodeId> blocked;
  ordered_json reorders = ordered_json::array();
  for (NodeId n : g.topo_order()) {
    if (lay.is_blocked(n)) blocked.push_back(n);
    if (const int r = lay.reorders(g, n))
      reorders.push_back({{"conv", g.node(n).name},
                          {"reordered", r == (kReorderX | kReorderY) ? "x,y" : r == kReorderX ? "x" : "y"}});
  }
  j["cpu_layouts"] = {{"blocked_format", lay.format()}, {"blocked", names(g, blocked)}, {"conv_reorders", reorders}};
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
  const nlohmann::json j = parse_plan(text);
  try {
    const std::vector<std::vector<std::string>> group_names = checked_groups(j);
    // Every searched kernel stays within its compile-time budget; a larger
    // group (an edited plan) would overflow the emitters' stack, which
    // recurses once per chained primitive (8000 did).
    const std::size_t budget = compile_time_max_primitives(d);
    for (std::size_t i = 0; i < group_names.size(); ++i)
      if (group_names[i].size() > budget)
        bad("group " + std::to_string(i) + " holds " + std::to_string(group_names[i].size()) +
            " primitives, over the compile-time budget of " + std::to_string(budget) + " per kernel on " + d.name +
            " (docs/cost-model.md, \"Compile time\")");
    // Types first, so an edited value is named ("type must be number, but
    // is string" said neither the field nor the plan's key).
    if (j.contains("model") && j["model"].is_object() && j["model"].contains("sha256") &&
        !j["model"]["sha256"].is_string())
      bad("model: 'sha256' is not a string");
    if (j.contains("dims")) {
      if (!j["dims"].is_object()) bad("'dims' is not an object of NAME: value");
      for (auto& [k, v] : j["dims"].items())
        if (!v.is_number_integer() || v.get<int64_t>() < 1) bad("dims: '" + k + "' is " + v.dump() + ", not an integer >= 1");
    }
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
        // range of sizes with one plan, re-priced here at the model's size;
        // whether the batch dim was bound by --batch or by its name (--dim N=8).
        if (k == "batch" || (!g.batch_dim.empty() && k == g.batch_dim)) continue;
        if (it != dims.end() && it->second != v.get<int64_t>())
          throw Error("plan was made for " + k + "=" + std::to_string(v.get<int64_t>()) + ", not " + k + "=" +
                      std::to_string(it->second));
      }
    }
    std::vector<std::vector<NodeId>> partition;
    for (std::size_t i = 0; i < group_names.size(); ++i) {
      std::vector<NodeId> part;
      for (const auto& name : group_names[i]) {
        const NodeId id = g.find(name);
        if (id == kNoNode) bad("group " + std::to_string(i) + ": no primitive named '" + name + "' in the model");
        part.push_back(id);
      }
      std::sort(part.begin(), part.end(), [&](NodeId a, NodeId b) { return g.topo_index(a) < g.topo_index(b); });
      partition.push_back(std::move(part));
    }
    if (j.contains("decisions")) {
      const auto& decs = j["decisions"];
      if (!decs.is_array()) bad("'decisions' is not an array");
      for (std::size_t i = 0; i < decs.size(); ++i)
        action_from_string(string_field(decs[i], "action", "decision " + std::to_string(i)));
    }
    std::string strategy = j.contains("strategy") && j["strategy"].is_string() ? j["strategy"].get<std::string>() : "";
    int max_group_size = 0;  // the user's cap it was searched under: the decisions name its cuts again
    if (j.contains("max_group_size")) {
      const auto& m = j["max_group_size"];
      if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > (1 << 20))
        bad("'max_group_size' is " + m.dump() + ", not an integer from 1 to 1048576");
      max_group_size = static_cast<int>(m.get<int64_t>());
    }
    Plan plan = make_plan(g, d, partition, strategy, PartitionSource::plan_file, max_group_size);
    // make_plan derives each kind from the primitives (and orders the groups):
    // a file whose kind differs is not the plan that would run.
    std::map<std::vector<NodeId>, const Group*> made;
    for (const auto& grp : plan.groups) made[grp.nodes] = &grp;
    for (std::size_t i = 0; i < partition.size(); ++i) {
      const std::string kind = j["groups"][i]["kind"].get<std::string>();
      const auto it = made.find(partition[i]);
      if (it == made.end()) bad("group " + std::to_string(i) + " is not a kernel of the plan it makes");
      const std::string derived(to_string(it->second->kind));
      if (kind != derived)
        bad("group " + std::to_string(i) + " says kind '" + kind + "', but its primitives make a '" + derived +
            "' group");
    }
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
    bad(json_error(e));
  }
}

PlanLog read_plan_log(const std::string& text) {
  const nlohmann::json j = parse_plan(text);
  try {
    PlanLog log;
    log.groups = checked_groups(j);
    if (j.contains("strategy") && j["strategy"].is_string()) log.strategy = j["strategy"].get<std::string>();
    if (j.contains("device") && j["device"].is_string()) log.device = j["device"].get<std::string>();
    const auto& totals = field(j, "totals", "plan");
    const auto& kernels = field(totals, "kernels", "totals");
    if (!kernels.is_number_integer()) bad("totals: 'kernels' is not an integer");
    log.kernels = kernels.get<int64_t>();
    log.predicted_us = number_field(totals, "predicted_us", "totals");
    if (j.contains("cpu_layouts") && j["cpu_layouts"].is_object()) {
      const auto& cl = j["cpu_layouts"];
      if (cl.contains("blocked_format") && cl["blocked_format"].is_string())
        log.blocked_format = cl["blocked_format"].get<std::string>();
      if (cl.contains("blocked") && cl["blocked"].is_array()) log.blocked_tensors = static_cast<int64_t>(cl["blocked"].size());
      if (cl.contains("conv_reorders") && cl["conv_reorders"].is_array())
        for (const auto& r : cl["conv_reorders"])
          if (r.is_object() && r.contains("conv") && r["conv"].is_string() && r.contains("reordered") &&
              r["reordered"].is_string())
            log.conv_reorders.push_back(r["conv"].get<std::string>() + " (" + r["reordered"].get<std::string>() + ")");
    }
    std::set<std::string> in_groups;
    for (const auto& names : log.groups) in_groups.insert(names.begin(), names.end());
    const auto& decs = field(j, "decisions", "plan");
    if (!decs.is_array()) bad("'decisions' is not an array");
    for (std::size_t i = 0; i < decs.size(); ++i) {
      const std::string where = "decision " + std::to_string(i);
      DecisionRecord d;
      d.producer = string_field(decs[i], "producer", where);
      d.consumer = string_field(decs[i], "consumer", where);
      for (const auto& n : {d.producer, d.consumer})
        if (!in_groups.count(n)) bad(where + ": '" + n + "' is in no group");
      d.action = action_from_string(string_field(decs[i], "action", where));
      const auto& blocker = field(decs[i], "blocker", where);
      if (!blocker.is_null() && !blocker.is_string()) bad(where + ": 'blocker' is neither a string nor null");
      if (blocker.is_string()) d.blocker = blocker_from_string(blocker.get<std::string>());
      d.reason = string_field(decs[i], "reason", where);
      d.delta_us = number_field(decs[i], "delta_us", where);
      log.decisions.push_back(std::move(d));
    }
    return log;
  } catch (const nlohmann::json::exception& e) {
    bad(json_error(e));
  }
}

}  // namespace fuseplan
