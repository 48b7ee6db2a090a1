// Device descriptions: load configs/devices/<name>.json into a DeviceSpec,
// list the configured devices, and write a DeviceSpec back as JSON (used by
// `fuseplan probe` and `fuseplan calibrate`). Every error is one line.
#include "costmodel/device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "costmodel/cost_detail.h"
#include "graph/graph.h"
#include "support/input_file.h"

#ifndef FUSEPLAN_SOURCE_DIR
#define FUSEPLAN_SOURCE_DIR "."
#endif

namespace fuseplan {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

fs::path devices_dir() { return fs::path(data_dir()) / "configs" / "devices"; }

std::string known_list() {
  std::string s;
  for (const auto& n : list_devices()) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? std::string("none found under ") + devices_dir().string() : s;
}

// Reads field `key` of `j` into `out`. Required fields throw when absent;
// a present field of the wrong type always throws. `ctx` names the file.
void get_number(const json& j, const char* key, double& out, bool required, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw Error(ctx + ": missing required field '" + key + "'");
    return;
  }
  if (!it->is_number()) throw Error(ctx + ": field '" + key + "' must be a number, got " + it->type_name());
  out = it->get<double>();
}

void get_int(const json& j, const char* key, int& out, bool required, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw Error(ctx + ": missing required field '" + key + "'");
    return;
  }
  // Range first: converting a double beyond int to int is undefined (it read
  // 1e10 as -2147483648 and 3e9 as "must be positive").
  const double v = it->is_number() ? it->get<double>() : 0.5;
  if (!it->is_number() || v != std::floor(v))
    throw Error(ctx + ": field '" + key + "' must be an integer, got " + it->dump());
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw Error(ctx + ": field '" + key + "' must be an integer from " + std::to_string(std::numeric_limits<int>::min()) +
                " to " + std::to_string(std::numeric_limits<int>::max()) + ", got " + it->dump());
  out = static_cast<int>(v);
}

void get_string(const json& j, const char* key, std::string& out, bool required, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw Error(ctx + ": missing required field '" + key + "'");
    return;
  }
  if (!it->is_string()) throw Error(ctx + ": field '" + key + "' must be a string, got " + it->type_name());
  out = it->get<std::string>();
}

void require_positive(double v, const char* key, const std::string& ctx) {
  if (!(v > 0)) throw Error(ctx + ": field '" + key + "' must be positive, got " + json(v).dump());
}

