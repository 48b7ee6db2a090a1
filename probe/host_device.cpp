// The probed host device and its per-machine cache (see host_device.h).
#include "probe/host_device.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/files.h"
#include "support/input_file.h"

#ifndef FUSEPLAN_VERSION
#error "FUSEPLAN_VERSION is set by probe/CMakeLists.txt"
#endif

namespace fuseplan {

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

constexpr const char* kSchema = "fuseplan.host-probe/1";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The value of the first /proc/cpuinfo line whose label is `label`.
std::string cpuinfo_field(const std::string& label) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(line.substr(0, colon)) == label) return trim(line.substr(colon + 1));
  }
  return "";
}

std::string cpu_model() {
  for (const char* label : {"model name", "Hardware", "Processor"})
    if (std::string v = cpuinfo_field(label); !v.empty()) return v;
  const std::string impl = cpuinfo_field("CPU implementer"), part = cpuinfo_field("CPU part");
  if (!impl.empty() || !part.empty()) return "implementer " + impl + " part " + part;
  return "unknown";
}

std::string isa_list() {
  std::string s;
  auto add = [&](const char* name, bool present) {
    if (present) s += (s.empty() ? "" : ",") + std::string(name);
  };
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  add("sse4.2", __builtin_cpu_supports("sse4.2"));
  add("avx", __builtin_cpu_supports("avx"));
  add("avx2", __builtin_cpu_supports("avx2"));
  add("fma", __builtin_cpu_supports("fma"));
  add("avx512f", __builtin_cpu_supports("avx512f"));
  add("avx512bw", __builtin_cpu_supports("avx512bw"));
  add("avx512vl", __builtin_cpu_supports("avx512vl"));
  add("avx512vnni", __builtin_cpu_supports("avx512vnni"));
#else
  // Elsewhere the kernel's feature list, as it reports it.
  std::istringstream features(cpuinfo_field("Features"));
  for (std::string f; features >> f;) add(f.c_str(), true);
#endif
  return s;
}

std::uint64_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream ss(line.substr(9));
    std::uint64_t kb = 0;
    ss >> kb;
    return kb * 1024;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

std::string fmt(double v, int prec = 3) {
  std::ostringstream o;
  o << std::setprecision(prec) << v;
  return o.str();
}

ojson key_json(const HostKey& k) {
  ojson j;
  j["cpu_model"] = k.cpu_model;
  j["cores"] = k.cores;
  j["isa"] = k.isa;
  j["mem_bytes"] = k.mem_bytes;
  j["version"] = k.version;
  return j;
}

// The key a cache file records; throws json::exception when a field is missing or mistyped.
HostKey key_from_json(const json& j) {
  HostKey k;
  k.cpu_model = j.at("cpu_model").get<std::string>();
  k.cores = j.at("cores").get<int>();
  k.isa = j.at("isa").get<std::string>();
  k.mem_bytes = j.at("mem_bytes").get<std::uint64_t>();
  k.version = j.at("version").get<std::string>();
  return k;
}

bool env_flag(const char* name) {
  const std::string v = env(name);
  return !v.empty() && v != "0";
}

}  // namespace

bool is_host_device_name(std::string_view name) { return name == "host" || name == kHostDeviceName; }

const char* fuseplan_version() { return FUSEPLAN_VERSION; }

std::string HostKey::text() const {
  return "cpu=" + cpu_model + ";cores=" + std::to_string(cores) + ";isa=" + isa + ";mem=" + std::to_string(mem_bytes) +
         ";version=" + version;
}

std::string HostKey::hash() const {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : text()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  std::ostringstream o;
  o << std::hex << std::setw(16) << std::setfill('0') << h;
  return o.str();
}

HostKey this_host_key() {
  HostKey k;
  k.cpu_model = cpu_model();
  k.cores = host_info().cores;
  k.isa = isa_list();
  k.mem_bytes = mem_total_bytes();
  k.version = fuseplan_version();
  return k;
}

