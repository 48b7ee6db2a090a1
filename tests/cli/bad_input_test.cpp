// Bad input found by a fresh-user trial: each gets one clear error line
// (exit code 2, nothing written) or one warning line, naming what is wrong
// and what to do.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>
#include <string>

#include "cli_util.h"
#include "costmodel/calibrate.h"
#include "profiling/measurement.h"
#include "exec/tensor_data.h"
#include "tests/layout_graphs.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;
using namespace test;

const char* kStatic = R"(<ir_version: 8, opset_import: ["" : 17]>
fixed (float[2, 64] x) => (float[2, 64] a) {
  t = Exp(x)
  a = Relu(t)
})";

TEST(CliDim, ANameTheModelDoesNotHaveIsRefusedWithItsDims) {
  const std::string dir = fresh_dir("dim-unknown");
  const std::string model = write(dir, "masked.onnxtxt", kMasked);
  expect_refused(fuseplan({"inspect", model, "--batch", "2", "--dim", "S=4", "--dim", "Q=3"}),
                 "--dim Q: the model has no symbolic dim 'Q' (its symbolic dims: N, S)");
  expect_refused(fuseplan({"search", model, "--batch", "2", "--dim", "s=4", "-o", dir + "/p.json"}),
                 "no symbolic dim 's' (its symbolic dims: N, S)");
  EXPECT_FALSE(fs::exists(dir + "/p.json"));
  expect_refused(fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "1", "--dim", "S=4", "--dim", "Q=3", "--no-peers", "-o",
                           dir + "/tune"}),
                 "--dim Q: the model has no symbolic dim 'Q'");
  EXPECT_FALSE(fs::exists(dir + "/tune"));
  expect_refused(fuseplan({"inspect", write(dir, "fixed.onnxtxt", kStatic), "--dim", "N=2"}),
                 "no symbolic dim 'N' (its shapes are all static)");
  // One --dim set for several models: each ignores what it lacks, but a name
  // none of them has is refused.
  const std::string tiny = write(dir, "tiny.onnxtxt", kTiny);
  EXPECT_EQ(fuseplan({"compare", model, tiny, "--batch", "1", "--dim", "S=4", "--strategies", "unfused"}).code, 0);
  expect_refused(fuseplan({"compare", model, tiny, "--batch", "1", "--dim", "S=4", "--dim", "Q=1"}),
                 "--dim Q: none of the models has a symbolic dim 'Q' (their symbolic dims: N, S)");
}

TEST(CliBatch, OnAModelWithoutABatchDimItIsIgnoredWithOneWarning) {
  const std::string dir = fresh_dir("batch-static");
  const std::string model = write(dir, "fixed.onnxtxt", kStatic);
  Result r = fuseplan({"inspect", model, "--batch", "8", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err_lines()[0],
            "fuseplan: warning: --batch 8 is ignored: no data input has a symbolic leading (batch) dim (the model's "
            "shapes are static)");
  // compare imports the model once per batch size: still one line.
  Result c = fuseplan({"compare", model, "--batch", "1,8", "--strategies", "unfused"});
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.err_lines().size(), 1u) << c.err;
}

// Only regular files are read: a FIFO would block the read forever and
// /dev/zero never ends (explain /dev/zero was killed by the OOM killer).
TEST(CliMessages, RefuseFifosAndDevicesAsInputFiles) {
  const std::string dir = fresh_dir("fifo");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& p : {fifo, std::string("/dev/zero")}) {
    expect_refused(fuseplan({"inspect", p, "--batch", "2"}), "cannot read model file '" + p + "': not a regular file");
    expect_refused(fuseplan({"explain", p}), "'" + p + "': not a regular file");
    expect_refused(fuseplan({"calibrate", "--device", "host-cpu-reference", p, "-o", dir + "/c.json"}),
                   "cannot read measurements '" + p + "': not a regular file");
    expect_refused(fuseplan({"run", "--device", "host-cpu-reference", model, "--batch", "2", "--inputs", "x=" + p}),
                   "cannot read .npy input '" + p + "': not a regular file");
  }
  EXPECT_FALSE(fs::exists(dir + "/c.json"));
}

TEST(CliMessages, SayWhatIsWrong) {
  const std::string dir = fresh_dir("messages");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  fs::create_directories(dir + "/models");
  expect_refused(fuseplan({"inspect", dir + "/models"}), "is a directory, not a model file (.onnx or .onnxtxt)");
  expect_refused(fuseplan({"cost", model, "--batch", "2", "--device", dir + "/models"}),
                 "device '" + dir + "/models' is a directory, not a device JSON file");
  expect_refused(fuseplan({"explain", dir + "/models"}), "it is a directory, not a file");
  expect_refused(fuseplan({"inspect", model}),
                 "unbound symbolic dim 'N' of input 'x' (use --batch B to bind the batch dim, or --dim N=V)");
  expect_refused(fuseplan({"run", "--device", "host-cpu-reference", model, "--batch", "2", "--threads", "abc"}),
                 "--threads: must be an integer from 0 to 4096, got 'abc'");
  expect_refused(fuseplan({"run", "--device", "host-cpu-reference", model, "--batch", "2", "--threads", "5000"}),
                 "--threads: must be from 0 to 4096, got 5000");
  // Control bytes in a name are escaped, never printed raw.
  Result dev = fuseplan({"cost", model, "--batch", "2", "--device", "h1\x01\x1b[31m"});
  expect_refused(dev, "unknown device 'h1\\x01\\x1b[31m'");
  EXPECT_EQ(dev.err.find('\x01'), std::string::npos);
  EXPECT_EQ(dev.err.find('\x1b'), std::string::npos);
  expect_refused(fuseplan({"inspect", model, "--batch", "2", "--dim", "Q\x02=1"}), "no symbolic dim 'Q\\x02'");
}

