#include "profiling/measurement.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "costmodel/cost_detail.h"
#include "support/files.h"
#include "support/input_file.h"

namespace fuseplan {

namespace {
using ojson = nlohmann::ordered_json;

std::string group_text(const Graph& g, const Group& grp) {
  std::string s;
  for (NodeId n : grp.nodes) s += g.node(n).name + ",";
  s += "|";
  for (NodeId n : grp.materialised) s += g.node(n).name + ",";
  return s;
}

// The value of present field `key` as a T; the wrong type is an error naming it.
template <class T> T as(const nlohmann::json& v, const char* key, const std::string& ctx) {
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(ctx + ": field '" + key + "' has the wrong type (" + v.dump() + ")");
  }
}
template <class T> T get(const nlohmann::json& j, const char* key, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(ctx + ": missing field '" + key + "'");
  return as<T>(*it, key, ctx);
}
// An optional field: absent or null gives `dflt`; present with the wrong type
// is an error naming it (a record edited by hand or by another tool).
template <class T> T get_or(const nlohmann::json& j, const char* key, T dflt, const std::string& ctx) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? dflt : as<T>(*it, key, ctx);
}

// An integer from lo to hi (a float, string or out-of-range value is refused
// instead of being truncated or wrapped).
int64_t integer_in(const nlohmann::json& v, const std::string& ctx, const std::string& key, int64_t lo, int64_t hi) {
  bool ok = v.is_number_integer();
  int64_t x = 0;
  if (ok && v.is_number_unsigned()) {
    ok = v.get<uint64_t>() <= static_cast<uint64_t>(hi);
    if (ok) x = static_cast<int64_t>(v.get<uint64_t>());
  } else if (ok) {
    x = v.get<int64_t>();
  }
  if (!ok || x < lo || x > hi)
    throw Error(ctx + ": field '" + key + "' must be an integer from " + std::to_string(lo) + " to " +
                std::to_string(hi) + ", got " + v.dump());
  return x;
}

int64_t int_field(const nlohmann::json& j, const char* key, const std::string& ctx, int64_t lo, int64_t hi,
                  std::optional<int64_t> dflt) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (dflt) return *dflt;
    throw Error(ctx + ": missing field '" + key + "'");
  }
  return integer_in(*it, ctx, key, lo, hi);
}
}  // namespace

std::string plan_id(const Graph& g, const Plan& plan) {
  std::string s;
  for (const Group& grp : plan.groups) s += group_text(g, grp) + "\n";
  return sha256_hex(s).substr(0, 16);
}

std::string group_key(const Graph& g, const Group& grp) { return sha256_hex(group_text(g, grp)).substr(0, 16); }

std::vector<MeasurementRecord> make_records(const Graph& g, const Plan& plan, const DeviceSpec& d,
                                            const ProfileResult& m, const std::string& model_file, int threads) {
  std::vector<MeasurementRecord> out;
  const std::string pid = plan_id(g, plan);
  for (std::size_t i = 0; i < plan.groups.size() && i < m.groups.size(); ++i) {
    const Group& grp = plan.groups[i];
    const GroupCost c = i < plan.costs.size() ? plan.costs[i] : cost(g, grp, d);
    const GroupMeasurement& gm = m.groups[i];
    MeasurementRecord r;
    r.model = model_file;
    r.model_sha256 = plan.model_sha256;
    r.plan_id = pid;
    r.strategy = plan.strategy;
    r.group = static_cast<int>(i);
    r.group_key = group_key(g, grp);
    r.kind = std::string(to_string(grp.kind));
    r.label = g.node(grp.nodes.front()).name + (grp.nodes.size() > 1 ? " .. " + g.node(grp.nodes.back()).name : "");
    std::set<std::string> classes;
    for (NodeId n : grp.nodes) classes.insert(std::string(to_string(g.node(n).op_class)));
    r.op_classes.assign(classes.begin(), classes.end());
    r.device = d.name;
    r.dims = plan.dims;
    r.threads = threads;
    r.features = cost_features(g, grp, d);
    r.t_mem_us = c.t_mem_us;
    r.t_compute_us = c.t_compute_us;
    r.launch_us = c.launch_us;
    r.predicted_us = c.predicted_us;
    r.bound = c.bound;
    r.level = memory_level(r.features.bytes_read + r.features.bytes_written, d);
    r.median_us = gm.median_us;
    r.min_us = gm.min_us;
    r.max_us = gm.max_us;
    r.repetitions = gm.repetitions;
    r.flushed = gm.flushed;
    r.cycles = gm.cycles;
    r.instructions = gm.instructions;
    r.llc_misses = gm.llc_misses;
    r.measured_bytes_read = gm.measured_bytes_read;
    r.measured_bytes_written = gm.measured_bytes_written;
    out.push_back(std::move(r));
  }
  return out;
}

