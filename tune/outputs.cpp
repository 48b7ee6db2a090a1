#include "tune/outputs.h"

#include <filesystem>

#include "emit/dot.h"
#include "support/files.h"
#include "emit/plan_json.h"
#include "emit/report_md.h"
#include "emit/trace.h"
#include "tune/diff.h"
#include "tune/dispatch.h"
#include "tune/measure.h"

namespace fuseplan {

namespace {
std::string join(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}
std::string stem(int64_t batch) { return "plan-b" + std::to_string(batch); }
}  // namespace

std::vector<std::string> write_batch_files(const std::string& dir, const BatchTune& b, bool render_svg,
                                           std::string* svg_error) {
  std::vector<std::string> out;
  const std::string json = join(dir, stem(b.batch) + ".json"), dot = join(dir, stem(b.batch) + ".dot");
  write_file_atomic(json, plan_to_json(*b.graph, b.plan));
  out.push_back(json);
  write_file_atomic(dot, plan_to_dot(*b.graph, b.plan));
  out.push_back(dot);
  if (render_svg && have_program("dot")) {
    const std::string svg = join(dir, stem(b.batch) + ".svg");
    try {
      render_dot_svg(dot, svg);
      out.push_back(svg);
    } catch (const Error& e) {
      std::error_code ec;
      std::filesystem::remove(svg, ec);  // an SVG of an earlier run would not show this plan
      if (svg_error) *svg_error = e.what();
    }
  }
  if (b.measured) {
    const std::string trace = join(dir, "trace-b" + std::to_string(b.batch) + ".json");
    write_file_atomic(trace, trace_json(trace_events(b.run, b.batch),
                                        {{b.batch, b.plan.model_path + " batch " + std::to_string(b.batch)}},
                                        {{{b.batch, 0}, "measured (median per kernel)"}, {{b.batch, 1}, "predicted"}},
                                        {{"device", b.device.name}, {"strategy", b.plan.strategy}}));
    out.push_back(trace);
  }
  return out;
}

std::vector<std::string> write_run_reports(const std::string& dir, const TuneModel& model, const TuneOptions& opts,
                                           const std::vector<BatchTune>& done) {
  std::vector<std::string> out;
  if (done.empty()) return out;
  const DeviceSpec& last = done.back().device;
  std::vector<BatchReport> reports;
  std::vector<PlanAt> plans;
  std::vector<int64_t> batches;
  std::vector<DispatchInput> tuned;
  for (const auto& b : done) {
    reports.push_back(batch_report(b, opts.strategy));
    plans.push_back({b.batch, b.graph.get(), &b.plan});
    batches.push_back(b.batch);
    // Dispatch prices every plan on the final device, so neighbours compare on one model.
    tuned.push_back({b.batch, plan_file_name(b.batch), partition_key(*b.graph, b.plan), plan_to_json(*b.graph, b.plan)});
  }
  auto write = [&](const std::string& name, const std::string& text) {
    write_file_atomic(join(dir, name), text);
    out.push_back(join(dir, name));
  };
  write("summary.md", summary_markdown(model.path, last.name, reports));
  // Which flips the batch size causes: every size searched again on one
  // device (the final one); a batch size tuned on predictions alone on that
  // same device already has its plan.
  const std::string last_json = device_to_json(last);
  std::vector<Plan> same(done.size());
  std::vector<PlanAt> same_at;
  for (std::size_t i = 0; i < done.size(); ++i) {
    const BatchTune& b = done[i];
    same[i] = !b.measured && device_to_json(b.device) == last_json ? b.plan
                                                                    : search(*b.graph, last, opts.strategy, opts.search);
  }
  for (std::size_t i = 0; i < done.size(); ++i) same_at.push_back({done[i].batch, done[i].graph.get(), &same[i]});
  std::vector<DecisionFlip> flips = decision_flips(plans);
  // Is each kept plan the strategy's search on its size's final device (or
  // one tune kept because it measured faster: another round's, a peer's)?
  std::vector<bool> kept_is_search;
  for (std::size_t i = 0; i < done.size(); ++i) {
    const BatchTune& b = done[i];
    const Plan own = device_to_json(b.device) == last_json ? same[i] : search(*b.graph, b.device, opts.strategy, opts.search);
    kept_is_search.push_back(partition_key(*b.graph, own) == partition_key(*b.graph, b.plan));
  }
  label_flip_causes(flips, plans, same_at, last.name + (last.calibrated ? " as calibrated at the end" : ""),
                    kept_is_search);
  write("diff.md", diff_markdown(model.path, last.name, batches, flips));
  Dispatch d = build_dispatch(tuned, predict_by_import(model.path, model.dims, last));
  d.model_path = model.path;
  d.model_sha256 = model.sha256;
  d.device = last.name;
  d.strategy = opts.strategy;
  write("dispatch.json", dispatch_to_json(d));
  if (last.calibrated) write("device-calibrated.json", device_to_json(last));
  return out;
}

}  // namespace fuseplan
