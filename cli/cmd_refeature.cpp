// fuseplan refeature MEASUREMENTS... --models PATH... [--device D] [-o DIR]: re-derives
// the cost features of existing measurement records from the model files,
// so a feature added to the cost model after the measurements were taken
// can be fitted and scored on the same measured times. Each record's plan
// is searched again exactly as `fuseplan measure` did (its device, strategy
// and bound dims); the record is refused unless the model's SHA-256, the
// plan id and the group key all match, and unless the re-derived features
// reproduce the record's predicted time on its device, with the features
// the record lacks at their absent values (the model changed otherwise).
// Only `predicted` changes (features, and the times they give on the
// record's device, or --device's); measured times stay.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "cli/common.h"
#include "support/files.h"
#include "profiling/measurement.h"
#include "search/strategy.h"

namespace fuseplan::cli {

namespace {
struct RefeatureArgs {
  std::vector<std::string> files;
  std::vector<std::string> models;  // files or directories searched by file name
  std::string out_dir;              // "" = rewrite in place
  std::string device;               // "" = each record's own device (load_device_arg)
};

namespace fs = std::filesystem;

std::string find_model(const std::vector<std::string>& paths, const std::string& name) {
  for (const auto& p : paths) {
    if (fs::is_directory(p)) {
      if (fs::exists(fs::path(p) / name)) return (fs::path(p) / name).string();
    } else if (fs::path(p).filename() == name) {
      return p;
    }
  }
  throw Error("no model file named '" + name + "' under --models");
}

void run_refeature(const RefeatureArgs& a) {
  // Plans searched once per (model, sha, device, strategy, dims).
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::map<std::string, int64_t>>;
  struct Searched {
    std::shared_ptr<Graph> graph;
    Plan plan;
    DeviceSpec device;
    std::string pid;
  };
  std::map<Key, Searched> cache;
  std::map<std::string, DeviceSpec> devices;
  std::set<std::string> warned;
  int changed = 0, total = 0;
  // Every file is re-derived before any is written: a bad record in the
  // last file leaves the first ones as they were.
  std::vector<std::pair<std::string, std::string>> outputs;  // path, JSON lines
  auto output_of = [&](const std::string& file) {
    return a.out_dir.empty() ? file : (fs::path(a.out_dir) / fs::path(file).filename()).string();
  };
  for (const auto& file : a.files) check_writable(output_of(file), /*parents_made=*/!a.out_dir.empty());
  for (const auto& file : a.files) {
    std::vector<MeasurementRecord> rs = read_records(file);
    for (auto& r : rs) {
      const std::string ctx = file + ": " + r.model + "#" + r.strategy + "#" + std::to_string(r.group);
      Key k{r.model, r.model_sha256, r.device, r.strategy, r.dims};
      auto it = cache.find(k);
      if (it == cache.end()) {
        ModelArgs ma;
        ma.path = find_model(a.models, r.model);
        for (const auto& [name, v] : r.dims) {
          if (name == "batch") ma.batch = v;
          else ma.dim_args.push_back(name + "=" + std::to_string(v));
        }
        LoadedModel m = load_model(ma, /*quiet=*/true);
        for (const auto& w : m.graph.warnings)  // each distinct warning once, not once per plan searched
          if (warned.insert(w).second) warn(w);
        if (m.sha256 != r.model_sha256)
          throw Error(ctx + ": " + ma.path + " is not the measured model (SHA-256 differs)");
        const std::string& dev = a.device.empty() ? r.device : a.device;
        if (!devices.count(dev)) devices.emplace(dev, load_device_arg(dev));
        Searched s;
        s.device = devices.at(dev);
        s.graph = std::make_shared<Graph>(std::move(m.graph));
        s.plan = search(*s.graph, s.device, r.strategy);
        s.pid = plan_id(*s.graph, s.plan);
        it = cache.emplace(k, std::move(s)).first;
      }
      const Searched& s = it->second;
      if (s.pid != r.plan_id)
        throw Error(ctx + ": the " + r.strategy + " search now gives plan " + s.pid + ", the record has " + r.plan_id +
                    " (search changed since the measurement; re-measure)");
      if (r.group < 0 || r.group >= static_cast<int>(s.plan.groups.size()) ||
          group_key(*s.graph, s.plan.groups[r.group]) != r.group_key)
        throw Error(ctx + ": group key differs from the record's");
      CostFeatures f = cost_features(*s.graph, s.plan.groups[r.group], s.device);
      // The check prices the features the record was written without at
      // their absent values, as the code that wrote it did: a term added
      // since may change the time, nothing else may.
      CostFeatures as_written = f;
      if (r.features.bytes_read_sources == 0) as_written.bytes_read_sources = 0;
      if (r.features.graph_bytes < 0) as_written.graph_bytes = -1;
      if (r.features.transcendental_elems.empty()) {  // then the routines came from nowhere: none
        as_written.transcendental_elems.clear();
        as_written.libm_routines = 0;
      }
      if (r.features.flops_scalar == 0) as_written.flops_scalar = 0;
      if (r.features.prologue_passes == 0) as_written.prologue_passes = 0;
      if (r.features.contraction_calls == 0 &&
          r.features.contraction_class_flops == decltype(r.features.contraction_class_flops){}) {
        // Written before the contraction classes: its contraction FLOPs
        // were padded to the retired GEMM micro-tiles (docs/calibration.md).
        as_written.contraction_class_flops = {};
        as_written.contraction_calls = 0;
        as_written.flops_contraction = r.features.flops_contraction;
      }
      double p = predict_us(as_written, s.device);
      if (std::fabs(p - r.predicted_us) > 1e-6 * std::max(1.0, std::fabs(r.predicted_us)))
        throw Error(ctx + ": the re-derived features predict " + fmt(p, 6) + " us on " + s.device.name + ", the record " +
                    fmt(r.predicted_us, 6) + " us (the cost model changed beyond the new terms; re-measure)");
      changed += !(f == r.features);
      r.features = f;
      // The prediction becomes today's, with the new terms: what `measure`
      // writes now, and what a second refeature checks against.
      const GroupCost c = cost(*s.graph, s.plan.groups[r.group], s.device);
      r.t_mem_us = c.t_mem_us;
      r.t_compute_us = c.t_compute_us;
      r.launch_us = c.launch_us;
      r.predicted_us = c.predicted_us;
      r.bound = c.bound;
      ++total;
    }
    std::ostringstream lines;
    for (const auto& r : rs) lines << record_to_json(r) << "\n";
    outputs.emplace_back(output_of(file), lines.str());
  }
  if (!a.out_dir.empty()) create_output_dirs(a.out_dir);
  for (const auto& [out, text] : outputs) {
    write_file_atomic(out, text);
    std::cout << "wrote " << std::count(text.begin(), text.end(), '\n') << " records to " << out << "\n";
  }
  std::cout << total << " records re-derived, " << changed << " with new feature values\n";
}
}  // namespace

void add_refeature(CLI::App& app) {
  auto a = std::make_shared<RefeatureArgs>();
  auto* cmd = app.add_subcommand(
      "refeature", "re-derive the cost features of measurement records from the model files (measured times kept)");
  cmd->add_option("measurements", a->files, "measurement files (JSONL from fuseplan measure)")->required();
  cmd->add_option("--models", a->models, "model files or directories holding them (matched by file name)")
      ->required()
      ->delimiter(',');
  cmd->add_option("-o,--output-dir", a->out_dir, "write the updated files here (default: rewrite in place)");
  cmd->add_option("--device", a->device,
                  "price every record on this device instead of the one it names (the project's records name "
                  "host-cpu and were priced on host-cpu-reference)");
  cmd->callback([a] { run_refeature(*a); });
}

}  // namespace fuseplan::cli
