// The probed host device (probe/host_device.h): the cache key, the cache
// directory, a cache hit that measures nothing, a corrupt or foreign cache
// file probed over, a loaded probe used once and never cached, an
// unwritable cache refused before measuring. A fake prober stands in for
// the measurement: nothing here probes the machine except the last test.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/scoped_env.h"
#include "probe/host_device.h"
#include "support/error.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("fuseplan-hostdev-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using test::ScopedEnv;

HostKey test_key() {
  HostKey k;
  k.cpu_model = "Test CPU 9000";
  k.cores = 4;
  k.isa = "sse4.2,avx,avx2";
  k.mem_bytes = 16ull << 30;
  k.version = "0.1.0";
  return k;
}

// A probe result as run_probe returns one, from the reference figures with
// a DRAM bandwidth of its own (so a test can tell it from the reference).
ProbeResult fake_probe(double dram_GBps, double busy_during = 0.2, double spread = 3.0) {
  ProbeResult r;
  r.device = load_device("host-cpu-reference");
  r.device.name = "host-cpu";
  r.device.dram_bw_GBps = dram_GBps;
  r.device.cpu->caches.back().bw_GBps = dram_GBps;
  r.triad_dram_GBps = dram_GBps;
  r.load_average_before = 0.3;
  r.load_average_after = 1.1;
  r.others_busy_before = 0.1;
  r.others_busy_during = busy_during;
  r.spread = spread;
  r.spread_of = "FP32";
  r.seconds = 12.5;
  r.quick = true;
  return r;
}

struct Counting {
  int calls = 0;
  ProbeResult result;
  HostProber prober() {
    return [this] {
      ++calls;
      return result;
    };
  }
};

HostDeviceOptions options(const std::string& dir, Counting& c, std::ostream* log = nullptr) {
  HostDeviceOptions o;
  o.cache_dir = dir;
  o.key = test_key();
  o.prober = c.prober();
  o.log = log;
  return o;
}

TEST(HostKey, TextAndHashAreFixedByTheFields) {
  const HostKey k = test_key();
  EXPECT_EQ(k.text(), "cpu=Test CPU 9000;cores=4;isa=sse4.2,avx,avx2;mem=17179869184;version=0.1.0");
  EXPECT_EQ(k.hash(), "16956cd333b510fc");  // 64-bit FNV-1a of text()
  // Every field is part of the key.
  HostKey other = k;
  other.cores = 8;
  EXPECT_NE(other.hash(), k.hash());
  other = k, other.cpu_model = "Test CPU 9001";
  EXPECT_NE(other.hash(), k.hash());
  other = k, other.isa = "sse4.2,avx";
  EXPECT_NE(other.hash(), k.hash());
  other = k, other.mem_bytes = 8ull << 30;
  EXPECT_NE(other.hash(), k.hash());
  other = k, other.version = "0.2.0";
  EXPECT_NE(other.hash(), k.hash());
  EXPECT_EQ(host_cache_path(k, "/c"), "/c/host-cpu-16956cd333b510fc.json");
}

TEST(HostKey, ThisHostsKeyIsWhatTheSystemReports) {
  const HostKey k = this_host_key();
  EXPECT_EQ(k.cores, host_info().cores);
  EXPECT_EQ(k.version, std::string(fuseplan_version()));
  EXPECT_EQ(k.version, "0.2.0");  // CMakeLists.txt project(VERSION)
  // MemTotal, read here independently.
  std::ifstream meminfo("/proc/meminfo");
  std::uint64_t kb = 0;
  for (std::string line; std::getline(meminfo, line);)
    if (line.rfind("MemTotal:", 0) == 0) std::istringstream(line.substr(9)) >> kb;
  ASSERT_GT(kb, 0u);
  EXPECT_EQ(k.mem_bytes, kb * 1024);
  EXPECT_FALSE(k.cpu_model.empty());
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      EXPECT_NE(line.find(k.cpu_model), std::string::npos) << line;
      break;
    }
