// Host CPU probe (see probe.h). Kernels use GCC vector extensions so they
// vectorise at the project's default -O2; the AVX2 variants are selected at
// run time with __builtin_cpu_supports. FP contraction is off (ISO C++ mode),
// so mul+add stays two instructions: the FLOP figure is FMA-free.
#include "probe/probe.h"

#include "support/files.h"
#include "support/stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <memory>
#include <new>
#include <span>
#include <sstream>
#include <thread>

#include "graph/graph.h"
#include "probe/contraction.h"
#include "probe/first_touch.h"
#include "probe/pool_window.h"
#include "probe/reduction_chain.h"
#include "probe/transcendental.h"
#include "profiling/cpu_profiler.h"

namespace fuseplan {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------- fork-join pool
// Persistent pool: run(f) calls f(0) on the caller and f(1..n-1) on workers,
// returning when all are done. Workers spin for a short while on the
// generation counter, then sleep on it (std::atomic::wait = futex on Linux).
class ForkJoinPool {
 public:
  explicit ForkJoinPool(int n) : n_(std::max(1, n)) {
    for (int i = 1; i < n_; ++i) workers_.emplace_back([this, i] { worker(i); });
  }
  ~ForkJoinPool() {
    stop_.store(true, std::memory_order_release);
    gen_.fetch_add(1, std::memory_order_release);
    gen_.notify_all();
    for (auto& t : workers_) t.join();
  }
  ForkJoinPool(const ForkJoinPool&) = delete;
  ForkJoinPool& operator=(const ForkJoinPool&) = delete;

  int size() const { return n_; }

  void run(const std::function<void(int)>& f) {
    if (n_ == 1) { f(0); return; }
    task_ = &f;
    pending_.store(n_ - 1, std::memory_order_relaxed);
    gen_.fetch_add(1, std::memory_order_release);
    gen_.notify_all();
    f(0);
    for (int spin = 0; spin < kSpin; ++spin)
      if (pending_.load(std::memory_order_acquire) == 0) return;
    for (int p; (p = pending_.load(std::memory_order_acquire)) != 0;) pending_.wait(p);
  }

 private:
  // ~tens of µs of spinning before sleeping (OpenMP-like passive-after-spin wait).
  static constexpr int kSpin = 20000;

  void worker(int i) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = gen_.load(std::memory_order_acquire);
      for (int spin = 0; g == seen && spin < kSpin; ++spin) g = gen_.load(std::memory_order_acquire);
      while (g == seen) {
        gen_.wait(seen, std::memory_order_acquire);
        g = gen_.load(std::memory_order_acquire);
      }
      seen = g;
      if (stop_.load(std::memory_order_acquire)) return;
      (*task_)(i);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
  }

  int n_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int)>* task_ = nullptr;
};

// ---------------------------------------------------------------- kernels
typedef double v2d __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));

template <typename V, typename T>
__attribute__((always_inline)) inline void triad_body(T* __restrict a, const T* __restrict b,
                                                      const T* __restrict c, T s, std::size_t n) {
  constexpr std::size_t L = sizeof(V) / sizeof(T);
  const V sv = V{} + s;
  std::size_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    V b0, b1, c0, c1;
    std::memcpy(&b0, b + i, sizeof(V));
    std::memcpy(&b1, b + i + L, sizeof(V));
    std::memcpy(&c0, c + i, sizeof(V));
    std::memcpy(&c1, c + i + L, sizeof(V));
    const V a0 = b0 + sv * c0, a1 = b1 + sv * c1;
    std::memcpy(a + i, &a0, sizeof(V));
    std::memcpy(a + i + L, &a1, sizeof(V));
  }
  for (; i < n; ++i) a[i] = b[i] + s * c[i];
}

__attribute__((target("avx2"))) void triad_f64_avx2(double* a, const double* b, const double* c, double s,
                                                     std::size_t n) {
  triad_body<v4d>(a, b, c, s, n);
}
void triad_f64_sse(double* a, const double* b, const double* c, double s, std::size_t n) {
  triad_body<v2d>(a, b, c, s, n);
}
__attribute__((target("avx2"))) void triad_f32_avx2(float* a, const float* b, const float* c, float s,
                                                    std::size_t n) {
  triad_body<v8f>(a, b, c, s, n);
}
void triad_f32_sse(float* a, const float* b, const float* c, float s, std::size_t n) {
  triad_body<v4f>(a, b, c, s, n);
}

// a[i] = s with full-vector stores (a splat of a non-byte-repeated float:
// the compiler cannot turn it into memset, whose large sizes use
// non-temporal stores that skip the write-allocate).
template <typename V>
__attribute__((always_inline)) inline void store_body(float* __restrict a, float s, std::size_t n) {
  constexpr std::size_t L = sizeof(V) / sizeof(float);
  const V sv = V{} + s;
  std::size_t i = 0;
  for (; i + L <= n; i += L) std::memcpy(a + i, &sv, sizeof(V));
  for (; i < n; ++i) a[i] = s;
}
__attribute__((target("avx2"))) void store_f32_avx2(float* a, float s, std::size_t n) { store_body<v8f>(a, s, n); }
void store_f32_sse(float* a, float s, std::size_t n) { store_body<v4f>(a, s, n); }

