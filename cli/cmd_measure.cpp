// fuseplan measure MODEL... --device D --strategies a,b [--batch B --dim N=V]
// -o FILE.jsonl: searches each model with each strategy, profiles every plan
// on the device's backend and writes one measurement record per group.
#include <filesystem>
#include <fstream>
#include <set>
#include <iostream>
#include <sstream>

#include "cli/common.h"
#include "support/files.h"
#include "profiling/measurement.h"
#include "search/strategy.h"

namespace fuseplan::cli {

namespace {
struct MeasureArgs {
  std::vector<std::string> models;
  std::optional<int64_t> batch;
  std::vector<std::string> dim_args;
  std::string device = "host-cpu";
  std::string strategies = "unfused,cost";  // parse_strategy_list
  std::string out;
  bool append = false;
  std::string flush = "auto";
  ProfileOptions opts;
};

void run_measure(const MeasureArgs& a) {
  if (!a.out.empty()) {  // measuring takes minutes: a bad -o fails first
    std::vector<std::string> inputs = a.models;
    inputs.push_back(a.device);
    check_output_file(a.out, inputs);
  }
  const std::vector<std::string> strategies = parse_strategy_list(a.strategies);
  parse_dims(a.dim_args);  // a malformed or repeated --dim fails before any work
  check_dims_known(a.models, a.batch, a.dim_args);
  const DeviceSpec d = load_device_arg(a.device);  // after the checks: the host may be probed now
  ProfileOptions o = a.opts;
  o.flush = flush_policy_from_string(a.flush);
  auto prof = make_profiler(d);
  std::ostringstream lines;
  std::set<std::string> notes;
  int groups = 0;
  for (const auto& path : a.models) {
    const ModelArgs ma = ModelArgs::one_of(path, a.batch, a.dim_args, a.models.size());
    LoadedModel m = load_model(ma);
    const std::string file = std::filesystem::path(path).filename().string();
    for (const auto& s : strategies) {
      Plan plan = search(m.graph, d, s);
      plan.model_sha256 = m.sha256;
      plan.dims = ma.dims();
      ProfileResult r = prof->profile(m.graph, plan, d, o);
      for (const auto& n : r.notes)
        if (notes.insert(n).second) std::cerr << "fuseplan: " << n << "\n";
      for (const auto& rec : make_records(m.graph, plan, d, r, file, o.threads)) lines << record_to_json(rec) << "\n";
      groups += static_cast<int>(r.groups.size());
      std::cerr << "fuseplan: measured " << file << " / " << s << ": " << r.groups.size() << " groups, "
                << fmt(r.total_us, 0) << " us\n";
    }
  }
  if (a.out.empty()) {
    std::cout << lines.str();
  } else if (a.append) {
    std::ofstream f(a.out, std::ios::app);
    if (!(f << lines.str())) throw Error("cannot append to '" + a.out + "'");
  } else {
    write_file_atomic(a.out, lines.str());
  }
  if (!a.out.empty()) std::cout << "wrote " << groups << " measurement records to " << a.out << "\n";
}
}  // namespace

void add_measure(CLI::App& app) {
  auto a = std::make_shared<MeasureArgs>();
  auto* cmd = app.add_subcommand("measure", "profile the plans of several models and strategies, write measurement records (JSONL)");
  cmd->add_option("models", a->models, "model files (.onnx / .onnxtxt)")->required();
  cmd->add_option("--batch", a->batch, kBatchHelp)->check(batch_value());
  cmd->add_option("--dim", a->dim_args, "bind a named symbolic dim, NAME=VALUE (repeatable, each NAME once; models without it ignore it)")
      ->check(dim_value());
  cmd->add_option("--device", a->device, std::string(kDeviceHelp) + " (cpu: CPU backend, gpu: CUPTI)")->capture_default_str();
  cmd->add_option("--strategies", a->strategies, "strategies whose plans are measured: comma separated, each once, or 'all'")
      ->capture_default_str();
  cmd->add_option("-o,--output", a->out, "measurements file (JSONL); default stdout")->check(file_name());
  cmd->add_flag("--append", a->append, "append to the output file instead of replacing it");
  cmd->add_option("--repeat", a->opts.repeat, "timed repetitions (median per group)")
      ->capture_default_str()
      ->check(integer_in(1, 1000000));
  cmd->add_option("--min-time", a->opts.min_time_s,
                  "CPU: keep repeating past --repeat until the timed repetitions of a plan have taken this many "
                  "seconds (samples a shared host's speed states; 0 = exactly --repeat)")
      ->capture_default_str()
      ->check(number_in(0.0, 3600.0));
  cmd->add_option("--warmup", a->opts.warmup, "untimed runs first")->capture_default_str()->check(integer_in(0, 1000000));
  cmd->add_option("--flush", a->flush, "cache flush between repetitions: auto, always, never")->capture_default_str();
  cmd->add_option("--threads", a->opts.threads, "CPU: OpenMP threads (0 = default)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxThreads));
  cmd->add_flag("!--no-counters", a->opts.counters, "do not read hardware counters");
  cmd->callback([a] { run_measure(*a); });
}

}  // namespace fuseplan::cli