#if defined(__x86_64__)
  EXPECT_EQ((',' + k.isa + ',').find(",avx2,") != std::string::npos, static_cast<bool>(__builtin_cpu_supports("avx2")))
      << k.isa;
#endif
  EXPECT_EQ(this_host_key(), k);  // stable within a machine
}

TEST(HostCache, DirectoryFollowsTheEnvironment) {
  {
    ScopedEnv a("FUSEPLAN_CACHE_DIR", "/tmp/fp-cache"), b("XDG_CACHE_HOME", "/tmp/xdg"), c("HOME", "/tmp/home");
    EXPECT_EQ(host_cache_dir(), "/tmp/fp-cache");
  }
  {
    ScopedEnv a("FUSEPLAN_CACHE_DIR", ""), b("XDG_CACHE_HOME", "/tmp/xdg"), c("HOME", "/tmp/home");
    EXPECT_EQ(host_cache_dir(), "/tmp/xdg/fuseplan");
  }
  {
    ScopedEnv a("FUSEPLAN_CACHE_DIR", std::nullopt), b("XDG_CACHE_HOME", std::nullopt), c("HOME", "/tmp/home");
    EXPECT_EQ(host_cache_dir(), "/tmp/home/.cache/fuseplan");
  }
  {
    ScopedEnv a("FUSEPLAN_CACHE_DIR", std::nullopt), b("XDG_CACHE_HOME", std::nullopt), c("HOME", std::nullopt);
    EXPECT_EQ(host_cache_dir(), (fs::temp_directory_path() / "fuseplan-cache").string());
  }
}

TEST(HostDevice, AMissProbesOnceAndCachesTheKeyAndConditions) {
  const std::string dir = fresh_dir("miss") + "/not/yet";  // made on demand
  Counting c{0, fake_probe(27.5)};
  std::ostringstream log;
  const HostDevice hd = host_device(options(dir, c, &log));
  EXPECT_EQ(c.calls, 1);
  EXPECT_FALSE(hd.from_cache);
  EXPECT_TRUE(hd.cached);
  EXPECT_FALSE(hd.verdict.loaded);
  EXPECT_EQ(hd.cache_path, dir + "/host-cpu-16956cd333b510fc.json");
  EXPECT_EQ(hd.device.name, "host-cpu");
  EXPECT_EQ(hd.device.dram_bw_GBps, 27.5);
  // One progress line, naming the cache file.
  EXPECT_EQ(log.str(), "fuseplan: probing this machine for --device host-cpu (once per machine, under a minute) ... "
                       "12.5 s, cached in " + hd.cache_path + "\n");
  // The file is a device JSON (it loads as --device FILE) with the key and
  // the conditions it was measured under.
  const DeviceSpec d = load_device(hd.cache_path);
  EXPECT_EQ(d.name, "host-cpu");
  EXPECT_EQ(d.dram_bw_GBps, 27.5);
  EXPECT_EQ(d.launch_us, load_device("host-cpu-reference").launch_us);
  const nlohmann::json j = nlohmann::json::parse(slurp(hd.cache_path));
  const nlohmann::json& hp = j.at("host_probe");
  EXPECT_EQ(hp.at("schema"), "fuseplan.host-probe/1");
  EXPECT_EQ(hp.at("key").at("cpu_model"), "Test CPU 9000");
  EXPECT_EQ(hp.at("key").at("cores"), 4);
  EXPECT_EQ(hp.at("key").at("isa"), "sse4.2,avx,avx2");
  EXPECT_EQ(hp.at("key").at("mem_bytes"), 17179869184ull);
  EXPECT_EQ(hp.at("key").at("version"), "0.1.0");
  EXPECT_EQ(hp.at("conditions").at("load_average_before"), 0.3);
  EXPECT_EQ(hp.at("conditions").at("load_average_after"), 1.1);
  EXPECT_EQ(hp.at("conditions").at("others_busy_before"), 0.1);
  EXPECT_EQ(hp.at("conditions").at("others_busy_during"), 0.2);
  EXPECT_EQ(hp.at("conditions").at("spread_pct"), 3.0);
  EXPECT_EQ(hp.at("conditions").at("spread_of"), "FP32");
  EXPECT_EQ(hp.at("conditions").at("quick"), true);
}