bool has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// Twelve independent mul+add chains: enough to cover 2 ports x 4-cycle latency
// of mul and add on current x86 cores, while fitting 16 vector registers.
template <typename V>
__attribute__((always_inline)) inline float flop_body(long iters, float m, float add) {
  const V mv = V{} + m, av = V{} + add;
  V x0 = V{} + 1.0f, x1 = x0 + 0.01f, x2 = x0 + 0.02f, x3 = x0 + 0.03f, x4 = x0 + 0.04f, x5 = x0 + 0.05f;
  V x6 = x0 + 0.06f, x7 = x0 + 0.07f, x8 = x0 + 0.08f, x9 = x0 + 0.09f, x10 = x0 + 0.10f, x11 = x0 + 0.11f;
  for (long it = 0; it < iters; ++it) {
    x0 = x0 * mv + av; x1 = x1 * mv + av; x2 = x2 * mv + av; x3 = x3 * mv + av;
    x4 = x4 * mv + av; x5 = x5 * mv + av; x6 = x6 * mv + av; x7 = x7 * mv + av;
    x8 = x8 * mv + av; x9 = x9 * mv + av; x10 = x10 * mv + av; x11 = x11 * mv + av;
  }
  const V s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)) + ((x8 + x9) + (x10 + x11));
  float r = 0;
  for (std::size_t k = 0; k < sizeof(V) / sizeof(float); ++k) r += s[k];
  return r;
}
constexpr int kFlopChains = 12;

__attribute__((target("avx2"))) float flops_avx2(long iters, float m, float a) { return flop_body<v8f>(iters, m, a); }
float flops_sse(long iters, float m, float a) { return flop_body<v4f>(iters, m, a); }

// ---------------------------------------------------------------- buffers
template <typename T>
struct Aligned {
  T* p = nullptr;
  explicit Aligned(std::size_t n) : p(static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64)))) {}
  ~Aligned() { ::operator delete(p, std::align_val_t(64)); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
};

// Slice [begin, end) of n elements for thread t of nt, in multiples of 64 elements.
std::pair<std::size_t, std::size_t> slice(std::size_t n, int t, int nt) {
  const std::size_t blocks = (n + 63) / 64;
  const std::size_t b0 = blocks * t / nt, b1 = blocks * (t + 1) / nt;
  return {std::min(n, b0 * 64), std::min(n, b1 * 64)};
}

// Passes per timed sample so one sample lasts at least `target_s`.
int passes_for(double one_pass_s, double target_s) {
  if (one_pass_s <= 0) return 1000;
  return static_cast<int>(std::clamp(std::ceil(target_s / one_pass_s), 1.0, 1e6));
}

// The quick probe's bounds (ProbeOptions::quick).
constexpr std::size_t kQuickDramBytes = std::size_t{512} << 20;
constexpr int kQuickSweepSteps = 4;

constexpr double kSampleSeconds = 0.02;  // >= 20 ms per sample: timer resolution and dispatch cost negligible

std::string today() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::size_t parse_size(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  if (s.empty()) return 0;
  std::size_t mult = 1;
  const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
  if (u == 'K') mult = 1024; else if (u == 'M') mult = 1024 * 1024; else if (u == 'G') mult = 1024ull * 1024 * 1024;
  if (mult != 1) s.pop_back();
  try { return static_cast<std::size_t>(std::stoull(s)) * mult; } catch (...) { return 0; }
}

std::string read_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// Number of CPUs in a sysfs cpu list such as "0-3,8".
int count_cpu_list(const std::string& s) {
  int n = 0;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    if (part.empty()) continue;
    const auto dash = part.find('-');
    try {
      if (dash == std::string::npos) n += 1;
      else n += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    } catch (...) { n += 1; }
  }
  return std::max(1, n);
}

std::string fmt(double v, int prec = 3) {
  std::ostringstream o;
  o << std::setprecision(prec) << v;
  return o.str();
}

}  // namespace

// ---------------------------------------------------------------- host facts
HostInfo host_info() {
  HostInfo h;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  h.cores = online > 0 ? static_cast<int>(online) : std::max(1u, std::thread::hardware_concurrency());
  h.avx2 = has_avx2();

  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path base = "/sys/devices/system/cpu/cpu0/cache";
  for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string fname = it->path().filename().string();
    if (fname.rfind("index", 0) != 0) continue;
    const std::string type = read_line(it->path() / "type");
    if (type == "Instruction") continue;
    HostCache c;
    const std::string level = read_line(it->path() / "level");
    c.name = "L" + level;
    c.bytes = parse_size(read_line(it->path() / "size"));
    c.shared_by = count_cpu_list(read_line(it->path() / "shared_cpu_list"));
    if (c.bytes > 0 && !level.empty()) h.caches.push_back(c);
  }
  if (h.caches.empty()) {  // fallback: glibc's sysconf cache queries
    const std::pair<const char*, long> levels[] = {{"L1", sysconf(_SC_LEVEL1_DCACHE_SIZE)},
                                                   {"L2", sysconf(_SC_LEVEL2_CACHE_SIZE)},
                                                   {"L3", sysconf(_SC_LEVEL3_CACHE_SIZE)}};
    for (const auto& [name, sz] : levels)
      if (sz > 0) h.caches.push_back({name, static_cast<std::size_t>(sz), std::string(name) == "L3" ? h.cores : 1});
  }
  std::sort(h.caches.begin(), h.caches.end(), [](const HostCache& a, const HostCache& b) { return a.name < b.name; });

  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("cpu MHz", 0) == 0) {
      const auto colon = line.find(':');
      try { h.clock_GHz = std::stod(line.substr(colon + 1)) / 1000.0; } catch (...) {}
      break;
    }
  }
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::stringstream ss(line.substr(13));
      std::size_t kb = 0;
      ss >> kb;
      h.mem_available_bytes = kb * 1024;
    }
  }
  if (h.mem_available_bytes == 0) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) h.mem_available_bytes = static_cast<std::size_t>(pages) * page;
  }
  return h;
}