TEST(CliCompare, RefusesEmptyOrRepeatedEntriesAndBadValues) {
  const std::string dir = fresh_dir("compare-args");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::vector<std::string> base = {"compare", model, "--strategies", "unfused"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return fuseplan(args);
  };
  expect_refused(with({"--batch", "1,,1"}), "--batch: empty entry in '1,,1' (give sizes >= 1, comma separated)");
  expect_refused(with({"--batch", "1,8,"}), "--batch: empty entry in '1,8,'");
  expect_refused(with({"--batch", "1,8,1"}), "--batch: 1 given twice");
  expect_refused(with({"--batch", "1", "--batch", "1"}), "--batch: 1 given twice");
  expect_refused(fuseplan({"compare", model, "--batch", "1", "--strategies", ""}),
                 "--strategies: empty entry in '' (give strategy names, comma separated, or 'all')");
  expect_refused(fuseplan({"compare", model, "--batch", "1", "--strategies", "cost,cost"}),
                 "--strategies: cost given twice");
  expect_refused(with({"--batch", "1", "--time-limit=-1"}), "--time-limit: must be from 0.001 to 86400, got -1");
  expect_refused(with({"--batch", "1", "--time-limit", "soon"}),
                 "--time-limit: must be a number from 0.001 to 86400, got 'soon'");
  expect_refused(with({"--batch", "1", "--csv", ""}), "--csv: must not be empty");
  expect_refused(with({"--batch", "1", "-o", ""}), "-o");  // compare writes --csv/--chart, has no -o
  expect_refused(fuseplan({"search", model, "--batch", "1", "-o", ""}), "--output: must not be empty");
  Result ok = with({"--batch", "1,8"});
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// cost/run --plan and explain refuse a plan file that is not the plan that
// would run (rather than drop the extra group and re-derive the kind).
TEST(CliPlan, AnExtraGroupOrAGroupOfTheWrongKindIsRefused) {
  const std::string dir = fresh_dir("plan-edit");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  ASSERT_EQ(fuseplan({"search", model, "--batch", "2", "--device", "host-cpu-reference", "-o", dir + "/p.json"}).code, 0);
  const std::string plan = slurp(dir + "/p.json");
  ASSERT_NE(plan.find("\"kind\": \"loop\""), std::string::npos) << plan;
  const std::string extra = std::regex_replace(plan, std::regex("\"groups\": \\["),
                                               "\"groups\": [{\"id\": 1, \"kind\": \"single\", \"nodes\": [\"t\"]}, ");
  const std::string kind = std::regex_replace(plan, std::regex("\"kind\": \"loop\""), "\"kind\": \"horizontal\"");
  write(dir, "extra.json", extra);
  write(dir, "kind.json", kind);
  const std::string extra_msg =
      "malformed plan: group 0 is extra: every primitive of it is in another group too ('t' is in group 1); remove it";
  const std::string kind_msg = "malformed plan: group 0 says kind 'horizontal', but its primitives make a 'loop' group";
  for (const char* cmd : {"cost", "run"}) {
    SCOPED_TRACE(cmd);
    expect_refused(fuseplan({cmd, model, "--device", "host-cpu-reference", "--batch", "2", "--plan", dir + "/extra.json"}), extra_msg);
    expect_refused(fuseplan({cmd, model, "--device", "host-cpu-reference", "--batch", "2", "--plan", dir + "/kind.json"}), kind_msg);
  }
  expect_refused(fuseplan({"explain", dir + "/extra.json"}), extra_msg);
}

TEST(CliExplain, AMalformedPlanGetsTheCleanErrorsOfCost) {
  const std::string dir = fresh_dir("explain-bad");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string broken = write(dir, "broken.json", "{\n");
  const std::string msg = "malformed plan: not JSON (line 2, column 1: unexpected end of input; expected string literal)";
  Result e = fuseplan({"explain", broken});
  expect_refused(e, msg);
  EXPECT_EQ(e.err.find("json.exception"), std::string::npos) << e.err;
  expect_refused(fuseplan({"cost", model, "--batch", "2", "--plan", broken}), msg);
  // explain checks what cost checks without the model, and its own fields.
  const std::string kind = write(dir, "kind.json", R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "blob",
      "nodes": ["t", "a"]}], "decisions": [], "totals": {"kernels": 1, "predicted_us": 1}})");
  expect_refused(fuseplan({"explain", kind}), "unknown group kind 'blob'");
  const std::string decision = write(dir, "decision.json", R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "loop",
      "nodes": ["t", "a"]}], "decisions": [{"producer": 1, "consumer": "a"}], "totals": {"kernels": 1,
      "predicted_us": 1}})");
  expect_refused(fuseplan({"explain", decision}), "malformed plan: decision 0: 'producer' is not a string");
}

