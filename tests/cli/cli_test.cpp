// The fuseplan executable end to end: what --batch binds, refused arguments
// (one line "fuseplan: ...", exit code 2, nothing written), probe's default
// output, and tune going on when Graphviz fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "probe/host_device.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;
using namespace test;

/// Input name -> bound type ("f32[8,16,4]") from `inspect --json`.
std::map<std::string, std::string> inspected_inputs(const Result& r) {
  std::map<std::string, std::string> out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& in : j["inputs"]) out[in["name"].get<std::string>()] = in["type"].get<std::string>();
  return out;
}

TEST(CliBatch, BindsTheBatchDimOnlyAndDimTheRest) {
  const std::string dir = fresh_dir("batch");
  const std::string model = write(dir, "masked.onnxtxt", kMasked);
  Result r = fuseplan({"inspect", model, "--batch", "8", "--dim", "S=16", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto shapes = inspected_inputs(r);
  EXPECT_EQ(shapes["x"], "f32[8,16,4]");
  EXPECT_EQ(shapes["mask"], "f32[16,16]");  // before: S bound to 8 as well
  // Without --dim S the mask's S is not taken for the batch: an error naming both.
  expect_refused(fuseplan({"search", model, "--device", "host-cpu-reference", "--batch", "8", "-o", dir + "/p.json"}),
                 "unbound symbolic dim 'S' of input 'x' (use --dim S=V; --batch binds only the batch dim 'N' of 'x')");
  EXPECT_FALSE(fs::exists(dir + "/p.json"));
  // tune fails the same way before it makes its output directory.
  expect_refused(fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "1,8", "--no-peers", "-o", dir + "/tune"}),
                 "unbound symbolic dim 'S'");
  EXPECT_FALSE(fs::exists(dir + "/tune"));
}

TEST(CliBatch, ZeroAndNegativeBatchAreRefused) {
  const std::string dir = fresh_dir("batch0");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  for (const std::string b : {"0", "-3", "x"}) {
    SCOPED_TRACE("--batch " + b);
    expect_refused(fuseplan({"search", model, "--device", "host-cpu-reference", "--batch=" + b, "-o", dir + "/p.json"}),
                   "--batch: must be an integer >= 1, got '" + b + "'");
    expect_refused(fuseplan({"measure", "--device", "host-cpu-reference", model, "--batch=" + b, "-o", dir + "/m.jsonl"}), "--batch");
    expect_refused(fuseplan({"compare", model, "--batch=1," + b}), "--batch");
    expect_refused(fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch=1," + b, "-o", dir + "/tune"}), "--batch");
  }
  expect_refused(fuseplan({"search", model, "--device", "host-cpu-reference", "--batch", "0", "-o", dir + "/p.json"}),
                 "--batch: must be an integer >= 1, got '0'");
  EXPECT_FALSE(fs::exists(dir + "/p.json"));
  EXPECT_FALSE(fs::exists(dir + "/m.jsonl"));
  EXPECT_FALSE(fs::exists(dir + "/tune"));
}

TEST(CliDim, ANameGivenTwiceIsRefused) {
  const std::string dir = fresh_dir("dim2");
  const std::string model = write(dir, "masked.onnxtxt", kMasked);
  expect_refused(fuseplan({"search", model, "--device", "host-cpu-reference", "--batch", "1", "--dim", "S=1", "--dim", "S=2", "-o",
                           dir + "/p.json"}),
                 "--dim S given twice (1 and 2)");
  expect_refused(fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "1", "--dim", "S=1", "--dim", "S=2", "-o", dir + "/tune"}),
                 "--dim S given twice (1 and 2)");
  expect_refused(fuseplan({"compare", model, "--batch", "1", "--dim", "S=4", "--dim", "S=4"}), "--dim S given twice");
  expect_refused(fuseplan({"search", model, "--batch", "1", "--dim", "S=0"}), "--dim");
  EXPECT_FALSE(fs::exists(dir + "/p.json"));
  EXPECT_FALSE(fs::exists(dir + "/tune"));
}

