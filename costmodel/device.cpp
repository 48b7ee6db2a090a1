// Device descriptions: load configs/devices/<name>.json into a DeviceSpec,
// list the configured devices, and write a DeviceSpec back as JSON (used by
// `fuseplan probe` and `fuseplan calibrate`). The cost terms' parameters are
// read and written from the table of costmodel/terms.h; the figures that
// are no term's parameter (geometry, peaks) are listed here. A field of the
// other kind of device is refused by name. Every error is one line.
#include "costmodel/device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
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
  if (s.empty()) s = "none found under " + devices_dir().string();
  // The probed host is no file here: probe/host_device.h resolves it.
  return "host-cpu (this machine, probed), " + s;
}

// Reads field `key` of `j` into `out`. Required fields throw when absent;
// a present field of the wrong type always throws. `ctx` names the file.
void get_number(const json& j, const std::string& key, double& out, bool required, const std::string& ctx) {
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

// Checks `v`, field `key`, against `r` (ParamRange: terms.h).
void check_range(double v, std::string_view key, const ParamRange& r, const std::string& ctx) {
  const std::string field = ctx + ": field '" + std::string(key) + "' must be ";
  const std::string got = ", got " + json(v).dump();
  const std::string zero = r.zero_means.empty() ? "" : " (" + std::string(r.zero_means) + ")";
  if (r.fraction) {
    if (!(r.zero_ok ? v >= 0 : v > 0) || !(v <= r.hi))
      throw Error(field + "in " + (r.zero_ok ? "[0, " : "(0, ") + json(r.hi).dump() + "]" + zero + got);
  } else {
    if (!(r.zero_ok ? v >= 0 : v > 0)) throw Error(field + (r.zero_ok ? ">= 0" + zero : "positive") + got);
    // Figures far beyond any machine overflow a kernel's time to inf
    // (spill_penalty 1e308 hung the search on NaN savings).
    if (v > r.hi) throw Error(field + "at most " + json(r.hi).dump() + got);
  }
  if (v != 0 && v < r.floor) throw Error(field + "at least " + json(r.floor).dump() + got);
}

// Ranges of the figures that are no term's parameter (the terms' own: terms.cpp).
constexpr double kNoLimit = std::numeric_limits<double>::infinity();
constexpr ParamRange kPeak{.hi = kNoLimit, .floor = 1e-12, .zero_ok = false, .fraction = false, .zero_means = ""};
constexpr ParamRange kClock{.hi = kNoLimit, .floor = 0, .zero_ok = true, .fraction = false, .zero_means = ""};
constexpr ParamRange kEfficiency{.hi = 1.5, .floor = 1e-6, .zero_ok = false, .fraction = true, .zero_means = ""};

// The figures of one kind of device that are no term's parameter.
constexpr const char* kGpuFigures[] = {"sm_count",           "l2_bytes",          "tensor_TFLOPs",
                                       "regs_per_sm",        "max_regs_per_thread", "smem_per_sm_bytes",
                                       "smem_per_block_bytes", "max_threads_per_sm", "threads_per_block",
                                       "elems_per_thread",   "graph_launch_us",   "min_occupancy_for_full_bw"};
constexpr const char* kCpuFigures[] = {"cores",        "caches",             "vector_regs",       "vector_lanes",
                                       "contraction_GFLOPs", "contraction_lanes",  "store_buffer_bytes", "transcendental_ns"};

// What a CPU device names a GPU figure it has in its own way.
std::string cpu_name_of(std::string_view gpu_field) {
  if (gpu_field == "sm_count") return " (a cpu device gives its cores as 'cores')";
  if (gpu_field == "max_regs_per_thread") return " (a cpu device gives 'vector_regs')";
  if (gpu_field == "elems_per_thread") return " (a cpu device gives 'vector_lanes')";
  if (gpu_field == "l2_bytes") return " (a cpu device's last level is the largest of its 'caches')";
  return "";
}

// Refuses the fields of the other kind of device: its own figures and the
// parameters of terms that do not price on this kind.
void refuse_other_kind(const json& j, bool gpu, const std::string& ctx) {
  auto refuse = [&](std::string_view key) {
    if (!j.contains(std::string(key))) return;
    std::string why = gpu ? "CPU devices" : "GPU devices";
    if (gpu && key == "transcendental_ns") why += " (GPU transcendentals are priced through e_cmp)";
    if (!gpu) why += cpu_name_of(key);
    throw Error(ctx + ": field '" + std::string(key) + "' is for " + why);
  };
  for (const char* key : gpu ? std::span<const char* const>(kCpuFigures) : std::span<const char* const>(kGpuFigures))
    refuse(key);
  for (const CostTerm& t : cost_terms())
    if (t.part == (gpu ? ParamPart::cpu : ParamPart::gpu)) refuse(t.parameter);
}

void parse_gpu(const json& j, GpuSpec& g, const std::string& ctx) {
  get_int(j, "sm_count", g.sm_count, true, ctx);
  get_number(j, "l2_bytes", g.l2_bytes, true, ctx);
  get_number(j, "tensor_TFLOPs", g.tensor_TFLOPs, true, ctx);
  get_int(j, "regs_per_sm", g.regs_per_sm, false, ctx);
  get_int(j, "max_regs_per_thread", g.max_regs_per_thread, false, ctx);
  get_number(j, "smem_per_sm_bytes", g.smem_per_sm_bytes, true, ctx);
  get_number(j, "smem_per_block_bytes", g.smem_per_block_bytes, true, ctx);
  get_int(j, "max_threads_per_sm", g.max_threads_per_sm, false, ctx);
  get_int(j, "threads_per_block", g.threads_per_block, false, ctx);
  get_int(j, "elems_per_thread", g.elems_per_thread, false, ctx);
  get_number(j, "graph_launch_us", g.graph_launch_us, false, ctx);
  get_number(j, "min_occupancy_for_full_bw", g.min_occupancy_for_full_bw, false, ctx);
  if (g.sm_count <= 0) throw Error(ctx + ": field 'sm_count' must be positive, got " + std::to_string(g.sm_count));
  for (auto [key, v] : {std::pair{"threads_per_block", g.threads_per_block}, {"elems_per_thread", g.elems_per_thread},
                        {"max_regs_per_thread", g.max_regs_per_thread}, {"regs_per_sm", g.regs_per_sm},
                        {"max_threads_per_sm", g.max_threads_per_sm}})
    if (v <= 0) throw Error(ctx + ": field '" + key + "' must be positive");
  for (auto [key, v] : {std::pair{"tensor_TFLOPs", g.tensor_TFLOPs}, {"l2_bytes", g.l2_bytes},
                        {"smem_per_sm_bytes", g.smem_per_sm_bytes}, {"smem_per_block_bytes", g.smem_per_block_bytes}})
    if (!(v >= 0)) throw Error(ctx + ": field '" + key + "' must be >= 0, got " + json(v).dump());
  check_range(g.graph_launch_us, "graph_launch_us", ParamRange{}, ctx);
  if (!(g.min_occupancy_for_full_bw >= 0 && g.min_occupancy_for_full_bw <= 1))
    throw Error(ctx + ": field 'min_occupancy_for_full_bw' must be in [0, 1], got " +
                json(g.min_occupancy_for_full_bw).dump());
  if (g.tensor_TFLOPs != 0 && g.tensor_TFLOPs < 1e-12)
    throw Error(ctx + ": field 'tensor_TFLOPs' must be at least " + json(1e-12).dump() + ", got " +
                json(g.tensor_TFLOPs).dump());
}

void parse_caches(const json& caches, CpuSpec& c, const std::string& ctx) {
  if (!caches.is_array()) throw Error(ctx + ": field 'caches' must be an array of {name, bytes, bw_GBps}");
  for (size_t i = 0; i < caches.size(); ++i) {
    const json& e = caches[i];
    const std::string cctx = ctx + ": caches[" + std::to_string(i) + "]";
    if (!e.is_object()) throw Error(cctx + " must be an object {name, bytes, bw_GBps}");
    CacheLevel lvl;
    get_string(e, "name", lvl.name, true, cctx);
    get_number(e, "bytes", lvl.bytes, true, cctx);
    get_number(e, "bw_GBps", lvl.bw_GBps, true, cctx);
    require_positive(lvl.bw_GBps, "bw_GBps", cctx);
    if (lvl.bytes < 0) throw Error(cctx + ": field 'bytes' must be >= 0 (0 = unbounded DRAM)");
    if (lvl.bw_GBps < 1e-6)
      throw Error(ctx + ": field 'caches[" + std::to_string(i) + "].bw_GBps' must be at least " + json(1e-6).dump() +
                  ", got " + json(lvl.bw_GBps).dump());
    c.caches.push_back(std::move(lvl));
  }
  if (c.caches.empty())
    throw Error(ctx + ": field 'caches' is empty (a cpu device lists at least one cache level or its DRAM entry)");
  // Ascending by capacity; a DRAM level (bytes = 0, unbounded) comes last.
  for (size_t i = 1; i < c.caches.size(); ++i) {
    const double prev = c.caches[i - 1].bytes, cur = c.caches[i].bytes;
    if (prev == 0 || (cur != 0 && cur < prev))
      throw Error(ctx + ": 'caches' must be in ascending size order (DRAM, bytes 0, last); entry " + std::to_string(i) +
                  " ('" + c.caches[i].name + "') is out of order");
  }
}

// contraction_GFLOPs: class name -> GFLOP/s, every class of
// costmodel/contraction.h (a partial table would price the others at 0).
void parse_contraction_table(const json& t, CpuSpec& c, const std::string& ctx) {
  if (!t.is_object())
    throw Error(ctx + ": field 'contraction_GFLOPs' must be an object mapping contraction class to GFLOP/s");
  for (const auto& [name, v] : t.items()) {
    const std::optional<ContractionClass> k = contraction_class_named(name);
    if (!k) throw Error(ctx + ": contraction_GFLOPs['" + name + "']: not a contraction class (costmodel/contraction.h)");
    if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1e9))
      throw Error(ctx + ": contraction_GFLOPs['" + name + "'] must be a number of GFLOP/s in (0, 1e9], got " + v.dump());
    c.contraction_GFLOPs[static_cast<int>(*k)] = v.get<double>();
  }
  for (ContractionClass k : contraction_classes())
    if (!(c.contraction_GFLOPs[static_cast<int>(k)] > 0))
      throw Error(ctx + ": contraction_GFLOPs lacks class '" + std::string(contraction_class_name(k)) +
                  "' (give every class or none)");
}