TEST(HostDevice, AHitReusesTheFileWithoutProbing) {
  const std::string dir = fresh_dir("hit");
  Counting first{0, fake_probe(27.5)};
  const HostDevice a = host_device(options(dir, first));
  ASSERT_TRUE(a.cached);
  const std::string text = slurp(a.cache_path);
  Counting second{0, fake_probe(99.0)};  // would give another figure if it ran
  std::ostringstream log;
  const HostDevice b = host_device(options(dir, second, &log));
  EXPECT_EQ(second.calls, 0);
  EXPECT_TRUE(b.from_cache);
  EXPECT_FALSE(b.cached);
  EXPECT_FALSE(b.probe.has_value());
  EXPECT_EQ(b.device.dram_bw_GBps, 27.5);
  EXPECT_EQ(b.device.name, "host-cpu");
  EXPECT_EQ(log.str(), "");  // nothing to say
  EXPECT_EQ(slurp(a.cache_path), text);  // not rewritten
  // refresh (fuseplan probe) measures again and replaces it.
  HostDeviceOptions o = options(dir, second);
  o.refresh = true;
  const HostDevice c = host_device(o);
  EXPECT_EQ(second.calls, 1);
  EXPECT_TRUE(c.cached);
  EXPECT_EQ(load_device(c.cache_path).dram_bw_GBps, 99.0);
}

TEST(HostDevice, ACorruptCacheFileIsProbedOverWithOneWarning) {
  const std::string dir = fresh_dir("corrupt");
  const std::string path = host_cache_path(test_key(), dir);
  struct Case {
    std::string text, problem;
  };
  nlohmann::json bad_figure = nlohmann::json::parse(host_cache_json(fake_probe(27.5), test_key()));
  bad_figure["launch_us"] = -1;
  nlohmann::json no_key = nlohmann::json::parse(host_cache_json(fake_probe(27.5), test_key()));
  no_key["host_probe"].erase("key");
  const std::vector<Case> cases = {
      {"{\"name\": \"host-cpu\", \"kind\": \"cp", "not valid JSON"},
      {"", "not valid JSON"},
      {slurp(std::string(FUSEPLAN_SOURCE_DIR) + "/configs/devices/host-cpu-reference.json"),
       "no \"host_probe\" object of schema fuseplan.host-probe/1"},
      {no_key.dump(), "its host_probe key is incomplete"},
      {bad_figure.dump(), "field 'launch_us' must be"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.problem);
    { std::ofstream(path) << k.text; }
    Counting c{0, fake_probe(31.0)};
    std::ostringstream log;
    const HostDevice hd = host_device(options(dir, c, &log));
    EXPECT_EQ(c.calls, 1);
    EXPECT_TRUE(hd.cached);
    EXPECT_EQ(hd.device.dram_bw_GBps, 31.0);
    const std::string first_line = log.str().substr(0, log.str().find('\n'));
    EXPECT_EQ(first_line.rfind("fuseplan: warning: ignoring the cached host probe '" + path + "': ", 0), 0u) << log.str();
    EXPECT_NE(first_line.find(k.problem), std::string::npos) << first_line;
    EXPECT_NE(first_line.find("; probing again"), std::string::npos) << first_line;
    EXPECT_EQ(load_device(path).dram_bw_GBps, 31.0);  // replaced by a valid probe
  }
}

TEST(HostDevice, AProbeOfAnotherMachineOrVersionIsNotReused) {
  const std::string dir = fresh_dir("foreign");
  HostKey other = test_key();
  other.version = "0.0.9";
  // Its file at this key's path (as a hash collision or a hand copy would put it).
  { std::ofstream(host_cache_path(test_key(), dir)) << host_cache_json(fake_probe(5.0), other); }
  Counting c{0, fake_probe(27.5)};
  std::ostringstream log;
  const HostDevice hd = host_device(options(dir, c, &log));
  EXPECT_EQ(c.calls, 1);
  EXPECT_EQ(hd.device.dram_bw_GBps, 27.5);
  EXPECT_NE(log.str().find("it was probed on another machine or fuseplan version (" + other.text() + ")"),
            std::string::npos)
      << log.str();
}

