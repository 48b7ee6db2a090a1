#include "emit/cpu/compiler.h"
#include "emit/cpu/vmath.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

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
          "-fno-math-errno", "-fopenmp", "-shared", "-fPIC", "-w", "-o", out, src};
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

// Starts argv with stdout/stderr to `log`, in its own process group (so a
// cancel can kill the driver with its cc1plus and as); -1: fork failed.
pid_t start_process(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // the driver does not outlive a killed fuseplan
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);  // both sides, so the group exists before either relies on it
  return pid;
}

void kill_and_reap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
}

// Runs every argv (its output to the matching log), at most `parallel` at
// once, and returns their exit statuses (-1: could not start; 128+N: killed
// by signal N). `cancelled` is polled every 20 ms; when it turns true every
// running process group is killed and Cancelled thrown.
std::vector<int> run_processes(const std::vector<std::vector<std::string>>& argvs, const std::vector<std::string>& logs,
                               int parallel, const CancelCheck& cancelled) {
  std::vector<int> rc(argvs.size(), -1);
  std::vector<std::pair<pid_t, std::size_t>> running;
  std::size_t next = 0;
  auto kill_all = [&] {
    for (auto& [pid, i] : running) kill_and_reap(pid);
    running.clear();
  };
  while (next < argvs.size() || !running.empty()) {
    while (next < argvs.size() && static_cast<int>(running.size()) < std::max(parallel, 1)) {
      pid_t pid = start_process(argvs[next], logs[next]);
      if (pid > 0) running.push_back({pid, next});
      ++next;
    }
    bool reaped = false;
    for (std::size_t k = 0; k < running.size();) {
      int status = 0;
      pid_t r = waitpid(running[k].first, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        ++k;
        continue;
      }
      const std::size_t i = running[k].second;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      reaped = true;
      if (r < 0) continue;  // rc stays -1
      if (WIFSIGNALED(status) && cancelled && cancelled()) {
        kill_all();
        throw Cancelled();
      }
      rc[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (cancelled && cancelled()) {
      kill_all();
      throw Cancelled();
    }
    if (!reaped && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return rc;
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

// A generated translation unit cut into the shared head (fprt runtime and
// headers), fp_set_num_threads, and one text per group kernel. Every group
// kernel is self-contained (extern "C" fp_group_<i>, everything it calls is
// inline in fprt), so any set of them compiles on its own with the head.
struct SplitSource {
  std::string head, threads_fn;
  std::vector<std::string> groups;
};

std::optional<SplitSource> split_source(const std::string& s) {
  const std::string threads = "extern \"C\" void fp_set_num_threads(";
  const std::string group = "\n// kernel of group ";
  const std::size_t t = s.find(threads);
  if (t == std::string::npos) return std::nullopt;
  std::vector<std::size_t> starts;
  for (std::size_t p = s.find(group, t); p != std::string::npos; p = s.find(group, p + 1)) starts.push_back(p + 1);
  if (starts.empty()) return std::nullopt;
  SplitSource out;
  out.head = s.substr(0, t);
  // The title comment names the model, strategy and device (the device's
  // name changes when it is recalibrated): not part of any kernel.
  if (out.head.rfind("// fuseplan CPU kernels:", 0) == 0) out.head.erase(0, out.head.find('\n') + 1);
  out.threads_fn = "extern \"C\" __attribute__((weak)) void fp_set_num_threads(" +
                   s.substr(t + threads.size(), starts[0] - t - threads.size());
  for (std::size_t i = 0; i < starts.size(); ++i) {
    std::string g = s.substr(starts[i], (i + 1 < starts.size() ? starts[i + 1] : s.size()) - starts[i]);
    // Index-free: "// kernel of group 12 ..." and "fp_group_12(" name the
    // position, not the kernel; the same kernel at another position (a later
    // round, a peer plan) must hash the same.
    const std::string tag = "// kernel of group " + std::to_string(i);
    const std::string def = "extern \"C\" void fp_group_" + std::to_string(i) + "(";
    const std::size_t d = g.find(def);
    if (g.compare(0, tag.size(), tag) != 0 || d == std::string::npos) return std::nullopt;
    g.replace(d, def.size(), "extern \"C\" __attribute__((weak)) void fp_k_@(");
    g.replace(0, tag.size(), "// kernel");
    out.groups.push_back(std::move(g));
  }
  return out;
}

// New kernels are compiled in parts of about this many bytes of kernel text
// ($FUSEPLAN_CPU_PART_BYTES overrides), two compilers at once. The head
// (~25 KB, mostly templates) is parsed again in every part: ~0.3 s of CPU
// each, against ~3 s to compile a part's kernels at -O3.
constexpr std::size_t kPartBytes = 24 * 1024;
constexpr int kParallelCompiles = 2;

std::size_t part_bytes() {
  if (const char* v = std::getenv("FUSEPLAN_CPU_PART_BYTES"); v && *v) {
    const long long n = std::atoll(v);
    if (n > 0) return static_cast<std::size_t>(n);
  }
  return kPartBytes;
}

std::vector<std::string> object_command(const std::string& src, const std::string& out) {
  std::vector<std::string> argv = compiler_command(src, out);
  // Same flags, compile only: "-shared" becomes "-c".
  for (auto& a : argv)
    if (a == "-shared") a = "-c";
  return argv;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error("cannot write generated source to " + path.string());
}

std::string read_text(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The compiler, as messages name it: "'c++'" or "'X' (FUSEPLAN_CXX)".
std::string compiler_name() {
  const char* cxx = std::getenv("FUSEPLAN_CXX");
  return "'" + compiler_command("", "")[0] + "'" + (cxx && *cxx ? " (FUSEPLAN_CXX)" : "");
}

// A compiler that cannot be run, fails, or succeeds without writing its
// output is the environment's fault, not the model's: EnvironmentError (exit 3).
[[noreturn]] void compile_failed(int rc, const fs::path& log) {
  if (rc == 127 || rc == -1)
    throw EnvironmentError("cannot run the C++ compiler " + compiler_name() + " (log: " + log.string() + ")");
  const std::string why = first_error_line(log.string());
  throw EnvironmentError("the C++ compiler " + compiler_name() + " failed on the generated kernels (exit " +
                         std::to_string(rc) + "): " + (why.empty() ? "it printed nothing" : why) +
                         " (log: " + log.string() + ")");
}

// After a compiler exit status 0: the output must be there.
void check_compiled(const fs::path& out, const fs::path& log) {
  std::error_code ec;
  if (!fs::is_regular_file(out, ec))
    throw EnvironmentError("the C++ compiler " + compiler_name() + " exited with status 0 but wrote no '" +
                           out.filename().string() + "': is it a C++ compiler? (log: " + log.string() + ")");
}

// Kernel-level cache: every group kernel is compiled as a weak function
// fp_k_<hash of its index-free text>, new ones in parts (<hash>.o), and
// <kernel hash>.kobj names the object holding it. The library links the
// objects holding the plan's kernels and binds fp_group_<i> to them
// (--defsym), so a round or a peer plan that shares most kernels with one
// already compiled compiles only its new kernels. Same compiler, same flags,
// same kernel text: the same machine code as the whole unit.
void compile_kernels(const fs::path& dir, const std::string& key, const SplitSource& sp, const fs::path& so_out,
                     const fs::path& link_log, const std::string& tag, const CancelCheck& cancelled) {
  const std::string head_key = key + "\n" + source_hash(sp.head + sp.threads_fn);
  std::vector<std::string> names(sp.groups.size());       // fp_k_<hash> per group
  std::map<std::string, std::string> object_of;           // kernel name -> cached object
  std::vector<std::pair<std::string, std::string>> fresh;  // (name, text) to compile
  for (std::size_t i = 0; i < sp.groups.size(); ++i) {
    const std::string h = source_hash(head_key + "\n" + sp.groups[i]);
    names[i] = "fp_k_" + h;
    if (object_of.count(names[i])) continue;
    const fs::path idx = dir / (h + ".kobj");
    if (fs::exists(idx)) {
      const fs::path obj = dir / read_text(idx);
      if (fs::exists(obj)) {
        object_of[names[i]] = obj.string();
        continue;
      }
    }
    std::string text = sp.groups[i];
    text.replace(text.find("fp_k_@("), 7, names[i] + "(");
    object_of[names[i]] = "";
    fresh.push_back({names[i], std::move(text)});
  }
  // Parts of consecutive new kernels.
  struct Part {
    std::string text;
    std::vector<std::string> kernels;
  };
  std::vector<Part> parts;
  const std::size_t cut = part_bytes();
  std::size_t body = cut;
  for (auto& [name, text] : fresh) {
    if (body >= cut) {
      parts.push_back({sp.head + sp.threads_fn, {}});
      body = 0;
    }
    parts.back().text += text;
    parts.back().kernels.push_back(name);
    body += text.size();
  }
  std::vector<std::vector<std::string>> jobs;
  std::vector<std::string> logs;
  std::vector<std::pair<fs::path, fs::path>> renames;  // tmp object -> cached object
  std::vector<std::string> part_objects;
  for (const auto& part : parts) {
    const std::string h = source_hash(key + "-c\n" + part.text);
    const fs::path obj = dir / (h + ".o");
    part_objects.push_back(obj.string());
    if (fs::exists(obj)) continue;
    const fs::path src = dir / (h + ".cpp"), tmp_src = dir / (h + tag + ".cpp"), tmp_obj = dir / (h + tag + ".o");
    write_text(tmp_src, part.text);
    fs::rename(tmp_src, src);
    jobs.push_back(object_command(src.string(), tmp_obj.string()));
    logs.push_back((dir / (h + ".log")).string());
    renames.push_back({tmp_obj, obj});
  }
  auto remove_tmp = [&] {
    std::error_code ec;
    for (auto& [tmp, obj] : renames) fs::remove(tmp, ec);
  };
  std::vector<int> rc;
  try {
    rc = run_processes(jobs, logs, kParallelCompiles, cancelled);
  } catch (const Cancelled&) {
    remove_tmp();
    throw;
  }
  for (std::size_t i = 0; i < rc.size(); ++i)
    if (rc[i] != 0) {
      remove_tmp();
      compile_failed(rc[i], logs[i]);
    }
  for (std::size_t i = 0; i < renames.size(); ++i) {
    if (std::error_code ec; !fs::is_regular_file(renames[i].first, ec)) remove_tmp();
    check_compiled(renames[i].first, logs[i]);
  }
  for (auto& [tmp, obj] : renames) fs::rename(tmp, obj);  // atomic, as the .so
  for (std::size_t p = 0; p < parts.size(); ++p)
    for (const auto& k : parts[p].kernels) {
      object_of[k] = part_objects[p];
      const fs::path idx = dir / (k.substr(5) + ".kobj"), tmp_idx = dir / (k.substr(5) + tag + ".kobj");
      write_text(tmp_idx, fs::path(part_objects[p]).filename().string());
      fs::rename(tmp_idx, idx);
    }
  // Link: each object once, fp_group_<i> bound to its kernel.
  const auto cc = compiler_command("", "");
  std::vector<std::string> argv = {cc[0], "-fopenmp", "-shared", "-fPIC", "-o", so_out.string()};
  std::vector<std::string> objs;
  for (const auto& n : names)
    if (std::find(objs.begin(), objs.end(), object_of[n]) == objs.end()) objs.push_back(object_of[n]);
  argv.insert(argv.end(), objs.begin(), objs.end());
  for (std::size_t i = 0; i < names.size(); ++i)
    argv.push_back("-Wl,--defsym=fp_group_" + std::to_string(i) + "=" + names[i]);
  const int lrc = run_processes({argv}, {link_log.string()}, 1, cancelled)[0];
  if (lrc != 0) compile_failed(lrc, link_log);
}

}  // namespace

std::unique_ptr<KernelLibrary> compile_and_load(const std::string& source, const CancelCheck& cancelled) {
  fs::path dir = kernel_cache_dir();
  auto argv0 = compiler_command("SRC", "OUT");
  // The key names the transcendental family too: the kernels call it
  // (libfuseplan_vmath, loaded with this binary), and it fixes their bits.
  std::string key = std::string(fp_vmath_family()) + "\n";
  for (const auto& a : argv0) key += a + " ";
  std::string hash = source_hash(key + "\n" + source);
  fs::path src = dir / (hash + ".cpp"), so = dir / (hash + ".so"), log = dir / (hash + ".log");
  bool hit = fs::exists(so);
  double ms = 0;
  if (!hit) {
    std::string tag = "." + std::to_string(getpid()) + ".tmp";
    fs::path tmp_src = dir / (hash + tag + ".cpp"), tmp_so = dir / (hash + tag + ".so");
    write_text(tmp_src, source);
    fs::rename(tmp_src, src);  // the whole unit stays readable (RunResult::source_path)
    auto t0 = std::chrono::steady_clock::now();
    auto cleanup = [&] {
      std::error_code ec;
      fs::remove(tmp_so, ec);
    };
    try {
      if (auto sp = split_source(source)) {
        compile_kernels(dir, key, *sp, tmp_so, log, tag, cancelled);
      } else {
        const int rc = run_processes({compiler_command(src.string(), tmp_so.string())}, {log.string()}, 1, cancelled)[0];
        if (rc != 0) compile_failed(rc, log);
      }
    } catch (...) {
      cleanup();
      throw;
    }
    check_compiled(tmp_so, log);
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    fs::rename(tmp_so, so);  // atomic: concurrent runs never load a half-written object
  }
  // RTLD_NODELETE: the library pulls in libgomp, whose idle pool threads outlive
  // a parallel region; unloading it under them crashes the next run.
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) throw Error(std::string("cannot load generated kernels: ") + dlerror());
  return std::make_unique<KernelLibrary>(h, so.string(), src.string(), hit, ms);
}

}  // namespace fuseplan::cpu