void parse_cpu(const json& j, CpuSpec& c, const std::string& ctx) {
  get_int(j, "cores", c.cores, true, ctx);
  auto caches = j.find("caches");
  if (caches == j.end()) throw Error(ctx + ": missing required field 'caches' (a cpu device lists its cache levels)");
  parse_caches(*caches, c, ctx);
  get_int(j, "vector_regs", c.vector_regs, false, ctx);
  get_int(j, "vector_lanes", c.vector_lanes, false, ctx);
  get_int(j, "contraction_lanes", c.contraction_lanes, false, ctx);
  if (c.contraction_lanes < 0 || c.contraction_lanes > 64)
    throw Error(ctx + ": field 'contraction_lanes' must be in [0, 64] (0: unknown), got " + std::to_string(c.contraction_lanes));
  get_number(j, "store_buffer_bytes", c.store_buffer_bytes, false, ctx);
  if (c.cores <= 0) throw Error(ctx + ": field 'cores' must be positive, got " + std::to_string(c.cores));
  for (auto [key, v] : {std::pair{"vector_regs", c.vector_regs}, {"vector_lanes", c.vector_lanes}})
    if (v <= 0) throw Error(ctx + ": field '" + key + "' must be positive");
  check_range(c.store_buffer_bytes, "store_buffer_bytes", ParamRange{}, ctx);
  if (auto it = j.find("contraction_GFLOPs"); it != j.end()) parse_contraction_table(*it, c, ctx);
  if (auto it = j.find("transcendental_ns"); it != j.end()) {
    if (!it->is_object()) throw Error(ctx + ": field 'transcendental_ns' must be an object mapping op name to ns per element");
    for (const auto& [op, v] : it->items()) {
      if (!costmodel_detail::is_transcendental(op))
        throw Error(ctx + ": transcendental_ns['" + op + "']: not a transcendental op (costmodel/flops.cpp lists them)");
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1e6))
        throw Error(ctx + ": transcendental_ns['" + op + "'] must be a number of ns in (0, 1e6], got " + v.dump());
      c.transcendental_ns[op] = v.get<double>();
    }
  }
}

