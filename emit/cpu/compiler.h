// Compiles a generated translation unit with the system C++ compiler
// (argument vector, no shell), caches the shared object by source hash and
// loads it with dlopen.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace fuseplan::cpu {

/// A loaded kernel library; dlclose on destruction.
class KernelLibrary {
 public:
  KernelLibrary(void* handle, std::string so_path, std::string src_path, bool cache_hit, double compile_ms);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  using KernelFn = void (*)(void**);
  /// Throws Error naming the symbol when absent.
  KernelFn kernel(const std::string& name) const;

  const std::string& so_path() const { return so_path_; }
  const std::string& source_path() const { return src_path_; }
  bool cache_hit() const { return cache_hit_; }
  double compile_ms() const { return compile_ms_; }  // 0 on a cache hit

 private:
  void* handle_;
  std::string so_path_, src_path_;
  bool cache_hit_;
  double compile_ms_;
};

/// $FUSEPLAN_CACHE_DIR, else $XDG_CACHE_HOME/fuseplan, else ~/.cache/fuseplan
/// (created when missing).
std::string kernel_cache_dir();

/// The compiler's argument vector: $FUSEPLAN_CXX (default "c++") -O3
/// -march=native -ffp-contract=off -fno-fast-math -fno-math-errno -fopenmp
/// -shared -fPIC ... (-fno-math-errno: a Sqrt loop vectorises, vsqrtps, where
/// with errno GCC emits vsqrtss and a call to sqrtf for negative inputs per
/// element; sqrt is correctly rounded either way, and nothing reads errno).
std::vector<std::string> compiler_command(const std::string& src, const std::string& out);

/// Polled while something long runs (a compile, a measured plan); true = stop.
using CancelCheck = std::function<bool()>;

/// Thrown when a CancelCheck turned true: the compile or run was abandoned
/// (the compiler's process group killed, nothing half-written left behind).
class Cancelled : public Error {
 public:
  Cancelled() : Error("interrupted") {}
};

/// Compiles `source` unless <cache>/<hash>.so exists, then loads it. A
/// generated unit (emit/cpu/cpp_printer.h) is compiled in parts of
/// consecutive group kernels (about 24 KB of kernel text each), two
/// compilers at a time, each part cached as <cache>/<hash>.o by its own
/// text, then linked: a plan that differs from a compiled one after group k
/// recompiles only the parts from k's on. Other sources compile whole. A
/// compiler failure throws Error: "compiling generated kernels failed
/// (exit N): <first error line> (log: PATH)". The compiler runs in its own
/// process group; `cancelled` is polled every 20 ms while it runs, and when it
/// turns true the group is killed and Cancelled is thrown (a compiler killed
/// by a signal while `cancelled` is true also throws Cancelled).
std::unique_ptr<KernelLibrary> compile_and_load(const std::string& source, const CancelCheck& cancelled = {});

}  // namespace fuseplan::cpu
