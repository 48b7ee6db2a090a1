#include "probe/first_touch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "exec/page_arena.h"
#include "profiling/cpu_profiler.h"
#include "support/error.h"

namespace fuseplan {
namespace {

constexpr int kSources = 16;
constexpr int kRepetitions = 401;
constexpr std::size_t kLine = 64;  // x86-64 cache line: one source, one output
constexpr int kFloats = kLine / sizeof(float);

// A group kernel's shape: reads its source, writes its output.
[[gnu::noinline]] void read_line(void* const* b) {
  const float* x = static_cast<const float*>(b[0]);
  float* y = static_cast<float*>(b[1]);
  for (int i = 0; i < kFloats; ++i) y[i] = x[i] + 1.0f;
}

}  // namespace

FirstTouchTiming first_touch_us() {
  std::vector<std::size_t> sizes(kSources + 1, kLine);  // the sources, then the output
  PageArena arena(sizes);
  std::vector<std::span<const std::byte>> lines;
  for (int s = 0; s < kSources; ++s) lines.push_back(arena.at(static_cast<std::size_t>(s)));
  void (*volatile kernel)(void* const*) = read_line;  // called like a loaded fp_group_<i>
  void* out = arena.at(kSources).data();
  auto call_us = [&](int s) {
    void* b[2] = {arena.at(static_cast<std::size_t>(s)).data(), out};
    const auto t0 = std::chrono::steady_clock::now();
    kernel(b);
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
  };
  for (int s = 0; s < kSources; ++s) call_us(s);  // page faults, the kernel's first call
  // A new order each repetition: the region and stride prefetchers learn a
  // fixed one (7 of 16 sources read as warm after a flush on Zen 4).
  std::vector<int> order(kSources);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(7);
  std::vector<std::vector<double>> cold(kSources), warm(kSources);
  for (int r = 0; r < kRepetitions; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    if (!evict_lines(lines)) throw Error("no cache-line eviction instruction on this CPU");
    for (int s : order) cold[s].push_back(call_us(s));
    for (int s : order) warm[s].push_back(call_us(s));
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  std::vector<double> extra(kSources);
  for (int s = 0; s < kSources; ++s) extra[s] = median(cold[s]) - median(warm[s]);
  FirstTouchTiming r;
  r.us = median(extra);
  if (!(r.us > 0)) throw Error("a cold source line took no longer than a warm one (timer or eviction trouble)");
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "a 64-byte source read by a kernel called as the runner calls a group, each source on its own page "
                "of the runner's arena (exec/page_arena.h), read in a new order each repetition: median over %d "
                "repetitions of its time right after CLFLUSH less its time warm, median over %d sources, one "
                "thread: %.3f us per cold source",
                kRepetitions, kSources, r.us);
  r.note = buf;
  return r;
}

}  // namespace fuseplan
