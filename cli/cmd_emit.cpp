// fuseplan emit plan.json MODEL --backend cuda|cpu -o DIR: kernel sources of
// a plan. CUDA: one .cu per group, its CUBIN (NVRTC, for the plan's device
// arch unless --device says otherwise) and the resource table
// (resources.json + resources.md: estimated vs measured registers/spills).
// Contraction groups run cuBLASLt/cuDNN by default; --library picks the
// libraries, `none` emits every GEMM/conv (emit/cuda/lowering.h).
#include <filesystem>
#include <iostream>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "emit/cpu/cpu_backend.h"
#include "emit/cuda/cuda_backend.h"
#include "support/files.h"
#include "emit/plan_json.h"

namespace fuseplan::cli {

namespace {
struct EmitArgs {
  std::string plan;
  ModelArgs model;
  std::string backend = "cuda";
  std::string device;  // default: the plan's device
  std::string output;
  bool allow_fma = false;
  bool no_compile = false;
  bool force = false;
  std::string library = "all";  // all | all-fused | cublaslt | cublaslt-fused | cudnn | none
};

// --library: which contraction groups the sources leave to cuBLASLt / cuDNN
// (emit/cuda/lowering.h); those groups get only their prologue/epilogue kernels.
cuda::LibraryOptions library_options(const std::string& v) {
  if (v == "none") return cuda::LibraryOptions::none();
  cuda::LibraryOptions o;
  o.cublaslt = v == "cublaslt" || v == "cublaslt-fused" || v == "all" || v == "all-fused";
  o.fused_epilogue = v == "cublaslt-fused" || v == "all-fused";
  o.cudnn = v == "cudnn" || v == "all" || v == "all-fused";
  if (!o.any()) throw Error("--library must be all, all-fused, cublaslt, cublaslt-fused, cudnn or none, got '" + v + "'");
  return o;
}

std::string plan_device(const std::string& plan_path) {
  try {
    auto j = nlohmann::json::parse(read_file(plan_path));
    return j.value("device", "");
  } catch (const nlohmann::json::exception&) {
    throw Error("malformed plan '" + plan_path + "': not JSON");
  }
}

void run_emit(const EmitArgs& a) {
  namespace fs = std::filesystem;
  if (a.backend != "cuda" && a.backend != "cpu") throw Error("--backend must be cuda or cpu, got '" + a.backend + "'");
  check_output_dir(a.output, {a.plan, a.model.path, a.device}, a.force);
  LoadedModel m = load_model(a.model);
  std::string dev = a.device.empty() ? plan_device(a.plan) : a.device;
  if (dev.empty()) throw Error("plan '" + a.plan + "' names no device; pass --device");
  const DeviceSpec d = load_device_arg(dev);
  Plan plan = load_plan(read_file(a.plan), m.graph, d, m.sha256, a.model.dims());
  // Every option is checked before the folder is created (a bad --library
  // leaves no empty folder behind its error).
  const cuda::LibraryOptions lib = a.backend == "cuda" ? library_options(a.library) : cuda::LibraryOptions{};
  // The device check too (a CPU device leaves no .cu files behind its
  // error; an architecture NVRTC cannot target, no empty folder).
  std::optional<cuda::NvrtcOptions> nvrtc;
  if (a.backend == "cuda" && !a.no_compile) {
    nvrtc = cuda::nvrtc_options(d, a.allow_fma);
    cuda::check_nvrtc_arch(nvrtc->arch);
  }
  // The sources too: an op the printer cannot emit (an opaque graph break,
  // PRelu) leaves no empty folder behind its error.
  std::string cpu_source;
  std::vector<cuda::CudaGroupSource> srcs;
  if (a.backend == "cpu") cpu_source = cpu::plan_source(m.graph, plan);
  else srcs = cuda::plan_sources(m.graph, plan, d, false, lib);
  // The folder is written whole (support/outputs.h): staged beside it and
  // renamed into place once every file is there, so an interrupted or failed
  // emission leaves nothing, and no file of an earlier emission stays next
  // to this plan's.
  StagedDir out(a.output);
  auto file = [&](const std::string& name) { return (fs::path(out.path()) / name).string(); };
  if (a.backend == "cpu") {
    write_file_atomic(file("plan.cpp"), cpu_source);
    out.commit();
    std::cout << "wrote " << out.final_path("plan.cpp") << "\n";
    return;
  }
  for (const auto& s : srcs) write_file_atomic(file("group_" + std::to_string(s.group_id) + ".cu"), s.source);
  if (a.no_compile) {
    out.commit();
    std::cout << "wrote " << srcs.size() << " CUDA sources to " << a.output << "\n";
    return;
  }
  const cuda::NvrtcOptions& o = *nvrtc;
  std::vector<std::string> cubins;
  const std::vector<cuda::GroupResources> table = cuda::measure_plan(m.graph, plan, d, o, &cubins, nullptr, false, lib);
  for (std::size_t i = 0; i < cubins.size(); ++i) write_file_atomic(file("group_" + std::to_string(i) + ".cubin"), cubins[i]);
  write_file_atomic(file("resources.json"), cuda::resources_json(table, d, o));
  write_file_atomic(file("resources.md"), cuda::resources_markdown(table, d, o));
  out.commit();
  std::cout << "wrote " << srcs.size() << " CUDA sources to " << a.output << "\n";
  int spilling = 0, regs = 0, library = 0, fallback = 0;
  for (const auto& r : table) {
    spilling += r.spill_bytes_measured() > 0;
    regs = std::max(regs, r.regs_measured());
    library += r.lowering.library();
    fallback += r.lowering.route == cuda::GroupLowering::Route::fallback;
  }
  std::cout << "compiled " << cubins.size() << " groups for " << o.arch << " (NVRTC " << cuda::nvrtc_version()
            << "): max " << regs << " registers/thread, " << spilling << " groups spill; wrote resources.json, "
            << "resources.md\n";
  std::cout << "library " << lib.str() << ": " << library << " contraction groups call cuBLASLt/cuDNN, " << fallback
            << " are the emitted fallback (resources.md says why)\n";
}
}  // namespace

void add_emit(CLI::App& app) {
  auto a = std::make_shared<EmitArgs>();
  auto* cmd = app.add_subcommand("emit", "write the kernels of a plan (CUDA: .cu, .cubin, resource table)");
  cmd->add_option("plan", a->plan, "plan JSON (from fuseplan search)")->required();
  a->model.add_to(cmd);
  cmd->add_option("--backend", a->backend, "cuda or cpu")->capture_default_str();
  cmd->add_option("--device", a->device, "device (default: the plan's)");
  cmd->add_option("-o,--output", a->output, "output directory, written whole (absent or empty unless --force)")
      ->required()
      ->check(file_name());
  cmd->add_flag("--force", a->force, "replace a non-empty output directory as a whole");
  cmd->add_flag("--allow-fma", a->allow_fma, "let NVRTC contract multiply-add (-fmad=true); changes rounding");
  cmd->add_flag("--no-compile", a->no_compile, "write the .cu sources only (no NVRTC)");
  cmd->add_option("--library", a->library,
                  "contraction groups left to libraries (such groups get only their prologue/epilogue kernels; "
                  "shapes a library refuses are the emitted fallback): all (cuBLASLt GEMM + cuDNN conv, "
                  "bit-identical across plans), all-fused (also cuBLASLt's bias/ReLU/GELU epilogues: other "
                  "rounding), cublaslt, cublaslt-fused, cudnn, none (emit every GEMM/conv, one thread per output element)")
      ->capture_default_str();
  cmd->callback([a] { run_emit(*a); });
}

}  // namespace fuseplan::cli
