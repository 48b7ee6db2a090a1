#include "emit/cuda/cuda_backend.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "emit/cpu/cpp_printer.h"
#include "emit/cpu/cpu_backend.h"
#include "support/files.h"

namespace fuseplan::cuda {

CudaOptions cuda_options(const DeviceSpec& d) {
  CudaOptions o;
  const int tpb = d.gpu ? d.gpu->threads_per_block : 0;
  if (tpb >= 32 && tpb <= 1024 && tpb % 32 == 0) o.threads_per_block = tpb;
  return o;
}

NvrtcOptions nvrtc_options(const DeviceSpec& d, bool allow_fma) {
  if (!d.is_gpu() || d.arch.rfind("sm_", 0) != 0)
    throw Error("device '" + d.name + "' (arch " + d.arch + ") is not a CUDA device");
  NvrtcOptions o;
  o.arch = d.arch;
  o.allow_fma = allow_fma;
  return o;
}

NodeId opaque_member(const Graph& g, const Group& grp) {
  for (NodeId n : grp.nodes)
    if (g.node(n).op_class == OpClass::opaque) return n;
  return kNoNode;
}

std::vector<CudaGroupSource> plan_sources(const Graph& g, const Plan& plan, const DeviceSpec& d, bool canonical,
                                          const LibraryOptions& lib) {
  cpu::check_plan_matches(g, plan);
  std::vector<CudaGroupSource> out;
  std::string title = canonical ? "" : g.name + " / strategy " + plan.strategy + " / device " + d.name;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    Group grp = plan.groups[i];
    grp.id = canonical ? 0 : static_cast<int>(i);
    if (NodeId op = opaque_member(g, grp); op != kNoNode) {
      CudaGroupSource s;
      s.source = "// group " + std::to_string(i) + ": " + kOpaqueNote + " (primitive " +
                 cpu::comment_escape(g.node(op).name) + ", op " + cpu::comment_escape(g.node(op).op) +
                 "); no kernels emitted\n";
      out.push_back(std::move(s));
      out.back().group_id = static_cast<int>(i);
      continue;
    }
    out.push_back(print_lowered_group(g, grp, lower_group(g, grp, lib), cuda_options(d), title));
    out.back().group_id = static_cast<int>(i);
  }
  return out;
}

int GroupResources::regs_measured() const {
  int r = 0;
  for (const auto& k : measured) r = std::max(r, k.regs_per_thread);
  return r;
}

int GroupResources::spill_bytes_measured() const {
  int s = 0;
  for (const auto& k : measured) s += k.spill_bytes();
  return s;
}