TEST(CliHold, AnUnknownParameterIsRefusedWithTheValidNames) {
  const std::string dir = fresh_dir("hold");
  const std::string meas = write(dir, "m.jsonl", "");
  for (const char* cmd : {"calibrate", "accuracy"}) {
    SCOPED_TRACE(cmd);
    expect_refused(fuseplan({cmd, meas, "--device", "host-cpu-reference", "--hold", "launch_us,nosuch", "-o", dir + "/out"}),
                   "--hold: unknown parameter 'nosuch'; the parameters of host-cpu-reference are launch_us, caches[L1].bw_GBps");
    EXPECT_FALSE(fs::exists(dir + "/out"));
  }
}

// `fuseplan probe` refreshes the per-machine cache --device host-cpu reads
// (probe/host_device.h) unless the machine was busy, writes -o FILE as a
// device JSON, and leaves the shipped devices alone.
TEST(CliProbe, RefreshesTheCacheAndLeavesTheShippedDevicesAlone) {
  // A copy of the data directory stands in for the source tree.
  const std::string dir = fresh_dir("probe");
  fs::create_directories(dir + "/data/configs/devices");
  fs::create_directories(dir + "/work");
  const std::string shipped = dir + "/data/configs/devices/host-cpu-reference.json";
  fs::copy_file(std::string(FUSEPLAN_SOURCE_DIR) + "/configs/devices/host-cpu-reference.json", shipped);
  const std::string before = slurp(shipped);
  const std::string cache = dir + "/cache";
  const std::string env = "FUSEPLAN_DATA_DIR=" + quote(dir + "/data") + " FUSEPLAN_CACHE_DIR=" + quote(cache);
  Result r = fuseplan({"probe", "--quick", "-o", "mine.json"}, dir + "/work", env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(shipped), before);
  EXPECT_EQ(fs::directory_iterator(dir + "/data/configs/devices") == fs::directory_iterator(), false);
  EXPECT_FALSE(fs::exists(dir + "/data/configs/devices/host-cpu.json"));
  EXPECT_NE(r.out.find("wrote mine.json"), std::string::npos) << r.out;
  // The written device loads as --device FILE.
  Result c = fuseplan({"cost", write(dir + "/work", "tiny.onnxtxt", kTiny), "--batch", "2", "--device", "mine.json"},
                      dir + "/work");
  EXPECT_EQ(c.code, 0) << c.err;
  // Cached exactly when the machine was quiet (tests run beside others: either may happen).
  const std::string cached = cache + "/host-cpu-" + this_host_key().hash() + ".json";
  if (r.err.find("fuseplan: warning: the machine was busy while probing (") != std::string::npos) {
    EXPECT_FALSE(fs::exists(cached)) << r.err;
    EXPECT_NE(r.out.find("not cached ("), std::string::npos) << r.out;
  } else {
    ASSERT_TRUE(fs::exists(cached)) << r.err;
    EXPECT_NE(r.out.find("cached in " + cached + " (--device host-cpu reads it)"), std::string::npos) << r.out;
    EXPECT_EQ(load_device(cached).dram_bw_GBps, load_device(dir + "/work/mine.json").dram_bw_GBps);
  }
  // Without -o the cache is the output: a variant thread count is refused.
  expect_refused(fuseplan({"probe", "--threads", "1"}, dir + "/work", env),
                 "--threads 1 measures a variant of this host that the cache does not hold");
}

