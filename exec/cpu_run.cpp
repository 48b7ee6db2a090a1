#include "exec/cpu_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <sstream>

#include <nlohmann/json.hpp>

#include "emit/cpu/compiler.h"
#include "exec/onednn.h"
#include "exec/page_arena.h"
#include "emit/cpu/cpu_backend.h"
#include "exec/reference.h"
#include "exec/tensor_data.h"
#include "support/stats.h"

namespace fuseplan {

int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia == ib) return 0;
  auto ordered = [](int32_t i) -> int64_t { return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : i; };
  return std::llabs(ordered(ia) - ordered(ib));
}

namespace {

OutputCheck compare(const std::string& name, const Tensor& got, const Tensor& want) {
  OutputCheck c;
  c.name = name;
  int64_t n = want.numel(), es = dtype_bytes(want.dtype);
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(got.data.data() + i * es, want.data.data() + i * es, static_cast<std::size_t>(es)) == 0) continue;
    c.identical = false;
    ++c.mismatches;
    int64_t d = want.dtype == DType::f32 ? ulp_distance(got.ptr<float>()[i], want.ptr<float>()[i])
                                         : static_cast<int64_t>(std::fabs(got.get(i) - want.get(i)));
    c.max_ulp = std::max(c.max_ulp, d);
    if (c.first_index < 0) {
      c.first_index = i;
      c.got = got.get(i);
      c.want = want.get(i);
    }
  }
  return c;
}

std::string group_label(const Graph& g, const Group& grp) {
  if (grp.nodes.empty()) return "";
  std::string a = g.node(grp.nodes.front()).name, b = g.node(grp.nodes.back()).name;
  return grp.nodes.size() == 1 ? a : a + " .. " + b;
}

}  // namespace

void set_passive_wait_policy() {
  // libgomp reads OMP_WAIT_POLICY once, when the first kernel library loads
  // it. Idle OpenMP threads spinning between kernels steal the CPU from the
  // next kernel's threads (and from other jobs on a shared host), which shows
  // up as timing noise; passive threads sleep. A user's setting wins.
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}

