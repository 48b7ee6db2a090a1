// fuseplan run MODEL --plan plan.json [--verify] [--repeat K] [--threads N] [--json]:
// the whole model through the CPU backend's emitted kernels.
#include <iostream>

#include "cli/common.h"
#include "support/files.h"
#include "emit/plan_json.h"
#include "exec/cpu_run.h"
#include "search/strategy.h"

namespace fuseplan::cli {

namespace {
struct RunArgs {
  ModelArgs model;
  std::string plan;  // "" = search with --strategy on --device
  std::string device = "host-cpu";
  std::string strategy = "cost";
  RunOptions opts;
  bool json = false;
};

void run_run(const RunArgs& a) {
  if (a.opts.repeat < 1) throw Error("--repeat must be at least 1");
  set_passive_wait_policy();  // before anything can load libgomp
  LoadedModel m = load_model(a.model);
  const DeviceSpec d = load_device_arg(a.device);
  Plan plan = a.plan.empty() ? search(m.graph, d, a.strategy)
                             : load_plan(read_file(a.plan), m.graph, d, m.sha256, a.model.dims());
  RunResult r = run_plan(m.graph, plan, a.opts);
  if (a.json) {
    std::cout << run_result_json(r);
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& gt : r.groups)
      rows.push_back({std::to_string(gt.group), gt.kind, std::to_string(gt.primitives), gt.label.substr(0, 48),
                      fmt(gt.measured_us, 1), fmt(gt.predicted_us, 1)});
    std::cout << format_table({"group", "kind", "prims", "primitives", "measured_us", "predicted_us"}, rows);
    std::cout << "total: " << r.groups.size() << " kernels, measured " << fmt(r.measured_us, 1)
              << " us (median of " << a.opts.repeat << "), predicted " << fmt(r.predicted_us, 1) << " us on "
              << d.name << "; compile " << (r.cache_hit ? std::string("cached") : fmt(r.compile_ms, 0) + " ms")
              << "\n";
    if (r.verified)
      std::cout << (r.ok ? "verify: every output bit-identical to the reference executor\n"
                         : "verify: MISMATCH\n" + verify_message(r));
    else if (!r.reference_note.empty())
      std::cout << "verify: " << r.reference_note << "\n";
  }
  if (r.verified && !r.ok) throw Error("verification failed: outputs differ from the reference executor");
}
}  // namespace

void add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "run the model through the CPU backend's fused kernels, time and verify");
  a->model.add_to(cmd);
  cmd->add_option("--plan", a->plan, "plan JSON (default: search one now with --strategy)")->check(file_name());
  cmd->add_option("--device", a->device, std::string(kDeviceHelp) + ": its cost model prices the plan")->capture_default_str();
  cmd->add_option("--strategy", a->strategy, "strategy when no --plan is given")->capture_default_str();
  cmd->add_flag("--verify", a->opts.verify, "compare every output with the reference executor (bit-identical)");
  cmd->add_option("--repeat", a->opts.repeat, "timed repetitions (median per group)")->capture_default_str();
  cmd->add_option("--threads", a->opts.threads, "OpenMP threads for the kernels (default: OMP_NUM_THREADS, else all cores)")
      ->check(integer_in(0, kMaxThreads));
  cmd->add_option("--inputs", a->opts.inputs, "directory of NAME.npy inputs (default: seeded random)");
  cmd->add_flag("--json", a->json, "print the result as JSON");
  cmd->callback([a] { run_run(*a); });
}

}  // namespace fuseplan::cli