std::size_t dram_working_set_bytes(const HostInfo& h) {
  std::size_t llc = 0;
  for (const auto& c : h.caches) llc = std::max(llc, c.shared_by > 1 ? c.bytes : c.bytes * h.cores);
  std::size_t ws = std::max<std::size_t>(4 * llc, 256ull << 20);  // 4x LLC: < 1/4 of accesses can hit
  ws = std::min<std::size_t>(ws, 2ull << 30);                     // keep the probe well under 30 s
  if (h.mem_available_bytes > 0) ws = std::min(ws, h.mem_available_bytes / 4);
  return std::max<std::size_t>(ws, 3 * 64 * sizeof(double));
}

// ---------------------------------------------------------------- triad (pool, f64)
namespace {
double triad_on_pool(ForkJoinPool& pool, std::size_t bytes, int samples) {
  const int nt = pool.size();
  const std::size_t n = std::max<std::size_t>(bytes / (3 * sizeof(double)), 64);
  Aligned<double> a(n), b(n), c(n);
  const bool avx2 = has_avx2();
  auto kernel = avx2 ? triad_f64_avx2 : triad_f64_sse;
  pool.run([&](int t) {  // first touch by the owning thread
    auto [lo, hi] = slice(n, t, nt);
    for (std::size_t i = lo; i < hi; ++i) { a.p[i] = 0.0; b.p[i] = 1.0; c.p[i] = 2.0; }
  });
  int passes = 1;  // overwritten below once one pass is timed
  auto timed = [&](int np) {
    const auto t0 = Clock::now();
    pool.run([&](int t) {
      auto [lo, hi] = slice(n, t, nt);
      for (int p = 0; p < np; ++p) {
        volatile double sv = 3.0 + 1e-9 * p;  // a different scalar each pass: passes cannot be merged
        kernel(a.p + lo, b.p + lo, c.p + lo, sv, hi - lo);
      }
    });
    return seconds_since(t0);
  };
  passes = passes_for(timed(1), kSampleSeconds);
  double best = 1e30;
  for (int s = 0; s < std::max(1, samples); ++s) best = std::min(best, timed(passes));
  return 3.0 * sizeof(double) * static_cast<double>(n) * passes / best / 1e9;
}
}  // namespace

double stream_triad_GBps(std::size_t bytes, int threads, int samples) {
  ForkJoinPool pool(std::max(1, threads));
  return triad_on_pool(pool, bytes, samples);
}

// ---------------------------------------------------------------- triad (spawn, f32)
double independent_triad_GBps(std::size_t bytes, int threads, int samples) {
  const int nt = std::max(1, threads);
  const std::size_t n = std::max<std::size_t>(bytes / (3 * sizeof(float)), 64);
  Aligned<float> a(n), b(n), c(n);
  auto kernel = has_avx2() ? triad_f32_avx2 : triad_f32_sse;
  auto spawn = [&](const std::function<void(int)>& f) {
    std::vector<std::thread> ts;
    for (int t = 1; t < nt; ++t) ts.emplace_back(f, t);
    f(0);
    for (auto& th : ts) th.join();
  };
  spawn([&](int t) {
    auto [lo, hi] = slice(n, t, nt);
    std::fill(a.p + lo, a.p + hi, 0.0f);
    std::fill(b.p + lo, b.p + hi, 1.0f);
    std::fill(c.p + lo, c.p + hi, 0.5f);
  });
  auto timed = [&](int np) {
    const auto t0 = Clock::now();
    spawn([&](int t) {
      auto [lo, hi] = slice(n, t, nt);
      for (int p = 0; p < np; ++p) {
        volatile float sv = 2.0f + 1e-6f * static_cast<float>(p & 7);
        kernel(a.p + lo, b.p + lo, c.p + lo, sv, hi - lo);
      }
    });
    return seconds_since(t0);
  };
  const int passes = passes_for(timed(1), kSampleSeconds);
  double best = 1e30;
  for (int s = 0; s < std::max(1, samples); ++s) best = std::min(best, timed(passes));
  return 3.0 * sizeof(float) * static_cast<double>(n) * passes / best / 1e9;
}