#ifdef FUSEPLAN_HAVE_CUDA
// A group the library call covers whole has no kernels: its row still puts
// the call under the library-call column, not under "shape".
TEST(CliEmit, ALibraryCallRowKeepsItsColumns) {
  const std::string dir = fresh_dir("emit-md");
  const std::string model = write(dir, "mm.onnxtxt", R"(<ir_version: 8, opset_import: ["" : 17]>
mm (float[N, 64] x, float[64, 32] w) => (float[N, 32] y) {
  t = MatMul(x, w)
  y = Relu(t)
})");
  ASSERT_EQ(fuseplan({"search", model, "--batch", "8", "--device", "h100-sxm", "--strategy", "unfused", "-o",
                      dir + "/p.json"}).code, 0);
  Result e = fuseplan({"emit", dir + "/p.json", model, "--batch", "8", "--library", "all", "-o", dir + "/out"});
  ASSERT_EQ(e.code, 0) << e.err;
  std::stringstream md(slurp(dir + "/out/resources.md"));
  int rows = 0;
  for (std::string line; std::getline(md, line);) {
    if (line.rfind("| 0 |", 0) != 0) continue;
    ++rows;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string c; std::getline(ss, c, '|');) cells.push_back(c);
    ASSERT_EQ(cells.size(), 12u) << line;
    EXPECT_EQ(cells[3], " 0 ") << line;    // kernels
    EXPECT_EQ(cells[4], " - ") << line;    // shape
    EXPECT_EQ(cells[11].rfind(" cublasLtMatmul DEFAULT 8x32x64", 0), 0u) << line;  // library call
  }
  EXPECT_EQ(rows, 1);
}
#endif