std::string record_to_json(const MeasurementRecord& r) {
  ojson j;
  j["schema"] = kMeasurementSchema;
  j["model"] = r.model;
  j["model_sha256"] = r.model_sha256;
  j["plan_id"] = r.plan_id;
  j["strategy"] = r.strategy;
  j["group"] = r.group;
  j["group_key"] = r.group_key;
  j["kind"] = r.kind;
  j["label"] = r.label;
  j["op_classes"] = r.op_classes;
  j["device"] = r.device;
  j["dims"] = r.dims;
  j["threads"] = r.threads;
  const CostFeatures& f = r.features;
  ojson p = ojson::object();
  for (const FeatureField& ff : recorded_features()) p[std::string(ff.name)] = f.*ff.member;
  p["graph_bytes"] = f.graph_bytes >= 0 ? ojson(f.graph_bytes) : ojson(nullptr);
  ojson classes = ojson::object();
  for (ContractionClass k : contraction_classes())
    if (const double v = f.contraction_class_flops[static_cast<int>(k)]; v > 0)
      classes[std::string(contraction_class_name(k))] = v;
  p["contraction_class_flops"] = std::move(classes);
  ojson t = ojson::object();
  for (const auto& [op, n] : f.transcendental_elems) t[op] = n;
  p["transcendental_elems"] = std::move(t);
  p["level"] = r.level;
  p["t_mem_us"] = r.t_mem_us;
  p["t_compute_us"] = r.t_compute_us;
  p["launch_us"] = r.launch_us;
  p["predicted_us"] = r.predicted_us;
  p["bound"] = r.bound;
  j["predicted"] = std::move(p);
  ojson m = {{"median_us", r.median_us}, {"min_us", r.min_us},           {"max_us", r.max_us},
             {"repetitions", r.repetitions}, {"flushed", r.flushed}};
  auto opt = [&](const char* k, double v) {
    if (v >= 0) m[k] = v;
  };
  opt("cycles", r.cycles);
  opt("instructions", r.instructions);
  opt("llc_misses", r.llc_misses);
  opt("bytes_read", r.measured_bytes_read);
  opt("bytes_written", r.measured_bytes_written);
  j["measured"] = std::move(m);
  return j.dump();
}

namespace {

nlohmann::json parse_line(const std::string& line) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number beyond double
    throw Error(std::string("malformed JSON") + (e.id == 406 ? " (a number too large for a double)" : ""));
  }
  if (!j.is_object()) throw Error("a measurement record must be a JSON object");
  return j;
}

// Fills, in a /1 record, what a /1 writer could leave out (measurement.h
// upgrade_measurement_v1 lists it), and names it /2.
void fill_v1(nlohmann::json& j) {
  using json = nlohmann::json;
  auto fill = [](json& o, const char* key, json v) {
    if (!o.contains(key) || o[key].is_null()) o[key] = std::move(v);
  };
  for (const char* key : {"model_sha256", "plan_id", "strategy", "group_key", "kind", "label"}) fill(j, key, "");
  fill(j, "op_classes", json::array());
  fill(j, "dims", json::object());
  fill(j, "threads", 0);
  if (auto p = j.find("predicted"); p != j.end() && p->is_object()) {
    for (const char* key : {"bytes_read_sources", "spill_bytes_raw", "contraction_calls", "prologue_passes",
                            "flops_transcendental", "flops_scalar",
                            "reduction_steps", "select_steps", "pool_steps", "sources_read", "t_mem_us",
                            "t_compute_us", "launch_us"})
      fill(*p, key, 0.0);
    fill(*p, "occupancy", 1.0);
    if (!p->contains("graph_bytes")) (*p)["graph_bytes"] = nullptr;  // unknown: beyond the LLC
    fill(*p, "transcendental_elems", json::object());
    fill(*p, "level", "");
    fill(*p, "bound", "");
  }
  if (auto m = j.find("measured"); m != j.end() && m->is_object()) {
    if (auto med = m->find("median_us"); med != m->end()) {
      fill(*m, "min_us", *med);
      fill(*m, "max_us", *med);
    }
    fill(*m, "repetitions", 1);
    fill(*m, "flushed", false);
  }
  j["schema"] = kMeasurementSchema;
}

// The schema of a record: /2 as it is, /1 filled by fill_v1, else an error.
void to_current_schema(nlohmann::json& j) {
  const std::string s = get<std::string>(j, "schema", "measurement");
  if (s == kMeasurementSchemaV1) fill_v1(j);
  else if (s != kMeasurementSchema)
    throw Error("unknown measurement schema '" + s + "' (expected " + kMeasurementSchema + ", or " +
                kMeasurementSchemaV1 + ", which is converted on reading)");
}