DeviceSpec parse_device(const json& j, const std::string& ctx, const std::string& default_name) {
  if (!j.is_object()) throw Error(ctx + ": top level must be a JSON object, got " + std::string(j.type_name()));
  DeviceSpec d;
  d.name = default_name;
  get_string(j, "name", d.name, false, ctx);
  get_string(j, "kind", d.kind, true, ctx);
  if (d.kind != "gpu" && d.kind != "cpu")
    throw Error(ctx + ": field 'kind' must be \"gpu\" or \"cpu\", got \"" + d.kind + "\"");
  const bool gpu = d.kind == "gpu";
  get_string(j, "arch", d.arch, true, ctx);

  get_number(j, "dram_bw_GBps", d.dram_bw_GBps, true, ctx);
  get_number(j, "l2_bytes", d.l2_bytes, gpu, ctx);
  get_int(j, "sm_count", d.sm_count, true, ctx);
  get_number(j, "clock_GHz", d.clock_GHz, gpu, ctx);
  get_number(j, "fp32_TFLOPs", d.fp32_TFLOPs, true, ctx);
  get_number(j, "tensor_TFLOPs", d.tensor_TFLOPs, gpu, ctx);
  get_int(j, "regs_per_sm", d.regs_per_sm, false, ctx);
  get_int(j, "max_regs_per_thread", d.max_regs_per_thread, false, ctx);
  get_number(j, "smem_per_sm_bytes", d.smem_per_sm_bytes, gpu, ctx);
  get_number(j, "smem_per_block_bytes", d.smem_per_block_bytes, gpu, ctx);
  get_int(j, "max_threads_per_sm", d.max_threads_per_sm, false, ctx);
  get_int(j, "threads_per_block", d.threads_per_block, false, ctx);
  get_int(j, "elems_per_thread", d.elems_per_thread, false, ctx);
  get_number(j, "launch_us", d.launch_us, true, ctx);
  get_number(j, "graph_launch_us", d.graph_launch_us, false, ctx);
  get_number(j, "gemm_call_us", d.gemm_call_us, false, ctx);  // absent: 0 (no per-call term)
  get_number(j, "source_read_us", d.source_read_us, false, ctx);  // absent: 0 (no first-touch term)
  get_number(j, "libm_cold_us", d.libm_cold_us, false, ctx);      // absent: 0 (no cold-libm term)
  get_number(j, "write_allocate_bw_GBps", d.write_allocate_bw_GBps, false, ctx);  // absent: 0 (writes at the level)
  get_number(j, "store_buffer_bytes", d.store_buffer_bytes, false, ctx);
  get_number(j, "store_stall_us", d.store_stall_us, false, ctx);  // absent: 0 (no stall term)
  get_int(j, "gemm_tile_m", d.gemm_tile_m, false, ctx);  // absent: 0 (no micro-tile padding)
  get_int(j, "gemm_tile_n", d.gemm_tile_n, false, ctx);
  get_number(j, "e_mem", d.e_mem, false, ctx);
  get_number(j, "e_cmp", d.e_cmp, false, ctx);
  get_number(j, "e_contraction", d.e_contraction, false, ctx);
  get_number(j, "e_transcendental", d.e_transcendental, false, ctx);  // absent: 0 = e_cmp
  get_number(j, "reduce_step_ns", d.reduce_step_ns, false, ctx);  // absent: 0 (no serial-reduction term)
  get_number(j, "pool_step_ns", d.pool_step_ns, false, ctx);  // absent: 0 (no pooling-window term)
  get_number(j, "im2col_elem_ns", d.im2col_elem_ns, false, ctx);  // absent: 0 (no im2col term)
  get_number(j, "gemm_pack_elem_ns", d.gemm_pack_elem_ns, false, ctx);  // absent: 0 (no packing term)
  get_number(j, "gemm_microkernel_ns", d.gemm_microkernel_ns, false, ctx);  // absent: 0 (no per-run term)
  get_number(j, "select_step_ns", d.select_step_ns, false, ctx);  // absent: 0 (no max/min-chain term)
  get_number(j, "spill_penalty", d.spill_penalty, false, ctx);
  get_number(j, "min_occupancy_for_full_bw", d.min_occupancy_for_full_bw, false, ctx);

  if (auto it = j.find("transcendental_ns"); it != j.end()) {
    if (gpu) throw Error(ctx + ": field 'transcendental_ns' is for CPU devices (GPU transcendentals are priced through e_cmp)");
    if (!it->is_object()) throw Error(ctx + ": field 'transcendental_ns' must be an object mapping op name to ns per element");
    for (const auto& [op, v] : it->items()) {
      if (!costmodel_detail::is_transcendental(op))
        throw Error(ctx + ": transcendental_ns['" + op + "']: not a transcendental op (costmodel/flops.cpp lists them)");
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1e6))
        throw Error(ctx + ": transcendental_ns['" + op + "'] must be a number of ns in (0, 1e6], got " + v.dump());
      d.transcendental_ns[op] = v.get<double>();
    }
  }

  if (auto it = j.find("calibrated"); it != j.end()) {
    if (!it->is_boolean()) throw Error(ctx + ": field 'calibrated' must be true or false");
    d.calibrated = it->get<bool>();
  }

  if (auto it = j.find("caches"); it != j.end()) {
    if (!it->is_array()) throw Error(ctx + ": field 'caches' must be an array of {name, bytes, bw_GBps}");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& c = (*it)[i];
      const std::string cctx = ctx + ": caches[" + std::to_string(i) + "]";
      if (!c.is_object()) throw Error(cctx + " must be an object {name, bytes, bw_GBps}");
      CacheLevel lvl;
      get_string(c, "name", lvl.name, true, cctx);
      get_number(c, "bytes", lvl.bytes, true, cctx);
      get_number(c, "bw_GBps", lvl.bw_GBps, true, cctx);
      require_positive(lvl.bw_GBps, "bw_GBps", cctx);
      if (lvl.bytes < 0) throw Error(cctx + ": field 'bytes' must be >= 0 (0 = unbounded DRAM)");
      d.caches.push_back(std::move(lvl));
    }
    if (!gpu && d.caches.empty())
      throw Error(ctx + ": field 'caches' is empty (a cpu device lists at least one cache level or its DRAM entry)");
    // Ascending by capacity; a DRAM level (bytes = 0, unbounded) comes last.
    for (size_t i = 1; i < d.caches.size(); ++i) {
      const double prev = d.caches[i - 1].bytes, cur = d.caches[i].bytes;
      if (prev == 0 || (cur != 0 && cur < prev))
        throw Error(ctx + ": 'caches' must be in ascending size order (DRAM, bytes 0, last); entry " +
                    std::to_string(i) + " ('" + d.caches[i].name + "') is out of order");
    }
  } else if (!gpu) {
    throw Error(ctx + ": missing required field 'caches' (a cpu device lists its cache levels)");
  }

  if (auto it = j.find("sources"); it != j.end()) {
    if (!it->is_object()) throw Error(ctx + ": field 'sources' must be an object mapping figure name to its source");
    for (auto s = it->begin(); s != it->end(); ++s) {
      if (!s.value().is_string()) throw Error(ctx + ": sources['" + s.key() + "'] must be a string");
      d.sources[s.key()] = s.value().get<std::string>();
    }
  }

  require_positive(d.dram_bw_GBps, "dram_bw_GBps", ctx);
  require_positive(d.fp32_TFLOPs, "fp32_TFLOPs", ctx);
  if (d.sm_count <= 0) throw Error(ctx + ": field 'sm_count' must be positive, got " + std::to_string(d.sm_count));
  if (d.launch_us < 0) throw Error(ctx + ": field 'launch_us' must be >= 0");
  if (d.gemm_call_us < 0) throw Error(ctx + ": field 'gemm_call_us' must be >= 0");
  if (d.source_read_us < 0) throw Error(ctx + ": field 'source_read_us' must be >= 0");
  if (!(d.libm_cold_us >= 0)) throw Error(ctx + ": field 'libm_cold_us' must be >= 0");
  if (!(d.write_allocate_bw_GBps >= 0))
    throw Error(ctx + ": field 'write_allocate_bw_GBps' must be >= 0 (0 = writes priced at the working-set level)");
  if (!(d.store_buffer_bytes >= 0)) throw Error(ctx + ": field 'store_buffer_bytes' must be >= 0");
  if (!(d.store_stall_us >= 0)) throw Error(ctx + ": field 'store_stall_us' must be >= 0");
  for (auto [key, v] : {std::pair{"gemm_tile_m", d.gemm_tile_m}, {"gemm_tile_n", d.gemm_tile_n}})
    if (v < 0 || v > 4096)
      throw Error(ctx + ": field '" + key + "' must be from 0 (no padding) to 4096, got " + std::to_string(v));
  if (d.reduce_step_ns < 0) throw Error(ctx + ": field 'reduce_step_ns' must be >= 0");
  if (d.pool_step_ns < 0) throw Error(ctx + ": field 'pool_step_ns' must be >= 0");
  if (!(d.im2col_elem_ns >= 0)) throw Error(ctx + ": field 'im2col_elem_ns' must be >= 0");
  if (!(d.gemm_pack_elem_ns >= 0)) throw Error(ctx + ": field 'gemm_pack_elem_ns' must be >= 0");
  if (!(d.gemm_microkernel_ns >= 0)) throw Error(ctx + ": field 'gemm_microkernel_ns' must be >= 0");
  if (d.select_step_ns < 0) throw Error(ctx + ": field 'select_step_ns' must be >= 0");
  if (d.threads_per_block <= 0) throw Error(ctx + ": field 'threads_per_block' must be positive");
  if (d.elems_per_thread <= 0) throw Error(ctx + ": field 'elems_per_thread' must be positive");
  if (d.max_regs_per_thread <= 0) throw Error(ctx + ": field 'max_regs_per_thread' must be positive");
  if (d.regs_per_sm <= 0) throw Error(ctx + ": field 'regs_per_sm' must be positive");
  if (d.max_threads_per_sm <= 0) throw Error(ctx + ": field 'max_threads_per_sm' must be positive");
  for (auto [key, v] : {std::pair{"tensor_TFLOPs", d.tensor_TFLOPs}, {"l2_bytes", d.l2_bytes},
                        {"smem_per_sm_bytes", d.smem_per_sm_bytes}, {"smem_per_block_bytes", d.smem_per_block_bytes},
                        {"graph_launch_us", d.graph_launch_us}, {"spill_penalty", d.spill_penalty},
                        {"clock_GHz", d.clock_GHz}})
    if (!(v >= 0)) throw Error(ctx + ": field '" + key + "' must be >= 0, got " + json(v).dump());
  if (!(d.min_occupancy_for_full_bw >= 0 && d.min_occupancy_for_full_bw <= 1))
    throw Error(ctx + ": field 'min_occupancy_for_full_bw' must be in [0, 1], got " + json(d.min_occupancy_for_full_bw).dump());
  for (auto [key, v] : {std::pair{"e_mem", d.e_mem}, {"e_cmp", d.e_cmp}, {"e_contraction", d.e_contraction}})
    if (!(v > 0 && v <= 1.5)) throw Error(ctx + ": field '" + key + "' must be in (0, 1.5], got " + json(v).dump());
  if (!(d.e_transcendental >= 0 && d.e_transcendental <= 1.5))
    throw Error(ctx + ": field 'e_transcendental' must be in [0, 1.5] (0 = e_cmp), got " + json(d.e_transcendental).dump());
  // Magnitudes: figures far beyond any machine overflow a kernel's time to
  // inf (spill_penalty 1e308 hung the search on NaN savings), so each is
  // bounded well outside what a real device has.
  auto at_most = [&](const char* key, double v, double hi) {
    if (v > hi) throw Error(ctx + ": field '" + key + "' must be at most " + json(hi).dump() + ", got " + json(v).dump());
  };
  auto at_least = [&](const std::string& key, double v, double lo) {
    if (v != 0 && v < lo)
      throw Error(ctx + ": field '" + key + "' must be at least " + json(lo).dump() + ", got " + json(v).dump());
  };
  for (auto [key, v] : {std::pair{"launch_us", d.launch_us}, {"graph_launch_us", d.graph_launch_us},
                        {"gemm_call_us", d.gemm_call_us}, {"source_read_us", d.source_read_us},
                        {"libm_cold_us", d.libm_cold_us},
                        {"reduce_step_ns", d.reduce_step_ns}, {"pool_step_ns", d.pool_step_ns},
                        {"select_step_ns", d.select_step_ns}, {"store_buffer_bytes", d.store_buffer_bytes},
                        {"store_stall_us", d.store_stall_us}, {"im2col_elem_ns", d.im2col_elem_ns},
                        {"gemm_pack_elem_ns", d.gemm_pack_elem_ns}, {"gemm_microkernel_ns", d.gemm_microkernel_ns}})
    at_most(key, v, 1e9);
  at_most("spill_penalty", d.spill_penalty, 1e6);
  at_least("dram_bw_GBps", d.dram_bw_GBps, 1e-6);
  at_least("write_allocate_bw_GBps", d.write_allocate_bw_GBps, 1e-6);
  for (size_t i = 0; i < d.caches.size(); ++i)
    at_least("caches[" + std::to_string(i) + "].bw_GBps", d.caches[i].bw_GBps, 1e-6);
  for (auto [key, v] : {std::pair{"fp32_TFLOPs", d.fp32_TFLOPs}, {"tensor_TFLOPs", d.tensor_TFLOPs}})
    at_least(key, v, 1e-12);
  for (auto [key, v] : {std::pair{"e_mem", d.e_mem}, {"e_cmp", d.e_cmp}, {"e_contraction", d.e_contraction},
                        {"e_transcendental", d.e_transcendental}})
    at_least(key, v, 1e-6);
  return d;
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || s.find('\\') != std::string::npos ||
         (s.size() > 5 && s.ends_with(".json"));
}

}  // namespace

