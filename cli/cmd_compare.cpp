// fuseplan compare MODEL... --device D --batch 1,8,64 [--strategies LIST|all]
//                  [--dim N=V ...] [--time-limit S] [--csv FILE] [--json]
//                  [--measure [--repeat K] [--rounds R] [--chart FILE.svg]]
// One row per model × batch × strategy: kernels, bytes, predicted µs,
// speedup over unfused, search time; `*` marks the best plan of each
// model × batch. CSV and JSON files are written atomically. --measure also
// runs every distinct plan on the CPU backend (tune's PlanMeasurer) and draws
// the measured times as a gnuplot bar chart. --rounds R measures the
// distinct plans of each model × batch in R interleaved rounds and ranks
// them (tune/ranking.h): Spearman of predicted against measured time, the
// measured best, and whether `cost` measured best, tied or behind.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "support/files.h"
#include "tune/chart.h"
#include "support/stats.h"
#include "tune/measure.h"
#include "tune/ranking.h"
#include "search/strategy.h"

namespace fuseplan::cli {

namespace {
struct CompareArgs {
  std::vector<std::string> models;
  std::string device = "h100-sxm";
  std::vector<std::string> batch_args;  // "1,8,64" (parse_batch_list)
  std::string strategies = "all";
  std::vector<std::string> dim_args;
  double time_limit_s = 60;
  std::string csv;
  bool json = false;
  bool measure = false;
  int repeat = 3;
  int rounds = 0;  // --measure: interleaved rounds over the distinct plans; 0 = each plan once
  std::string chart = "compare.svg";
};

struct Row {
  std::string model;
  int64_t batch = 0;
  Plan plan;
  double speedup = 1;
  bool best = false;
  double measured_us = -1;  // --measure: the median over rounds
  double measured_iqr_us = -1;  // --rounds: p75 − p25 of the rounds
};

struct RankRow {
  std::string model;
  int64_t batch = 0;
  std::vector<std::string> plans;  // strategies per distinct plan
  Ranking ranking;
  double load_before = 0, load_after = 0;
};

std::string nan_text(double v, int precision) { return std::isnan(v) ? "-" : fmt(v, precision); }

// Measures the distinct partitions among rows[first, end) in interleaved
// rounds and ranks them; fills each row's median and IQR.
RankRow rank_rows(std::vector<Row>& rows, std::size_t first, const Graph& g, PlanMeasurer& measurer, int rounds) {
  std::vector<std::string> keys;
  std::vector<const Plan*> plans;
  std::vector<RankedPlan> ranked;
  std::vector<std::size_t> of_row;
  for (std::size_t i = first; i < rows.size(); ++i) {
    const std::string key = partition_key(g, rows[i].plan);
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      plans.push_back(&rows[i].plan);
      ranked.push_back({rows[i].plan.strategy, rows[i].plan.totals.predicted_us, {}});
      of_row.push_back(keys.size() - 1);
    } else {
      ranked[it - keys.begin()].strategies += "," + rows[i].plan.strategy;
      of_row.push_back(static_cast<std::size_t>(it - keys.begin()));
    }
  }
  const Interleaved s = measurer.interleave(g, plans, rounds, rounds);
  RankRow rr{rows[first].model, rows[first].batch, {}, {}, s.load_before, s.load_after};
  for (std::size_t k = 0; k < ranked.size(); ++k) {
    ranked[k].measured_us = s.us[k];
    rr.plans.push_back(ranked[k].strategies);
  }
  for (std::size_t i = first; i < rows.size(); ++i) {
    const auto& us = s.us[of_row[i - first]];
    rows[i].measured_us = median(us);
    rows[i].measured_iqr_us = quantile(us, 0.75) - quantile(us, 0.25);
  }
  rr.ranking = rank_plans(ranked);
  return rr;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string to_csv(const std::vector<Row>& rows) {
  std::ostringstream os;
  os << "model,batch,strategy,kernels,bytes,predicted_us,speedup,search_ms,best,status"
     << (!rows.empty() && rows.front().measured_us >= 0 ? ",measured_us" : "") << "\n";
  for (const auto& r : rows)
    os << csv_field(r.model) << "," << r.batch << "," << r.plan.strategy << "," << r.plan.totals.kernels << ","
       << fmt(r.plan.totals.bytes, 0) << "," << fmt(r.plan.totals.predicted_us, 3) << "," << fmt(r.speedup, 3) << ","
       << fmt(r.plan.totals.search_ms, 2) << "," << (r.best ? 1 : 0) << "," << csv_field(r.plan.status)
       << (r.measured_us >= 0 ? "," + fmt(r.measured_us, 3) : "") << "\n";
  return os.str();
}

nlohmann::json json_number(double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); }

std::string to_json(const std::vector<Row>& rows, const std::vector<RankRow>& ranks, const std::string& device) {
  nlohmann::json j;
  j["device"] = device;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows)
    j["rows"].push_back({{"model", r.model},
                         {"batch", r.batch},
                         {"strategy", r.plan.strategy},
                         {"kernels", r.plan.totals.kernels},
                         {"bytes", r.plan.totals.bytes},
                         {"predicted_us", r.plan.totals.predicted_us},
                         {"speedup", r.speedup},
                         {"search_ms", r.plan.totals.search_ms},
                         {"best", r.best},
                         {"status", r.plan.status}});
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].measured_us >= 0) j["rows"][i]["measured_us"] = rows[i].measured_us;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].measured_iqr_us >= 0) j["rows"][i]["measured_iqr_us"] = rows[i].measured_iqr_us;
  if (!ranks.empty()) {
    j["rankings"] = nlohmann::json::array();
    for (const auto& r : ranks) {
      const Ranking& k = r.ranking;
      j["rankings"].push_back({{"model", r.model},
                               {"batch", r.batch},
                               {"plans", r.plans},
                               {"spearman", json_number(k.spearman)},
                               {"predicted_best", r.plans[k.predicted_best]},
                               {"measured_best", r.plans[k.measured_best]},
                               {"cost_verdict", k.verdict},
                               {"cost_behind_pct", k.behind_pct},
                               {"load_before", r.load_before},
                               {"load_after", r.load_after}});
    }
  }
  return j.dump(2) + "\n";
}