TEST(HostDevice, ALoadedProbeServesThisRunAndIsNotCached) {
  const std::string dir = fresh_dir("loaded");
  // Other processes on 3.6 of the 4 cores while it ran; then a spread of 40%.
  for (const ProbeResult& r : {fake_probe(4.0, 3.6, 3.0), fake_probe(4.0, 0.2, 40.0)}) {
    Counting c{0, r};
    std::ostringstream log;
    const HostDevice hd = host_device(options(dir, c, &log));
    EXPECT_EQ(c.calls, 1);
    EXPECT_TRUE(hd.verdict.loaded);
    EXPECT_FALSE(hd.cached);
    EXPECT_FALSE(fs::exists(hd.cache_path));
    EXPECT_EQ(hd.device.dram_bw_GBps, 4.0);  // used for this run
    EXPECT_NE(log.str().find("fuseplan: warning: the machine was busy while probing (" + hd.verdict.reason +
                             "): not cached"),
              std::string::npos)
        << log.str();
    // The next run asks again.
    Counting again{0, r};
    host_device(options(dir, again));
    EXPECT_EQ(again.calls, 1);
  }
}

TEST(HostDevice, JudgesLoadAndSpreadAgainstTheirLimits) {
  ProbeResult r = fake_probe(20.0, 2.0, 15.0);  // 4 cores: limit 2.0 busy cores, 15%
  EXPECT_FALSE(judge_probe(r, 4).loaded) << judge_probe(r, 4).reason;
  r.others_busy_during = 2.01;
  ProbeVerdict v = judge_probe(r, 4);
  EXPECT_TRUE(v.loaded);
  EXPECT_EQ(v.reason, "other processes kept 2.01 of 4 cores busy while it ran (limit 2)");
  r = fake_probe(20.0, 0.2, 15.5);
  v = judge_probe(r, 4);
  EXPECT_TRUE(v.loaded);
  EXPECT_EQ(v.reason, "repeated FP32 measurements spread 15.5% (limit 15%)");
  r = fake_probe(20.0);
  r.others_busy_before = 3;
  r.spread = 20;
  v = judge_probe(r, 4);
  EXPECT_EQ(v.reason, "other processes kept 3 of 4 cores busy before it (limit 2); repeated FP32 measurements spread "
                      "20% (limit 15%)");
  // Without /proc/stat the 1-minute load average stands in.
  r = fake_probe(20.0);
  r.others_busy_before = r.others_busy_during = -1;
  r.load_average_before = 2.5;
  EXPECT_EQ(judge_probe(r, 4).reason, "1-minute load average 2.5 on 4 cores (limit 2)");
  r.load_average_before = 1.9;
  EXPECT_FALSE(judge_probe(r, 4).loaded);
}

