// Every file of a measured tune run is produced and valid: plans load back,
// dispatch parses and names existing plans, DOT is accepted by `dot`, the
// trace is trace-event JSON; an interrupted run keeps the finished batch
// sizes complete; the CLI runs end to end with log lines on a non-terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "emit/dot.h"
#include "support/files.h"
#include "emit/plan_json.h"
#include "graph/import.h"
#include "tune/tune.h"
#include "tune/chart.h"
#include "tune/dispatch.h"
#include "tune_util.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;

const DeviceSpec& cpu() {
  static DeviceSpec d = load_device("host-cpu-reference");
  return d;
}

TuneOptions measured_options(std::vector<int64_t> batches) {
  TuneOptions o;
  o.batches = std::move(batches);
  o.measure = true;
  o.rounds = 2;
  o.run.repeat = 1;
  o.run.warmup = 0;
  o.peer_time_limit_s = 2;
  return o;
}

TEST(TuneOutputs, EveryFileIsProducedAndValid) {
  const std::string dir = test::fresh_dir("outputs");
  const std::string model = test::write_model(dir, "tiny.onnxtxt", test::kTinyModel);
  const std::string out = dir + "/out";
  TuneResult r = tune({model, {}, ""}, cpu(), measured_options({2, 1}), out);
  ASSERT_EQ(r.batches.size(), 2u);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.batches[0].batch, 1);  // ascending
  const bool have_dot = have_program("dot");
  for (int64_t b : {1, 2}) {
    const std::string stem = out + "/plan-b" + std::to_string(b);
    ImportOptions io;
    io.batch = b;
    Graph g = import_model(model, io);
    Plan p = load_plan(read_file(stem + ".json"), g, cpu(), sha256_hex(read_file(model)), {{"batch", b}});
    EXPECT_GE(p.totals.kernels, 1);
    ASSERT_TRUE(fs::exists(stem + ".dot"));
    if (have_dot) {
      std::string err;
      EXPECT_EQ(run_program({"dot", "-Tsvg", "-o", "/dev/null", stem + ".dot"}, &err), 0) << err;
      EXPECT_NE(read_file(stem + ".svg").find("<svg"), std::string::npos);
    }
    const auto trace = nlohmann::json::parse(read_file(out + "/trace-b" + std::to_string(b) + ".json"));
    int measured_events = 0;
    for (const auto& e : trace.at("traceEvents")) {
      if (e.at("ph") != "X") continue;
      for (const char* k : {"name", "ph", "ts", "dur", "pid", "tid"}) EXPECT_TRUE(e.contains(k)) << k;
      EXPECT_GE(e.at("dur").get<double>(), 0);
      if (e.at("tid") == 0) ++measured_events;
    }
    EXPECT_EQ(measured_events, p.totals.kernels);
  }
  Dispatch d = dispatch_from_json(read_file(out + "/dispatch.json"));
  EXPECT_EQ(d.tuned_batches, (std::vector<int64_t>{1, 2}));
  for (const auto& range : d.ranges) EXPECT_TRUE(fs::exists(out + "/" + range.plan)) << range.plan;
  const std::string summary = read_file(out + "/summary.md");
  EXPECT_NE(summary.find("## batch 1"), std::string::npos);
  EXPECT_NE(summary.find("## batch 2"), std::string::npos);
  for (const auto& s : strategy_names()) EXPECT_NE(summary.find("| " + s + " |"), std::string::npos) << s;
  EXPECT_TRUE(fs::exists(out + "/diff.md"));
  if (!have_dot) GTEST_SKIP() << "dot (graphviz) not installed: DOT not checked by dot";
}

// Regression (tune --measure on gpt2_tiny_ortfused_genai failed outright):
// a model the CPU backend cannot run (opaque com.microsoft ops) is tuned on
// predictions, with the reason in the batch size's note.
TEST(TuneOutputs, OpaquePrimitivesFallBackToPredictions) {
  const std::string dir = test::fresh_dir("opaque");
  TuneOptions o = measured_options({1});
  o.peers = false;
  o.render_svg = false;
  TuneResult r = tune({std::string(FUSEPLAN_SHARED_DIR) + "/models/onnx/gpt2_tiny_ortfused_genai.onnx",
                       {{"seq_len", 16}, {"past_seq_len", 16}, {"total_seq_len", 32}}, ""},
                      cpu(), o, dir + "/out");
  ASSERT_EQ(r.batches.size(), 1u);
  EXPECT_FALSE(r.batches[0].measured);
  EXPECT_NE(r.batches[0].note.find("not measured: the CPU backend cannot execute opaque primitive"), std::string::npos)
      << r.batches[0].note;
  EXPECT_TRUE(fs::exists(dir + "/out/plan-b1.json"));
}