void run_compare(const CompareArgs& a) {
  std::vector<std::string> inputs = a.models;
  inputs.push_back(a.device);
  if (!a.csv.empty()) check_output_file(a.csv, inputs);
  if (a.measure && !a.chart.empty()) check_output_file(a.chart, inputs);
  parse_dims(a.dim_args);  // a malformed or repeated --dim fails before any work
  const auto names = parse_strategy_list(a.strategies);
  const std::vector<int64_t> listed = parse_batch_list(a.batch_args);
  const std::vector<int64_t> batches = listed.empty() ? std::vector<int64_t>{0} : listed;
  check_dims_known(a.models, listed.empty() ? std::nullopt : std::optional<int64_t>(listed.front()), a.dim_args);
  const DeviceSpec d = load_device_arg(a.device);  // after the checks: the host may be probed now
  if (a.measure) require_cpu_for_measure(d, "compare");
  SearchOptions o;
  o.time_limit_s = a.time_limit_s;
  std::vector<Row> rows;
  std::vector<RankRow> ranks;
  RunOptions ro;
  ro.repeat = a.repeat;
  PlanMeasurer measurer(ro);
  for (const auto& path : a.models) {
    for (int64_t b : batches) {
      const ModelArgs m = ModelArgs::one_of(path, b ? std::optional<int64_t>(b) : std::nullopt, a.dim_args,
                                            a.models.size());
      const LoadedModel lm = load_model(m, /*quiet=*/b != batches.front());  // warnings once per model
      const Plan base = search(lm.graph, d, "unfused", o);
      const std::size_t first = rows.size();
      for (const auto& s : names) {
        Row r{path, b, s == "unfused" ? base : search(lm.graph, d, s, o)};
        r.speedup = r.plan.totals.predicted_us > 0 ? base.totals.predicted_us / r.plan.totals.predicted_us : 1;
        if (a.measure && a.rounds == 0)
          r.measured_us = measurer.measure(lm.graph, r.plan, path + "@b" + std::to_string(b)).measured_us;
        rows.push_back(std::move(r));
      }
      if (a.measure && a.rounds > 0) ranks.push_back(rank_rows(rows, first, lm.graph, measurer, a.rounds));
      std::size_t best = first;
      for (std::size_t i = first; i < rows.size(); ++i)
        if (rows[i].plan.totals.predicted_us < rows[best].plan.totals.predicted_us) best = i;
      if (best < rows.size()) rows[best].best = true;
    }
  }
  if (!a.csv.empty()) write_file_atomic(a.csv, to_csv(rows));
  std::string chart_error;
  if (a.measure) {
    std::vector<ChartCluster> clusters;
    for (const auto& r : rows) {
      const std::string label = r.model.substr(r.model.find_last_of('/') + 1) + (r.batch ? " b=" + std::to_string(r.batch) : "");
      if (clusters.empty() || clusters.back().label != label) clusters.push_back({label, {}});
      clusters.back().values_us[r.plan.strategy] = r.measured_us;
    }
    // The chart is auxiliary: gnuplot failing costs the chart, not the table.
    try {
      write_bar_chart_svg(a.chart, "measured time per strategy on " + d.name, names, clusters);
    } catch (const Error& e) {
      chart_error = e.what();
      warn("no chart: " + chart_error);
    }
  }
  if (a.json) {
    std::cout << to_json(rows, ranks, d.name);
    return;
  }
  std::vector<std::vector<std::string>> table;
  for (const auto& r : rows)
    table.push_back({r.model.substr(r.model.find_last_of('/') + 1), r.batch ? std::to_string(r.batch) : "-",
                     r.plan.strategy + (r.best ? " *" : ""), std::to_string(r.plan.totals.kernels),
                     fmt_bytes(r.plan.totals.bytes), fmt(r.plan.totals.predicted_us), fmt(r.speedup) + "x",
                     fmt(r.plan.totals.search_ms, 1), r.plan.status});
  std::vector<std::string> header = {"model", "batch", "strategy", "kernels", "bytes", "predicted_us", "speedup",
                                     "search_ms", "status"};
  if (a.measure) {
    header.push_back("measured_us");
    for (std::size_t i = 0; i < rows.size(); ++i) table[i].push_back(fmt(rows[i].measured_us, 1));
  }
  if (!ranks.empty()) {
    header.push_back("iqr_us");
    for (std::size_t i = 0; i < rows.size(); ++i) table[i].push_back(fmt(rows[i].measured_iqr_us, 1));
  }
  std::cout << "device " << d.name << " (* = best predicted plan per model and batch)\n"
            << format_table(header, table);
  if (!ranks.empty()) {
    std::vector<std::vector<std::string>> rt;
    for (const auto& r : ranks) {
      const Ranking& k = r.ranking;
      rt.push_back({r.model.substr(r.model.find_last_of('/') + 1), r.batch ? std::to_string(r.batch) : "-",
                    std::to_string(k.plans), nan_text(k.spearman, 2), r.plans[k.predicted_best],
                    r.plans[k.measured_best], k.verdict.empty() ? "-" : k.verdict, fmt(k.behind_pct, 1),
                    fmt(r.load_before, 2) + " -> " + fmt(r.load_after, 2)});
    }
    std::cout << "\nranking (" << a.rounds << " interleaved rounds per distinct plan; cost tied = IQRs overlap)\n"
              << format_table({"model", "batch", "plans", "spearman", "predicted best", "measured best", "cost",
                               "behind %", "load"},
                              rt);
  }
  if (!a.csv.empty()) std::cout << "wrote " << a.csv << "\n";
  if (a.measure && chart_error.empty()) std::cout << "wrote " << a.chart << "\n";
}
}  // namespace