// --device host-cpu reads a cached probe of this machine without measuring;
// FUSEPLAN_NO_HOST_PROBE (set for every test) refuses it; an unwritable
// cache is one line, exit 3, before any measurement.
TEST(CliDeviceHost, ACachedProbeIsUsedAndAnUnwritableCacheIsOneLine) {
  const std::string dir = fresh_dir("device-host");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  // This machine's cache entry, with the reference figures (so the result is known).
  ProbeResult fake;
  fake.device = load_device("host-cpu-reference");
  fake.device.name = "host-cpu";
  fake.others_busy_before = fake.others_busy_during = 0;
  fs::create_directories(dir + "/cache");
  write(dir + "/cache", "host-cpu-" + this_host_key().hash() + ".json", host_cache_json(fake, this_host_key()));
  const std::string env = "FUSEPLAN_NO_HOST_PROBE= FUSEPLAN_CACHE_DIR=" + quote(dir + "/cache");
  Result host = fuseplan({"cost", model, "--batch", "2", "--device", "host-cpu", "--json"}, ".", env);
  ASSERT_EQ(host.code, 0) << host.err;
  EXPECT_EQ(host.err, "");  // no probe, no progress line
  Result alias = fuseplan({"cost", model, "--batch", "2", "--device", "host", "--json"}, ".", env);
  ASSERT_EQ(alias.code, 0) << alias.err;
  EXPECT_EQ(alias.err, "");
  Result ref = fuseplan({"cost", model, "--batch", "2", "--device", "host-cpu-reference", "--json"});
  ASSERT_EQ(ref.code, 0) << ref.err;
  const auto jh = nlohmann::json::parse(host.out), jr = nlohmann::json::parse(ref.out);
  EXPECT_EQ(jh.at("device"), "host-cpu");
  EXPECT_EQ(nlohmann::json::parse(alias.out).at("device"), "host-cpu");  // `host` is the same device
  EXPECT_EQ(nlohmann::json::parse(alias.out).at("totals").at("predicted_us"), jh.at("totals").at("predicted_us"));
  EXPECT_EQ(jr.at("device"), "host-cpu-reference");
  // The same figures price the same.
  for (const char* k : {"kernels", "bytes", "flops", "predicted_us"}) EXPECT_EQ(jh.at("totals").at(k), jr.at("totals").at(k)) << k;
  ASSERT_EQ(jh.at("groups").size(), 2u);
  ASSERT_EQ(jr.at("groups").size(), 2u);
  for (int g = 0; g < 2; ++g) EXPECT_EQ(jh.at("groups")[g].at("cost").at("predicted_us"), jr.at("groups")[g].at("cost").at("predicted_us"));
  // The tests' guard: never probe, never read a cache.
  expect_refused(fuseplan({"cost", model, "--batch", "2", "--device", "host-cpu"}, ".",
                          "FUSEPLAN_CACHE_DIR=" + quote(dir + "/cache")),
                 "device 'host-cpu' is this machine, probed, and FUSEPLAN_NO_HOST_PROBE is set");
  // A cache directory under a regular file cannot be made.
  Result bad = fuseplan({"cost", model, "--batch", "2", "--device", "host-cpu"}, ".",
                        "FUSEPLAN_NO_HOST_PROBE= FUSEPLAN_CACHE_DIR=" + quote(model + "/cache"));
  EXPECT_EQ(bad.code, 3) << bad.err;
  ASSERT_EQ(bad.err_lines().size(), 1u) << bad.err;
  EXPECT_EQ(bad.err_lines()[0].rfind("fuseplan: error: cannot cache the host probe in '" + model + "/cache': ", 0), 0u)
      << bad.err;
}

// One thread forks nothing: its launch_us is the timed empty call, not the
// pool's fork-join (docs/calibration.md, "The fit").
TEST(CliProbe, OneThreadTakesTheTimedEmptyCallAsLaunch) {
  const std::string dir = fresh_dir("probe1");
  const std::string env = "FUSEPLAN_CACHE_DIR=" + quote(dir + "/cache");  // a 1-core machine would cache it
  Result r = fuseplan({"probe", "--threads", "1", "-o", dir + "/one.json"}, ".", env);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto d = nlohmann::json::parse(slurp(dir + "/one.json"));
  const double launch = d.at("launch_us").get<double>();
  EXPECT_GT(launch, 0.0);
  EXPECT_LT(launch, 5.0);
  EXPECT_EQ(d.at("sources").at("launch_us").get<std::string>().rfind("one thread forks nothing", 0), 0u);
  for (const std::string threads : {"-1", "4096"}) {  // 4096: more threads than this machine has cores
    Result bad = fuseplan({"probe", "--threads", threads, "-o", dir + "/bad.json"}, ".", env);
    EXPECT_EQ(bad.code, 2) << threads;
    EXPECT_EQ(bad.err_lines().size(), 1u) << bad.err;
    EXPECT_FALSE(fs::exists(dir + "/bad.json"));
  }
}