TEST(CliGen, RefusesAFileNameThatIsNeitherOnnxNorOnnxtxt) {
  const std::string dir = fresh_dir("gen");
  expect_refused(fuseplan({"gen", "--kind", "conv", "--primitives", "200", "-o", dir + "/m.txt"}),
                 "the file name must end in .onnx (binary) or .onnxtxt (text)");
  EXPECT_FALSE(fs::exists(dir + "/m.txt"));
  Result r = fuseplan({"gen", "--kind", "conv", "--primitives", "200", "-o", dir + "/m.onnxtxt"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(fuseplan({"inspect", dir + "/m.onnxtxt", "--batch", "1"}).code, 0);
}

// A cpu device JSON with `extra` fields added (a field given twice: the last wins).
std::string cpu_device(const std::string& extra) {
  return R"({"kind": "cpu", "arch": "x86-64-avx2", "dram_bw_GBps": 4, "cores": 2, "fp32_TFLOPs": 0.08,
             "launch_us": 1, "caches": [{"name": "L1", "bytes": 49152, "bw_GBps": 200},
             {"name": "DRAM", "bytes": 0, "bw_GBps": 4}])" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

// Figures far beyond any machine: spill_penalty 1e308 made a kernel's time
// inf and the search looped on NaN savings, growing its queue without bound;
// launch_us 1.7e308 printed "unfused inf us, -nanx"; a core count of 1e10
// was read as -2147483648 ("must be positive") and 3e9 was "not positive".
TEST(CliDevice, AFigureFarOutOfRangeIsRefusedNotAHang) {
  const std::string dir = fresh_dir("device-range");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  auto search = [&](const std::string& name, const std::string& extra) {
    return fuseplan({"search", model, "--batch", "2", "--device", write(dir, name, cpu_device(extra)), "-o",
                     dir + "/p.json"},
                    ".", "timeout 60");
  };
  ASSERT_EQ(search("ok.json", "").code, 0);
  fs::remove(dir + "/p.json");
  expect_refused(search("spill.json", R"("spill_penalty": 1e308)"), "field 'spill_penalty' must be at most");
  expect_refused(search("launch.json", R"("launch_us": 1.7e308)"), "field 'launch_us' must be at most");
  expect_refused(search("src.json", R"("source_read_us": 1e300)"), "field 'source_read_us' must be at most");
  expect_refused(search("stall.json", R"("store_stall_us": 1e300)"), "field 'store_stall_us' must be at most");
  expect_refused(search("call.json", R"("contraction_call_us": -1)"), "field 'contraction_call_us' must be >= 0");
  expect_refused(search("call2.json", R"("contraction_call_us": 1e300)"), "field 'contraction_call_us' must be at most");
  expect_refused(search("classes.json", R"("contraction_GFLOPs": {"conv_1x1": 50})"),
                 "contraction_GFLOPs lacks class 'conv_spatial' (give every class or none)");
  expect_refused(search("emem.json", R"("e_mem": 1e-300)"), "field 'e_mem' must be at least");
  expect_refused(search("sm.json", R"("cores": 10000000000)"),
                 "field 'cores' must be an integer from -2147483648 to 2147483647, got 10000000000");
  expect_refused(search("regs.json", R"("vector_regs": 3000000000)"),
                 "field 'vector_regs' must be an integer from -2147483648 to 2147483647, got 3000000000");
  // A GPU figure on a CPU device is refused by name.
  expect_refused(search("gpu-field.json", R"("sm_count": 2)"),
                 "field 'sm_count' is for GPU devices (a cpu device gives its cores as 'cores')");
  // A path that exists but is no regular file was "not found".
  expect_refused(fuseplan({"cost", model, "--batch", "2", "--device", "/dev/null"}),
                 "device '/dev/null' is not a regular file; a device is a name or a JSON file");
  EXPECT_FALSE(fs::exists(dir + "/p.json"));
}

// One measurement record (JSON line), with extra fields at its top level, in
// "predicted" and in "measured".
std::string record(const std::string& top = "", const std::string& predicted = "", const std::string& measured = "") {
  return R"({"schema": "fuseplan.measurement/1", "model": "tiny.onnxtxt", "group": 0, "device": "host-cpu-reference", )" +
         top + (top.empty() ? "" : ", ") + R"("predicted": {"bytes_read": 512, "bytes_written": 256, )" + predicted +
         (predicted.empty() ? "" : ", ") + R"("flops_contraction": 0, "flops_other": 64, "predicted_us": 1}, )" +
         R"("measured": {)" + measured + (measured.empty() ? "" : ", ") + R"("median_us": 1}})" + "\n";
}

// An optional record field of the wrong type escaped as nlohmann's
// type_error: "internal error", exit 3, no file or line. A negative feature
// was fitted as if measured; a float group was truncated.
TEST(CliRecords, AFieldOfTheWrongTypeOrRangeIsRefusedWithItsLine) {
  const std::string dir = fresh_dir("records-bad");
  write(dir, "tiny.onnxtxt", kTiny);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {record(R"("dims": {"S": "x"})"), "measurement.dims: field 'S' must be an integer from 1 to"},
      {record(R"("dims": [1])"), "measurement: field 'dims' must be an object of NAME: value, got [1]"},
      {record(R"("dims": {"N": 0})"), "measurement.dims: field 'N' must be an integer from 1 to"},
      {record(R"("threads": "a")"), "measurement: field 'threads' must be an integer from 0 to"},
      {record(R"("group": 1e20)"), "measurement: field 'group' must be an integer from 0 to 2147483647, got 1e+20"},
      {record(R"("op_classes": 5)"), "measurement: field 'op_classes' has the wrong type (5)"},
      {record("", R"("level": 3)"), "measurement.predicted: field 'level' has the wrong type (3)"},
      {record("", R"("contraction_calls": "x")"), "measurement.predicted: field 'contraction_calls' has the wrong type (\"x\")"},
      {record("", R"("sources_read": -1)"), "measurement.predicted: field 'sources_read' must be a number >= 0, got -1.0"},
      {record("", R"("occupancy": 0)"), "measurement.predicted: field 'occupancy' must be in (0, 1], got 0.0"},
      {record("", R"("graph_bytes": -1)"), "measurement.predicted: field 'graph_bytes' must be a number >= 0, got -1.0"},
      {record("", "", R"("min_us": "x")"), "measurement.measured: field 'min_us' has the wrong type (\"x\")"},
      {record("", "", R"("flushed": "yes")"), "measurement.measured: field 'flushed' has the wrong type (\"yes\")"},
      {record("", "", R"("repetitions": 2.5)"), "measurement.measured: field 'repetitions' must be an integer"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].first);
    const std::string file = write(dir, "r" + std::to_string(i) + ".jsonl", record() + cases[i].first);
    const std::string where = file + ":2: " + cases[i].second;
    expect_refused(fuseplan({"calibrate", "--device", "host-cpu-reference", file, "-o", dir + "/cal.json"}), where);
    expect_refused(fuseplan({"accuracy", "--device", "host-cpu-reference", file, "-o", dir + "/acc.md"}), where);
    expect_refused(fuseplan({"refeature", file, "--models", dir, "-o", dir + "/out"}), where);
  }
  // A directory given as measurements read as no records.
  fs::create_directories(dir + "/d");
  expect_refused(fuseplan({"calibrate", "--device", "host-cpu-reference", dir + "/d", "-o", dir + "/cal.json"}),
                 "cannot read measurements '" + dir + "/d': it is a directory, not a JSON-lines file");
  EXPECT_FALSE(fs::exists(dir + "/cal.json"));
  EXPECT_FALSE(fs::exists(dir + "/acc.md"));
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

// A feature too large for the weighted fit (bytes_read 1e308) made every
// round's residual NaN; calibrate and accuracy then read an empty best round
// and crashed (SIGSEGV).
TEST(CliCalibrate, AnOverflowingRecordIsRefusedNotACrash) {
  const std::string dir = fresh_dir("records-overflow");
  std::string lines;
  for (int i = 0; i < 12; ++i)
    lines += R"({"schema": "fuseplan.measurement/1", "model": "m)" + std::to_string(i % 3) +
             R"(.onnxtxt", "group": )" + std::to_string(i) + R"(, "group_key": "k)" + std::to_string(i) +
             R"(", "device": "host-cpu-reference", "predicted": {"bytes_read": )" + std::to_string(1024 * (i + 1)) +
             R"(, "bytes_written": 1024, "flops_contraction": 0, "flops_other": 64, "predicted_us": 1},)" +
             R"( "measured": {"median_us": )" + std::to_string(1 + 0.3 * i) + "}}\n";
  lines += R"({"schema": "fuseplan.measurement/1", "model": "m0.onnxtxt", "group": 99, "group_key": "huge",
             "device": "host-cpu-reference", "predicted": {"bytes_read": 1e308, "bytes_written": 1024,
             "flops_contraction": 0, "flops_other": 64, "predicted_us": 1}, "measured": {"median_us": 0.05}})";
  // One record per line.
  lines = std::regex_replace(lines, std::regex("\n +"), " ");
  const std::string file = write(dir, "m.jsonl", lines + "\n");
  const std::string msg = "measurement m0.onnxtxt";
  Result c = fuseplan({"calibrate", "--device", "host-cpu-reference", file, "-o", dir + "/cal.json"});
  expect_refused(c, "is out of range for the fit: its features or time overflow a double");
  EXPECT_NE(c.err.find(msg), std::string::npos) << c.err;
  expect_refused(fuseplan({"accuracy", "--device", "host-cpu-reference", file, "--holdout", "m2.onnxtxt", "-o", dir + "/a.md"}),
                 "is out of range for the fit");
  EXPECT_FALSE(fs::exists(dir + "/cal.json"));
  EXPECT_FALSE(fs::exists(dir + "/a.md"));
}

