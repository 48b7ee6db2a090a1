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
#include "graph/graph.h"

namespace fs = std::filesystem;
using fuseplan::DeviceSpec;
using fuseplan::Error;

namespace {

// The figures every device must cite (GPU and CPU alike).
const char* const kFigures[] = {"arch", "dram_bw_GBps", "l2_bytes", "sm_count", "fp32_TFLOPs", "tensor_TFLOPs",
                                "regs_per_sm", "max_regs_per_thread", "smem_per_sm_bytes", "smem_per_block_bytes",
                                "max_threads_per_sm", "threads_per_block", "elems_per_thread", "launch_us",
                                "graph_launch_us", "gemm_call_us", "source_read_us", "write_allocate_bw_GBps",
                                "store_buffer_bytes", "store_stall_us", "gemm_tile_m", "gemm_tile_n", "e_mem", "e_transcendental", "reduce_step_ns",
                                "select_step_ns", "pool_step_ns", "im2col_elem_ns", "gemm_pack_elem_ns", "gemm_microkernel_ns", "e_cmp", "e_contraction",
                                "spill_penalty",
                                "min_occupancy_for_full_bw", "clock_GHz"};

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
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.arch, b.arch);
  EXPECT_EQ(a.dram_bw_GBps, b.dram_bw_GBps);
  EXPECT_EQ(a.l2_bytes, b.l2_bytes);
  ASSERT_EQ(a.caches.size(), b.caches.size());
  for (size_t i = 0; i < a.caches.size(); ++i) {
    EXPECT_EQ(a.caches[i].name, b.caches[i].name);
    EXPECT_EQ(a.caches[i].bytes, b.caches[i].bytes);
    EXPECT_EQ(a.caches[i].bw_GBps, b.caches[i].bw_GBps);
  }
  EXPECT_EQ(a.sm_count, b.sm_count);
  EXPECT_EQ(a.clock_GHz, b.clock_GHz);
  EXPECT_EQ(a.fp32_TFLOPs, b.fp32_TFLOPs);
  EXPECT_EQ(a.tensor_TFLOPs, b.tensor_TFLOPs);
  EXPECT_EQ(a.regs_per_sm, b.regs_per_sm);
  EXPECT_EQ(a.max_regs_per_thread, b.max_regs_per_thread);
  EXPECT_EQ(a.smem_per_sm_bytes, b.smem_per_sm_bytes);
  EXPECT_EQ(a.smem_per_block_bytes, b.smem_per_block_bytes);
  EXPECT_EQ(a.max_threads_per_sm, b.max_threads_per_sm);
  EXPECT_EQ(a.threads_per_block, b.threads_per_block);
  EXPECT_EQ(a.elems_per_thread, b.elems_per_thread);
  EXPECT_EQ(a.launch_us, b.launch_us);
  EXPECT_EQ(a.graph_launch_us, b.graph_launch_us);
  EXPECT_EQ(a.gemm_call_us, b.gemm_call_us);
  EXPECT_EQ(a.source_read_us, b.source_read_us);
  EXPECT_EQ(a.libm_cold_us, b.libm_cold_us);
  EXPECT_EQ(a.write_allocate_bw_GBps, b.write_allocate_bw_GBps);
  EXPECT_EQ(a.store_buffer_bytes, b.store_buffer_bytes);
  EXPECT_EQ(a.store_stall_us, b.store_stall_us);
  EXPECT_EQ(a.gemm_tile_m, b.gemm_tile_m);
  EXPECT_EQ(a.gemm_tile_n, b.gemm_tile_n);
  EXPECT_EQ(a.e_transcendental, b.e_transcendental);
  EXPECT_EQ(a.transcendental_ns, b.transcendental_ns);
  EXPECT_EQ(a.reduce_step_ns, b.reduce_step_ns);
  EXPECT_EQ(a.pool_step_ns, b.pool_step_ns);
  EXPECT_EQ(a.select_step_ns, b.select_step_ns);
  EXPECT_EQ(a.e_mem, b.e_mem);
  EXPECT_EQ(a.e_cmp, b.e_cmp);
  EXPECT_EQ(a.e_contraction, b.e_contraction);
  EXPECT_EQ(a.spill_penalty, b.spill_penalty);
  EXPECT_EQ(a.min_occupancy_for_full_bw, b.min_occupancy_for_full_bw);
  EXPECT_EQ(a.sources, b.sources);
  EXPECT_EQ(a.calibrated, b.calibrated);
}

}  // namespace