std::string data_dir() {
  if (const char* env = std::getenv("FUSEPLAN_DATA_DIR"); env && *env) return env;
  return FUSEPLAN_SOURCE_DIR;
}

std::vector<std::string> list_devices() {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(devices_dir(), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json") names.push_back(it->path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

DeviceSpec load_device(const std::string& name_or_path) {
  if (name_or_path.empty()) throw Error("empty device name (known: " + known_list() + ")");
  fs::path path;
  std::string default_name;
  std::error_code ec;
  if (looks_like_path(name_or_path) || fs::is_regular_file(name_or_path, ec)) {
    path = name_or_path;
    if (fs::is_directory(path, ec))
      throw Error("device '" + name_or_path + "' is a directory, not a device JSON file (known devices: " +
                  known_list() + ")");
    if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))  // /dev/null, a FIFO: no JSON to read
      throw Error("device '" + name_or_path + "' is not a regular file; a device is a name or a JSON file (known devices: " +
                  known_list() + ")");
    if (!fs::is_regular_file(path, ec))
      throw Error("device file '" + name_or_path + "' not found (known devices: " + known_list() + ")");
    default_name = path.stem().string();
  } else {
    path = devices_dir() / (name_or_path + ".json");
    if (!fs::is_regular_file(path, ec))
      throw Error("unknown device '" + name_or_path + "' (known: " + known_list() + ")");
    default_name = name_or_path;
  }
  const std::string text = read_input_file(path.string(), "device file", kMaxDataFileBytes);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double (1e400)
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    throw Error(path.string() + ": malformed JSON: " + msg);
  }
  return parse_device(j, path.string(), default_name);
}