// calibrate and accuracy fitted records of any device: host-cpu-reference's
// measurements calibrated an h100-sxm without a word.
TEST(CliRecords, ARecordMeasuredOnAnotherDeviceIsRefusedWithItsLine) {
  const std::string dir = fresh_dir("records-device");
  const std::string h100 = std::regex_replace(record(), std::regex("\"device\": \"host-cpu-reference\""), "\"device\": \"h100-sxm\"");
  const std::string file = write(dir, "m.jsonl", record() + h100);
  const std::string msg = file + ":2: measured on device 'h100-sxm', not on --device 'host-cpu-reference'";
  for (const char* cmd : {"calibrate", "accuracy"}) {
    SCOPED_TRACE(cmd);
    expect_refused(fuseplan({cmd, "--device", "host-cpu-reference", file, "-o", dir + "/x"}), msg);
    expect_refused(fuseplan({cmd, "--device", "h100-sxm", write(dir, "cpu.jsonl", record()), "-o", dir + "/x"}),
                   dir + "/cpu.jsonl:1: measured on device 'host-cpu-reference', not on --device 'h100-sxm'");
  }
  EXPECT_FALSE(fs::exists(dir + "/x"));
  // A device calibrated from host-cpu-reference, or a variant config of it, takes its
  // measurements: the shipped records (device host-cpu-reference) and their prior
  // configs/devices/host-cpu-1thread.json (docs/calibration.md).
  const std::string results = std::string(FUSEPLAN_SOURCE_DIR) + "/results/calibration";
  const std::string devices = std::string(FUSEPLAN_SOURCE_DIR) + "/configs/devices";
  for (const std::string device : {"host-cpu-1thread.json", "host-cpu-1thread-calibrated.json"}) {
    SCOPED_TRACE(device);
    std::vector<std::string> args = {"calibrate", "--device", devices + "/" + device, "--hold",
                                     "launch_us,caches[L1].bw_GBps,spill_penalty", "--statistic", "min",
                                     "-o", dir + "/cal.json"};  // the holds the shipped calibrated device was fitted with
    for (const auto& e : fs::directory_iterator(results))
      if (e.path().extension() == ".jsonl") args.push_back(e.path().string());
    Result c = fuseplan(args);
    EXPECT_EQ(c.code, 0) << c.err;
  }
}

// measure took --strategies unfused,unfused and measured the plan twice;
// tune took --batch 1,1 (compare refused both).
TEST(CliMeasure, ARepeatedStrategyOrBatchSizeIsRefused) {
  const std::string dir = fresh_dir("measure-repeat");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  expect_refused(fuseplan({"measure", "--device", "host-cpu-reference", model, "--batch", "2", "--strategies", "unfused,unfused", "-o", dir + "/m.jsonl"}),
                 "--strategies: unfused given twice");
  expect_refused(fuseplan({"measure", "--device", "host-cpu-reference", model, "--batch", "2", "--strategies", "unfused,,cost", "-o", dir + "/m.jsonl"}),
                 "--strategies: empty entry in 'unfused,,cost'");
  EXPECT_FALSE(fs::exists(dir + "/m.jsonl"));
  expect_refused(fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "1,8,1", "--no-peers", "-o", dir + "/tune"}),
                 "--batch: 1 given twice");
  expect_refused(fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "8", "--batch", "8", "--no-peers", "-o", dir + "/tune"}),
                 "--batch: 8 given twice");
  EXPECT_FALSE(fs::exists(dir + "/tune"));
}

// Records of `model`'s unfused and cost plans at --batch 2, one repetition,
// in dir/m.jsonl.
void measure_into(const std::string& dir, const std::string& model) {
  Result m = fuseplan({"measure", "--device", "host-cpu-reference", model, "--batch", "2", "--strategies", "unfused,cost", "--repeat", "1", "-o",
                       dir + "/m.jsonl"});
  ASSERT_EQ(m.code, 0) << m.err;
}

