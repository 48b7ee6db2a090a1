// Tensor values for running a model: the Tensor struct, initializer data or
// seeded random weights and inputs, and a tiny .npy reader/writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace fuseplan {

/// Allocates on 64-byte (cache-line) boundaries, as the kernels' vector loads
/// and the STREAM probe expect: glibc's malloc puts large blocks 16 bytes past
/// a line, which split half of the 32-byte accesses (measured 1.09-1.15x
/// slower on bias+relu, bench_cpu_backend --part a).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <class U> CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <class U> bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
};

/// A dense row-major tensor; `data` holds numel × dtype_bytes bytes,
/// starting on a 64-byte boundary.
struct Tensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<std::byte, CacheLineAllocator<std::byte>> data;

  Tensor() = default;
  Tensor(DType t, std::vector<int64_t> s);
  int64_t numel() const;
  template <class T> T* ptr() { return reinterpret_cast<T*>(data.data()); }
  template <class T> const T* ptr() const { return reinterpret_cast<const T*>(data.data()); }
  /// Element i converted to double (any supported dtype).
  double get(int64_t i) const;
};

/// Values of every source primitive (inputs, weights, constants), keyed by NodeId.
/// Initializer data is used when present; otherwise weights are uniform in
/// [-1,1]/sqrt(fan_in) seeded by the tensor name, float inputs uniform in
/// [-1,1], int64 inputs uniform within the range their Gather/GatherElements/
/// OneHot consumers accept, bool inputs fair coin flips. `inputs` (from
/// --inputs .npy files, keyed by tensor name) override the generated values
/// of data inputs and weight placeholders (feedable); a dtype or shape
/// mismatch throws Error.
std::map<NodeId, Tensor> make_source_data(const Graph& g, const std::map<std::string, Tensor>& inputs = {});

/// A source whose values --inputs may give: a data input, or a weight
/// placeholder (a graph input the importer treats as a weight and that has
/// no initializer data, graph/README.md).
bool feedable(const Primitive& p);
/// Throws Error unless `name` is a feedable source of g, saying what it is
/// instead (no such tensor, a weight or constant with data, a computed tensor).
void check_feedable(const Graph& g, const std::string& name);

/// Reads a .npy file (format v1/v2/v3, little-endian, C order; dtypes <f4,
/// <i8, |b1, |i1, |u1). Throws Error (one line naming the file) otherwise.
Tensor read_npy(const std::string& path);
/// Writes a v1 .npy file. Throws Error when the file cannot be written.
void write_npy(const std::string& path, const Tensor& t);
/// `spec` is a directory (each NAME.npy is graph input NAME) or a list of
/// NAME=FILE.npy separated by commas, each NAME once.
std::map<std::string, Tensor> load_inputs(const std::string& spec);

}  // namespace fuseplan
