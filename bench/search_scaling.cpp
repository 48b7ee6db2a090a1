// Search time and peak memory per strategy versus graph size, on synthetic
// graphs from the library generator (graph/synthetic.h: stacked transformer
// blocks, ResNet-like conv blocks, or both) and on every shared model.
//   search/<strategy>/<N>        transformer graph of exactly N primitives
//   search_kind/cost/<kind>/<N>  conv and mixed graphs, `cost` only
//   model/cost/<file>            each ../shared/models/onnx model at batch 1
//   optimal/<N>                  `optimal` until proven optimal or 60 s
// Counters: primitives, kernels, predicted_us, peak_MiB = peak heap bytes
// live during the search minus those live before it, counted by the global
// operator new/delete replacement below (malloc_usable_size of every block;
// the graph itself is built before and not counted) in a separate run before
// the timed one, so the time carries no counting overhead; maxrss_MiB = the
// process's ru_maxrss afterwards (high-water mark, graph included).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <new>
#include <string>

#include "costmodel/device.h"
#include "graph/import.h"
#include "graph/synthetic.h"
#include "search/strategy.h"
#include "tests/shared_models.h"

namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};
// Counting is on only during the memory run, so the timed run pays no
// counter. A block allocated before it and freed during it (a per-thread
// scratch buffer regrown) is subtracted without having been added: the peak
// is low by at most those buffers (O(graph nodes) bytes, < 1 MiB at 100k).
std::atomic<bool> g_counting{false};

void* counted_alloc(std::size_t n, std::size_t align = 0) {
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  if (!g_counting.load(std::memory_order_relaxed)) return p;
  const int64_t now = g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) +
                      static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}
void counted_free(void* p) noexcept {
  if (!p) return;
  if (g_counting.load(std::memory_order_relaxed)) g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { counted_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }

namespace fuseplan {
namespace {

const DeviceSpec& device() {
  static const DeviceSpec d = load_device("h100-sxm");
  return d;
}

int64_t primitives(const Graph& g) {
  int64_t n = 0;
  for (NodeId v = 0; v < g.size(); ++v) n += g.node(v).op_class != OpClass::source;
  return n;
}

/// Graphs are built once per (kind, size) and kept: building is not measured.
const Graph& synthetic(SyntheticKind k, int64_t n) {
  static std::map<std::pair<int, int64_t>, Graph> cache;
  auto it = cache.find({static_cast<int>(k), n});
  if (it == cache.end()) it = cache.emplace(std::pair{static_cast<int>(k), n}, synthetic_graph(k, n)).first;
  return it->second;
}

void run_search(benchmark::State& state, const Graph& g, const std::string& strategy, double time_limit_s) {
  SearchOptions o;
  o.time_limit_s = time_limit_s;
  // Memory run first, counting every heap block the search allocates (its
  // plan included, freed inside the window); then the timed run without the counter.
  double peak_mib = 0;
  {
    g_counting.store(true);
    const int64_t before = g_live.load();
    g_peak.store(before);
    {
      Plan counted = search(g, device(), strategy, o);
    }
    peak_mib = static_cast<double>(g_peak.load() - before) / (1 << 20);
    g_counting.store(false);
  }
  Plan plan;
  for (auto _ : state) plan = search(g, device(), strategy, o);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["primitives"] = static_cast<double>(primitives(g));
  state.counters["kernels"] = static_cast<double>(plan.totals.kernels);
  state.counters["predicted_us"] = plan.totals.predicted_us;
  state.counters["peak_MiB"] = peak_mib;
  state.counters["maxrss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024;
  state.SetLabel(plan.status);
}

void register_all() {
  for (const auto& s : strategy_names()) {
    if (s == "optimal") continue;
    auto* b = benchmark::RegisterBenchmark(("search/" + s).c_str(), [s](benchmark::State& st) {
      run_search(st, synthetic(SyntheticKind::transformer, st.range(0)), s, 60);
    });
    b->Unit(benchmark::kMillisecond)->Iterations(1)->Arg(1000)->Arg(10000)->Arg(100000);
  }
  for (SyntheticKind k : {SyntheticKind::conv, SyntheticKind::mixed}) {
    const std::string name = "search_kind/cost/" + std::string(to_string(k));
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [k](benchmark::State& st) {
      run_search(st, synthetic(k, st.range(0)), "cost", 60);
    });
    b->Unit(benchmark::kMillisecond)->Iterations(1)->Arg(1000)->Arg(10000)->Arg(100000);
  }
  for (const auto& file : test::shared_model_files()) {
    auto* b = benchmark::RegisterBenchmark(("model/cost/" + file).c_str(), [file](benchmark::State& st) {
      Graph g;
      try {
        g = test::import_shared_model(file, 1);
      } catch (const Error& e) {
        st.SkipWithError(e.what());
        return;
      }
      run_search(st, g, "cost", 60);
    });
    b->Unit(benchmark::kMillisecond)->Iterations(1);
  }
  // `optimal` to a proven optimum (or its 60 s limit) on small mixed graphs.
  auto* b = benchmark::RegisterBenchmark("optimal", [](benchmark::State& st) {
    run_search(st, synthetic(SyntheticKind::mixed, st.range(0)), "optimal", 60);
  });
  b->Unit(benchmark::kMillisecond)->Iterations(1)->Arg(min_synthetic_primitives(SyntheticKind::mixed));
  for (int n : {100, 200, 400}) b->Arg(n);
}

}  // namespace
}  // namespace fuseplan

int main(int argc, char** argv) {
  fuseplan::register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
