// fuseplan explain plan.json [--node NAME]: the decision log, readable.
#include <algorithm>
#include <iostream>

#include "cli/common.h"
#include "support/files.h"
#include "emit/plan_json.h"

namespace fuseplan::cli {

namespace {
struct ExplainArgs {
  std::string plan;
  std::string node;
  bool node_given = false;
};

void run_explain(const ExplainArgs& a) {
  // The checks of cost/run --plan that need no model, and the same messages.
  const PlanLog log = read_plan_log(read_file(a.plan));
  // Which kernel holds each primitive (first holder).
  std::map<std::string, std::size_t> kernel_of;
  for (std::size_t i = 0; i < log.groups.size(); ++i)
    for (const auto& n : log.groups[i]) kernel_of.emplace(n, i);
  // An unknown --node fails before the header: one error line, no output.
  if (a.node_given && std::none_of(log.decisions.begin(), log.decisions.end(), [&](const DecisionRecord& d) {
        return d.producer == a.node || d.consumer == a.node;
      }))
    throw Error("no decision touches '" + a.node + "'");
  std::cout << "plan " << a.plan << ": strategy " << (log.strategy.empty() ? "?" : log.strategy) << ", device "
            << (log.device.empty() ? "?" : log.device) << ", " << log.kernels << " kernels, predicted "
            << fmt(log.predicted_us) << " us\n";
  if (!a.node_given && (log.blocked_tensors > 0 || !log.conv_reorders.empty())) {
    std::cout << "  CPU layouts: " << log.blocked_tensors << " tensors stored "
              << (log.blocked_format.empty() ? "blocked" : log.blocked_format) << " between convolutions; ";
    if (log.conv_reorders.empty()) std::cout << "no convolution reorders its activations\n";
    else std::cout << log.conv_reorders.size() << " convolutions reorder NCHW activations around the call:";
    for (std::size_t i = 0; i < log.conv_reorders.size() && i < 8; ++i) std::cout << " " << log.conv_reorders[i];
    if (log.conv_reorders.size() > 8) std::cout << " ...";
    if (!log.conv_reorders.empty()) std::cout << "\n";
  }
  for (const auto& d : log.decisions) {
    if (a.node_given && d.producer != a.node && d.consumer != a.node) continue;
    std::cout << "  " << d.producer << " -> " << d.consumer << ": " << to_string(d.action);
    if (d.action == Action::fused || d.action == Action::duplicated)
      std::cout << " (kernel " << kernel_of.at(d.consumer) << ")";
    else
      std::cout << " (kernels " << kernel_of.at(d.producer) << " | " << kernel_of.at(d.consumer) << ")";
    if (d.blocker != Blocker::none) std::cout << " [" << to_string(d.blocker) << "]";
    std::cout << " delta " << fmt(d.delta_us, 3) << " us";
    if (!d.reason.empty()) std::cout << ": " << d.reason;
    std::cout << "\n";
  }
}
}  // namespace

void add_explain(CLI::App& app) {
  auto a = std::make_shared<ExplainArgs>();
  auto* cmd = app.add_subcommand("explain", "print each fusion decision: merged or refused, blocker, predicted delta");
  cmd->add_option("plan", a->plan, "plan JSON")->required()->check(file_name());
  cmd->add_option("--node", a->node, "only decisions touching this primitive")->each([a](const std::string&) {
    a->node_given = true;
  });
  cmd->callback([a] { run_explain(*a); });
}

}  // namespace fuseplan::cli
