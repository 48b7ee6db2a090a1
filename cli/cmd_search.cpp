// fuseplan search MODEL --device D [--strategy S] -o plan.json
// fuseplan cost MODEL --device D [--plan plan.json] [--json]
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "emit/cuda/cuda_backend.h"
#include "support/files.h"
#include "emit/plan_json.h"
#include "search/strategy.h"

namespace fuseplan::cli {

namespace {
struct SearchArgs {
  ModelArgs model;
  std::string device = "h100-sxm";
  std::string strategy = "cost";
  std::string output;
  std::string plan;  // cost: an existing plan to price
  int max_group_size = 0;  // none: the compile-time budget caps every kernel
  double time_limit_s = 60;  // exact strategies (optimal)
  bool json = false;
  bool measure_registers = false;
};

Plan finish(Plan p, const SearchArgs& a, const LoadedModel& m) {
  p.model_path = a.model.path;
  p.model_sha256 = m.sha256;
  p.dims = a.model.dims();
  return p;
}

// Compiles every group of the plan with NVRTC (cached by source hash) and
// reports measured registers/spills next to the cost model's estimate;
// with -o the table is written next to the plan (<plan>.resources.json/.md).
void measure_registers(const LoadedModel& m, const Plan& plan, const DeviceSpec& d, const cuda::NvrtcOptions& o,
                       const std::string& output) {
  auto table = cuda::measure_plan(m.graph, plan, d, o);
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : table)
    rows.push_back({std::to_string(r.group_id), r.kind, cuda::to_string(r.lowering.route), std::to_string(r.launches.size()),
                    std::to_string(r.regs_estimate),
                    std::to_string(r.regs_measured()), fmt(r.spill_estimate_bytes, 0),
                    std::to_string(r.spill_bytes_measured())});
  std::cout << format_table({"group", "kind", "route", "kernels", "regs_est", "regs_nvrtc", "spill_est_B", "spill_nvrtc_B/thread"},
                            rows);
  if (output.empty()) return;
  std::string stem = output.size() > 5 && output.ends_with(".json") ? output.substr(0, output.size() - 5) : output;
  write_file_atomic(stem + ".resources.json", cuda::resources_json(table, d, o));
  write_file_atomic(stem + ".resources.md", cuda::resources_markdown(table, d, o));
  std::cout << "wrote " << stem << ".resources.json, " << stem << ".resources.md\n";
}

// Prices every group of the plan with its measurement (the plan records
// estimate and measurement side by side) and recomputes the totals.
void price_measured(const Graph& g, Plan& plan, const DeviceSpec& d, const ResourceOracle& oracle) {
  const ScopedResourceOracle every(oracle, OracleUse::every_group);
  plan.totals.bytes = plan.totals.flops = plan.totals.predicted_us = 0;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    plan.costs[i] = cost(g, plan.groups[i], d, /*with_breakdown=*/true);
    plan.totals.bytes += plan.costs[i].bytes();
    plan.totals.flops += plan.costs[i].flops;
    plan.totals.predicted_us += plan.costs[i].predicted_us;
  }
}

void run_search(const SearchArgs& a) {
  if (!a.output.empty()) check_output_file(a.output, {a.model.path, a.device});
  LoadedModel m = load_model(a.model);
  const DeviceSpec d = load_device_arg(a.device);
  SearchOptions o;
  o.max_group_size = a.max_group_size;
  o.time_limit_s = a.time_limit_s;
  // --measure-registers: the search asks NVRTC for the registers/spills of
  // each group whose estimate constrains it and prices it with the
  // measurement (costmodel/cost.h ResourceOracle); the plan then records
  // estimate and measurement for every group.
  cuda::NvrtcOptions nv;
  auto stats = std::make_shared<cuda::OracleStats>();
  if (a.measure_registers) {
    nv = cuda::nvrtc_options(d);
    o.resource_oracle = cuda::nvrtc_resource_oracle(nv, stats);
  }
  Plan plan = finish(search(m.graph, d, a.strategy, o), a, m);
  const cuda::OracleStats during = *stats;
  if (a.measure_registers) price_measured(m.graph, plan, d, o.resource_oracle);
  Plan base = a.strategy == "unfused" ? plan : finish(search(m.graph, d, "unfused", o), a, m);
  if (!a.output.empty()) write_file_atomic(a.output, plan_to_json(m.graph, plan));
  std::cout << "strategy " << plan.strategy << " on " << d.name << ": " << plan.totals.kernels << " kernels (unfused "
            << base.totals.kernels << "), " << fmt_bytes(plan.totals.bytes) << " moved (unfused "
            << fmt_bytes(base.totals.bytes) << "), predicted " << fmt(plan.totals.predicted_us) << " us (unfused "
            << fmt(base.totals.predicted_us) << " us, "
            << (plan.totals.predicted_us > 0 ? fmt(base.totals.predicted_us / plan.totals.predicted_us) + "x"
                                             : std::string("no kernels"))
            << "), search " << fmt(plan.totals.search_ms, 1) << " ms"
            // exact strategies: proven optimal, or the gap (or no proven
            // bound) left when --time-limit stopped the search
            << (plan.status.empty() ? std::string() : ", status: " + plan.status) << "\n";
  if (a.measure_registers) {
    int changed = 0;
    for (const auto& c : plan.costs) changed += c.measured && c.regs_measured != c.regs_estimate;
    std::cout << "measured registers: the search compiled " << during.asked
              << " candidate groups whose estimate constrained them (" << during.compiled << " NVRTC compiles, "
              << during.cache_hits << " cache hits, " << during.failed << " not compilable"
              << (during.first_failure.empty() ? "" : ": " + during.first_failure) << "; " << during.library
              << " left to cuBLASLt/cuDNN keep the estimate); the plan is priced with "
              << "NVRTC's registers/spills (" << changed << " of " << plan.costs.size()
              << " groups differ from the estimate)\n";
  }
  if (!a.output.empty()) std::cout << "wrote " << a.output << "\n";
  if (a.measure_registers) measure_registers(m, plan, d, nv, a.output);
}

