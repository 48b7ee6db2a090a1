#include "emit/cpu/compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/graph.h"

namespace fuseplan::cpu {
namespace fs = std::filesystem;

KernelLibrary::KernelLibrary(void* handle, std::string so_path, std::string src_path, bool cache_hit, double ms)
    : handle_(handle), so_path_(std::move(so_path)), src_path_(std::move(src_path)), cache_hit_(cache_hit),
      compile_ms_(ms) {}

KernelLibrary::~KernelLibrary() {
  if (handle_) dlclose(handle_);
}

KernelLibrary::KernelFn KernelLibrary::kernel(const std::string& name) const {
  void* f = dlsym(handle_, name.c_str());
  if (!f) throw Error("kernel '" + name + "' missing from " + so_path_);
  return reinterpret_cast<KernelFn>(f);
}

std::string kernel_cache_dir() {
  fs::path dir;
  if (const char* d = std::getenv("FUSEPLAN_CACHE_DIR"); d && *d) dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = fs::path(x) / "fuseplan";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = fs::path(h) / ".cache" / "fuseplan";
  else dir = fs::temp_directory_path() / "fuseplan-cache";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create kernel cache directory " + dir.string() + ": " + ec.message());
  return dir.string();
}

std::vector<std::string> compiler_command(const std::string& src, const std::string& out) {
  const char* cxx = std::getenv("FUSEPLAN_CXX");
  return {cxx && *cxx ? cxx : "c++", "-std=c++20", "-O3", "-march=native", "-ffp-contract=off", "-fno-fast-math",
          "-fopenmp", "-shared", "-fPIC", "-w", "-o", out, src};
}

namespace {

std::string source_hash(const std::string& s) {  // two FNV-1a 64 passes with different offsets: 128 bits
  uint64_t h1 = 1469598103934665603ull, h2 = 0x9e3779b97f4a7c15ull;
  for (unsigned char c : s) {
    h1 = (h1 ^ c) * 1099511628211ull;
    h2 = (h2 ^ c) * 0x100000001b3ull + 0x2545F4914F6CDD1Dull;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return buf;
}

// Runs argv with stdout/stderr to `log`; returns the exit status (-1: could not start).
int run_process(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string first_error_line(const std::string& log) {
  std::ifstream f(log);
  std::string line, first;
  while (std::getline(f, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("error") != std::string::npos) return line.substr(0, 300);
  }
  return first.substr(0, 300);
}

}  // namespace

std::unique_ptr<KernelLibrary> compile_and_load(const std::string& source) {
  fs::path dir = kernel_cache_dir();
  auto argv0 = compiler_command("SRC", "OUT");
  std::string key;
  for (const auto& a : argv0) key += a + " ";
  std::string hash = source_hash(key + "\n" + source);
  fs::path src = dir / (hash + ".cpp"), so = dir / (hash + ".so"), log = dir / (hash + ".log");
  bool hit = fs::exists(so);
  double ms = 0;
  if (!hit) {
    std::string tag = "." + std::to_string(getpid()) + ".tmp";
    fs::path tmp_src = dir / (hash + tag + ".cpp"), tmp_so = dir / (hash + tag + ".so");
    {
      std::ofstream f(tmp_src, std::ios::binary);
      f << source;
      if (!f) throw Error("cannot write generated source to " + tmp_src.string());
    }
    fs::rename(tmp_src, src);
    auto t0 = std::chrono::steady_clock::now();
    int rc = run_process(compiler_command(src.string(), tmp_so.string()), log.string());
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      std::error_code ec;
      fs::remove(tmp_so, ec);
      if (rc == 127 || rc == -1)
        throw Error("cannot run the C++ compiler '" + compiler_command("", "")[0] + "' (log: " + log.string() + ")");
      throw Error("compiling generated kernels failed (exit " + std::to_string(rc) + "): " +
                  first_error_line(log.string()) + " (log: " + log.string() + ")");
    }
    fs::rename(tmp_so, so);  // atomic: concurrent runs never load a half-written object
  }
  // RTLD_NODELETE: the library pulls in libgomp, whose idle pool threads outlive
  // a parallel region; unloading it under them crashes the next run.
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) throw Error(std::string("cannot load generated kernels: ") + dlerror());
  return std::make_unique<KernelLibrary>(h, so.string(), src.string(), hit, ms);
}

}  // namespace fuseplan::cpu