// refeature imports a model once per plan it searches again: a model without
// a batch dim measured at --batch 2 repeated the "--batch 2 is ignored"
// warning per strategy.
TEST(CliRefeature, EachWarningIsPrintedOnce) {
  const std::string dir = fresh_dir("refeature-warn");
  const std::string model = write(dir, "fixed.onnxtxt", kStatic);
  ASSERT_NO_FATAL_FAILURE(measure_into(dir, model));
  Result r = fuseplan({"refeature", dir + "/m.jsonl", "--models", dir, "-o", dir + "/out"});
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err_lines()[0].rfind("fuseplan: warning: --batch 2 is ignored", 0), 0u) << r.err;
}

// Regression: refeature refused a record it had already re-derived (its
// check priced the new features against the measurement-time prediction);
// it now rewrites the prediction too, so a second pass gives the same file.
TEST(CliRefeature, ASecondPassAcceptsAndKeepsItsOwnOutput) {
  const std::string dir = fresh_dir("refeature-twice");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  ASSERT_NO_FATAL_FAILURE(measure_into(dir, model));
  // As an older record: without the source bytes and the graph footprint,
  // and the time the model gave without them (a store stall in every group).
  std::string old;
  for (MeasurementRecord r : read_records(dir + "/m.jsonl")) {
    r.features.bytes_read_sources = 0;
    r.features.graph_bytes = -1;
    r.predicted_us = predict_us(r.features, load_device(r.device));
    old += record_to_json(r) + "\n";
  }
  write(dir, "old.jsonl", old);
  Result a = fuseplan({"refeature", dir + "/old.jsonl", "--models", dir, "-o", dir + "/a"});
  ASSERT_EQ(a.code, 0) << a.err;
  Result b = fuseplan({"refeature", dir + "/a/old.jsonl", "--models", dir, "-o", dir + "/b"});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(slurp(dir + "/b/old.jsonl"), slurp(dir + "/a/old.jsonl"));
  EXPECT_NE(slurp(dir + "/a/old.jsonl").find("\"graph_bytes\""), std::string::npos);
}