DeviceSpec parse_device(const json& j, const std::string& ctx, const std::string& default_name) {
  if (!j.is_object()) throw Error(ctx + ": top level must be a JSON object, got " + std::string(j.type_name()));
  std::string kind;
  get_string(j, "kind", kind, true, ctx);
  if (kind != "gpu" && kind != "cpu") throw Error(ctx + ": field 'kind' must be \"gpu\" or \"cpu\", got \"" + kind + "\"");
  const bool gpu = kind == "gpu";
  DeviceSpec d = gpu ? make_gpu_device() : make_cpu_device();
  d.name = default_name;
  get_string(j, "name", d.name, false, ctx);
  get_string(j, "arch", d.arch, true, ctx);
  refuse_other_kind(j, gpu, ctx);
  get_number(j, "clock_GHz", d.clock_GHz, gpu, ctx);
  get_number(j, "fp32_TFLOPs", d.fp32_TFLOPs, true, ctx);
  get_number(j, "e_mem", d.e_mem, false, ctx);
  get_number(j, "overlap", d.overlap, false, ctx);
  if (gpu) parse_gpu(j, *d.gpu, ctx);
  else parse_cpu(j, *d.cpu, ctx);
  // The cost terms' parameters (absent and not required: 0, no such term).
  for (const CostTerm& t : cost_terms())
    if (double* p = t.field ? t.field(d) : nullptr) get_number(j, std::string(t.parameter), *p, t.required, ctx);

  if (auto it = j.find("calibrated"); it != j.end()) {
    if (!it->is_boolean()) throw Error(ctx + ": field 'calibrated' must be true or false");
    d.calibrated = it->get<bool>();
  }
  if (auto it = j.find("sources"); it != j.end()) {
    if (!it->is_object()) throw Error(ctx + ": field 'sources' must be an object mapping figure name to its source");
    for (auto s = it->begin(); s != it->end(); ++s) {
      if (!s.value().is_string()) throw Error(ctx + ": sources['" + s.key() + "'] must be a string");
      d.sources[s.key()] = s.value().get<std::string>();
    }
  }

  check_range(d.fp32_TFLOPs, "fp32_TFLOPs", kPeak, ctx);
  check_range(d.clock_GHz, "clock_GHz", kClock, ctx);
  check_range(d.e_mem, "e_mem", kEfficiency, ctx);
  if (!(d.overlap >= 0 && d.overlap <= 1))
    throw Error(ctx + ": field 'overlap' must be in [0, 1], got " + json(d.overlap).dump());
  for (const CostTerm& t : cost_terms())
    if (const double* p = t.field ? t.field(d) : nullptr) check_range(*p, t.parameter, t.range, ctx);
  return d;
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || s.find('\\') != std::string::npos ||
         (s.size() > 5 && s.ends_with(".json"));
}

}  // namespace