TEST(Device, ListsTheConfiguredDevices) {
  const auto names = fuseplan::list_devices();
  for (const char* n : {"h100-sxm", "h200", "a100-80gb", "v100", "l4", "rtx4090", "host-cpu"})
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
    EXPECT_TRUE(d.kind == "gpu" || d.kind == "cpu");
    EXPECT_GT(d.dram_bw_GBps, 0);
    EXPECT_GT(d.sm_count, 0);
    EXPECT_GT(d.fp32_TFLOPs, 0);
    EXPECT_GT(d.l2_bytes, 0);
    for (const char* f : kFigures) {
      auto it = d.sources.find(f);
      ASSERT_NE(it, d.sources.end()) << "no source for " << f;
      EXPECT_FALSE(it->second.empty()) << f;
    }
    if (d.is_gpu()) {
      EXPECT_GT(d.tensor_TFLOPs, d.fp32_TFLOPs);
      EXPECT_EQ(d.max_regs_per_thread, 255);
      EXPECT_EQ(d.regs_per_sm, 65536);
      EXPECT_LE(d.smem_per_block_bytes, d.smem_per_sm_bytes);
      EXPECT_GT(d.launch_us, d.graph_launch_us);
      EXPECT_EQ(d.arch.rfind("sm_", 0), 0u);
    } else {
      ASSERT_GE(d.caches.size(), 2u);
      EXPECT_EQ(d.caches.back().name, "DRAM");
      EXPECT_EQ(d.caches.back().bytes, 0);
      EXPECT_NE(d.sources.find("caches"), d.sources.end());
      for (size_t i = 1; i + 1 < d.caches.size(); ++i) EXPECT_GT(d.caches[i].bytes, d.caches[i - 1].bytes);
      // A probed CPU cites the probe; a calibrated copy of one (the
      // host-cpu-1thread-calibrated fit of docs/calibration.md) the fit.
      EXPECT_NE(d.sources.at("dram_bw_GBps")
                    .find(d.calibrated ? "fitted by fuseplan calibrate on " : "measured by fuseplan probe on "),
                std::string::npos);
    }
    // Round trip: serialise, load the file back, compare field by field.
    const std::string text = fuseplan::device_to_json(d);
    const fs::path p = temp_file(n + ".json", text);
    expect_same(d, fuseplan::load_device(p.string()));
    EXPECT_EQ(fuseplan::device_to_json(fuseplan::load_device(p.string())), text);
  }
}

