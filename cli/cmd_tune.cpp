// fuseplan tune MODEL --device D --batch 1,8,64 [--measure] [--strategy S]
//               [--dim N=V] [--rounds R] [--repeat K] [--min-time S] -o DIR
// Per-batch-size autotuning (tune/tune.h, docs/tune.md). Progress goes
// to stderr: a bar when stderr is a terminal, log lines otherwise. SIGINT
// stops after the batch in flight is dropped; the finished ones stay.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "cli/common.h"
#include "support/files.h"
#include "support/stats.h"
#include "tune/tune.h"

namespace fuseplan::cli {

namespace {
struct TuneArgs {
  ModelArgs model;
  std::string device = "host-cpu";
  std::vector<std::string> batch_args;  // "1,8,64" (parse_batch_list)
  std::vector<int64_t> batches;
  std::string output;
  TuneOptions opts;
  bool no_peers = false;
  bool no_svg = false;
  bool force = false;
};

std::atomic<bool> g_stop{false};

void on_sigint(int) {
  if (g_stop.exchange(true)) {  // second ^C: stop now
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

std::string clock_str(double s) {
  const int t = static_cast<int>(s + 0.5);
  return std::to_string(t / 60) + ":" + (t % 60 < 10 ? "0" : "") + std::to_string(t % 60);
}

class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(::isatty(2)), start_(std::chrono::steady_clock::now()) {}
  void operator()(const TuneEvent& e) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string where = e.phase == "done" ? "done"
                                          : "batch " + std::to_string(e.batch) + " (" + std::to_string(e.batch_index + 1) +
                                                "/" + std::to_string(e.batch_count) + ")" +
                                                (e.rounds && e.round ? " round " + std::to_string(e.round) + "/" +
                                                                           std::to_string(e.rounds)
                                                                     : "") +
                                                " " + e.phase;
    std::string eta = e.fraction > 0.02 && e.fraction < 1 ? " ETA " + clock_str(elapsed / e.fraction * (1 - e.fraction)) : "";
    if (!tty_) {
      std::cerr << "tune: [" << clock_str(elapsed) << "] " << where << (e.detail.empty() ? "" : ": " + e.detail) << "\n";
      return;
    }
    const int width = 24, filled = static_cast<int>(e.fraction * width + 0.5);
    std::string line = "[" + std::string(filled, '#') + std::string(width - filled, '-') + "] " +
                       std::to_string(static_cast<int>(e.fraction * 100)) + "% " + where + eta +
                       (e.detail.empty() ? "" : "  " + e.detail);
    if (line.size() > 118) line = line.substr(0, 118);
    std::cerr << "\r\033[K" << line << (e.phase == "done" ? "\n" : "") << std::flush;
  }
  void finish() {
    if (tty_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

void run_tune(TuneArgs& a) {
  a.batches = parse_batch_list(a.batch_args);
  check_output_dir(a.output, {a.model.path, a.device}, a.force);
  TuneModel model{a.model.path, a.model.import_options().dims, ""};
  model.sha256 = sha256_hex(read_file(model.path));
  {
    // The binding warnings (what --batch binds, graph/README.md) once, and an
    // unbound dim fails here, before the output directory is made.
    ModelArgs first = a.model;
    first.batch = *std::min_element(a.batches.begin(), a.batches.end());
    load_model(first);
    // Shapes grow with the batch size: one that overflows does so at the
    // largest, which is imported (quietly) before anything is written too.
    ModelArgs last = a.model;
    last.batch = *std::max_element(a.batches.begin(), a.batches.end());
    if (last.batch != first.batch) import_model(last.path, last.import_options());
  }
  const DeviceSpec d = load_device_arg(a.device);
  if (a.opts.measure) require_cpu_for_measure(d, "tune");
  a.opts.batches = a.batches;
  a.opts.peers = !a.no_peers;
  a.opts.render_svg = !a.no_svg;
  ProgressPrinter printer;
  struct sigaction sa {}, old {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old);
  TuneResult r;
  try {
    r = tune(model, d, a.opts, a.output, [&](const TuneEvent& e) { printer(e); }, [] { return g_stop.load(); });
  } catch (...) {
    printer.finish();
    ::sigaction(SIGINT, &old, nullptr);
    throw;
  }
  printer.finish();
  ::sigaction(SIGINT, &old, nullptr);
  for (const auto& w : r.warnings) warn(w);
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : r.batches) {
    const BatchReport rep = batch_report(b, a.opts.strategy);
    const PlanRow* unfused = nullptr;
    for (const auto& p : rep.peers)
      if (p.label == "unfused") unfused = &p;
    const bool meas = b.measured && unfused && unfused->measured_us > 0;
    // Measured against unfused: the head-to-head medians where tune ran one
    // (" tie" where it could not tell them apart), 1.00x where the kept plan
    // is the unfused one.
    std::string vs_meas = meas ? fmt(unfused->measured_us / b.run.measured_us) + "x" : "-";
    if (b.vs_unfused)
      vs_meas = fmt(median(b.vs_unfused->b_us) / median(b.vs_unfused->a_us)) + "x" +
                (b.vs_unfused->verdict == Verdict::tie ? " tie" : "");
    rows.push_back({std::to_string(b.batch), std::to_string(b.plan.totals.kernels), fmt_bytes(b.plan.totals.bytes),
                    fmt(b.plan.totals.predicted_us, 1), b.measured ? fmt(b.run.measured_us, 1) : "-",
                    unfused ? fmt(unfused->predicted_us / b.plan.totals.predicted_us) + "x" : "-",
                    vs_meas, std::to_string(b.rounds),
                    plan_file_name(b.batch)});
  }
  std::cout << "tune " << a.model.path << " on " << d.name << " (strategy " << a.opts.strategy
            << (a.opts.measure ? ", measured" : ", predicted only") << ")\n"
            << format_table({"batch", "kernels", "bytes", "predicted_us", "measured_us", "vs unfused (pred)",
                             "vs unfused (meas)", "rounds", "plan"},
                            rows);
  if (!r.batches.empty() && !r.batches.back().note.empty()) std::cout << "calibration: " << r.batches.back().note << "\n";
  if (r.batches.empty()) std::cout << "wrote nothing: no batch size finished\n";
  else std::cout << "wrote " << r.files.size() << " files to " << a.output << " (summary.md, diff.md, dispatch.json)\n";
  if (r.interrupted) {
    std::cerr << "fuseplan: interrupted: results complete for " << r.batches.size() << " of " << a.batches.size()
              << " batch sizes\n";
    std::exit(130);
  }
}
}  // namespace

void add_tune(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  a->model.known_dims_only = true;  // one model: a --dim NAME it lacks is refused (ModelArgs::add_to does this elsewhere)
  auto* cmd = app.add_subcommand("tune", "tune a model per batch size: search, measure, recalibrate; plans, dispatch, reports");
  cmd->add_option("model", a->model.path, "model file: .onnx (binary) or .onnxtxt (ONNX text syntax)")->required();
  cmd->add_option("--batch", a->batch_args,
                  "batch sizes >= 1, comma separated, each once; each binds the batch dim (see search --help)")
      ->required()
      ->check(batch_list());
  cmd->add_option("--dim", a->model.dim_args, "bind a named symbolic dim, NAME=VALUE (repeatable; each NAME once)")
      ->check(dim_value());
  cmd->add_option("--device", a->device, kDeviceHelp)->capture_default_str();
  cmd->add_option("--strategy", a->opts.strategy, "strategy to tune")->capture_default_str();
  cmd->add_flag("--measure", a->opts.measure, "run every candidate plan on the CPU backend, recalibrate, search again");
  cmd->add_option("--rounds", a->opts.rounds, "measured rounds per batch size at most")->capture_default_str();
  cmd->add_option("--repeat", a->opts.run.repeat, "timed repetitions per measurement (median)")->capture_default_str();
  cmd->add_option("--min-time", a->opts.run.min_time_s,
                  "keep repeating a measurement past --repeat until it has taken this many seconds (a short plan's "
                  "time then samples a shared host's speed states; 0 = exactly --repeat)")
      ->capture_default_str()
      ->check(number_in(0.0, 3600.0));
  cmd->add_option("--peer-time-limit", a->opts.peer_time_limit_s, "seconds for exact peer strategies (optimal)")
      ->capture_default_str()
      ->check(number_in(0.001, 86400.0));
  cmd->add_flag("--no-peers", a->no_peers, "skip the peer strategies in summary.md");
  cmd->add_flag("--no-svg", a->no_svg, "write DOT only (no `dot -Tsvg`)");
  cmd->add_option("-o,--output", a->output, "output directory, written whole (absent or empty unless --force)")
      ->required()
      ->check(file_name());
  cmd->add_flag("--force", a->force, "replace a non-empty output directory as a whole");
  cmd->callback([a] { run_tune(*a); });
}

}  // namespace fuseplan::cli