DeviceSpec make_gpu_device() {
  DeviceSpec d;
  d.gpu.emplace();
  return d;
}

DeviceSpec make_cpu_device() {
  DeviceSpec d;
  d.cpu.emplace();
  return d;
}

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
    if (name_or_path == "host" || name_or_path == "host-cpu")
      throw Error("device '" + name_or_path + "' is this machine as probed (probe/host_device.h, resolve_device); "
                  "the shipped figure is 'host-cpu-reference'");
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
  j["kind"] = std::string(d.kind());
  j["arch"] = d.arch;
  j["clock_GHz"] = d.clock_GHz;
  j["fp32_TFLOPs"] = d.fp32_TFLOPs;
  j["e_mem"] = d.e_mem;
  j["overlap"] = d.overlap;
  if (const GpuSpec* g = d.gpu ? &*d.gpu : nullptr) {
    j["sm_count"] = g->sm_count;
    j["l2_bytes"] = g->l2_bytes;
    j["tensor_TFLOPs"] = g->tensor_TFLOPs;
    j["regs_per_sm"] = g->regs_per_sm;
    j["max_regs_per_thread"] = g->max_regs_per_thread;
    j["smem_per_sm_bytes"] = g->smem_per_sm_bytes;
    j["smem_per_block_bytes"] = g->smem_per_block_bytes;
    j["max_threads_per_sm"] = g->max_threads_per_sm;
    j["threads_per_block"] = g->threads_per_block;
    j["elems_per_thread"] = g->elems_per_thread;
    j["graph_launch_us"] = g->graph_launch_us;
    j["min_occupancy_for_full_bw"] = g->min_occupancy_for_full_bw;
  }
  if (const CpuSpec* c = d.cpu ? &*d.cpu : nullptr) {
    j["cores"] = c->cores;
    ojson caches = ojson::array();
    for (const auto& l : c->caches) {
      ojson cj;
      cj["name"] = l.name;
      cj["bytes"] = l.bytes;
      cj["bw_GBps"] = l.bw_GBps;
      caches.push_back(std::move(cj));
    }
    j["caches"] = std::move(caches);
    j["vector_regs"] = c->vector_regs;
    j["vector_lanes"] = c->vector_lanes;
    if (c->has_contraction_table()) {
      ojson t = ojson::object();
      for (ContractionClass k : contraction_classes())
        t[std::string(contraction_class_name(k))] = c->contraction_GFLOPs[static_cast<int>(k)];
      j["contraction_GFLOPs"] = std::move(t);
    }
    if (c->contraction_lanes > 0) j["contraction_lanes"] = c->contraction_lanes;
    j["store_buffer_bytes"] = c->store_buffer_bytes;
    if (!c->transcendental_ns.empty()) {
      ojson t = ojson::object();
      for (const auto& [op, ns] : c->transcendental_ns) t[op] = ns;
      j["transcendental_ns"] = std::move(t);
    }
  }
  // The cost terms' parameters, in the table's order.
  for (const CostTerm& t : cost_terms())
    if (const double* p = t.field ? t.field(const_cast<DeviceSpec&>(d)) : nullptr) j[std::string(t.parameter)] = *p;
  j["calibrated"] = d.calibrated;
  ojson src = ojson::object();
  for (const auto& [k, v] : d.sources) src[k] = v;
  j["sources"] = std::move(src);
  return j.dump(2) + "\n";
}

}  // namespace fuseplan