// predicted: the features, then the prediction on the measuring device.
void read_predicted(const nlohmann::json& p, MeasurementRecord& r) {
  const std::string pc = "measurement.predicted";
  CostFeatures& f = r.features;
  for (const FeatureField& ff : recorded_features()) {
    const std::string key(ff.name);
    // Written since the contraction classes: absent in older records (0 and
    // no classes: their contractions price at the peak; `fuseplan
    // refeature` re-derives them).
    // prologue_passes likewise since the pooling prologue's pass (0: none).
    f.*ff.member = ff.member == &CostFeatures::contraction_calls || ff.member == &CostFeatures::prologue_passes
                       ? get_or<double>(p, key.c_str(), 0.0, pc)
                       : get<double>(p, key.c_str(), pc);
  }
  if (auto cf = p.find("contraction_class_flops"); cf != p.end()) {
    if (!cf->is_object())
      throw Error(pc + ": field 'contraction_class_flops' must be an object mapping contraction class to FLOPs, got " +
                  cf->dump());
    for (const auto& [name, v] : cf->items()) {
      const std::optional<ContractionClass> k = contraction_class_named(name);
      if (!k) throw Error(pc + ": contraction_class_flops['" + name + "']: not a contraction class");
      if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>()))
        throw Error(pc + ": contraction_class_flops['" + name + "'] must be a number >= 0, got " + v.dump());
      f.contraction_class_flops[static_cast<int>(*k)] = v.get<double>();
    }
  }
  const nlohmann::json& gb = get<nlohmann::json>(p, "graph_bytes", pc);
  f.graph_bytes = gb.is_null() ? -1 : as<double>(gb, "graph_bytes", pc);
  if (!gb.is_null() && !(f.graph_bytes >= 0 && std::isfinite(f.graph_bytes)))
    throw Error(pc + ": field 'graph_bytes' must be a number >= 0, got " + nlohmann::json(f.graph_bytes).dump());
  const nlohmann::json& te = get<nlohmann::json>(p, "transcendental_elems", pc);
  if (!te.is_object())
    throw Error(pc + ": field 'transcendental_elems' must be an object mapping op name to elements, got " + te.dump());
  for (const auto& [op, v] : te.items()) {
    if (!costmodel_detail::is_transcendental(op)) throw Error(pc + ": transcendental_elems['" + op + "']: not a transcendental op");
    if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>()))
      throw Error(pc + ": transcendental_elems['" + op + "'] must be a number >= 0, got " + v.dump());
    f.transcendental_elems[op] = v.get<double>();
  }
  f.libm_routines = costmodel_detail::libm_routines(f.transcendental_elems);
  r.level = get<std::string>(p, "level", pc);
  r.t_mem_us = get<double>(p, "t_mem_us", pc);
  r.t_compute_us = get<double>(p, "t_compute_us", pc);
  r.launch_us = get<double>(p, "launch_us", pc);
  r.predicted_us = get<double>(p, "predicted_us", pc);
  r.bound = get<std::string>(p, "bound", pc);
  // The features are counts and sizes: a negative or non-finite one (an
  // edited record) would be fitted as if it were measured.
  if (f.bytes_read_sources > f.bytes_read)
    throw Error(pc + ": field 'bytes_read_sources' (" + nlohmann::json(f.bytes_read_sources).dump() +
                ") exceeds bytes_read (" + nlohmann::json(f.bytes_read).dump() + ")");
  for (const FeatureField& ff : recorded_features()) {
    const double v = f.*ff.member;
    if (ff.member == &CostFeatures::occupancy) {
      if (!(v > 0 && v <= 1))
        throw Error(pc + ": field 'occupancy' must be in (0, 1], got " + nlohmann::json(v).dump());
    } else if (!(v >= 0) || !std::isfinite(v)) {
      throw Error(pc + ": field '" + std::string(ff.name) + "' must be a number >= 0, got " + nlohmann::json(v).dump());
    }
  }
}

void read_measured(const nlohmann::json& m, MeasurementRecord& r) {
  const std::string mc = "measurement.measured";
  r.median_us = get<double>(m, "median_us", mc);
  r.min_us = get<double>(m, "min_us", mc);
  r.max_us = get<double>(m, "max_us", mc);
  // Checked per record, where it is read: merging runs takes medians over
  // files, which would hide a negative time among positive ones.
  if (!(r.median_us > 0) || !std::isfinite(r.median_us))
    throw Error(mc + ": field 'median_us' must be a time > 0, got " + nlohmann::json(r.median_us).dump());
  for (const auto& [key, v] : {std::pair{"min_us", r.min_us}, std::pair{"max_us", r.max_us}})
    if (!(v >= 0) || !std::isfinite(v))
      throw Error(mc + ": field '" + key + "' must be a time >= 0, got " + nlohmann::json(v).dump());
  r.repetitions = static_cast<int>(int_field(m, "repetitions", mc, 0, std::numeric_limits<int>::max(), std::nullopt));
  r.flushed = get<bool>(m, "flushed", mc);
  r.cycles = get_or<double>(m, "cycles", -1, mc);  // the counters: absent when not measured
  r.instructions = get_or<double>(m, "instructions", -1, mc);
  r.llc_misses = get_or<double>(m, "llc_misses", -1, mc);
  r.measured_bytes_read = get_or<double>(m, "bytes_read", -1, mc);
  r.measured_bytes_written = get_or<double>(m, "bytes_written", -1, mc);
}

}  // namespace