std::vector<GroupResources> measure_plan(const Graph& g, const Plan& plan, const DeviceSpec& d, const NvrtcOptions& o,
                                         std::vector<std::string>* cubins, std::vector<CudaGroupSource>* sources,
                                         bool canonical, const LibraryOptions& lib) {
  auto srcs = plan_sources(g, plan, d, canonical, lib);
  // Compile in parallel (NVRTC programs are independent; the cache writes
  // are atomic renames); the first error, in group order, is rethrown.
  std::vector<CompileResult> results(srcs.size());
  std::vector<std::string> errors(srcs.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < srcs.size();) {
      if (srcs[i].launches.empty()) continue;  // opaque, or a library call alone: nothing to compile
      try {
        results[i] = compile_cuda(srcs[i].source, "group_" + std::to_string(i), o);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  const std::size_t nthreads =
      std::min<std::size_t>(srcs.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < nthreads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (!e.empty()) throw Error(e);
  std::vector<GroupResources> t;
  for (std::size_t i = 0; i < srcs.size(); ++i) {
    const Group& grp = plan.groups[i];
    const CompileResult& cr = results[i];
    GroupResources r;
    r.group_id = static_cast<int>(i);
    r.kind = std::string(to_string(grp.kind));
    r.last_primitive = g.node(grp.nodes.back()).name;
    r.regs_estimate = plan.costs.at(i).regs_estimate;
    r.spill_estimate_bytes = plan.costs.at(i).spill_bytes_estimate;
    r.launches = srcs[i].launches;
    if (opaque_member(g, grp) != kNoNode) {
      r.note = kOpaqueNote;
      if (cubins) cubins->push_back(std::string());
      t.push_back(std::move(r));
      continue;
    }
    r.library = match_cublaslt(g, grp);
    r.lowering = lower_group(g, grp, lib);
    if (r.launches.empty()) r.note = r.lowering.why;  // the library call covers the group
    for (const auto& l : r.launches) {
      const ResourceUsage* u = cr.find(l.kernel);
      if (!u) throw Error("NVRTC reported no resource usage for kernel " + l.kernel);
      r.measured.push_back(*u);
    }
    if (cubins) cubins->push_back(cr.cubin);
    t.push_back(std::move(r));
  }
  if (sources) *sources = std::move(srcs);
  return t;
}

ResourceOracle nvrtc_resource_oracle(const NvrtcOptions& o, std::shared_ptr<OracleStats> stats,
                                     const LibraryOptions& lib) {
  struct State {
    NvrtcOptions opts;
    LibraryOptions lib;
    std::shared_ptr<OracleStats> stats;
    std::mutex mu;
    std::map<std::string, std::optional<MeasuredResources>> by_group;   // node-set key
    std::map<std::string, std::optional<MeasuredResources>> by_source;  // source hash
  };
  auto st = std::make_shared<State>();
  st->opts = o;
  st->lib = lib;
  st->stats = stats ? std::move(stats) : std::make_shared<OracleStats>();
  return [st](const Graph& g, const Group& grp, const DeviceSpec& d) -> std::optional<MeasuredResources> {
    std::string key = std::string(to_string(grp.kind)) + ":";
    for (NodeId n : grp.nodes) key += std::to_string(n) + ",";
    key += "|";
    for (NodeId n : grp.materialised) key += std::to_string(n) + ",";
    for (const auto& b : grp.branches) key += "|" + std::to_string(b.size());
    if (opaque_member(g, grp) != kNoNode) return std::nullopt;  // no kernel of ours: keep the estimate
    std::lock_guard<std::mutex> lock(st->mu);
    if (auto it = st->by_group.find(key); it != st->by_group.end()) return it->second;
    if (lower_group(g, grp, st->lib).library()) {  // a library kernel, not ours: keep the estimate
      ++st->stats->library;
      st->by_group.emplace(std::move(key), std::nullopt);
      return std::nullopt;
    }
    ++st->stats->asked;
    std::optional<MeasuredResources> out;
    try {
      Group canon = grp;
      canon.id = 0;
      CudaGroupSource src = print_cuda_group(g, canon, cuda_options(d));
      const std::string h = sha256_hex(src.source);
      if (auto it = st->by_source.find(h); it != st->by_source.end()) {
        out = it->second;
      } else {
        CompileResult cr = compile_cuda(src.source, "candidate", st->opts);
        ++(cr.cache_hit ? st->stats->cache_hits : st->stats->compiled);
        MeasuredResources m;
        for (const auto& l : src.launches) {
          const ResourceUsage* u = cr.find(l.kernel);
          if (!u) throw Error("NVRTC reported no resource usage for kernel " + l.kernel);
          m.regs_per_thread = std::max(m.regs_per_thread, u->regs_per_thread);
          m.spill_bytes_per_thread += u->spill_bytes();
          m.smem_bytes = std::max<double>(m.smem_bytes, u->smem_bytes);
        }
        out = m;
        st->by_source.emplace(h, out);
      }
    } catch (const Error& e) {
      ++st->stats->failed;
      if (st->stats->first_failure.empty()) st->stats->first_failure = e.what();
      out.reset();
    }
    st->by_group.emplace(std::move(key), out);
    return out;
  };
}

std::string resources_json(const std::vector<GroupResources>& t, const DeviceSpec& d, const NvrtcOptions& o) {
  nlohmann::ordered_json j;
  j["schema"] = "fuseplan.cuda-resources/1";
  j["device"] = d.name;
  j["arch"] = o.arch;
  j["fmad"] = o.allow_fma;
  j["nvrtc"] = nvrtc_version();
  auto& gs = j["groups"] = nlohmann::ordered_json::array();
  for (const auto& r : t) {
    nlohmann::ordered_json e;
    e["group"] = r.group_id;
    e["kind"] = r.kind;
    e["last_primitive"] = r.last_primitive;
    e["regs_estimate"] = r.regs_estimate;
    e["spill_bytes_estimate"] = r.spill_estimate_bytes;
    e["regs_measured"] = r.regs_measured();
    e["spill_bytes_measured"] = r.spill_bytes_measured();
    if (r.skipped()) e["note"] = r.note;
    if (r.lowering.library()) e["library"] = {{"route", to_string(r.lowering.route)}, {"call", r.lowering.why}};
    if (r.lowering.route == GroupLowering::Route::fallback) e["fallback"] = r.lowering.why;
    if (!r.library.epilogue.empty())
      e["cublaslt"] = {{"epilogue", r.library.epilogue}, {"covered", r.library.covered},
                       {"remaining", r.library.remaining}};
    auto& ks = e["kernels"] = nlohmann::ordered_json::array();
    for (std::size_t k = 0; k < r.launches.size(); ++k) {
      const auto& l = r.launches[k];
      const auto& u = r.measured[k];
      ks.push_back({{"kernel", l.kernel}, {"shape", l.shape}, {"grid", l.grid}, {"block", l.block},
                    {"params", l.params}, {"regs_per_thread", u.regs_per_thread},
                    {"spill_store_bytes", u.spill_store_bytes}, {"spill_load_bytes", u.spill_load_bytes},
                    {"stack_frame_bytes", u.stack_frame_bytes}, {"smem_bytes", u.smem_bytes}});
    }
    gs.push_back(e);
  }
  return j.dump(2) + "\n";
}

std::string resources_markdown(const std::vector<GroupResources>& t, const DeviceSpec& d, const NvrtcOptions& o) {
  std::ostringstream os;
  os << "# CUDA resources: " << d.name << " (" << o.arch << ", " << (o.allow_fma ? "-fmad=true" : "-fmad=false")
     << ", NVRTC " << nvrtc_version() << ")\n\n";
  os << "| group | kind | last primitive | kernels | shape | regs est. | regs NVRTC | spill est. (B) | spill NVRTC (B) "
        "| stack (B) | smem (B) | library call / emitted fallback / cuBLASLt epilogue +remaining |\n";
  os << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : t) {
    int stack = 0, smem = 0;
    std::string shapes;
    for (std::size_t k = 0; k < r.measured.size(); ++k) {
      stack = std::max(stack, r.measured[k].stack_frame_bytes);
      smem = std::max(smem, r.measured[k].smem_bytes);
      shapes += (k ? ", " : "") + r.launches[k].shape;
    }
    std::string name = cpu::comment_escape(r.last_primitive);
    for (auto& ch : name)
      if (ch == '|') ch = '/';
    if (r.skipped()) {  // no launches: the note (a library call, or opaque) goes in the last column
      os << "| " << r.group_id << " | " << r.kind << " | `" << name << "` | 0 | - | " << r.regs_estimate << " | - | "
         << r.spill_estimate_bytes << " | - | - | - | " << r.note << " |\n";
      continue;
    }
    os << "| " << r.group_id << " | " << r.kind << " | `" << name << "` | " << r.launches.size() << " | " << shapes
       << " | " << r.regs_estimate << " | " << r.regs_measured() << " | " << r.spill_estimate_bytes << " | "
       << r.spill_bytes_measured() << " | " << stack << " | " << smem << " | "
       << (r.lowering.library() || r.lowering.route == GroupLowering::Route::fallback ? r.lowering.why
           : r.library.epilogue.empty()
                                      ? std::string("-")
                                      : r.library.epilogue + " +" + std::to_string(r.library.remaining))
       << " |\n";
  }
  return os.str();
}

}  // namespace fuseplan::cuda