TEST(HostDevice, AnUnwritableCacheIsRefusedBeforeMeasuring) {
  const std::string dir = fresh_dir("unwritable");
  { std::ofstream(dir + "/file") << "x"; }
  Counting c{0, fake_probe(27.5)};
  try {
    host_device(options(dir + "/file/cache", c));
    FAIL() << "no error";
  } catch (const EnvironmentError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("cannot cache the host probe in '" + dir + "/file/cache': ", 0), 0u) << msg;
    EXPECT_NE(msg.find("FUSEPLAN_CACHE_DIR"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_EQ(c.calls, 0);
}

TEST(HostDevice, ResolveSendsOnlyTheHostNamesToTheProbe) {
  EXPECT_TRUE(is_host_device_name("host"));
  EXPECT_TRUE(is_host_device_name("host-cpu"));
  EXPECT_FALSE(is_host_device_name("host-cpu-reference"));
  EXPECT_FALSE(is_host_device_name("host-cpu-1thread"));
  EXPECT_EQ(resolve_device("host-cpu-reference", nullptr).name, "host-cpu-reference");
  EXPECT_EQ(resolve_device("h100-sxm", nullptr).name, "h100-sxm");
  ScopedEnv no("FUSEPLAN_NO_HOST_PROBE", "1");
  for (const char* name : {"host", "host-cpu"}) {
    try {
      resolve_device(name, nullptr);
      FAIL() << name << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("FUSEPLAN_NO_HOST_PROBE is set"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("host-cpu-reference"), std::string::npos) << e.what();
    }
  }
  // costmodel's loader does not probe: it names the resolver and the reference.
  try {
    load_device("host-cpu");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resolve_device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("host-cpu-reference"), std::string::npos) << e.what();
  }
}

TEST(ProbeConditions, SpreadIsTheMedianOverTheBest) {
  EXPECT_EQ(spread_pct({}), 0);
  EXPECT_EQ(spread_pct({2.0}), 0);
  EXPECT_DOUBLE_EQ(spread_pct({1.0, 1.0, 1.0}), 0);
  EXPECT_NEAR(spread_pct({1.2, 1.0, 1.1}), 10.0, 1e-12);
  EXPECT_DOUBLE_EQ(spread_pct({1.0, 2.0}), 50.0);
  EXPECT_DOUBLE_EQ(spread_pct({1.0, 1.0, 1.0, 9.0, 1.04}), 0);  // one outlier moves the median little
  EXPECT_DOUBLE_EQ(spread_pct({0.0, -1.0, 1.0, 1.5, 2.0}), 50.0);  // non-positive samples ignored
}

TEST(ProbeConditions, OthersBusyCoresIsTheirShareOfTheWindow) {
  EXPECT_DOUBLE_EQ(others_busy_cores({0, 10, 1}, {2, 13, 2}), 1.0);  // (3 s busy − 1 s ours) / 2 s
  EXPECT_DOUBLE_EQ(others_busy_cores({0, 10, 1}, {2, 10.5, 2}), 0.0);  // never negative
  EXPECT_EQ(others_busy_cores({0, -1, 0}, {2, 13, 2}), -1);  // no /proc/stat
  EXPECT_EQ(others_busy_cores({2, 10, 0}, {2, 13, 0}), -1);  // no time passed
  // This process's own CPU time is read (getrusage) and grows with work.
  const BusyMark a = busy_mark();
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + 1e-9 * i;
  const BusyMark b = busy_mark();
  EXPECT_GT(b.own_s, a.own_s);
  EXPECT_GT(b.wall_s, a.wall_s);
  EXPECT_GE(a.all_busy_s, 0);  // Linux: /proc/stat
  EXPECT_GE(others_busy_cores(a, b), 0);
}

// The one real measurement here: the quick probe fills in the conditions
// the cache decision reads (its figures are tested in probe_test.cpp).
TEST(ProbeConditions, TheQuickProbeRecordsLoadAndSpread) {
  const ProbeResult r = run_probe(nullptr, ProbeOptions{.threads = 0, .quick = true});
  EXPECT_TRUE(r.quick);
  EXPECT_EQ(r.device.name, "host-cpu");
  EXPECT_GT(r.device.dram_bw_GBps, 0);
  EXPECT_GE(r.others_busy_before, 0);
  EXPECT_GE(r.others_busy_during, 0);
  EXPECT_GE(r.load_average_before, 0);
  EXPECT_GE(r.load_average_after, 0);
  EXPECT_GE(r.spread, 0);
  EXPECT_TRUE(r.spread_of == "DRAM triad" || r.spread_of == "FP32") << r.spread_of;
  const std::string& cond = r.device.sources.at("probe_conditions");
  EXPECT_NE(cond.find("quick probe"), std::string::npos) << cond;
  EXPECT_NE(cond.find("largest spread of repeated measurements"), std::string::npos) << cond;
  EXPECT_NE(r.device.sources.at("dram_bw_GBps").find("quick probe"), std::string::npos);
}

}  // namespace
}  // namespace fuseplan
