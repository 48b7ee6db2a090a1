#include "profiling/cpu_profiler.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <set>

#include "exec/cpu_run.h"
#include "profiling/perf_counters.h"

namespace fuseplan {

FlushPolicy flush_policy_from_string(const std::string& s) {
  if (s == "auto") return FlushPolicy::automatic;
  if (s == "always") return FlushPolicy::always;
  if (s == "never") return FlushPolicy::never;
  throw Error("--flush must be auto, always or never, got '" + s + "'");
}

GroupMeasurement summarise(const std::vector<double>& samples_us) {
  GroupMeasurement m;
  if (samples_us.empty()) return m;
  std::vector<double> v = samples_us;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  m.median_us = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  m.min_us = v.front();
  m.max_us = v.back();
  m.spread_pct = m.median_us > 0 ? 100 * (m.max_us - m.min_us) / m.median_us : 0;
  m.repetitions = static_cast<int>(n);
  return m;
}

double plan_footprint_bytes(const Graph& g, const Plan& plan) {
  std::set<NodeId> bufs;
  for (const Group& grp : plan.groups) {
    for (NodeId m : grp.materialised) bufs.insert(m);
    for (NodeId s : group_inputs(g, grp)) bufs.insert(s);
  }
  double b = 0;
  for (NodeId n : bufs) b += static_cast<double>(g.node(n).out.bytes());
  return b;
}

double flush_bytes(const DeviceSpec& d) {
  double llc = d.gpu ? d.gpu->l2_bytes : 0;
  if (d.cpu)
    for (const CacheLevel& c : d.cpu->caches)
      if (c.bytes > 0) llc = std::max(llc, c.bytes);
  return std::max(2 * llc, 32.0 * 1024 * 1024);
}

bool evict_lines(std::span<const std::span<const std::byte>> buffers) {
#if defined(__x86_64__) || defined(__i386__)
  constexpr std::size_t kLine = 64;  // x86-64 cache line (CLFLUSH flushes the line holding the address)
  for (std::span<const std::byte> b : buffers) {
    if (b.empty()) continue;
    const auto first = reinterpret_cast<std::uintptr_t>(b.data()) & ~(kLine - 1);
    const auto end = reinterpret_cast<std::uintptr_t>(b.data()) + b.size();
    for (std::uintptr_t a = first; a < end; a += kLine) _mm_clflush(reinterpret_cast<const void*>(a));
  }
  _mm_mfence();  // CLFLUSH is ordered by MFENCE: every line is out before the clock starts
  return true;
#else
  (void)buffers;
  return false;
#endif
}

ProfileResult CpuProfiler::profile(const Graph& g, const Plan& plan, const DeviceSpec& d, const ProfileOptions& o) {
  ProfileResult res;
  const double footprint = plan_footprint_bytes(g, plan);
  const double llc = flush_bytes(d) / 2;
  const bool flush = o.flush == FlushPolicy::always || (o.flush == FlushPolicy::automatic && footprint <= 2 * llc);
  std::vector<char> scratch;
  RunOptions ro;
  ro.warmup = std::max(o.warmup, 1);
  ro.repeat = std::max(o.repeat, 1);
  ro.min_time_s = o.min_time_s;
  ro.threads = o.threads;
  if (flush) {
    ro.before_repetition = [&scratch, &d](int r, std::span<const std::span<const std::byte>> buffers) {
      if (evict_lines(buffers)) return;
      // No line eviction instruction: writing a buffer twice the LLC evicts
      // the plan's buffers (write misses allocate lines); the value varies
      // so the stores stay.
      if (scratch.empty()) scratch.resize(static_cast<std::size_t>(flush_bytes(d)));
      std::memset(scratch.data(), r & 0xff, scratch.size());
    };
  }
  std::unique_ptr<PerfCounters> pc;
  std::vector<std::vector<CounterValues>> counts(plan.groups.size());
  if (o.counters) {
    pc = std::make_unique<PerfCounters>();
    if (!pc->available()) {
      res.notes.push_back(pc->reason());
      pc.reset();
    } else {
      ro.around_group = [&](std::size_t i, bool after) {
        if (!after) pc->start();
        else counts[i].push_back(pc->stop());
      };
    }
  }
  RunResult rr = run_plan(g, plan, ro);
  for (std::size_t i = 0; i < rr.groups.size(); ++i) {
    GroupMeasurement m = summarise(rr.groups[i].samples_us);
    m.group = rr.groups[i].group;
    m.flushed = flush;
    if (pc && !counts[i].empty()) {
      auto med = [&](auto field) {
        std::vector<double> v;
        for (const auto& c : counts[i]) v.push_back(c.*field);
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      m.cycles = med(&CounterValues::cycles);
      m.instructions = med(&CounterValues::instructions);
      m.llc_misses = med(&CounterValues::llc_misses);
      if (m.llc_misses >= 0) m.measured_bytes_read = 64 * m.llc_misses;  // 64-byte lines (x86-64)
    }
    res.total_us += m.median_us;
    res.groups.push_back(m);
  }
  if (pc) res.notes.push_back("hardware counters count the calling thread (run with --threads 1 for whole-kernel counts)");
  return res;
}

}  // namespace fuseplan