std::string device_to_json(const DeviceSpec& d) {
  ojson j;
  j["name"] = d.name;
  j["kind"] = d.kind;
  j["arch"] = d.arch;
  j["dram_bw_GBps"] = d.dram_bw_GBps;
  j["l2_bytes"] = d.l2_bytes;
  if (!d.caches.empty() || d.kind == "cpu") {
    ojson caches = ojson::array();
    for (const auto& c : d.caches) {
      ojson cj;
      cj["name"] = c.name;
      cj["bytes"] = c.bytes;
      cj["bw_GBps"] = c.bw_GBps;
      caches.push_back(std::move(cj));
    }
    j["caches"] = std::move(caches);
  }
  j["sm_count"] = d.sm_count;
  j["clock_GHz"] = d.clock_GHz;
  j["fp32_TFLOPs"] = d.fp32_TFLOPs;
  j["tensor_TFLOPs"] = d.tensor_TFLOPs;
  j["regs_per_sm"] = d.regs_per_sm;
  j["max_regs_per_thread"] = d.max_regs_per_thread;
  j["smem_per_sm_bytes"] = d.smem_per_sm_bytes;
  j["smem_per_block_bytes"] = d.smem_per_block_bytes;
  j["max_threads_per_sm"] = d.max_threads_per_sm;
  j["threads_per_block"] = d.threads_per_block;
  j["elems_per_thread"] = d.elems_per_thread;
  j["launch_us"] = d.launch_us;
  j["graph_launch_us"] = d.graph_launch_us;
  j["gemm_call_us"] = d.gemm_call_us;
  j["source_read_us"] = d.source_read_us;
  if (d.libm_cold_us > 0) j["libm_cold_us"] = d.libm_cold_us;
  j["write_allocate_bw_GBps"] = d.write_allocate_bw_GBps;
  j["store_buffer_bytes"] = d.store_buffer_bytes;
  j["store_stall_us"] = d.store_stall_us;
  j["gemm_tile_m"] = d.gemm_tile_m;
  j["gemm_tile_n"] = d.gemm_tile_n;
  j["e_mem"] = d.e_mem;
  j["e_cmp"] = d.e_cmp;
  j["e_contraction"] = d.e_contraction;
  j["e_transcendental"] = d.e_transcendental;
  if (!d.transcendental_ns.empty()) {
    ojson t = ojson::object();
    for (const auto& [op, ns] : d.transcendental_ns) t[op] = ns;
    j["transcendental_ns"] = std::move(t);
  }
  j["reduce_step_ns"] = d.reduce_step_ns;
  j["select_step_ns"] = d.select_step_ns;
  j["pool_step_ns"] = d.pool_step_ns;
  j["im2col_elem_ns"] = d.im2col_elem_ns;
  j["gemm_pack_elem_ns"] = d.gemm_pack_elem_ns;
  j["gemm_microkernel_ns"] = d.gemm_microkernel_ns;
  j["spill_penalty"] = d.spill_penalty;
  j["min_occupancy_for_full_bw"] = d.min_occupancy_for_full_bw;
  j["calibrated"] = d.calibrated;
  ojson src = ojson::object();
  for (const auto& [k, v] : d.sources) src[k] = v;
  j["sources"] = std::move(src);
  return j.dump(2) + "\n";
}

}  // namespace fuseplan