void run_cost(const SearchArgs& a) {
  LoadedModel m = load_model(a.model);
  const DeviceSpec d = load_device_arg(a.device);
  Plan plan = a.plan.empty() ? search(m.graph, d, "unfused")
                             : load_plan(read_file(a.plan), m.graph, d, m.sha256, a.model.dims());
  plan = finish(std::move(plan), a, m);
  if (a.json) {
    std::cout << plan_to_json(m.graph, plan);
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    const Group& grp = plan.groups[i];
    const GroupCost& c = plan.costs[i];
    rows.push_back({std::to_string(grp.id), std::string(to_string(grp.kind)), std::to_string(grp.nodes.size()),
                    m.graph.node(grp.nodes.back()).name.substr(0, 40), fmt_bytes(c.bytes()), fmt(c.flops / 1e6, 3),
                    std::to_string(c.regs_per_thread), fmt(c.t_mem_us), fmt(c.t_compute_us), fmt(c.launch_us),
                    fmt(c.predicted_us), c.bound});
  }
  std::cout << format_table({"id", "kind", "prims", "last primitive", "bytes", "MFLOP", "regs", "t_mem_us",
                             "t_compute_us", "launch_us", "predicted_us", "bound"},
                            rows);
  std::cout << "total: " << plan.totals.kernels << " kernels, " << fmt_bytes(plan.totals.bytes) << ", "
            << fmt(plan.totals.flops / 1e9, 3) << " GFLOP, predicted " << fmt(plan.totals.predicted_us) << " us on "
            << d.name << "\n";
}
}  // namespace

void add_search(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = app.add_subcommand("search", "search a fusion plan and write it as JSON");
  a->model.add_to(cmd);
  cmd->add_option("--device", a->device, kDeviceHelp)->capture_default_str();
  cmd->add_option("--strategy", a->strategy, "fusion strategy")->capture_default_str();
  cmd->add_option("--max-group-size", a->max_group_size,
                  "primitives per kernel at most (default: no cap of yours; every kernel stays within its "
                  "compile-time budget, docs/cost-model.md); the cuts it makes are `group_size` blockers in the plan")
      ->check(integer_in(1, 1 << 20));
  cmd->add_option("--time-limit", a->time_limit_s, "seconds for exact strategies (optimal)")
      ->capture_default_str()
      ->check(number_in(0.001, 86400.0));
  cmd->add_option("-o,--output", a->output, "plan JSON to write (atomically)")->check(file_name());
  cmd->add_flag("--measure-registers", a->measure_registers,
                "compile candidate groups with NVRTC for the device arch; the search prices them with the measured "
                "registers/spills instead of the estimate, and the plan records both");
  cmd->callback([a] { run_search(*a); });
}

void add_cost(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = app.add_subcommand("cost", "per-group predicted cost of a plan (default: the unfused plan)");
  a->model.add_to(cmd);
  cmd->add_option("--device", a->device, kDeviceHelp)->capture_default_str();
  cmd->add_option("--plan", a->plan, "plan JSON to price instead of the unfused plan")->check(file_name());
  cmd->add_flag("--json", a->json, "print the priced plan as JSON");
  cmd->callback([a] { run_cost(*a); });
}

}  // namespace fuseplan::cli