// run --inputs x=a.npy,x=b.npy ran with b.npy for x and said nothing.
TEST(CliRun, AnInputGivenTwiceIsRefused) {
  const std::string dir = fresh_dir("run-inputs");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  write_npy(dir + "/a.npy", Tensor(DType::f32, {2, 64}));
  write_npy(dir + "/b.npy", Tensor(DType::f32, {2, 64}));
  const std::string a = "x=" + dir + "/a.npy", b = "x=" + dir + "/b.npy";
  Result r = fuseplan({"run", "--device", "host-cpu-reference", model, "--batch", "2", "--inputs", a + "," + b});
  expect_refused(r, "--inputs: input 'x' given twice ('" + a + "' and '" + b + "')");
  EXPECT_TRUE(r.out.empty()) << r.out;
  Result ok = fuseplan({"run", "--device", "host-cpu-reference", model, "--batch", "2", "--inputs", a + ",y=" + dir + "/b.npy", "--repeat", "1"});
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// A cpu device with "caches": [] was accepted and priced every group at a
// cache level it does not have.
TEST(CliDevice, ACpuDeviceWithoutCacheLevelsIsRefused) {
  const std::string dir = fresh_dir("device-caches");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  expect_refused(fuseplan({"cost", model, "--batch", "2", "--device",
                           write(dir, "empty.json", cpu_device(R"("caches": [])"))}),
                 "field 'caches' is empty (a cpu device lists at least one cache level or its DRAM entry)");
  // The shipped devices and calibration priors still load.
  std::vector<fs::path> devices;
  for (const auto& e : fs::directory_iterator(std::string(FUSEPLAN_SOURCE_DIR) + "/configs/devices"))
    if (e.path().extension() == ".json") devices.push_back(e.path());
  ASSERT_GE(devices.size(), 9u);
  for (const auto& d : devices) {
    SCOPED_TRACE(d.string());
    Result r = fuseplan({"cost", model, "--batch", "2", "--device", d.string()});
    EXPECT_EQ(r.code, 0) << r.err;
  }
}

// accuracy -o DIR/report.md made DIR before fitting and before loading the
// --closed-loop models: a fit or model that failed left DIR behind, empty.
// Every command refuses an output whose directory is missing, before
// any work (support/outputs.h), and a failure writes no report.
TEST(CliAccuracy, AFailureLeavesNoOutputDirectory) {
  const std::string dir = fresh_dir("accuracy-late");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string empty = write(dir, "empty.jsonl", "");
  expect_refused(fuseplan({"accuracy", "--device", "host-cpu-reference", empty, "-o", dir + "/out/report.md"}),
                 "cannot write '" + dir + "/out/report.md': no directory '" + dir + "/out'");
  EXPECT_FALSE(fs::exists(dir + "/report.md"));
  expect_refused(fuseplan({"accuracy", "--device", "host-cpu-reference", empty, "-o", dir + "/report.md"}), "no measurements of the held-out models");
  EXPECT_FALSE(fs::exists(dir + "/report.md"));
  const std::string results = std::string(FUSEPLAN_SOURCE_DIR) + "/results/calibration";
  std::vector<std::string> args = {"accuracy", "--device",
                                   std::string(FUSEPLAN_SOURCE_DIR) + "/configs/devices/host-cpu-1thread.json"};
  for (const auto& e : fs::directory_iterator(results))
    if (e.path().extension() == ".jsonl") args.push_back(e.path().string());
  for (const std::string& a : std::vector<std::string>{"--holdout", "gpt2_block.onnxtxt,mnist_wonnx.onnx", "--hold",
                               "launch_us,caches[L1].bw_GBps", "--statistic", "min", "--closed-loop", model, "-o",
                               dir + "/report.md", "--groups-csv", dir + "/groups.csv"})
    args.push_back(a);
  expect_refused(fuseplan(args), "unbound symbolic dim 'N'");  // the closed-loop model needs --batch
  EXPECT_FALSE(fs::exists(dir + "/report.md"));
  args.back() = dir;  // --groups-csv DIR
  expect_refused(fuseplan(args), "cannot write '" + dir + "': it is a directory");
  EXPECT_FALSE(fs::exists(dir + "/report.md"));
  // A CSV path under a file failed only after the report and its plot were
  // written ("internal error: filesystem error", exit 3).
  args.back() = model + "/groups.csv";
  expect_refused(fuseplan(args), "cannot write '" + model + "/groups.csv': '" + model + "' is not a directory");
  EXPECT_FALSE(fs::exists(dir + "/report.md"));
}

// refeature wrote each file as it went: a bad record in the second file left
// the first rewritten; and an -o under a file threw a filesystem error.
TEST(CliRefeature, WritesNothingUnlessEveryFileReDerives) {
  const std::string dir = fresh_dir("refeature-all");
  const std::string results = std::string(FUSEPLAN_SOURCE_DIR) + "/results/calibration";
  const std::string good = dir + "/good.jsonl";
  // The unfused plan's records of a model whose unfused kernels read no
  // scalar constant and store no NCHW tensor from a blocked one: they
  // re-derive (a cost model change re-plans `cost` and `xla`, and one of an
  // existing feature changes the records' predictions: scalar constants
  // costing no bytes since they became immediates, resnet50_bottleneck's
  // final ReLU reordering once since it computes in blocked order;
  // refeature then asks for a re-measurement, as it does for vit_block's
  // LayerNorm epsilon kernels).
  {
    std::istringstream all(slurp(results + "/mobilenetv2_inverted_residual.jsonl"));
    std::ofstream out(good);
    for (std::string line; std::getline(all, line);)
      if (line.find("\"strategy\":\"unfused\"") != std::string::npos) out << line << "\n";
  }
  const std::string before = slurp(good);
  ASSERT_GT(before.size(), 0u);
  const std::string bad = write(dir, "bad.jsonl", "{\"bad\": 1}\n");
  const std::string examples = std::string(FUSEPLAN_SOURCE_DIR) + "/examples";
  expect_refused(fuseplan({"refeature", good, bad, "--models", examples, "--device", "host-cpu-reference"}), "bad.jsonl:1");
  EXPECT_EQ(slurp(good), before);
  expect_refused(fuseplan({"refeature", good, "--models", examples, "--device", "host-cpu-reference", "-o", good + "/out"}),
                 "cannot write '" + good + "/out/good.jsonl': '" + good + "' is not a directory");
}

// measure took --repeat 0 and -1 and --warmup -5 (run refuses --repeat 0),
// and found an unwritable -o only after measuring every plan.
TEST(CliMeasure, RefusesBadRepetitionsAndAnUnwritableOutputBeforeMeasuring) {
  const std::string dir = fresh_dir("measure-args");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::vector<std::string> base = {"measure", "--device", "host-cpu-reference", model, "--batch", "2", "--strategies", "unfused"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return fuseplan(args);
  };
  expect_refused(with({"--repeat", "0", "-o", dir + "/m.jsonl"}), "--repeat: must be from 1 to 1000000, got 0");
  expect_refused(with({"--repeat=-1", "-o", dir + "/m.jsonl"}), "--repeat: must be from 1 to 1000000, got -1");
  expect_refused(with({"--warmup=-5", "-o", dir + "/m.jsonl"}), "--warmup: must be from 0 to 1000000, got -5");
  expect_refused(with({"-o", dir}), "cannot write '" + dir + "': it is a directory");
  expect_refused(with({"-o", dir + "/no/m.jsonl"}), "cannot write '" + dir + "/no/m.jsonl': no directory '" + dir + "/no'");
  expect_refused(with({"--append", "-o", dir + "/no/m.jsonl"}), "no directory '" + dir + "/no'");
  EXPECT_FALSE(fs::exists(dir + "/m.jsonl"));
  // accuracy's closed loop ran with --rounds -2 and --repeat 0.
  write(dir, "r.jsonl", "");
  expect_refused(fuseplan({"accuracy", "--device", "host-cpu-reference", dir + "/r.jsonl", "--closed-loop", model, "--batch", "2", "--rounds=-2"}),
                 "--rounds: must be from 1 to 1000000, got -2");
  expect_refused(fuseplan({"accuracy", "--device", "host-cpu-reference", dir + "/r.jsonl", "--closed-loop", model, "--batch", "2", "--repeat", "0"}),
                 "--repeat: must be from 1 to 1000000, got 0");
}

// --dim wins over --batch for the batch dim (README: binding rule), silently:
// `tune --batch 1,64 --dim N=3` tuned N=3 twice and wrote plan-b64.json for N=3.
TEST(CliBatch, ADimThatBindsTheBatchDimSaysBatchIsIgnored) {
  const std::string dir = fresh_dir("batch-dim");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string warning =
      "fuseplan: warning: --batch 64 is ignored: --dim N=3 binds the batch dim 'N' of 'x'";
  Result s = fuseplan({"search", model, "--batch", "64", "--dim", "N=3", "-o", dir + "/p.json"});
  ASSERT_EQ(s.code, 0) << s.err;
  ASSERT_EQ(s.err_lines().size(), 1u) << s.err;
  EXPECT_EQ(s.err_lines()[0], warning);
  Result t = fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "64", "--dim", "N=3", "--no-peers", "--no-svg", "-o", dir + "/t"});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.err.find(warning), std::string::npos) << t.err;
  // The same value, or no --dim, binds as before: no warning.
  Result same = fuseplan({"search", model, "--batch", "3", "--dim", "N=3", "-o", dir + "/p.json"});
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_TRUE(same.err.empty()) << same.err;
}

