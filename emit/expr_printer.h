// Backend-neutral inline-expression printer, shared by the CPU printer
// (emit/cpu/cpp_printer.cpp) and the CUDA printer (emit/cuda/cuda_expr.cpp):
// turns a primitive of a kernel plan at output coordinates into a C
// expression (valid C++ and CUDA C++), inlining producers that are neither
// stages nor loaded, memoised per scope. Covers scalar ops (the shared
// scalar-op table), Where, Cast, the affine/broadcast index ops, Concat, Pad,
// Gather/GatherElements, OneHot and Quantize/DequantizeLinear. A backend
// says where a line goes (`line`), how a buffer element is read (`load`) and,
// when it needs more than "load outside the group or a stage, else compute",
// how a value not in the memo is produced (`value`).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "emit/kernel_plan.h"

namespace fuseplan {

class InlineExprPrinter {
 public:
  virtual ~InlineExprPrinter() = default;

 protected:
  /// `backend` names the backend in errors ("CPU", "CUDA").
  InlineExprPrinter(const Graph& g, const KernelPlan& kp, std::string backend)
      : g_(g), kp_(kp), backend_(std::move(backend)) {}

  const Graph& g_;
  const KernelPlan& kp_;
  std::string backend_;
  std::vector<std::map<std::string, std::string>> memo_;  // one scope per open loop
  int tmp_ = 0, ind_ = 0;

  /// Appends one line of code at indentation ind_.
  virtual void line(const std::string& s) = 0;
  /// Expression reading n's buffer at coordinates c.
  virtual std::string load(NodeId n, const Coords& c) = 0;
  /// Value of n at c when not memoised (key = key(n, c)); default: a load
  /// when n is produced outside the group or is a stage, a nested reduction
  /// (nested_reduce) or else computed inline; a nested store is written
  /// right after (store_nested).
  virtual std::string value(NodeId n, const Coords& c, const std::string& key);
  /// Nested reduction n (KernelPlan::nested) at output coordinates c: prints
  /// its reduction loop, in its canonical order, here, and returns the local
  /// holding its value (memoised under key).
  virtual std::string nested_reduce(NodeId n, const Coords& c, const std::string& key) = 0;
  /// Writes value v of nested store n (KernelPlan::is_nested_store) at c.
  virtual void store_nested(NodeId n, const Coords& c, const std::string& v) = 0;

  std::string id(NodeId n) const { return std::to_string(n); }
  std::string ty(NodeId n) const { return c_type(g_.node(n).out.dtype); }
  const std::vector<int64_t>& shape(NodeId n) const { return g_.node(n).out.shape; }
  static int64_t numel(const std::vector<int64_t>& s);
  /// n has a plan buffer (loaded, a materialised stage or a nested store); else kernel-local.
  bool is_global(NodeId n) const;
  void push() { memo_.emplace_back(); }
  void pop() { memo_.pop_back(); }
  std::string key(NodeId n, const Coords& c) const;
  /// Defines a fresh local "v<k>" holding expr and memoises it under key.
  std::string define(NodeId n, const std::string& key, const std::string& expr);
  /// Value of n at coordinates c (memoised per scope).
  std::string val(NodeId n, const Coords& c);
  /// v (the value of n) converted to `want` when n's dtype differs.
  std::string as(DType want, NodeId n, const std::string& v);
  /// Inline expression of n at coordinates c from its operands' values.
  std::string compute(NodeId n, const Coords& c);
  std::string concat(NodeId n, const Coords& c);
  std::string pad(NodeId n, const Coords& c);
};

}  // namespace fuseplan
