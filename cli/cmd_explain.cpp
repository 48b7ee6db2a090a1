// fuseplan explain plan.json [--node NAME]: the decision log, readable.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "emit/files.h"
#include "emit/plan_json.h"

namespace fuseplan::cli {

namespace {
struct ExplainArgs {
  std::string plan;
  std::string node;
};

void run_explain(const ExplainArgs& a) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(a.plan));
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    throw Error("malformed plan '" + a.plan + "': " + msg);
  }
  try {
    if (!j.is_object() || j.value("schema", "") != kPlanSchema)
      throw Error("malformed plan '" + a.plan + "': schema is not \"" + std::string(kPlanSchema) + "\"");
    if (!j.contains("decisions") || !j["decisions"].is_array())
      throw Error("malformed plan '" + a.plan + "': no 'decisions' array");
    // Which kernel holds each primitive (first holder).
    std::map<std::string, int> kernel_of;
    for (const auto& g : j.at("groups"))
      for (const auto& n : g.at("nodes")) kernel_of.emplace(n.get<std::string>(), g.at("id").get<int>());
    std::cout << "plan " << a.plan << ": strategy " << j.value("strategy", "?") << ", device " << j.value("device", "?")
              << ", " << j["totals"].value("kernels", 0) << " kernels, predicted "
              << fmt(j["totals"].value("predicted_us", 0.0)) << " us\n";
    int shown = 0;
    for (const auto& d : j["decisions"]) {
      const std::string p = d.at("producer").get<std::string>(), c = d.at("consumer").get<std::string>();
      if (!a.node.empty() && p != a.node && c != a.node) continue;
      const std::string action = d.at("action").get<std::string>();
      const std::string blocker = d.at("blocker").is_null() ? "" : d.at("blocker").get<std::string>();
      std::cout << "  " << p << " -> " << c << ": " << action;
      if (action == "fused" || action == "duplicated")
        std::cout << " (kernel " << kernel_of[c] << ")";
      else
        std::cout << " (kernels " << kernel_of[p] << " | " << kernel_of[c] << ")";
      if (!blocker.empty()) std::cout << " [" << blocker << "]";
      std::cout << " delta " << fmt(d.at("delta_us").get<double>(), 3) << " us";
      const std::string reason = d.at("reason").get<std::string>();
      if (!reason.empty()) std::cout << ": " << reason;
      std::cout << "\n";
      ++shown;
    }
    if (!a.node.empty() && shown == 0) throw Error("no decision touches '" + a.node + "'");
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    for (char& ch : msg)
      if (ch == '\n') ch = ' ';
    throw Error("malformed plan '" + a.plan + "': " + msg);
  }
}
}  // namespace

void add_explain(CLI::App& app) {
  auto a = std::make_shared<ExplainArgs>();
  auto* cmd = app.add_subcommand("explain", "print each fusion decision: merged or refused, blocker, predicted delta");
  cmd->add_option("plan", a->plan, "plan JSON")->required();
  cmd->add_option("--node", a->node, "only decisions touching this primitive");
  cmd->callback([a] { run_explain(*a); });
}

}  // namespace fuseplan::cli