// A model whose batch dim is fixed in the file imports the same graph at
// every --batch: the plan measured at batch 1 is not compiled and run again
// at batch 8 (the same program), and its kernels are not added to the
// calibration samples twice.
TEST(TuneOutputs, FixedBatchModelReusesTheMeasurementOfTheSameGraph) {
  const std::string dir = test::fresh_dir("fixed-batch");
  const std::string model = test::write_model(dir, "fixed.onnxtxt", R"(<ir_version: 8, opset_import: ["" : 17]>
fixed (float[4, 64] x, float[4, 64] y) => (float[4, 64] a, float[4, 64] b) {
  t = Exp(x)
  u = Add(t, y)
  a = Relu(u)
  b = Mul(t, y)
})");
  TuneOptions o = measured_options({1, 8});
  o.peers = false;
  o.render_svg = false;
  TuneResult r = tune({model, {}, ""}, cpu(), o, dir + "/out");
  ASSERT_EQ(r.batches.size(), 2u);
  const BatchTune &b1 = r.batches[0], &b8 = r.batches[1];
  ASSERT_TRUE(b1.measured);
  ASSERT_TRUE(b8.measured);
  EXPECT_EQ(b1.note.find("measurement reused"), std::string::npos) << b1.note;
  EXPECT_NE(b8.note.find("measurement reused"), std::string::npos) << b8.note;
  EXPECT_EQ(b8.rounds, 1);
  EXPECT_TRUE(b8.converged);
  // The very same run: identical per-kernel samples.
  ASSERT_EQ(b8.run.groups.size(), b1.run.groups.size());
  for (std::size_t i = 0; i < b1.run.groups.size(); ++i)
    EXPECT_EQ(b8.run.groups[i].samples_us, b1.run.groups[i].samples_us) << i;
}

TEST(TuneOutputs, InterruptKeepsFinishedBatchSizesComplete) {
  const std::string dir = test::fresh_dir("interrupt");
  const std::string model = test::write_model(dir, "tiny.onnxtxt", test::kTinyModel);
  bool first_written = false;
  TuneOptions o;
  o.batches = {1, 4};
  o.peers = false;
  o.render_svg = false;
  TuneResult r = tune(
      {model, {}, ""}, cpu(), o, dir + "/out", [&](const TuneEvent& e) { first_written |= e.phase == "write"; },
      [&] { return first_written; });  // ^C arrives while batch 4 is in flight
  EXPECT_TRUE(r.interrupted);
  ASSERT_EQ(r.batches.size(), 1u);
  EXPECT_TRUE(fs::exists(dir + "/out/plan-b1.json"));
  EXPECT_FALSE(fs::exists(dir + "/out/plan-b4.json"));
  EXPECT_EQ(dispatch_from_json(read_file(dir + "/out/dispatch.json")).tuned_batches, (std::vector<int64_t>{1}));
  for (const auto& e : fs::directory_iterator(dir + "/out"))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left a temp file";
}

TEST(TuneOutputs, BarChartIsAnSvgDrawnByGnuplot) {
  if (!have_program("gnuplot")) GTEST_SKIP() << "gnuplot not installed";
  const std::string dir = test::fresh_dir("chart");
  write_bar_chart_svg(dir + "/c.svg", "t", {"unfused", "cost"},
                      {{"m b=1", {{"unfused", 10}, {"cost", 4}}}, {"m b=8", {{"unfused", 30}}}});
  EXPECT_NE(read_file(dir + "/c.svg").find("<svg"), std::string::npos);
}

TEST(TuneCli, TuneAndCompareMeasureRunEndToEnd) {
  const std::string dir = test::fresh_dir("cli");
  const std::string model = test::write_model(dir, "tiny.onnxtxt", test::kTinyModel);
  std::string err;
  EXPECT_EQ(run_program({FUSEPLAN_BINARY, "tune", model, "--device", "host-cpu-reference", "--batch", "1,8", "--measure",
                         "--repeat", "1", "--no-peers", "-o", dir + "/out"},
                        &err),
            0)
      << err;
  EXPECT_EQ(err.rfind("tune: [", 0), 0u) << "plain log lines when stderr is not a terminal: " << err;
  for (const char* f : {"plan-b1.json", "plan-b8.json", "dispatch.json", "summary.md", "diff.md", "trace-b8.json"})
    EXPECT_TRUE(fs::exists(dir + "/out/" + f)) << f;
  if (!have_program("gnuplot")) GTEST_SKIP() << "gnuplot not installed: compare --measure not run";
  EXPECT_EQ(run_program({FUSEPLAN_BINARY, "compare", model, "--device", "host-cpu-reference", "--batch", "1", "--strategies",
                         "unfused,cost", "--measure", "--repeat", "1", "--chart", dir + "/chart.svg"},
                        &err),
            0)
      << err;
  EXPECT_NE(read_file(dir + "/chart.svg").find("<svg"), std::string::npos);
}

// Regression: tune --measure on a GPU device timed the CPU backend and wrote
// a "calibrated" GPU device from those times.
TEST(TuneCli, MeasureRefusesAGpuDevice) {
  const std::string dir = test::fresh_dir("cli_gpu");
  const std::string model = test::write_model(dir, "tiny.onnxtxt", test::kTinyModel);
  for (const char* cmd : {"tune", "compare"}) {
    std::string err;
    std::vector<std::string> args = {FUSEPLAN_BINARY, cmd, model, "--device", "h100-sxm", "--batch", "1", "--measure"};
    if (std::string(cmd) == "tune") args.insert(args.end(), {"-o", dir + "/out"});
    EXPECT_EQ(run_program(args, &err), 2) << err;
    EXPECT_NE(err.find("--measure runs plans on the CPU backend, and device 'h100-sxm' is a GPU"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(dir + "/out/device-calibrated.json"));
  }
}

}  // namespace
}  // namespace fuseplan