// "PATH=DIR/bin:$PATH" where DIR/bin/TOOL prints `message` and exits 1.
std::string path_with_failing_tool(const std::string& dir, const std::string& tool, const std::string& message) {
  fs::create_directories(dir + "/bin");
  write(dir + "/bin", tool, "#!/bin/sh\necho '" + message + "' >&2\nexit 1\n");
  fs::permissions(dir + "/bin/" + tool, fs::perms::owner_all);
  const char* path = std::getenv("PATH");
  return "PATH=" + quote(dir + "/bin:" + (path ? path : "/usr/bin:/bin"));
}

TEST(CliTune, AFailingGraphvizCostsTheSvgOnlyWithOneWarning) {
  const std::string dir = fresh_dir("dot");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string env = path_with_failing_tool(dir, "dot", "Error: syntax error in line 1");
  fs::create_directories(dir + "/out");
  write(dir + "/out", "plan-b1.svg", "<svg>an earlier run's plan</svg>");  // stale: must not survive
  Result r = fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "1,8", "--no-peers", "--force", "-o", dir + "/out"}, ".", env);
  ASSERT_EQ(r.code, 0) << r.err;
  int warnings = 0;
  for (const auto& l : r.err_lines())
    if (l.rfind("fuseplan: warning: ", 0) == 0) {
      ++warnings;
      EXPECT_EQ(l.rfind("fuseplan: warning: no plan-b1.svg, plan-b8.svg (Graphviz failed", 0), 0u) << l;
      EXPECT_NE(l.find("Error: syntax error in line 1"), std::string::npos) << l;
    }
  EXPECT_EQ(warnings, 1) << r.err;
  for (const char* f : {"plan-b1.json", "plan-b8.json", "plan-b1.dot", "plan-b8.dot", "summary.md", "diff.md",
                        "dispatch.json"})
    EXPECT_TRUE(fs::exists(dir + "/out/" + f)) << f;
  EXPECT_FALSE(fs::exists(dir + "/out/plan-b1.svg"));
  EXPECT_FALSE(fs::exists(dir + "/out/plan-b8.svg"));
  EXPECT_NE(r.out.find("wrote"), std::string::npos) << r.out;
}

TEST(CliCompare, AFailingGnuplotCostsTheChartOnlyWithOneWarning) {
  const std::string dir = fresh_dir("gnuplot");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string env = path_with_failing_tool(dir, "gnuplot", "gnuplot: boom");
  Result r = fuseplan({"compare", model, "--device", "host-cpu-reference", "--batch", "1", "--strategies", "unfused,cost",
                       "--measure", "--repeat", "1", "--chart", dir + "/c.svg", "--csv", dir + "/c.csv"},
                      ".", env);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("fuseplan: warning: no chart: gnuplot failed drawing", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("gnuplot: boom"), std::string::npos) << lines[0];
  EXPECT_TRUE(fs::exists(dir + "/c.csv"));
  EXPECT_FALSE(fs::exists(dir + "/c.svg"));
  EXPECT_NE(r.out.find("cost *"), std::string::npos) << r.out;  // the table is printed
}