RunResult run_plan(const Graph& g, const Plan& plan, const RunOptions& opts) {
  set_passive_wait_policy();
  RunResult res;
  std::string src = cpu::plan_source(g, plan);  // checks the plan against the model
  auto lib = cpu::compile_and_load(src, opts.cancelled);
  res.compile_ms = lib->compile_ms();
  res.cache_hit = lib->cache_hit();
  res.so_path = lib->so_path();
  res.source_path = lib->source_path();
  if (opts.keep_source) res.kernel_source = src;

  std::map<std::string, Tensor> inputs;
  if (!opts.inputs.empty()) inputs = load_inputs(opts.inputs);
  for (const auto& [name, t] : inputs) check_feedable(g, name);
  std::map<NodeId, Tensor> sources = make_source_data(g, inputs);

  std::vector<std::size_t> sizes(g.size(), 0);
  for (const auto& [n, t] : sources) sizes[n] = t.data.size();
  for (const Group& grp : plan.groups)
    for (NodeId m : grp.materialised)
      if (!sizes[m]) sizes[m] = static_cast<std::size_t>(g.node(m).out.bytes());
  PageArena arena(sizes);
  for (const auto& [n, t] : sources) std::copy(t.data.begin(), t.data.end(), arena.at(n).begin());
  std::vector<void*> ptrs(g.size(), nullptr);
  for (std::size_t n = 0; n < sizes.size(); ++n)
    if (arena.has(n)) ptrs[n] = arena.at(n).data();

  if (opts.threads > 0)
    reinterpret_cast<void (*)(int)>(reinterpret_cast<void (*)()>(lib->kernel("fp_set_num_threads")))(opts.threads);
  reinterpret_cast<void (*)(const fprt::ContractionLibrary*)>(lib->kernel("fp_bind_contractions"))(
      &onednn_contractions());
  onednn_forget_weights();  // this run's constants live at new addresses
  std::vector<cpu::KernelLibrary::KernelFn> fns;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) fns.push_back(lib->kernel("fp_group_" + std::to_string(i)));
  auto check = [&] {
    if (opts.cancelled && opts.cancelled()) throw cpu::Cancelled();
  };
  for (int w = 0; w < std::max(opts.warmup, 1); ++w)
    for (auto f : fns) {
      check();
      f(ptrs.data());
    }
  std::vector<std::span<const std::byte>> buffers;
  for (std::size_t n = 0; n < sizes.size(); ++n)
    if (arena.has(n)) buffers.emplace_back(arena.at(n));
  const int reps = std::max(opts.repeat, 1);
  std::vector<std::vector<double>> times(fns.size());
  const auto start = std::chrono::steady_clock::now();
  auto more = [&](int r) {
    if (r < reps) return true;
    if (opts.min_time_s <= 0 || r >= RunOptions::kMaxRepeat) return false;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < opts.min_time_s;
  };
  for (int r = 0; more(r); ++r) {
    if (opts.before_repetition) opts.before_repetition(r, buffers);
    for (std::size_t i = 0; i < fns.size(); ++i) {
      check();
      if (opts.around_group) opts.around_group(i, false);
      auto t0 = std::chrono::steady_clock::now();
      fns[i](ptrs.data());
      auto t1 = std::chrono::steady_clock::now();
      if (opts.around_group) opts.around_group(i, true);
      times[i].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  for (std::size_t i = 0; i < fns.size(); ++i) {
    GroupTiming t;
    t.group = static_cast<int>(i);
    t.kind = std::string(to_string(plan.groups[i].kind));
    t.label = group_label(g, plan.groups[i]);
    t.primitives = static_cast<int64_t>(plan.groups[i].nodes.size());
    t.measured_us = median(times[i]);
    t.samples_us = times[i];
    t.predicted_us = i < plan.costs.size() ? plan.costs[i].predicted_us : 0;
    res.measured_us += t.measured_us;
    res.predicted_us += t.predicted_us;
    res.groups.push_back(t);
  }

  if (opts.verify) {
    std::vector<Tensor> ref = run_reference(g, sources);
    res.verified = true;
    for (NodeId o : g.graph_outputs()) {
      Tensor got(g.node(o).out.dtype, g.node(o).out.shape);
      std::span<std::byte> out = arena.at(o);
      std::copy(out.begin(), out.end(), got.data.begin());
      OutputCheck c = compare(g.node(o).name, got, ref[o]);
      res.ok = res.ok && c.identical;
      res.outputs.push_back(c);
    }
  }
  return res;
}

std::string verify_message(const RunResult& r) {
  std::ostringstream os;
  for (const auto& c : r.outputs) {
    if (c.identical) continue;
    if (os.tellp() > 0) os << "\n";
    os.precision(9);
    os << "output '" << c.name << "': " << c.mismatches << " elements differ, max " << c.max_ulp
       << " ULP; first at index " << c.first_index << ": got " << c.got << ", reference " << c.want;
  }
  return os.str();
}

std::string run_result_json(const RunResult& r) {
  nlohmann::json j;
  j["measured_us"] = r.measured_us;
  j["predicted_us"] = r.predicted_us;
  j["compile_ms"] = r.compile_ms;
  j["cache_hit"] = r.cache_hit;
  j["kernel_library"] = r.so_path;
  j["kernel_source"] = r.source_path;
  j["verified"] = r.verified;
  j["ok"] = r.ok;
  j["groups"] = nlohmann::json::array();
  for (const auto& t : r.groups)
    j["groups"].push_back({{"group", t.group}, {"kind", t.kind}, {"label", t.label}, {"primitives", t.primitives},
                           {"measured_us", t.measured_us}, {"predicted_us", t.predicted_us}});
  j["outputs"] = nlohmann::json::array();
  for (const auto& c : r.outputs) {
    nlohmann::json o = {{"name", c.name}, {"identical", c.identical}, {"mismatches", c.mismatches},
                        {"max_ulp", c.max_ulp}};
    if (c.first_index >= 0) o["first"] = {{"index", c.first_index}, {"got", c.got}, {"reference", c.want}};
    j["outputs"].push_back(o);
  }
  return j.dump(2);
}

}  // namespace fuseplan