// ---------------------------------------------------------------- FP32 throughput
namespace {
double fp32_on_pool(ForkJoinPool& pool, std::vector<double>* sample_s = nullptr) {
  const bool avx2 = has_avx2();
  const int lanes = avx2 ? 8 : 4;  // 256-bit (AVX2) or 128-bit (SSE) fp32 vectors
  auto kernel = avx2 ? flops_avx2 : flops_sse;
  std::vector<float> sink(pool.size());
  auto timed = [&](long iters) {
    const auto t0 = Clock::now();
    pool.run([&](int t) { sink[t] = kernel(iters, 0.999999f, 1e-6f); });
    return seconds_since(t0);
  };
  long iters = 1 << 16;
  const double t1 = timed(iters);
  iters = static_cast<long>(iters * std::clamp(0.05 / std::max(t1, 1e-6), 1.0, 1e4));  // ~50 ms per sample
  double best = 1e30;
  for (int s = 0; s < 5; ++s) {
    const double t = timed(iters);
    best = std::min(best, t);
    if (sample_s) sample_s->push_back(t);
  }
  const double flops = 2.0 * kFlopChains * lanes * static_cast<double>(iters) * pool.size();  // mul + add
  return flops / best / 1e9;
}

double dispatch_on_pool(ForkJoinPool& pool) {
  const std::function<void(int)> empty = [](int) {};
  for (int i = 0; i < 200; ++i) pool.run(empty);  // warm up
  double best = 1e30;
  for (int s = 0; s < 5; ++s) {
    constexpr int kReps = 2000;
    const auto t0 = Clock::now();
    for (int i = 0; i < kReps; ++i) pool.run(empty);
    best = std::min(best, seconds_since(t0) / kReps);
  }
  return best * 1e6;
}

double write_allocate_on_pool(ForkJoinPool& pool, std::size_t bytes_per_thread, int samples) {
  const int nt = pool.size();
  const std::size_t per = std::max<std::size_t>(bytes_per_thread / sizeof(float) / 64 * 64, 64);
  Aligned<float> a(per * static_cast<std::size_t>(nt));
  auto kernel = has_avx2() ? store_f32_avx2 : store_f32_sse;
  pool.run([&](int t) { kernel(a.p + per * t, 0.0f, per); });  // first touch by the owning thread
  double best = 1e30;
  for (int s = 0; s < std::max(1, samples); ++s) {
    pool.run([&](int t) {  // every line out of every cache, written back: the stores below miss
      const std::span<const std::byte> mine(reinterpret_cast<const std::byte*>(a.p + per * t), per * sizeof(float));
      evict_lines(std::span(&mine, 1));
    });
    const auto t0 = Clock::now();
    pool.run([&](int t) { kernel(a.p + per * t, 1.5f + 1e-6f * static_cast<float>(s), per); });
    best = std::min(best, seconds_since(t0));
  }
  return static_cast<double>(per * sizeof(float)) * nt / best / 1e9;
}
}  // namespace

double write_allocate_GBps(std::size_t bytes_per_thread, int threads, int samples) {
  ForkJoinPool pool(std::max(1, threads));
  return write_allocate_on_pool(pool, bytes_per_thread, samples);
}

double fp32_GFLOPs(int threads) {
  ForkJoinPool pool(std::max(1, threads));
  return fp32_on_pool(pool);
}

double pool_dispatch_us(int threads) {
  ForkJoinPool pool(std::max(1, threads));
  return dispatch_on_pool(pool);
}

double spawn_join_us(int threads) {
  const int nt = std::max(1, threads);
  double best = 1e30;
  for (int s = 0; s < 3; ++s) {
    constexpr int kReps = 200;
    const auto t0 = Clock::now();
    for (int i = 0; i < kReps; ++i) {
      std::vector<std::thread> ts;
      for (int t = 1; t < nt; ++t) ts.emplace_back([] {});
      for (auto& th : ts) th.join();
    }
    best = std::min(best, seconds_since(t0) / kReps);
  }
  return best * 1e6;
}

namespace {
[[gnu::noinline]] void empty_kernel(void* const* /*buffers*/) { asm volatile(""); }
}  // namespace