// compare --rounds: the distinct plans measured in interleaved rounds (each
// row carries its median and IQR) and one ranking per model x batch; plans
// sharing a partition are ranked once under both strategy names.
TEST(CliCompare, RoundsRankTheDistinctPlans) {
  const std::string dir = fresh_dir("rounds");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  Result r = fuseplan({"compare", model, "--device", "host-cpu-reference", "--batch", "1", "--strategies",
                       "unfused,cost,xla,tvm", "--rounds", "3", "--repeat", "1", "--chart", dir + "/c.svg", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 4u);
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["measured_us"].get<double>(), 0) << row.dump();
    EXPECT_GE(row["measured_iqr_us"].get<double>(), 0) << row.dump();
  }
  ASSERT_EQ(j["rankings"].size(), 1u);
  const auto& k = j["rankings"][0];
  std::set<std::string> listed;
  std::size_t named = 0;
  for (const auto& p : k["plans"]) {
    std::stringstream in(p.get<std::string>());
    for (std::string s; std::getline(in, s, ',');) listed.insert(s), ++named;
  }
  EXPECT_EQ(named, 4u);  // every strategy in exactly one distinct plan
  EXPECT_EQ(listed, (std::set<std::string>{"unfused", "cost", "xla", "tvm"}));
  EXPECT_LT(k["plans"].size(), 4u);  // the tiny model's fused strategies agree on a partition
  const std::string verdict = k["cost_verdict"];
  EXPECT_TRUE(verdict == "best" || verdict == "tied" || verdict == "behind") << verdict;
  EXPECT_GE(k["cost_behind_pct"].get<double>(), 0);
  EXPECT_EQ(verdict == "best", k["cost_behind_pct"].get<double>() == 0);
}

// emit checks every option before it creates its folder, and replaces an
// earlier emission's resource table along with its group files.
TEST(CliEmit, RefusesBeforeWritingAndLeavesNoStaleFiles) {
  const std::string dir = fresh_dir("emit");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  Result s = fuseplan({"search", model, "--batch", "2", "--device", "h100-sxm", "-o", dir + "/plan.json"});
  ASSERT_EQ(s.code, 0) << s.err;
  Result lib = fuseplan({"emit", dir + "/plan.json", model, "--batch", "2", "--library", "bogus", "-o", dir + "/a"});
  EXPECT_EQ(lib.code, 2);
  EXPECT_FALSE(fs::exists(dir + "/a"));
#ifdef FUSEPLAN_HAVE_CUDA
  Result arch = fuseplan({"emit", dir + "/plan.json", model, "--batch", "2", "--device", "v100", "-o", dir + "/b"});
  EXPECT_EQ(arch.code, 2);
  EXPECT_NE(arch.err.find("cannot target sm_70"), std::string::npos) << arch.err;
  EXPECT_FALSE(fs::exists(dir + "/b"));
#endif
  // An op the CPU printer cannot emit (an unknown op: a graph break) failed
  // after the folder was made.
  const std::string unk = write(dir, "unk.onnxtxt", "<ir_version: 8, opset_import: [\"\" : 17]>\n"
                                                    "g (float[N, 4] x) => (float[N, 4] y) { t = Relu(x)\n y = Foo(t) }");
  Result su = fuseplan({"search", unk, "--batch", "2", "--device", "host-cpu-reference", "-o", dir + "/unk.json"});
  ASSERT_EQ(su.code, 0) << su.err;
  Result op = fuseplan({"emit", dir + "/unk.json", unk, "--batch", "2", "--backend", "cpu", "-o", dir + "/d"});
  EXPECT_EQ(op.code, 2);
  EXPECT_NE(op.err.find("cannot execute opaque primitive 'y' (op Foo)"), std::string::npos) << op.err;
  EXPECT_FALSE(fs::exists(dir + "/d"));
  fs::create_directories(dir + "/c");
  write(dir + "/c", "resources.json", "{\"from\": \"an earlier plan\"}");
  write(dir + "/c", "group_7.cu", "// an earlier plan's group");
  // A non-empty folder is replaced whole only with --force (support/outputs.h).
  Result e = fuseplan({"emit", dir + "/plan.json", model, "--batch", "2", "--no-compile", "--force", "-o", dir + "/c"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_TRUE(fs::exists(dir + "/c/group_0.cu"));
  EXPECT_FALSE(fs::exists(dir + "/c/group_7.cu"));
  EXPECT_FALSE(fs::exists(dir + "/c/resources.json"));
}

// A batch size whose shapes overflow fails before tune writes anything
// (not even the smaller sizes' plans).
TEST(CliTune, AnOverflowingBatchSizeFailsBeforeAnyOutput) {
  const std::string dir = fresh_dir("tune-overflow");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  Result r = fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "1,4611686018427387904", "--no-peers", "-o", dir + "/out"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("overflows int64"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

}  // namespace
}  // namespace fuseplan