std::string upgrade_measurement_v1(const std::string& line) {
  nlohmann::json j = parse_line(line);
  if (get<std::string>(j, "schema", "measurement") != kMeasurementSchemaV1)
    throw Error(std::string("not a ") + kMeasurementSchemaV1 + " record");
  fill_v1(j);
  return j.dump();
}

MeasurementRecord record_from_json(const std::string& line) {
  nlohmann::json j = parse_line(line);
  to_current_schema(j);
  const std::string ctx = "measurement";
  MeasurementRecord r;
  r.model = get<std::string>(j, "model", ctx);
  r.model_sha256 = get<std::string>(j, "model_sha256", ctx);
  r.plan_id = get<std::string>(j, "plan_id", ctx);
  r.strategy = get<std::string>(j, "strategy", ctx);
  r.group = static_cast<int>(int_field(j, "group", ctx, 0, std::numeric_limits<int>::max(), std::nullopt));
  r.group_key = get<std::string>(j, "group_key", ctx);
  r.kind = get<std::string>(j, "kind", ctx);
  r.label = get<std::string>(j, "label", ctx);
  r.op_classes = get<std::vector<std::string>>(j, "op_classes", ctx);
  r.device = get<std::string>(j, "device", ctx);
  const nlohmann::json& dims = get<nlohmann::json>(j, "dims", ctx);
  if (!dims.is_object()) throw Error(ctx + ": field 'dims' must be an object of NAME: value, got " + dims.dump());
  for (auto& [k, v] : dims.items()) r.dims[k] = integer_in(v, ctx + ".dims", k, 1, std::numeric_limits<int64_t>::max());
  r.threads = static_cast<int>(int_field(j, "threads", ctx, 0, std::numeric_limits<int>::max(), std::nullopt));
  read_predicted(get<nlohmann::json>(j, "predicted", ctx), r);
  read_measured(get<nlohmann::json>(j, "measured", ctx), r);
  return r;
}

bool is_measured_on(const std::string& record_device, const std::string& device_name) {
  // A reference device (configs/devices/host-cpu-reference.json) stands in
  // for the device it is named after: its records are that device's.
  auto family = [](const std::string& name) {
    std::string n = uncalibrated_name(name);
    constexpr std::string_view kReference = "-reference";
    return n.ends_with(kReference) ? n.substr(0, n.size() - kReference.size()) : n;
  };
  const std::string measured = family(record_device), device = family(device_name);
  return device == measured || device.starts_with(measured + "-");
}

std::vector<MeasurementRecord> read_records(const std::string& path, const std::string& device_name) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))  // it opens, and reads as no records
    throw Error("cannot read measurements '" + path + "': it is a directory, not a JSON-lines file");
  check_input_file(path, "measurements", kMaxDataFileBytes);
  std::ifstream in(path);
  if (!in) throw Error("cannot read measurements '" + path + "'");
  std::vector<MeasurementRecord> out;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(record_from_json(line));
      if (!device_name.empty() && !is_measured_on(out.back().device, device_name))
        throw Error("measured on device '" + out.back().device + "', not on --device '" + device_name +
                    "'; calibrate and score a device only with its own measurements");
    } catch (const Error& e) {
      throw Error(path + ":" + std::to_string(no) + ": " + e.what());
    }
  }
  return out;
}

TimeStatistic time_statistic_from_string(const std::string& s) {
  if (s == "median") return TimeStatistic::median;
  if (s == "min") return TimeStatistic::min;
  throw Error("--statistic must be median or min, got '" + s + "'");
}

const char* to_string(TimeStatistic s) { return s == TimeStatistic::min ? "min" : "median"; }

double measured_us(const MeasurementRecord& r, TimeStatistic s) {
  return s == TimeStatistic::min && r.min_us > 0 ? r.min_us : r.median_us;
}

CalibrationSample to_sample(const MeasurementRecord& r, TimeStatistic s) {
  return {r.features, measured_us(r, s), r.model + "#" + r.strategy + "#" + std::to_string(r.group)};
}

}  // namespace fuseplan
