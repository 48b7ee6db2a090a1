// DeviceSpec configs: every configs/devices/*.json loads, cites a source for
// every figure, round-trips through device_to_json, and errors are one line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "costmodel/device.h"
#include "costmodel/terms.h"
#include "graph/graph.h"

namespace fs = std::filesystem;
using fuseplan::DeviceSpec;
using fuseplan::Error;

namespace {

// The figures every device must cite: those of both kinds, then each
// kind's own; and every cost-term parameter it has (costmodel/terms.h).
const char* const kCommonFigures[] = {"arch",   "dram_bw_GBps", "clock_GHz",     "fp32_TFLOPs",  "launch_us",
                                      "e_mem",  "e_cmp",        "e_contraction", "spill_penalty"};
const char* const kGpuFigures[] = {"sm_count",           "l2_bytes",          "tensor_TFLOPs",
                                   "regs_per_sm",        "max_regs_per_thread", "smem_per_sm_bytes",
                                   "smem_per_block_bytes", "max_threads_per_sm", "threads_per_block",
                                   "elems_per_thread",   "graph_launch_us",   "min_occupancy_for_full_bw"};
const char* const kCpuFigures[] = {"cores", "caches", "vector_regs", "vector_lanes", "store_buffer_bytes"};

fs::path temp_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("fuseplan_device_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p;
}

std::string thrown_message(const std::string& name_or_path) {
  try {
    fuseplan::load_device(name_or_path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_same(const DeviceSpec& a, const DeviceSpec& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.kind(), b.kind());
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.dram_bw_GBps, b.dram_bw_GBps);
  EXPECT_EQ(a.clock_GHz, b.clock_GHz);
  EXPECT_EQ(a.fp32_TFLOPs, b.fp32_TFLOPs);
  EXPECT_EQ(a.launch_us, b.launch_us);
  EXPECT_EQ(a.e_mem, b.e_mem);
  EXPECT_EQ(a.e_cmp, b.e_cmp);
  EXPECT_EQ(a.e_contraction, b.e_contraction);
  EXPECT_EQ(a.spill_penalty, b.spill_penalty);
  ASSERT_EQ(a.gpu.has_value(), b.gpu.has_value());
  ASSERT_EQ(a.cpu.has_value(), b.cpu.has_value());
  if (a.gpu) {
    const fuseplan::GpuSpec &x = *a.gpu, &y = *b.gpu;
    EXPECT_EQ(x.sm_count, y.sm_count);
    EXPECT_EQ(x.l2_bytes, y.l2_bytes);
    EXPECT_EQ(x.tensor_TFLOPs, y.tensor_TFLOPs);
    EXPECT_EQ(x.regs_per_sm, y.regs_per_sm);
    EXPECT_EQ(x.max_regs_per_thread, y.max_regs_per_thread);
    EXPECT_EQ(x.smem_per_sm_bytes, y.smem_per_sm_bytes);
    EXPECT_EQ(x.smem_per_block_bytes, y.smem_per_block_bytes);
    EXPECT_EQ(x.max_threads_per_sm, y.max_threads_per_sm);
    EXPECT_EQ(x.threads_per_block, y.threads_per_block);
    EXPECT_EQ(x.elems_per_thread, y.elems_per_thread);
    EXPECT_EQ(x.graph_launch_us, y.graph_launch_us);
    EXPECT_EQ(x.min_occupancy_for_full_bw, y.min_occupancy_for_full_bw);
  }
  if (a.cpu) {
    const fuseplan::CpuSpec &x = *a.cpu, &y = *b.cpu;
    EXPECT_EQ(x.cores, y.cores);
    ASSERT_EQ(x.caches.size(), y.caches.size());
    for (size_t i = 0; i < x.caches.size(); ++i) {
      EXPECT_EQ(x.caches[i].name, y.caches[i].name);
      EXPECT_EQ(x.caches[i].bytes, y.caches[i].bytes);
      EXPECT_EQ(x.caches[i].bw_GBps, y.caches[i].bw_GBps);
    }
    EXPECT_EQ(x.vector_regs, y.vector_regs);
    EXPECT_EQ(x.vector_lanes, y.vector_lanes);
    EXPECT_EQ(x.contraction_GFLOPs, y.contraction_GFLOPs);
    EXPECT_EQ(x.store_buffer_bytes, y.store_buffer_bytes);
    EXPECT_EQ(x.transcendental_ns, y.transcendental_ns);
  }
  // Every cost-term parameter, through the table.
  for (const fuseplan::CostTerm& t : fuseplan::cost_terms()) {
    SCOPED_TRACE(std::string(t.parameter));
    EXPECT_EQ(fuseplan::term_parameter(t, a), fuseplan::term_parameter(t, b));
  }
  EXPECT_EQ(a.sources, b.sources);
  EXPECT_EQ(a.calibrated, b.calibrated);
}

}  // namespace

TEST(Device, ListsTheConfiguredDevices) {
  const auto names = fuseplan::list_devices();
  for (const char* n : {"h100-sxm", "h200", "a100-80gb", "v100", "l4", "rtx4090", "host-cpu-reference"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(Device, EveryConfigLoadsWithSourcesAndRoundTrips) {
  const auto names = fuseplan::list_devices();
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) {
    SCOPED_TRACE(n);
    const DeviceSpec d = fuseplan::load_device(n);
    EXPECT_EQ(d.name, n);
    EXPECT_TRUE(d.kind() == "gpu" || d.kind() == "cpu");
    EXPECT_NE(d.gpu.has_value(), d.cpu.has_value());
    EXPECT_GT(d.dram_bw_GBps, 0);
    EXPECT_GT(d.fp32_TFLOPs, 0);
    EXPECT_GT(fuseplan::llc_bytes(d), 0);
    std::vector<std::string> figures(std::begin(kCommonFigures), std::end(kCommonFigures));
    if (d.gpu) figures.insert(figures.end(), std::begin(kGpuFigures), std::end(kGpuFigures));
    if (d.cpu) figures.insert(figures.end(), std::begin(kCpuFigures), std::end(kCpuFigures));
    for (const fuseplan::CostTerm& t : fuseplan::cost_terms())
      if (t.field && t.field(const_cast<DeviceSpec&>(d))) figures.emplace_back(t.parameter);
    if (d.cpu && d.cpu->has_contraction_table()) figures.emplace_back("contraction_GFLOPs");
    for (const std::string& f : figures) {
      auto it = d.sources.find(f);
      ASSERT_NE(it, d.sources.end()) << "no source for " << f;
      EXPECT_FALSE(it->second.empty()) << f;
    }
    if (d.is_gpu()) {
      EXPECT_GT(d.gpu->sm_count, 0);
      EXPECT_GT(d.gpu->l2_bytes, 0);
      EXPECT_GT(d.gpu->tensor_TFLOPs, d.fp32_TFLOPs);
      EXPECT_EQ(d.gpu->max_regs_per_thread, 255);
      EXPECT_EQ(d.gpu->regs_per_sm, 65536);
      EXPECT_LE(d.gpu->smem_per_block_bytes, d.gpu->smem_per_sm_bytes);
      EXPECT_GT(d.launch_us, d.gpu->graph_launch_us);
      EXPECT_EQ(d.arch.rfind("sm_", 0), 0u);
    } else {
      EXPECT_GT(d.cpu->cores, 0);
      ASSERT_GE(d.cpu->caches.size(), 2u);
      EXPECT_EQ(d.cpu->caches.back().name, "DRAM");
      EXPECT_EQ(d.cpu->caches.back().bytes, 0);
      EXPECT_NE(d.sources.find("caches"), d.sources.end());
      for (size_t i = 1; i + 1 < d.cpu->caches.size(); ++i) EXPECT_GT(d.cpu->caches[i].bytes, d.cpu->caches[i - 1].bytes);
      // A probed figure, or on a calibrated device the fit's.
      EXPECT_NE(d.sources.at("dram_bw_GBps").find(d.calibrated ? "fitted by fuseplan calibrate on "
                                                                : "measured by fuseplan probe on "),
                std::string::npos);
    }
    // Round trip: serialise, load the file back, compare field by field.
    const std::string text = fuseplan::device_to_json(d);
    const fs::path p = temp_file(n + ".json", text);
    expect_same(d, fuseplan::load_device(p.string()));
    EXPECT_EQ(fuseplan::device_to_json(fuseplan::load_device(p.string())), text);
  }
}

// The shipped CPU figures are reference devices (docs/devices.md): fixed,
// named, and saying where they come from; `host-cpu` itself is no file (it
// is this machine, probed: probe/host_device.h).
TEST(Device, CpuReferenceDevicesStateTheirProvenance) {
  const auto names = fuseplan::list_devices();
  EXPECT_EQ(std::find(names.begin(), names.end(), "host-cpu"), names.end());
  int cpus = 0;
  for (const auto& n : names) {
    const DeviceSpec d = fuseplan::load_device(n);
    if (!d.cpu) continue;
    SCOPED_TRACE(n);
    ++cpus;
    ASSERT_TRUE(d.sources.count("provenance"));
    EXPECT_EQ(d.sources.at("provenance").rfind("reference device, not this machine: ", 0), 0u);
  }
  EXPECT_EQ(cpus, 4);  // host-cpu-reference, host-cpu-1thread, host-cpu-1thread-calibrated, host-zen4-1thread
  const DeviceSpec ref = fuseplan::load_device("host-cpu-reference");
  EXPECT_EQ(ref.dram_bw_GBps, 3.9976227988678645);  // as probed under load on 2026-11-29, unchanged
  EXPECT_EQ(ref.launch_us, 36.155013);
  EXPECT_NE(ref.sources.at("probe_conditions").find("load average 8.72 on 2 cores"), std::string::npos);
  const std::string msg = thrown_message("host-cpu");
  EXPECT_NE(msg.find("is this machine as probed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host-cpu-reference"), std::string::npos) << msg;
}

TEST(Device, DatasheetFigures) {
  const DeviceSpec h100 = fuseplan::load_device("h100-sxm");
  EXPECT_EQ(h100.dram_bw_GBps, 3350);
  EXPECT_EQ(h100.gpu->sm_count, 132);
  EXPECT_EQ(h100.gpu->tensor_TFLOPs, 989);
  EXPECT_EQ(h100.gpu->l2_bytes, 50.0 * 1024 * 1024);
  const DeviceSpec h200 = fuseplan::load_device("h200");
  EXPECT_EQ(h200.dram_bw_GBps, 4800);
  EXPECT_EQ(h200.gpu->sm_count, h100.gpu->sm_count);
  EXPECT_EQ(h200.gpu->l2_bytes, h100.gpu->l2_bytes);
  EXPECT_NEAR(h200.dram_bw_GBps * h200.e_mem, 4300, 100);  // measured D2D copy ~4.3 TB/s
  EXPECT_EQ(fuseplan::load_device("a100-80gb").gpu->sm_count, 108);
  EXPECT_EQ(fuseplan::load_device("v100").gpu->tensor_TFLOPs, 125);
  EXPECT_EQ(fuseplan::load_device("l4").dram_bw_GBps, 300);
  EXPECT_EQ(fuseplan::load_device("rtx4090").gpu->l2_bytes, 72.0 * 1024 * 1024);
}

TEST(Device, UnknownDeviceNamesTheKnownOnes) {
  const std::string msg = thrown_message("b300");
  EXPECT_NE(msg.find("unknown device 'b300'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("known: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("h100-sxm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rtx4090"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  const std::string path_msg = thrown_message("/nonexistent/dir/dev.json");
  EXPECT_NE(path_msg.find("/nonexistent/dir/dev.json"), std::string::npos) << path_msg;
}

TEST(Device, MalformedJsonNamesFileAndParserMessage) {
  const fs::path p = temp_file("broken.json", "{\n  \"kind\": \"gpu\",\n  \"dram_bw_GBps\": 3350,,\n}\n");
  const std::string msg = thrown_message(p.string());
  EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;  // nlohmann's position
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(Device, MissingOrMistypedFieldIsNamed) {
  const nlohmann::json h100 = nlohmann::json::parse(fuseplan::device_to_json(fuseplan::load_device("h100-sxm")));
  {
    nlohmann::json t = h100;
    t.erase("sm_count");
    const std::string msg = thrown_message(temp_file("nosm.json", t.dump()).string());
    EXPECT_NE(msg.find("missing required field 'sm_count'"), std::string::npos) << msg;
  }
  {
    nlohmann::json t = h100;
    t["dram_bw_GBps"] = "fast";
    const std::string msg = thrown_message(temp_file("strbw.json", t.dump()).string());
    EXPECT_NE(msg.find("'dram_bw_GBps' must be a number"), std::string::npos) << msg;
  }
  // Regression: these were accepted and changed predictions (e.g. a negative spill penalty).
  for (const auto& [key, bad, needle] :
       {std::tuple<const char*, double, const char*>{"regs_per_sm", 0, "'regs_per_sm' must be positive"},
        {"max_threads_per_sm", 0, "'max_threads_per_sm' must be positive"},
        {"tensor_TFLOPs", -1, "'tensor_TFLOPs' must be >= 0"},
        {"spill_penalty", -1, "'spill_penalty' must be >= 0"},
        {"l2_bytes", -1, "'l2_bytes' must be >= 0"},
        {"smem_per_block_bytes", -1, "'smem_per_block_bytes' must be >= 0"},
        {"min_occupancy_for_full_bw", -1, "'min_occupancy_for_full_bw' must be in [0, 1]"},
        {"overlap", 1.5, "'overlap' must be in [0, 1], got 1.5"},
        {"overlap", -0.1, "'overlap' must be in [0, 1], got -0.1"}}) {
    nlohmann::json t = h100;
    t[key] = bad;
    const std::string msg = thrown_message(temp_file(std::string("bad_") + key + ".json", t.dump()).string());
    EXPECT_NE(msg.find(needle), std::string::npos) << key << ": " << msg;
  }
  {
    // A number beyond double is a malformed file, not an internal error.
    const std::string msg = thrown_message(temp_file("huge.json", "{\"kind\": \"gpu\", \"launch_us\": 1e400}").string());
    EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
  }
  {
    nlohmann::json t = h100;
    t["sm_count"] = 1.5;
    const std::string msg = thrown_message(temp_file("fracsm.json", t.dump()).string());
    EXPECT_NE(msg.find("'sm_count' must be an integer"), std::string::npos) << msg;
  }
  {
    const std::string msg = thrown_message(temp_file("cpu.json",
        R"({"kind": "cpu", "arch": "x86-64", "dram_bw_GBps": 20, "cores": 2, "fp32_TFLOPs": 0.1, "launch_us": 1})")
                                               .string());
    EXPECT_NE(msg.find("missing required field 'caches'"), std::string::npos) << msg;
  }
  {
    const std::string msg = thrown_message(temp_file("neg.json",
        R"({"kind": "cpu", "arch": "x86-64", "dram_bw_GBps": -1, "cores": 2, "fp32_TFLOPs": 0.1, "launch_us": 1,
            "caches": [{"name": "L1", "bytes": 32768, "bw_GBps": 100}, {"name": "DRAM", "bytes": 0, "bw_GBps": 20}]})")
                                               .string());
    EXPECT_NE(msg.find("'dram_bw_GBps' must be positive"), std::string::npos) << msg;
  }
}

// The probe's per-op table (CpuSpec::transcendental_ns): round-trips on a
// CPU device; a GPU device, an op that is not transcendental, or a time out
// of (0, 1e6] ns is one named error.
TEST(Device, TranscendentalTableIsCpuOnlyAndNamesKnownOps) {
  const nlohmann::json cpu = nlohmann::json::parse(fuseplan::device_to_json(fuseplan::load_device("host-cpu-reference")));
  {
    nlohmann::json t = cpu;
    t["transcendental_ns"] = {{"Sigmoid", 3.25}, {"Tanh", 11.5}};
    const DeviceSpec d = fuseplan::load_device(temp_file("tns.json", t.dump()).string());
    ASSERT_EQ(d.cpu->transcendental_ns.size(), 2u);
    EXPECT_EQ(d.cpu->transcendental_ns.at("Sigmoid"), 3.25);
    const DeviceSpec back = fuseplan::load_device(temp_file("tns2.json", fuseplan::device_to_json(d)).string());
    EXPECT_EQ(back.cpu->transcendental_ns, d.cpu->transcendental_ns);
  }
  for (const auto& [table, needle] :
       {std::pair<nlohmann::json, const char*>{{{"Relu", 1.0}}, "transcendental_ns['Relu']: not a transcendental op"},
        {{{"Exp", -1.0}}, "transcendental_ns['Exp'] must be a number of ns in (0, 1e6]"},
        {{{"Exp", "fast"}}, "transcendental_ns['Exp'] must be a number"},
        {nlohmann::json::array({1, 2}), "'transcendental_ns' must be an object"}}) {
    nlohmann::json t = cpu;
    t["transcendental_ns"] = table;
    const std::string msg = thrown_message(temp_file("badtns.json", t.dump()).string());
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
  nlohmann::json gpu = nlohmann::json::parse(fuseplan::device_to_json(fuseplan::load_device("h100-sxm")));
  gpu["transcendental_ns"] = {{"Exp", 1.0}};
  const std::string msg = thrown_message(temp_file("gputns.json", gpu.dump()).string());
  EXPECT_NE(msg.find("'transcendental_ns' is for CPU devices"), std::string::npos) << msg;
}

// The probe's contraction table (CpuSpec::contraction_GFLOPs): every class
// of costmodel/contraction.h or none; round-trips; a partial table, an
// unknown class or a throughput out of (0, 1e9] is one named error.
TEST(Device, ContractionTableGivesEveryClass) {
  const nlohmann::json cpu = nlohmann::json::parse(fuseplan::device_to_json(fuseplan::load_device("host-cpu-reference")));
  nlohmann::json full = nlohmann::json::object();
  double v = 10;
  for (fuseplan::ContractionClass k : fuseplan::contraction_classes())
    full[std::string(fuseplan::contraction_class_name(k))] = v += 5;
  {
    nlohmann::json t = cpu;
    t["contraction_GFLOPs"] = full;
    const DeviceSpec d = fuseplan::load_device(temp_file("cg.json", t.dump()).string());
    ASSERT_TRUE(d.cpu->has_contraction_table());
    EXPECT_EQ(d.cpu->contraction_GFLOPs[static_cast<int>(fuseplan::ContractionClass::conv_1x1)], 15);
    EXPECT_EQ(d.cpu->contraction_GFLOPs[static_cast<int>(fuseplan::ContractionClass::matmul_batched)], 50);
    const DeviceSpec back = fuseplan::load_device(temp_file("cg2.json", fuseplan::device_to_json(d)).string());
    EXPECT_EQ(back.cpu->contraction_GFLOPs, d.cpu->contraction_GFLOPs);
    EXPECT_EQ(back.cpu->contraction_lanes, 0);  // absent: unknown
    t["contraction_lanes"] = 16;
    const DeviceSpec lanes = fuseplan::load_device(temp_file("cg3.json", t.dump()).string());
    EXPECT_EQ(fuseplan::load_device(temp_file("cg4.json", fuseplan::device_to_json(lanes)).string()).cpu->contraction_lanes,
              16);
    t["contraction_lanes"] = -1;
    const std::string msg = thrown_message(temp_file("cg5.json", t.dump()).string());
    EXPECT_NE(msg.find("field 'contraction_lanes' must be in [0, 64] (0: unknown), got -1"), std::string::npos) << msg;
  }
  EXPECT_FALSE(fuseplan::load_device("host-cpu-reference").cpu->has_contraction_table());  // absent: none
  nlohmann::json partial = full;
  partial.erase("gemm_tall");
  nlohmann::json unknown = full;
  unknown["gemm_micro"] = 1.0;
  nlohmann::json negative = full;
  negative["conv_1x1"] = -1.0;
  for (const auto& [table, needle] :
       {std::pair<nlohmann::json, const char*>{partial, "contraction_GFLOPs lacks class 'gemm_tall'"},
        {unknown, "contraction_GFLOPs['gemm_micro']: not a contraction class"},
        {negative, "contraction_GFLOPs['conv_1x1'] must be a number of GFLOP/s in (0, 1e9]"},
        {nlohmann::json::array({1, 2}), "'contraction_GFLOPs' must be an object"}}) {
    nlohmann::json t = cpu;
    t["contraction_GFLOPs"] = table;
    const std::string msg = thrown_message(temp_file("badcg.json", t.dump()).string());
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(Device, DataDirHonoursEnvironment) {
  const char* old = std::getenv("FUSEPLAN_DATA_DIR");
  const std::string saved = old ? old : "";
  const fs::path dir = fs::temp_directory_path() / ("fuseplan_datadir_" + std::to_string(::getpid()));
  fs::create_directories(dir / "configs" / "devices");
  std::ofstream(dir / "configs" / "devices" / "toy.json")
      << R"({"kind": "cpu", "arch": "x86-64", "dram_bw_GBps": 20, "cores": 2, "fp32_TFLOPs": 0.1, "launch_us": 1,
            "caches": [{"name": "L1", "bytes": 32768, "bw_GBps": 100}, {"name": "DRAM", "bytes": 0, "bw_GBps": 20}]})";
  ::setenv("FUSEPLAN_DATA_DIR", dir.c_str(), 1);
  EXPECT_EQ(fuseplan::data_dir(), dir.string());
  EXPECT_EQ(fuseplan::list_devices(), std::vector<std::string>{"toy"});
  const DeviceSpec toy = fuseplan::load_device("toy");
  EXPECT_EQ(toy.name, "toy");
  EXPECT_EQ(toy.cpu->caches.size(), 2u);
  if (old) ::setenv("FUSEPLAN_DATA_DIR", saved.c_str(), 1); else ::unsetenv("FUSEPLAN_DATA_DIR");
  EXPECT_EQ(fuseplan::data_dir(), old ? saved : std::string(FUSEPLAN_SOURCE_DIR));
}

// A GPU carries no CPU figure and a CPU none of a GPU's: such a field is
// refused by name (a CPU names its cores 'cores', not 'sm_count').
TEST(Device, AFieldOfTheOtherKindIsRefusedByName) {
  const nlohmann::json gpu = nlohmann::json::parse(fuseplan::device_to_json(fuseplan::load_device("h100-sxm")));
  const nlohmann::json cpu = nlohmann::json::parse(fuseplan::device_to_json(fuseplan::load_device("host-cpu-reference")));
  EXPECT_FALSE(gpu.contains("contraction_call_us"));
  EXPECT_FALSE(gpu.contains("caches"));
  EXPECT_FALSE(cpu.contains("sm_count"));
  EXPECT_FALSE(cpu.contains("l2_bytes"));
  EXPECT_EQ(cpu.at("cores"), 2);
  for (const auto& [base, key, needle] :
       {std::tuple<nlohmann::json, const char*, const char*>{gpu, "contraction_call_us", "field 'contraction_call_us' is for CPU devices"},
        {gpu, "contraction_GFLOPs", "field 'contraction_GFLOPs' is for CPU devices"},
        {gpu, "reduce_step_ns", "field 'reduce_step_ns' is for CPU devices"},
        {gpu, "vector_lanes", "field 'vector_lanes' is for CPU devices"},
        {cpu, "sm_count", "field 'sm_count' is for GPU devices (a cpu device gives its cores as 'cores')"},
        {cpu, "max_regs_per_thread", "field 'max_regs_per_thread' is for GPU devices (a cpu device gives 'vector_regs')"},
        {cpu, "min_occupancy_for_full_bw", "field 'min_occupancy_for_full_bw' is for GPU devices"}}) {
    nlohmann::json t = base;
    t[key] = 1;
    const std::string msg = thrown_message(temp_file(std::string("other_") + key + ".json", t.dump()).string());
    EXPECT_NE(msg.find(needle), std::string::npos) << key << ": " << msg;
  }
}

// The cost terms' parameters are read and written from the table: each one
// a device has, set to its own value, comes back from the JSON unchanged,
// and a GPU has exactly the parameters of the terms that price on it.
TEST(Device, EveryTermParameterRoundTripsThroughTheTable) {
  for (const char* name : {"host-cpu-reference", "h100-sxm"}) {
    SCOPED_TRACE(name);
    DeviceSpec d = fuseplan::load_device(name);
    double v = 0.125;
    int set = 0;
    for (const fuseplan::CostTerm& t : fuseplan::cost_terms()) {
      double* p = t.field ? t.field(d) : nullptr;
      EXPECT_EQ(p != nullptr, t.field != nullptr && (t.part == fuseplan::ParamPart::common ||
                                                    (t.part == fuseplan::ParamPart::cpu) == !d.is_gpu()))
          << t.parameter;
      if (!p) continue;
      *p = v;
      v += 0.0625;
      ++set;
    }
    EXPECT_EQ(set, d.is_gpu() ? 5 : 14);  // GPU: dram, spill, e_contraction, e_cmp, launch
    const DeviceSpec back = fuseplan::load_device(temp_file(std::string(name) + "-terms.json", fuseplan::device_to_json(d)).string());
    v = 0.125;
    for (const fuseplan::CostTerm& t : fuseplan::cost_terms()) {
      if (!t.field || !t.field(d)) continue;
      EXPECT_EQ(fuseplan::term_parameter(t, back), v) << t.parameter;
      v += 0.0625;
    }
  }
}
