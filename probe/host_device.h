// The probed host device. `--device host` (and `host-cpu`) is this machine
// as a quick probe (probe.h) measures it on first use, cached per machine in
// the user's cache directory; `fuseplan probe` refreshes the cache. A probe
// taken while other work kept the cores busy, or whose repeated
// measurements spread too far apart, is used for the run that took it and
// never cached. The shipped figure a test needs stays a named device,
// configs/devices/host-cpu-reference.json (docs/devices.md).
//
// Resolution of a --device argument (resolve_device):
//   1. "host" or "host-cpu": the cached probe of this machine (key: CPU model,
//      cores, ISA, memory size, fuseplan version), else a quick probe now;
//   2. a path to a JSON file, or any other name: load_device (configs/devices).
// Nothing here prints to stdout: the progress line and warnings go to the
// log stream the caller passes (stderr in the CLI).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "costmodel/device.h"
#include "probe/probe.h"

namespace fuseplan {

/// The name the probed host carries in plans and measurement records.
inline constexpr const char* kHostDeviceName = "host-cpu";
/// Whether `name` means the probed host: "host" or "host-cpu".
bool is_host_device_name(std::string_view name);

/// fuseplan's version (the CMake project version, raised when the probe
/// measures more: 0.2.0 added the reduction chains), part of the key.
const char* fuseplan_version();

/// What makes two machines' probes interchangeable: a probe is reused only on
/// a machine with the same key.
struct HostKey {
  std::string cpu_model;      // /proc/cpuinfo "model name" (else "Hardware", "CPU part"; "unknown")
  int cores = 0;              // online logical CPUs (sysconf), the threads the backend runs on
  std::string isa;            // the vector extensions present, comma separated ("sse4.2,avx,avx2,fma,avx512f,...";
                              // "" when none is known)
  std::uint64_t mem_bytes = 0;  // total memory (/proc/meminfo MemTotal), bytes
  std::string version;        // fuseplan_version()

  /// One line: "cpu=<model>;cores=<n>;isa=<list>;mem=<bytes>;version=<v>".
  std::string text() const;
  /// 16 lower-case hex digits: 64-bit FNV-1a of text().
  std::string hash() const;
  bool operator==(const HostKey&) const = default;
};
/// This machine's key.
HostKey this_host_key();

/// The probe cache's directory, the compiled kernels' too
/// (emit/cpu/compiler.h): $FUSEPLAN_CACHE_DIR, else $XDG_CACHE_HOME/fuseplan,
/// else $HOME/.cache/fuseplan, else <temp>/fuseplan-cache (an empty variable
/// counts as unset). Creates nothing.
std::string host_cache_dir();
/// `dir`/host-cpu-<key.hash()>.json.
std::string host_cache_path(const HostKey& key, const std::string& dir);

/// A probe is loaded, and not cached, when other processes kept more than
/// kMaxBusyPerCore of each core busy before or during it, or when the
/// spread of its repeated measurements (ProbeResult::spread) exceeds
/// kMaxSpreadPct.
inline constexpr double kMaxBusyPerCore = 0.5;
inline constexpr double kMaxSpreadPct = 15.0;
struct ProbeVerdict {
  bool loaded = false;
  std::string reason;  // "" when quiet; else what was too high, with its value and limit
};
ProbeVerdict judge_probe(const ProbeResult& r, int cores);

/// The cache file's text: the device JSON (device_to_json, so the file also
/// loads as --device FILE) with one more top-level object, "host_probe":
/// {"schema": "fuseplan.host-probe/1", "key": {cpu_model, cores, isa,
/// mem_bytes, version}, "conditions": {load_average_before,
/// load_average_after, others_busy_before, others_busy_during, spread_pct,
/// spread_of, seconds, quick}}.
std::string host_cache_json(const ProbeResult& r, const HostKey& key);

/// What a cache file holds for `key`. Never throws for a bad file: `problem`
/// says what is wrong with it (malformed JSON, no or another host_probe key,
/// a device field out of range).
struct CachedHost {
  bool present = false;               // the file exists
  std::optional<DeviceSpec> device;   // set when the file is a valid probe of `key`
  std::string problem;                // why a present file cannot be used ("" otherwise)
};
CachedHost read_host_cache(const std::string& path, const HostKey& key);

/// Measures this machine; the default is run_probe(nullptr, {.quick = true}).
using HostProber = std::function<ProbeResult()>;

struct HostDeviceOptions {
  bool refresh = false;   // probe even when the cache holds this machine (fuseplan probe)
  HostProber prober;      // empty: the quick probe
  std::ostream* log = nullptr;  // the progress line and warnings, one line each ("fuseplan: ...")
  bool progress_line = true;    // write "fuseplan: probing this machine ..." (off when the prober logs its own)
  std::string cache_dir;        // "": host_cache_dir()
  /// The key to cache under; empty cpu_model: this_host_key().
  HostKey key;
};

struct HostDevice {
  DeviceSpec device;       // named "host-cpu"
  std::string cache_path;  // where this machine's probe is (or would be) cached
  bool from_cache = false; // read from cache_path, nothing measured
  bool cached = false;     // measured now and written to cache_path
  ProbeVerdict verdict;    // of the probe taken now (loaded: used for this run only, not cached)
  std::optional<ProbeResult> probe;  // the probe taken now, if any
};

/// This machine as a device: the cached probe when the cache holds a valid
/// one for this key (and !refresh), else a probe now, written to the cache
/// unless judge_probe finds it loaded. A corrupt or foreign cache file is
/// probed over, with one warning line naming it. Before probing, the cache
/// directory is created and checked: when it cannot be written, throws
/// EnvironmentError ("cannot cache the host probe in '<dir>': <reason>") and
/// measures nothing.
HostDevice host_device(const HostDeviceOptions& options);

/// A --device argument: "host"/"host-cpu" the probed host (host_device with
/// the quick probe, `log` for its lines), anything else
/// load_device(name_or_path). Throws as those do, and Error for the probed
/// host when FUSEPLAN_NO_HOST_PROBE is set to anything but "" or "0": the
/// tests set it, since they must use the reference devices and never
/// measure (or read a cached measurement of) the machine they run on.
DeviceSpec resolve_device(const std::string& name_or_path, std::ostream* log);

}  // namespace fuseplan