double timed_call_us(int reps) {
  void (*volatile kernel)(void* const*) = empty_kernel;  // called like a loaded fp_group_<i>
  double best = 1e30;
  for (int i = 0; i < std::max(reps, 1); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    kernel(nullptr);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return best;
}

// ---------------------------------------------------------------- how busy the machine is
BusyMark busy_mark() {
  BusyMark m;
  m.wall_s = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  auto cpu_s = [](const rusage& u) {
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  rusage self{}, children{};
  if (getrusage(RUSAGE_SELF, &self) == 0) m.own_s += cpu_s(self);
  if (getrusage(RUSAGE_CHILDREN, &children) == 0) m.own_s += cpu_s(children);
  // First line of /proc/stat: "cpu user nice system idle iowait irq softirq steal guest guest_nice"
  // in clock ticks, summed over every CPU (guest time is already in user).
  std::ifstream stat("/proc/stat");
  std::string label;
  double v[8] = {};
  if (stat >> label && label == "cpu") {
    int n = 0;
    while (n < 8 && stat >> v[n]) ++n;
    const long hz = sysconf(_SC_CLK_TCK);
    if (n >= 7 && hz > 0) {
      const double busy = v[0] + v[1] + v[2] + v[5] + v[6] + (n >= 8 ? v[7] : 0);  // user nice system irq softirq steal
      m.all_busy_s = busy / static_cast<double>(hz);
    }
  }
  return m;
}

double others_busy_cores(const BusyMark& a, const BusyMark& b) {
  const double wall = b.wall_s - a.wall_s;
  if (a.all_busy_s < 0 || b.all_busy_s < 0 || !(wall > 0)) return -1;
  return std::max(0.0, ((b.all_busy_s - a.all_busy_s) - (b.own_s - a.own_s)) / wall);
}

double spread_pct(std::vector<double> times) {
  std::erase_if(times, [](double t) { return !(t > 0) || !std::isfinite(t); });
  if (times.size() < 2) return 0;
  std::sort(times.begin(), times.end());
  const std::size_t n = times.size();
  const double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  return 100.0 * (median / times.front() - 1.0);
}

// ---------------------------------------------------------------- whole probe
ProbeResult run_probe(std::ostream* log, int threads) { return run_probe(log, ProbeOptions{.threads = threads}); }

ProbeResult run_probe(std::ostream* log, const ProbeOptions& options) {
  const int threads = options.threads;
  const bool quick = options.quick;
  const auto t0 = Clock::now();
  const std::string date = today();
  const std::string measured = std::string(quick ? "measured by fuseplan's quick probe on " : "measured by fuseplan probe on ") + date;
  const HostInfo h = host_info();
  const int nt = h.cores;
  // The threads the kernels run on (--threads; every core by default): the
  // bandwidths, the FP32 rate, the private caches and the contraction
  // library are measured on them, and `cores` records them, so a device
  // probed for one thread prices one thread (a 2-core probe's FP32 rate
  // and private caches made a 1-thread run's GELU predicted 498 us and
  // measured 966 on a Zen 4).
  const int kt = threads > 0 ? threads : nt;
  auto say = [&](const std::string& s) {
    if (log) *log << "probe: [" << fmt(seconds_since(t0), 2) << " s] " << s << "\n" << std::flush;
  };
  ProbeResult r;
  r.quick = quick;
  // Other processes' CPU use just before the probe, then over the whole probe
  // (its own CPU time taken out): what a load average over exactly these
  // windows would read, without the 1-minute average's memory of past work.
  const BusyMark before = busy_mark();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const BusyMark start = busy_mark();
  r.others_busy_before = others_busy_cores(before, start);
  r.load_average_before = load_average_1min();
  const std::string load = load_averages();
  say(std::to_string(nt) + " cores, " + (h.avx2 ? "AVX2" : "no AVX2") + ", clock " + fmt(h.clock_GHz) +
      " GHz, load average " + load.substr(0, load.find(' ')) + ", other processes busy on " +
      fmt(r.others_busy_before, 2) + " cores" + (quick ? " (quick probe)" : ""));
  auto note_spread = [&](const std::string& what, const std::vector<double>& times) {
    const double sp = spread_pct(times);
    if (sp > r.spread || r.spread_of.empty()) {
      r.spread = std::max(r.spread, sp);
      r.spread_of = what;
    }
  };

  r.device = make_cpu_device();
  DeviceSpec& d = r.device;
  CpuSpec& cpu = *d.cpu;
  d.name = "host-cpu";
#if defined(__x86_64__)
  d.arch = h.avx2 ? "x86-64-avx2" : "x86-64";
#elif defined(__aarch64__)
  d.arch = "aarch64";
#else
  d.arch = "unknown-cpu";
#endif
  d.sources["arch"] = "CPU feature flags (__builtin_cpu_supports), " + measured;
  cpu.cores = kt;
  d.sources["cores"] = (threads > 0 ? "the kernel threads (--threads " + std::to_string(kt) + ") of "
                                    : std::string("every one of ")) +
                       std::to_string(nt) + " online logical CPUs (sysconf _SC_NPROCESSORS_ONLN) = cores used by "
                       "the CPU backend, " + measured;
  d.clock_GHz = h.clock_GHz;
  d.sources["clock_GHz"] = "/proc/cpuinfo 'cpu MHz' of cpu0 (current, not max turbo), read by fuseplan probe on " + date;

  ForkJoinPool pool(kt);
  // DRAM first: its bandwidth is the floor the cache-level sweep compares to.
  // Interleaved with the independent measurement, best of each over three
  // rounds, so background load on shared cores hits both alike.
  const std::size_t dram_ws =
      quick ? std::min<std::size_t>(dram_working_set_bytes(h), kQuickDramBytes) : dram_working_set_bytes(h);
  std::vector<double> dram_round_s;  // 1 / GBps of each round: the spread of the DRAM figure
  for (int round = 0; round < 3; ++round) {
    const double bw = triad_on_pool(pool, dram_ws, 2);
    dram_round_s.push_back(1.0 / bw);
    r.triad_dram_GBps = std::max(r.triad_dram_GBps, bw);
    r.independent_dram_GBps = std::max(r.independent_dram_GBps, independent_triad_GBps(dram_ws, kt, 2));
  }
  note_spread("DRAM triad", dram_round_s);
  d.dram_bw_GBps = r.triad_dram_GBps;
  std::string rounds;
  for (double s : dram_round_s) rounds += (rounds.empty() ? "" : ", ") + fmt(1.0 / s, 4);
  say("DRAM: triad at " + fmt(dram_ws / 1048576.0, 5) + " MiB = " + fmt(r.triad_dram_GBps, 4) + " GB/s (rounds " +
      rounds + " GB/s)");

  // Cache levels. A private level is filled to half its capacity on every
  // thread. A shared level is measured at 4x the aggregate of the level below
  // (at most half its capacity), then swept upward by doubling to find the
  // capacity this process really gets: on a VM or a busy host the reported L3
  // is the whole socket's, and the bandwidth knee comes much earlier. The
  // recorded bytes are the largest working set still above the midpoint
  // between the level's bandwidth and DRAM's.
  std::size_t prev_total = 0;
  std::string effective_note;
  for (const auto& c : h.caches) {
    const bool shared = c.shared_by > 1;
    const std::size_t total_cap = shared ? c.bytes : c.bytes * static_cast<std::size_t>(kt);
    const std::size_t ws = shared ? std::min(total_cap / 2, std::max(4 * prev_total, total_cap / 64)) : total_cap / 2;
    if (ws <= prev_total) continue;  // would not separate from the level below
    const double bw = triad_on_pool(pool, ws, quick ? 3 : 5);
    double bytes = static_cast<double>(c.bytes);
    if (shared) {
      const double knee = 0.5 * (bw + r.triad_dram_GBps);
      std::size_t good = ws;
      int steps = 0;
      for (std::size_t probe_ws = 2 * ws; probe_ws <= total_cap && (!quick || steps < kQuickSweepSteps);
           probe_ws *= 2, ++steps) {
        const double b = triad_on_pool(pool, probe_ws, 2);
        say("  " + c.name + " sweep: " + fmt(probe_ws / 1048576.0, 5) + " MiB = " + fmt(b, 4) + " GB/s");
        if (b < knee) break;
        good = probe_ws;
      }
      if (static_cast<double>(good) < bytes) {
        effective_note += "; " + c.name + ": sysfs reports " + fmt(c.bytes / 1048576.0, 5) +
                          " MiB but triad bandwidth stays above the cache/DRAM midpoint only up to " +
                          fmt(good / 1048576.0, 5) + " MiB, recorded as its capacity";
        bytes = static_cast<double>(good);
      }
    }
    cpu.caches.push_back({c.name, bytes, bw});
    say(c.name + " (" + fmt(c.bytes / 1024.0, 6) + " KiB" + (shared ? " shared" : " per core") + "): triad at " +
        fmt(ws / 1048576.0) + " MiB = " + fmt(bw, 4) + " GB/s" +
        (bytes != static_cast<double>(c.bytes) ? ", effective capacity " + fmt(bytes / 1048576.0, 5) + " MiB" : ""));
    prev_total = total_cap;
  }
  cpu.caches.push_back({"DRAM", 0.0, r.triad_dram_GBps});
  d.sources["caches"] = "sizes from /sys/devices/system/cpu/cpu0/cache (L1/L2 per core, L3 total); bw_GBps = STREAM-style "
                        "float64 triad on the " + std::to_string(kt) + " kernel thread(s) (private levels at half capacity per core, shared levels at 4x the "
                        "level below; DRAM at " + fmt(dram_ws / 1048576.0, 5) + " MiB), best of 5" + effective_note +
                        "; " + measured;
  d.sources["dram_bw_GBps"] = "STREAM-style float64 triad a=b+s*c on " + std::to_string(kt) + " threads at " +
                              fmt(dram_ws / 1048576.0, 5) + " MiB (4x LLC), 24 bytes/element counted, " + measured;

  r.agreement_pct = 100.0 * std::abs(r.triad_dram_GBps - r.independent_dram_GBps) / r.independent_dram_GBps;
  say("DRAM independent check (float32 triad, spawn/join threads): " + fmt(r.independent_dram_GBps, 4) +
      " GB/s; probe triad within " + fmt(r.agreement_pct, 2) + "%");
  d.sources["dram_bw_GBps"] += "; independent float32 spawn/join triad gave " + fmt(r.independent_dram_GBps, 4) +
                               " GB/s (within " + fmt(r.agreement_pct, 2) + "%)";

  // Last-level cache: the largest level's total (effective) capacity (what
  // the cold-libm measurement streams 4x of).
  double llc = 0;
  for (std::size_t i = 0; i + 1 < cpu.caches.size(); ++i) {  // skip DRAM (last)
    int shared_by = 1;
    for (const auto& c : h.caches)
      if (c.name == cpu.caches[i].name) shared_by = c.shared_by;
    llc = std::max(llc, shared_by > 1 ? cpu.caches[i].bytes : cpu.caches[i].bytes * kt);
  }

  std::vector<double> fp32_s;
  const double gflops = fp32_on_pool(pool, &fp32_s);
  note_spread("FP32", fp32_s);
  d.fp32_TFLOPs = gflops / 1000.0;
  d.sources["fp32_TFLOPs"] = std::string("12 independent FMA-free mul+add chains on ") +
                             (h.avx2 ? "256-bit AVX2" : "128-bit SSE") + " fp32 vectors, one per kernel thread (" + std::to_string(kt) + "), " + measured;
  say("FP32: " + fmt(gflops, 4) + " GFLOP/s (mul+add, no FMA; samples spread " + fmt(spread_pct(fp32_s), 3) + "%)");

  const double fork_join_us = dispatch_on_pool(pool);
  r.spawn_join_us = spawn_join_us(kt);
  r.timed_call_us = timed_call_us();
  const std::string others = "; spawn+join of fresh std::threads costs " + fmt(r.spawn_join_us) +
                             " us, a timed empty call " + fmt(r.timed_call_us) + " us";
  if (kt == 1) {
    d.launch_us = r.timed_call_us;
    d.sources["launch_us"] = "one thread forks nothing: the minimum over 20000 repetitions of a steady-clock pair "
                             "around an indirect call of an empty kernel (how exec/cpu_run.cpp times a group, the "
                             "timer's floor included), " + measured + "; a 1-thread pool fork-join costs " +
                             fmt(fork_join_us) + " us" + others;
  } else {
    d.launch_us = fork_join_us;
    d.sources["launch_us"] = "fork-join parallel-for with an empty body on a persistent " +
                             std::to_string(kt) + "-thread pool (spin then futex wait), mean of 2000, best "
                             "of 5, " + measured + others;
  }
  say("dispatch: " + std::to_string(kt) + "-thread pool fork-join " + fmt(fork_join_us) +
      " us, spawn/join " + fmt(r.spawn_join_us) + " us, timed empty call " + fmt(r.timed_call_us) + " us; launch_us " +
      fmt(d.launch_us) + " us");
  cpu.e_transcendental = 0;
  d.sources["e_transcendental"] =
      "0: transcendental FLOP-equivalents at e_cmp (uncalibrated); the CPU backend calls scalar libm for "
      "exp/log/tanh/erf/sin/cos/pow (-fno-fast-math), fuseplan calibrate fits their own efficiency, docs/calibration.md";
  // Terms the probe does not measure: 0 until fuseplan calibrate fits them.
  auto fitted_later = [&](const std::string& key, const std::string& term, const std::string& unit_of_fit) {
    d.sources[key] = "0: no " + term + " term in the uncalibrated model (the probe does not measure it); fuseplan "
                     "calibrate fits it (" + unit_of_fit + ") from measured groups, docs/calibration.md";
  };
  // Stores into lines no cache holds, 1 MiB per thread (within the private
  // caches, so no write-back of the lines written is timed).
  constexpr std::size_t kWriteAllocateBytes = std::size_t{1} << 20;
  cpu.write_allocate_bw_GBps = write_allocate_on_pool(pool, kWriteAllocateBytes, 11);
  d.sources["write_allocate_bw_GBps"] =
      "stores (" + std::string(h.avx2 ? "256-bit AVX2" : "128-bit SSE") + ") into 1 MiB per thread just flushed "
      "from every cache (CLFLUSH), on each kernel thread, best of 11: each line is read before it is written (write-allocate), " +
      measured;
  say("write-allocate: stores into flushed lines " + fmt(cpu.write_allocate_bw_GBps, 4) + " GB/s");
  cpu.store_buffer_bytes = 2048;
  d.sources["store_buffer_bytes"] =
      "2048: stores the store buffer holds while their lines fill (Golden Cove: 114 entries, 3.6 KiB of 32-byte "
      "stores; Intel optimization manual ch. 2); 2, 4 and 8 KiB fit the calibration records alike, docs/calibration.md";
  cpu.store_stall_us = 0;
  fitted_later("store_stall_us", "store-buffer stall",
               "us per group whose stores overflow store_buffer_bytes: one line fill before they drain");
  try {
    const FirstTouchTiming ft = first_touch_us();
    cpu.source_read_us = ft.us;
    d.sources["source_read_us"] = ft.note + ", " + measured;
    say("cold source: " + fmt(ft.us, 3) + " us per first touch");
  } catch (const Error& e) {
    cpu.source_read_us = 0;
    d.sources["source_read_us"] = std::string("0: not measured (") + e.what() + "): no first-touch term";
    say(std::string("cold source not measured: ") + e.what());
  }
  try {
    const PoolWindowTiming pw = pool_window_ns();
    cpu.pool_step_ns = pw.ns;
    d.sources["pool_step_ns"] = pw.note + ", " + measured;
    say("pooling: " + fmt(pw.ns, 3) + " ns per window element");
  } catch (const Error& e) {
    cpu.pool_step_ns = 0;
    fitted_later("pool_step_ns", "pooling-window", "ns per window element of emit/cpu/runtime.h pool()");
    say(std::string("pooling not measured: ") + e.what());
  }
  // The emitted reduce loops' serial chains (probe/reduction_chain.h): a
  // ReduceSum over BERT's attention rows at batch 8 x sequence 512 (25M
  // elements) took 18.6 ms on a Zen 4 thread, 4x its memory time.
  try {
    const ReductionChainTiming rc = reduction_chain_ns();
    cpu.reduce_step_ns = rc.sum_ns;
    cpu.select_step_ns = rc.max_ns;
    d.sources["reduce_step_ns"] = rc.note + " (the sum), " + measured;
    d.sources["select_step_ns"] = rc.note + " (the max), " + measured;
    say("reduction chains: " + fmt(rc.sum_ns, 3) + " ns per sum step, " + fmt(rc.max_ns, 3) + " ns per max step");
  } catch (const Error& e) {
    cpu.reduce_step_ns = 0;
    cpu.select_step_ns = 0;
    fitted_later("select_step_ns", "max/min-chain", "ns per reduced element of an emitted ReduceMax/ReduceMin loop");
    fitted_later("reduce_step_ns", "serial-reduction", "ns per reduced element of an emitted sum/mean/prod reduce loop");
    say(std::string("reduction chains not measured: ") + e.what());
  }
  // The contraction library's throughput per class and fixed cost per call,
  // on the threads the kernels run on (costmodel/contraction.h).
  d.e_contraction = 1.0;
  try {
    const ContractionProbe cp = probe_contractions(kt);
    cpu.contraction_GFLOPs = cp.GFLOPs;
    cpu.contraction_call_us = cp.call_us;
    cpu.contraction_lanes = cp.lanes;
    d.sources["contraction_lanes"] = cp.lanes_note;
    d.sources["contraction_GFLOPs"] = cp.note + ", " + measured;
    d.sources["contraction_call_us"] =
        "median over 26 rounds of eight small MatMuls (constant B, [1,16]x[16,16] .. [128,2]x[2,2]) called in turn "
        "through onednn_contractions(), each call's time less its FLOPs at the skinny-GEMM rate: key, primitive "
        "lookup, data handles, the primitive's own dispatch and entry (probe/contraction.cpp); " + measured;
    d.sources["e_contraction"] = "1: the probe's speed (contraction_GFLOPs); fuseplan calibrate fits it as one scale "
                                 "over all classes, docs/calibration.md";
    say("contractions: " + cp.note + "; " + fmt(cp.call_us, 3) + " us per call");
  } catch (const Error& e) {
    cpu.contraction_GFLOPs = {};
    cpu.contraction_call_us = 0;
    cpu.contraction_lanes = 0;
    d.e_contraction = 0.6;
    d.sources["contraction_GFLOPs"] = std::string("not measured (") + e.what() + "): contractions at fp32_TFLOPs";
    d.sources["contraction_call_us"] = std::string("0: not measured (") + e.what() + ")";
    d.sources["e_contraction"] = "default starting point (0.6 of FP32 peak for GEMM/conv); uncalibrated";
    say(std::string("contractions not measured, priced at the FP32 peak: ") + e.what());
  }
  // Each transcendental op's own time per element: no training model has
  // every function, and libm's speeds differ (tanhf 3-4× erff), so one
  // fitted efficiency over estimated weights mis-prices the functions it
  // never saw (docs/calibration.md, "Admitting a term").
  try {
    std::string note;
    cpu.transcendental_ns = transcendental_ns(note);
    cpu.e_transcendental = 1;
    d.sources["transcendental_ns"] = note + ", " + measured;
    d.sources["e_transcendental"] =
        "1: the probe's speed (transcendental_ns); fuseplan calibrate fits it as one scale over all of them, "
        "docs/calibration.md";
    say("transcendental ops: " + note);
    // Their code and tables cold, as after groups that streamed the LLC
    // (docs/calibration.md, "The fit"): held by calibration, never fitted.
    std::string cold_note;
    cpu.libm_cold_us = libm_cold_us(static_cast<std::size_t>(4 * llc), cold_note);
    d.sources["libm_cold_us"] = cold_note + ", " + measured;
    say("cold libm routine: " + fmt(cpu.libm_cold_us, 3) + " us (" + cold_note + ")");
  } catch (const Error& e) {
    cpu.transcendental_ns.clear();
    cpu.libm_cold_us = 0;
    d.sources["libm_cold_us"] = std::string("0: not measured (") + e.what() + ")";
    d.sources["transcendental_ns"] = std::string("not measured (") + e.what() + "): FLOP-equivalent estimates";
    say(std::string("transcendental ops not measured, estimates used: ") + e.what());
  }

  // Vector registers and lanes the emitted loops use.
  cpu.vector_regs = 16;
  d.sources["vector_regs"] = "x86-64: 16 architectural vector registers (xmm/ymm0-15) per core; more live values spill "
                             "to L1";
  cpu.vector_lanes = h.avx2 ? 8 : 4;
  d.sources["vector_lanes"] = std::string("fp32 lanes of one ") + (h.avx2 ? "256-bit AVX2" : "128-bit SSE") + " vector";

  d.e_mem = 1.0;
  d.sources["e_mem"] = "1.0: bandwidths are measured sustained triad figures, already achievable";
  d.e_cmp = 0.7;
  d.sources["e_cmp"] = "default starting point (0.7 of the measured mul+add peak); uncalibrated";
  d.spill_penalty = 1.0;
  d.sources["spill_penalty"] = "default starting point (spills go to L1, charged as traffic x1.0); uncalibrated";
  d.calibrated = false;

  // Other processes share the cores the probe measures: record how busy the host was.
  r.others_busy_during = others_busy_cores(start, busy_mark());
  r.load_average_after = load_average_1min();
  r.seconds = seconds_since(t0);
  auto cores_or_unknown = [](double v) { return v < 0 ? std::string("unknown") : fmt(v, 2); };
  d.sources["probe_conditions"] =
      "1-minute load average " + load.substr(0, load.find(' ')) + " on " + std::to_string(nt) +
      " cores when the probe started, " + fmt(r.load_average_after, 3) + " when it ended (its own threads "
      "included); other processes kept " + cores_or_unknown(r.others_busy_before) + " cores busy in the 0.5 s before "
      "and " + cores_or_unknown(r.others_busy_during) + " while it ran (/proc/stat less the probe's own CPU time); "
      "largest spread of repeated measurements " + fmt(r.spread, 3) + "% (" + r.spread_of + ", median over best); " +
      (quick ? "quick probe, " : "") + fmt(r.seconds, 3) + " s (" + date + ")";
  say("other processes busy on " + cores_or_unknown(r.others_busy_during) + " cores while probing; spread " +
      fmt(r.spread, 3) + "% (" + r.spread_of + ")");
  say("done in " + fmt(r.seconds) + " s");
  return r;
}

DeviceSpec probe_host(std::ostream* log) { return run_probe(log).device; }

void write_device_file(const DeviceSpec& d, const std::string& path) { write_file_atomic(path, device_to_json(d)); }

}  // namespace fuseplan
