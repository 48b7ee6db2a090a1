#include "emit/cuda/nvrtc.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/files.h"
#include "graph/graph.h"

#ifdef FUSEPLAN_HAVE_CUDA
#include <nvrtc.h>
#endif

namespace fuseplan::cuda {

namespace fs = std::filesystem;

const ResourceUsage* CompileResult::find(const std::string& kernel) const {
  for (const auto& k : kernels)
    if (k.kernel == kernel) return &k;
  return nullptr;
}

std::vector<ResourceUsage> parse_ptxas_log(const std::string& log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::vector<ResourceUsage> out;
  std::istringstream in(log);
  std::string line, props_of;
  std::smatch m;
  auto get = [&](const std::string& name) -> ResourceUsage& {
    for (auto& k : out)
      if (k.kernel == name) return k;
    out.push_back({});
    out.back().kernel = name;
    return out.back();
  };
  std::string current;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      current = m[1];
      get(current);
    } else if (std::regex_search(line, m, props)) {
      props_of = m[1];
    } else if (std::regex_search(line, m, frame)) {
      // Properties of device functions (not entries) are skipped.
      for (auto& k : out)
        if (k.kernel == props_of) {
          k.stack_frame_bytes = std::stoi(m[1]);
          k.spill_store_bytes = std::stoi(m[2]);
          k.spill_load_bytes = std::stoi(m[3]);
        }
    } else if (std::regex_search(line, m, used) && !current.empty()) {
      ResourceUsage& k = get(current);
      k.regs_per_thread = std::stoi(m[1]);
      std::smatch s;
      if (std::regex_search(line, s, smem)) k.smem_bytes = std::stoi(s[1]);
    }
  }
  return out;
}

std::string cache_dir() {
  if (const char* d = std::getenv("FUSEPLAN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/fuseplan";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/fuseplan";
  return ".fuseplan-cache";
}

namespace {

nlohmann::json to_json(const std::vector<ResourceUsage>& ks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& k : ks)
    a.push_back({{"kernel", k.kernel}, {"regs_per_thread", k.regs_per_thread},
                 {"spill_store_bytes", k.spill_store_bytes}, {"spill_load_bytes", k.spill_load_bytes},
                 {"stack_frame_bytes", k.stack_frame_bytes}, {"smem_bytes", k.smem_bytes}});
  return a;
}

std::vector<ResourceUsage> from_json(const nlohmann::json& a) {
  std::vector<ResourceUsage> out;
  for (const auto& j : a) {
    ResourceUsage k;
    k.kernel = j.at("kernel");
    k.regs_per_thread = j.at("regs_per_thread");
    k.spill_store_bytes = j.at("spill_store_bytes");
    k.spill_load_bytes = j.at("spill_load_bytes");
    k.stack_frame_bytes = j.at("stack_frame_bytes");
    k.smem_bytes = j.at("smem_bytes");
    out.push_back(k);
  }
  return out;
}

std::vector<std::string> option_list(const NvrtcOptions& o) {
  std::vector<std::string> v = {"--gpu-architecture=" + o.arch, "--std=c++17", "--ptxas-options=-v",
                                o.allow_fma ? "-fmad=true" : "-fmad=false"};
  if (o.max_regs > 0) v.push_back("--maxrregcount=" + std::to_string(o.max_regs));
  return v;
}

}  // namespace

#ifdef FUSEPLAN_HAVE_CUDA

std::string nvrtc_version() {
  int ma = 0, mi = 0;
  nvrtcVersion(&ma, &mi);
  return std::to_string(ma) + "." + std::to_string(mi);
}

void check_nvrtc_arch(const std::string& arch) {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return;  // unknown: let compile_cuda decide
  std::vector<int> archs(static_cast<std::size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return;
  std::string digits;
  for (std::size_t i = 3; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i) digits += arch[i];
  const int want = digits.empty() || digits.size() > 4 ? -1 : std::stoi(digits);
  std::string list;
  for (int a : archs) {
    if (a == want) return;
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
  }
  throw Error("NVRTC " + nvrtc_version() + " cannot target " + arch + " (supported: " + list + ")");
}

CompileResult compile_cuda(const std::string& source, const std::string& name, const NvrtcOptions& o) {
  if (o.arch.rfind("sm_", 0) != 0)
    throw Error("cannot compile CUDA for architecture '" + o.arch + "' (expected sm_XX from the device config)");
  auto opts = option_list(o);
  std::string keytext = "nvrtc " + nvrtc_version() + "\n";
  for (const auto& s : opts) keytext += s + "\n";
  CompileResult r;
  r.hash = sha256_hex(keytext + source);
  fs::path dir = fs::path(o.cache_dir.empty() ? cache_dir() : o.cache_dir) / "nvrtc";
  fs::path cubin = dir / (r.hash + ".cubin"), meta = dir / (r.hash + ".json"), logp = dir / (r.hash + ".log");
  if (o.use_cache && fs::exists(cubin) && fs::exists(meta)) {
    try {
      auto j = nlohmann::json::parse(read_file(meta.string()));
      r.kernels = from_json(j.at("kernels"));
      r.log = j.value("log", "");
      r.cubin = read_file(cubin.string());
      r.cache_hit = true;
      return r;
    } catch (const std::exception&) {
      // A corrupt entry is recompiled and overwritten.
    }
  }
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    throw Error("NVRTC could not create a program for " + name);
  std::vector<const char*> argv;
  for (const auto& s : opts) argv.push_back(s.c_str());
  nvrtcResult rc = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  std::size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  r.log.assign(n, '\0');
  if (n) nvrtcGetProgramLog(prog, r.log.data());
  while (!r.log.empty() && r.log.back() == '\0') r.log.pop_back();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (rc != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    std::string first = "unknown error";
    std::istringstream in(r.log);
    for (std::string l; std::getline(in, l);)
      if (l.find("error") != std::string::npos) {
        first = l;
        break;
      }
    std::string where = "(no cache directory)";
    if (!ec) {
      write_file_atomic(logp.string(), r.log + "\n---- source ----\n" + source);
      where = logp.string();
    }
    throw Error("NVRTC failed to compile " + name + " for " + o.arch + ": " + first + " (log: " + where + ")");
  }
  std::size_t cn = 0;
  nvrtcGetCUBINSize(prog, &cn);
  r.cubin.assign(cn, '\0');
  if (cn) nvrtcGetCUBIN(prog, r.cubin.data());
  nvrtcDestroyProgram(&prog);
  r.kernels = parse_ptxas_log(r.log);
  if (o.use_cache && !ec) {
    write_file_atomic(cubin.string(), r.cubin);
    nlohmann::json j = {{"name", name}, {"arch", o.arch}, {"options", opts}, {"kernels", to_json(r.kernels)},
                        {"log", r.log}};
    write_file_atomic(meta.string(), j.dump(2));
  }
  return r;
}

#else

std::string nvrtc_version() { return "none"; }

void check_nvrtc_arch(const std::string&) {}

CompileResult compile_cuda(const std::string&, const std::string& name, const NvrtcOptions&) {
  throw Error("cannot compile " + name + ": fuseplan was built without the CUDA toolkit (NVRTC)");
}

#endif

}  // namespace fuseplan::cuda