// explain --node NAME that no decision touches printed the plan's header to
// stdout, then the error; --node '' printed every decision.
TEST(CliExplain, AnUnknownNodeIsOneErrorLineAndNoOutput) {
  const std::string dir = fresh_dir("explain-node");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  ASSERT_EQ(fuseplan({"search", model, "--batch", "2", "-o", dir + "/p.json"}).code, 0);
  Result r = fuseplan({"explain", dir + "/p.json", "--node", "nosuch"});
  expect_refused(r, "no decision touches 'nosuch'");
  EXPECT_TRUE(r.out.empty()) << r.out;
  Result e = fuseplan({"explain", dir + "/p.json", "--node", ""});
  expect_refused(e, "no decision touches ''");
  EXPECT_TRUE(e.out.empty()) << e.out;
  Result ok = fuseplan({"explain", dir + "/p.json", "--node", "t"});
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("t -> a: fused"), std::string::npos) << ok.out;
}

// A plan whose dims hold a string failed with the JSON library's "type must
// be number, but is string", naming neither 'dims' nor the entry.
TEST(CliPlan, ADimsEntryOfTheWrongTypeIsNamed) {
  const std::string dir = fresh_dir("plan-dims");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  ASSERT_EQ(fuseplan({"search", model, "--batch", "2", "-o", dir + "/p.json"}).code, 0);
  const std::string plan = slurp(dir + "/p.json");
  ASSERT_NE(plan.find("\"dims\": {"), std::string::npos) << plan;
  write(dir, "str.json", std::regex_replace(plan, std::regex("\"dims\": \\{"), "\"dims\": {\"Q\": \"x\", "));
  write(dir, "arr.json", std::regex_replace(plan, std::regex("\"dims\": \\{[^}]*\\}"), "\"dims\": [2]"));
  write(dir, "sha.json", std::regex_replace(plan, std::regex("\"sha256\": \"[0-9a-f]*\""), "\"sha256\": 5"));
  for (const char* cmd : {"cost", "run"}) {
    SCOPED_TRACE(cmd);
    expect_refused(fuseplan({cmd, model, "--device", "host-cpu-reference", "--batch", "2", "--plan", dir + "/str.json"}),
                   "malformed plan: dims: 'Q' is \"x\", not an integer >= 1");
    expect_refused(fuseplan({cmd, model, "--device", "host-cpu-reference", "--batch", "2", "--plan", dir + "/arr.json"}),
                   "malformed plan: 'dims' is not an object of NAME: value");
    expect_refused(fuseplan({cmd, model, "--device", "host-cpu-reference", "--batch", "2", "--plan", dir + "/sha.json"}),
                   "malformed plan: model: 'sha256' is not a string");
  }
}

// The channel block of the CPU layouts (graph/layout.h): 8 or 16 from the
// environment, recorded in the plan; anything else is refused.
TEST(CliChannelBlock, TheEnvironmentPicksEightOrSixteenAndNothingElse) {
  const std::string dir = fresh_dir("channel-block");
  const std::string model = write(dir, "res.onnxtxt", layout_graphs::residual(16));
  for (const char* b : {"8", "16"}) {
    const std::string plan = dir + "/p" + b + ".json";
    Result r = fuseplan({"search", model, "--device", "host-cpu-1thread", "-o", plan}, ".",
                        std::string("FUSEPLAN_CHANNEL_BLOCK=") + b);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(slurp(plan).find(std::string("\"blocked_format\": \"nChw") + b + "c\""), std::string::npos) << b;
  }
  expect_refused(fuseplan({"search", model, "--device", "host-cpu-1thread", "-o", dir + "/p12.json"}, ".",
                          "FUSEPLAN_CHANNEL_BLOCK=12"),
                 "FUSEPLAN_CHANNEL_BLOCK must be 8 or 16, got '12'");
  EXPECT_FALSE(fs::exists(dir + "/p12.json"));
}

}  // namespace
}  // namespace fuseplan