void add_compare(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "compare fusion strategies on models under one cost model");
  cmd->add_option("models", a->models, "model files (.onnx / .onnxtxt)")->required();
  cmd->add_option("--device", a->device, kDeviceHelp)->capture_default_str();
  cmd->add_option("--batch", a->batch_args,
                  "batch sizes >= 1, comma separated, each once; each binds the batch dim as --batch B of search does")
      ->check(batch_list());
  std::string help = "comma-separated strategies or 'all' (";
  for (const auto& n : strategy_names()) help += n + (n == strategy_names().back() ? ")" : ", ");
  cmd->add_option("--strategies", a->strategies, help)->capture_default_str();
  cmd->add_option("--dim", a->dim_args,
                  "bind a named symbolic dim, NAME=VALUE (repeatable; each NAME once; models without it ignore it)")
      ->check(dim_value());
  cmd->add_option("--time-limit", a->time_limit_s, "seconds for exact strategies (optimal)")
      ->capture_default_str()
      ->check(number_in(0.001, 86400.0));
  cmd->add_option("--csv", a->csv, "also write the table as CSV (atomically)")->check(file_name());
  cmd->add_flag("--json", a->json, "print the table as JSON");
  cmd->add_flag("--measure", a->measure, "also run every plan on the CPU backend and chart measured times (gnuplot SVG)");
  cmd->add_option("--repeat", a->repeat, "--measure: timed repetitions per plan (median)")->capture_default_str();
  cmd->add_option("--rounds", a->rounds,
                  "interleaved rounds (implies --measure) over each model x batch's distinct plans, then rank them "
                  "(Spearman, measured best, cost's verdict); 0 = each plan measured once")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--chart", a->chart, "--measure: bar chart SVG to write")->capture_default_str()->check(file_name());
  cmd->callback([a] {
    a->measure = a->measure || a->rounds > 0;  // ranking needs measurements
    run_compare(*a);
  });
}

}  // namespace fuseplan::cli
