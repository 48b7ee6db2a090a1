// Internal to emit/cuda: the expression half of the CUDA printer. Turns a
// primitive at coordinates into a CUDA C++ expression (inlining producers,
// memoised per scope), loads buffers, and prints the per-element bodies of
// reductions and of GEMM / direct convolution / pooling in the canonical
// order of the CPU runtime (k ascending from 0, no FMA).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "emit/expr_printer.h"
#include "emit/kernel_plan.h"

namespace fuseplan::cuda {

enum class PhaseKind { elem, block, row };

/// One __device__ body: a grid-stride loop over the phase's iteration space
/// taking a (virtual) block index so a horizontal kernel can dispatch to it.
struct PhaseCode {
  std::string name, text, desc;
  PhaseKind kind = PhaseKind::elem;
  int64_t grid = 1;
  std::vector<NodeId> params;  // sorted
  std::vector<bool> written;   // per param
};

/// The shared inline-expression printer (emit/expr_printer.h) plus what the
/// CUDA kernels add: parameter/stage-read bookkeeping per phase, shared-memory
/// rows, float4 lanes, and the reduction / library bodies.
class ExprPrinter : public InlineExprPrinter {
 public:
  ExprPrinter(const Graph& g, const KernelPlan& kp) : InlineExprPrinter(g, kp, "CUDA") {}

 protected:
  int phase_idx_ = 0;
  std::string* out_str_ = nullptr;
  std::map<NodeId, bool> params_;            // buffer -> written (this phase)
  std::map<NodeId, std::set<int>> reads_;    // stage buffer -> phases that load it
  std::set<NodeId> phase_stages_;            // stages computed in the current phase
  bool violation_ = false;                   // a phase stage was read at other coordinates
  std::string vec_lane_;                     // float4 component when printing a vec4 lane
  bool row_smem_ = true;

  void reset() {
    memo_.clear();
    tmp_ = 0;
    reads_.clear();
  }
  void begin_phase(int idx) {
    phase_idx_ = idx;
    params_.clear();
  }
  void line(const std::string& s) override { *out_str_ += std::string(2 * ind_, ' ') + s + "\n"; }
  std::string buf(NodeId n) const;
  std::string offset(NodeId n, const Coords& c) const;
  void note_param(NodeId n, bool written);
  std::string param_decl(NodeId n, bool written) const;
  std::string load(NodeId n, const Coords& c) override;
  /// float4 lanes of loaded tensors; flags a phase stage read off its own coordinates.
  std::string value(NodeId n, const Coords& c, const std::string& key) override;
  /// Names prefix<from>.. for the dims of s (dims of size 1 get "0").
  Coords coord_vars(const std::vector<int64_t>& s, const std::string& prefix, int from = 0) const;
  /// "const int64_t i2 = (lin / 8) % 4;" for dim d (empty comment for literal coords).
  std::string coord_def(const std::vector<int64_t>& s, const Coords& c, std::size_t d, const std::string& lin) const;
  /// Reduction over the innermost input axis (block strategy) or not (column).
  bool is_column_reduce(NodeId n) const;
  std::string reduce_init(NodeId n) const;
  std::string reduce_step(NodeId n, const std::string& acc, const std::string& v) const;
  /// Block strategy: all threads stride over the reduced elements; result in every thread.
  /// The outer reduction of a nest (KernelPlan::nest_outer) loops in every
  /// thread and folds element r in thread r % B: the same order.
  std::string reduce_block(NodeId n, const Coords& c, const std::string& smem = "");
  /// A nested reduction: reduce_block inside the outer one's loop.
  std::string nested_reduce(NodeId n, const Coords& c, const std::string& key) override;
  /// Written by thread 0 (every thread holds the value).
  void store_nested(NodeId n, const Coords& c, const std::string& v) override;
  /// Column strategy: this thread folds all reduced elements in order.
  std::string reduce_seq(NodeId n, const Coords& c);
  /// Per-output-element MatMul / Conv / pooling value.
  std::string library_at(NodeId n, const Coords& c);
  Coords reduce_input_coords(NodeId n, const Coords& c, const Coords& rc) const;
};

}  // namespace fuseplan::cuda