TEST(Device, DatasheetFigures) {
  const DeviceSpec h100 = fuseplan::load_device("h100-sxm");
  EXPECT_EQ(h100.dram_bw_GBps, 3350);
  EXPECT_EQ(h100.sm_count, 132);
  EXPECT_EQ(h100.tensor_TFLOPs, 989);
  EXPECT_EQ(h100.l2_bytes, 50.0 * 1024 * 1024);
  const DeviceSpec h200 = fuseplan::load_device("h200");
  EXPECT_EQ(h200.dram_bw_GBps, 4800);
  EXPECT_EQ(h200.sm_count, h100.sm_count);
  EXPECT_EQ(h200.l2_bytes, h100.l2_bytes);
  EXPECT_NEAR(h200.dram_bw_GBps * h200.e_mem, 4300, 100);  // measured D2D copy ~4.3 TB/s
  EXPECT_EQ(fuseplan::load_device("a100-80gb").sm_count, 108);
  EXPECT_EQ(fuseplan::load_device("v100").tensor_TFLOPs, 125);
  EXPECT_EQ(fuseplan::load_device("l4").dram_bw_GBps, 300);
  EXPECT_EQ(fuseplan::load_device("rtx4090").l2_bytes, 72.0 * 1024 * 1024);
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
        {"min_occupancy_for_full_bw", -1, "'min_occupancy_for_full_bw' must be in [0, 1]"}}) {
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
        R"({"kind": "cpu", "arch": "x86-64", "dram_bw_GBps": 20, "sm_count": 2, "fp32_TFLOPs": 0.1, "launch_us": 1})")
                                               .string());
    EXPECT_NE(msg.find("missing required field 'caches'"), std::string::npos) << msg;
  }
  {
    const std::string msg = thrown_message(temp_file("neg.json",
        R"({"kind": "cpu", "arch": "x86-64", "dram_bw_GBps": -1, "sm_count": 2, "fp32_TFLOPs": 0.1, "launch_us": 1,
            "caches": [{"name": "L1", "bytes": 32768, "bw_GBps": 100}, {"name": "DRAM", "bytes": 0, "bw_GBps": 20}]})")
                                               .string());
    EXPECT_NE(msg.find("'dram_bw_GBps' must be positive"), std::string::npos) << msg;
  }
}

// The probe's per-op table (DeviceSpec::transcendental_ns): round-trips on a
// CPU device; a GPU device, an op that is not transcendental, or a time out
// of (0, 1e6] ns is one named error.
TEST(Device, TranscendentalTableIsCpuOnlyAndNamesKnownOps) {
  const nlohmann::json cpu = nlohmann::json::parse(fuseplan::device_to_json(fuseplan::load_device("host-cpu")));
  {
    nlohmann::json t = cpu;
    t["transcendental_ns"] = {{"Sigmoid", 3.25}, {"Tanh", 11.5}};
    const DeviceSpec d = fuseplan::load_device(temp_file("tns.json", t.dump()).string());
    ASSERT_EQ(d.transcendental_ns.size(), 2u);
    EXPECT_EQ(d.transcendental_ns.at("Sigmoid"), 3.25);
    const DeviceSpec back = fuseplan::load_device(temp_file("tns2.json", fuseplan::device_to_json(d)).string());
    EXPECT_EQ(back.transcendental_ns, d.transcendental_ns);
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

TEST(Device, DataDirHonoursEnvironment) {
  const char* old = std::getenv("FUSEPLAN_DATA_DIR");
  const std::string saved = old ? old : "";
  const fs::path dir = fs::temp_directory_path() / ("fuseplan_datadir_" + std::to_string(::getpid()));
  fs::create_directories(dir / "configs" / "devices");
  std::ofstream(dir / "configs" / "devices" / "toy.json")
      << R"({"kind": "cpu", "arch": "x86-64", "dram_bw_GBps": 20, "sm_count": 2, "fp32_TFLOPs": 0.1, "launch_us": 1,
            "caches": [{"name": "L1", "bytes": 32768, "bw_GBps": 100}, {"name": "DRAM", "bytes": 0, "bw_GBps": 20}]})";
  ::setenv("FUSEPLAN_DATA_DIR", dir.c_str(), 1);
  EXPECT_EQ(fuseplan::data_dir(), dir.string());
  EXPECT_EQ(fuseplan::list_devices(), std::vector<std::string>{"toy"});
  const DeviceSpec toy = fuseplan::load_device("toy");
  EXPECT_EQ(toy.name, "toy");
  EXPECT_EQ(toy.caches.size(), 2u);
  if (old) ::setenv("FUSEPLAN_DATA_DIR", saved.c_str(), 1); else ::unsetenv("FUSEPLAN_DATA_DIR");
  EXPECT_EQ(fuseplan::data_dir(), old ? saved : std::string(FUSEPLAN_SOURCE_DIR));
}