std::string host_cache_dir() {
  if (std::string d = env("FUSEPLAN_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return (fs::path(d) / "fuseplan").string();
  if (std::string d = env("HOME"); !d.empty()) return (fs::path(d) / ".cache" / "fuseplan").string();
  return (fs::temp_directory_path() / "fuseplan-cache").string();  // as the kernel cache (emit/cpu/compiler.h)
}

std::string host_cache_path(const HostKey& key, const std::string& dir) {
  return (fs::path(dir) / ("host-cpu-" + key.hash() + ".json")).string();
}

ProbeVerdict judge_probe(const ProbeResult& r, int cores) {
  ProbeVerdict v;
  const double limit = kMaxBusyPerCore * std::max(cores, 1);
  auto add = [&](const std::string& why) {
    v.loaded = true;
    v.reason += (v.reason.empty() ? "" : "; ") + why;
  };
  if (r.others_busy_before > limit)
    add("other processes kept " + fmt(r.others_busy_before, 3) + " of " + std::to_string(cores) +
        " cores busy before it (limit " + fmt(limit, 3) + ")");
  if (r.others_busy_during > limit)
    add("other processes kept " + fmt(r.others_busy_during, 3) + " of " + std::to_string(cores) +
        " cores busy while it ran (limit " + fmt(limit, 3) + ")");
  // Without /proc/stat, the kernel's 1-minute load average before the probe stands in.
  if (r.others_busy_before < 0 && r.others_busy_during < 0 && r.load_average_before > limit)
    add("1-minute load average " + fmt(r.load_average_before, 3) + " on " + std::to_string(cores) + " cores (limit " +
        fmt(limit, 3) + ")");
  if (r.spread > kMaxSpreadPct)
    add("repeated " + (r.spread_of.empty() ? std::string("measurements") : r.spread_of + " measurements") +
        " spread " + fmt(r.spread, 3) + "% (limit " + fmt(kMaxSpreadPct, 3) + "%)");
  return v;
}

std::string host_cache_json(const ProbeResult& r, const HostKey& key) {
  ojson j = ojson::parse(device_to_json(r.device));
  ojson c;
  c["load_average_before"] = r.load_average_before;
  c["load_average_after"] = r.load_average_after;
  c["others_busy_before"] = r.others_busy_before;
  c["others_busy_during"] = r.others_busy_during;
  c["spread_pct"] = r.spread;
  c["spread_of"] = r.spread_of;
  c["seconds"] = r.seconds;
  c["quick"] = r.quick;
  ojson hp;
  hp["schema"] = kSchema;
  hp["key"] = key_json(key);
  hp["conditions"] = c;
  j["host_probe"] = hp;
  return j.dump(2) + "\n";
}

CachedHost read_host_cache(const std::string& path, const HostKey& key) {
  CachedHost c;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return c;
  c.present = true;
  try {
    const std::string text = read_input_file(path, "host probe cache", kMaxDataFileBytes);
    json j;
    try {
      j = json::parse(text);
    } catch (const json::exception&) {
      c.problem = "not valid JSON";
      return c;
    }
    const auto hp = j.is_object() ? j.find("host_probe") : j.end();
    if (!j.is_object() || hp == j.end() || !hp->is_object() || hp->value("schema", json()) != kSchema) {
      c.problem = std::string("no \"host_probe\" object of schema ") + kSchema;
      return c;
    }
    HostKey recorded;
    try {
      recorded = key_from_json(hp->at("key"));
    } catch (const json::exception&) {
      c.problem = "its host_probe key is incomplete";
      return c;
    }
    if (!(recorded == key)) {
      c.problem = "it was probed on another machine or fuseplan version (" + recorded.text() + ")";
      return c;
    }
    DeviceSpec d = load_device(path);  // every figure checked as any device file's
    if (!d.cpu) {
      c.problem = "it is not a cpu device";
      return c;
    }
    c.device = std::move(d);
  } catch (const Error& e) {
    c.problem = e.what();
  }
  return c;
}

HostDevice host_device(const HostDeviceOptions& o) {
  HostDevice out;
  const HostKey key = o.key.cpu_model.empty() ? this_host_key() : o.key;
  const std::string dir = o.cache_dir.empty() ? host_cache_dir() : o.cache_dir;
  out.cache_path = host_cache_path(key, dir);
  auto line = [&](const std::string& s) {
    if (o.log) *o.log << s << "\n" << std::flush;
  };
  if (!o.refresh) {
    CachedHost c = read_host_cache(out.cache_path, key);
    if (c.device) {
      out.device = std::move(*c.device);
      out.device.name = kHostDeviceName;
      out.from_cache = true;
      return out;
    }
    if (c.present) line("fuseplan: warning: ignoring the cached host probe '" + out.cache_path + "': " + c.problem +
                        "; probing again");
  }
  // The cache must take the result before the machine is measured for it.
  try {
    create_output_dirs(dir);
    check_writable(out.cache_path);
  } catch (const Error& e) {
    throw EnvironmentError("cannot cache the host probe in '" + dir + "': " + e.what() +
                           " (set FUSEPLAN_CACHE_DIR to a writable directory, or name a device: --device "
                           "host-cpu-reference or a device JSON)");
  }
  const bool progress = o.log && o.progress_line;
  if (progress)
    *o.log << "fuseplan: probing this machine for --device " << kHostDeviceName
           << " (once per machine, under a minute) ..." << std::flush;
  ProbeResult r = o.prober ? o.prober() : run_probe(nullptr, ProbeOptions{.threads = 0, .quick = true});
  r.device.name = kHostDeviceName;
  out.verdict = judge_probe(r, key.cores);
  if (!out.verdict.loaded) {
    try {
      write_file_atomic(out.cache_path, host_cache_json(r, key));
      out.cached = true;
      if (progress) *o.log << " " << fmt(r.seconds, 3) << " s, cached in " << out.cache_path << "\n" << std::flush;
    } catch (const Error& e) {  // checked writable above: a full disk, a race; the figures still serve this run
      if (progress) *o.log << " " << fmt(r.seconds, 3) << " s\n" << std::flush;
      line(std::string("fuseplan: warning: the host probe is used for this run only: ") + e.what());
    }
  } else {
    if (progress) *o.log << " " << fmt(r.seconds, 3) << " s\n" << std::flush;
    line("fuseplan: warning: the machine was busy while probing (" + out.verdict.reason +
         "): not cached, its figures serve this run only; run `fuseplan probe` again when the machine is quiet");
  }
  out.device = r.device;
  out.probe = std::move(r);
  return out;
}

DeviceSpec resolve_device(const std::string& name_or_path, std::ostream* log) {
  if (!is_host_device_name(name_or_path)) return load_device(name_or_path);
  if (env_flag("FUSEPLAN_NO_HOST_PROBE"))
    throw Error("device '" + name_or_path + "' is this machine, probed, and FUSEPLAN_NO_HOST_PROBE is set (the tests "
                "set it): name a reference device such as host-cpu-reference, or unset it");
  HostDeviceOptions o;
  o.log = log;
  return host_device(o).device;
}

}  // namespace fuseplan
