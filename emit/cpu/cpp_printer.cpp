#include "emit/cpu/cpp_printer.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "emit/expr_printer.h"
#include "graph/layout.h"
#include "graph/op_attrs.h"

namespace fuseplan::cpu {

std::string comment_escape(std::string_view s) {
  static const std::string_view ok = " _.:,=+#@()[]<>-/";
  std::string out;
  for (unsigned char ch : s) {
    if (out.size() >= 160) { out += "..."; break; }
    if (std::isalnum(ch) || ok.find(static_cast<char>(ch)) != std::string_view::npos) {
      out += static_cast<char>(ch);
    } else {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

namespace {

// Elements of work above which a loop runs on all threads (below, the fork/join
// costs more than it saves; guessed from ~5 µs OpenMP fork/join on a desktop core).
constexpr int64_t kParallelMinWork = 32768;
// Floats per AVX-512 vector: a loop stage or contraction epilogue whose
// innermost run is shorter runs one flat loop instead (coalesced_loops,
// print_epilogue_lambda).
constexpr int64_t kVectorRun = 16;
// Bytes from which a stored stage that is a strided view of one buffer
// (strided_view) runs as one library copy (fprt::copy_view, a oneDNN
// reorder) rather than a loop. Measured on one Zen 4 thread, a warm
// [4,R,64] -> [4,64,R] transpose, oneDNN 2.6's reorder against the loop
// this printer emits: 0.41 against 0.39 us at 4 KiB, 0.60 against 1.29 at
// 16 KiB, 2.96 against 5.04 at 64 KiB; this table's call adds its lock and
// key (~0.3 us), so the library takes over from 16 KiB.
constexpr int64_t kViewCopyMinBytes = 16384;

std::string shape_array(const std::vector<int64_t>& s) {
  std::string a = "{";
  for (std::size_t i = 0; i < s.size(); ++i) a += (i ? "," : "") + std::to_string(s[i]);
  return a + (s.empty() ? "0}" : "}");
}

bool g_tile_epilogue = true;

class KernelPrinter : public InlineExprPrinter {
 public:
  KernelPrinter(const Graph& g, const KernelPlan& kp, const Layouts& layouts, std::ostringstream& os)
      : InlineExprPrinter(g, kp, "CPU"), os_(os), lay_(layouts) {
    if (g_tile_epilogue) find_tile_epilogue();
  }

  void print() {
    line("// kernel of group " + std::to_string(kp_.group_id) + (kp_.row_dims ? " (row-resident, " +
         std::to_string(kp_.row_dims) + " row dims)" : "") + (epi_lib_ != kNoNode ? " (epilogue in the contraction call)" : ""));
    for (const Stage& s : kp_.stages)
      line("//   stage " + std::string(g_.node(s.node).op) + " '" + comment_escape(g_.node(s.node).name) + "'" +
           (s.global ? " -> buffer" : " -> scratch"));
    line("extern \"C\" void " + kp_.fn_name + "(void** b) {");
    ++ind_;
    // A bool buffer is read through uint8_t (same bytes, 0 or 1): GCC 12 left
    // the OpenMP-collapsed loop nests that load `bool` scalar ("no vectype"),
    // so a Where on an attention mask ran scalar.
    for (NodeId n : kp_.loads) {
      const std::string lt = g_.node(n).out.dtype == DType::boolean ? "uint8_t" : ty(n);
      line("const " + lt + "* __restrict t" + id(n) + " = (const " + lt + "*)b[" + id(n) + "];");
    }
    for (NodeId n : kp_.stores) line(ty(n) + "* __restrict t" + id(n) + " = (" + ty(n) + "*)b[" + id(n) + "];");
    if (kp_.row_dims > 0) print_rows();
    else print_flat();
    --ind_;
    line("}");
    line("");
  }

 private:
  std::ostringstream& os_;
  const Layouts& lay_;
  const Stage* current_ = nullptr;
  // Channel coordinates "(cb*B+ci)" of the blocked loop nest open now, and
  // their block and lane loop variables: a blocked tensor read at them is
  // addressed by the variables, without a division.
  std::map<std::string, std::pair<std::string, std::string>> split_;
  // A flat loop's index (coalesced_loops, print_epilogue_lambda) over a
  // whole tensor of `shape`: its coordinates `coords` come from `index` by
  // division; a tensor of that shape read at those coordinates is at offset
  // `index` itself, a contiguous vector load or store.
  struct FlatIndex {
    std::vector<int64_t> shape;
    Coords coords;
    std::string index;
  };
  std::optional<FlatIndex> flat_;
  // Contraction epilogue applied right after the library call
  // (fprt::conv_epilogue / matmul_epilogue): the library stage, the loop
  // stages computed in the epilogue lambda, and the buffer the contraction writes into when it is not
  // materialised (the last epilogue stage's, updated in place) or kNoNode.
  NodeId epi_lib_ = kNoNode, epi_alias_ = kNoNode;
  // The last epilogue stage when it is stored NCHW after a blocked conv
  // whose output is kernel scratch: the epilogue writes it over that
  // scratch in blocked order, and one exact reorder (fprt::unblock) stores
  // it NCHW after the call. A store in NCHW order from the blocked loops
  // put each lane of a vector in another channel plane: 0.6 ms for
  // resnet50_bottleneck's 3.2 MB output on one Zen 4 thread, against
  // 0.08 ms for the reorder.
  NodeId epi_unblock_ = kNoNode;
  std::vector<NodeId> epi_stages_;

  void line(const std::string& s) override { os_ << std::string(2 * ind_, ' ') << s << "\n"; }
  std::string load(NodeId n, const Coords& c) override { return buf(n) + "[" + offset(n, c) + "]"; }
  std::string buf(NodeId n) const {
    if (n == epi_lib_ && epi_alias_ != kNoNode) return "t" + id(epi_alias_);
    return (is_global(n) ? "t" : "s") + id(n);
  }

  // The trailing loop stages of a flat group whose last library stage is a
  // float Conv or MatMul run as the contraction's epilogue (right after the
  // library call, the contraction writing into the epilogue's output buffer
  // and updated in place) when every member that depends on the contraction
  // is a per-element op (scalar op or Cast) of the contraction's shape
  // reading its contraction-dependent operands at the same coordinates: then
  // an element of the epilogue needs exactly the element of the contraction
  // at the same offset. Numerics are unchanged: the same expressions run on
  // the same values.
  void find_tile_epilogue() {
    if (kp_.row_dims > 0 || kp_.stages.empty()) return;
    std::size_t li = kp_.stages.size();
    while (li > 0 && kp_.stages[li - 1].kind == StageKind::loop) --li;
    if (li == 0 || li == kp_.stages.size()) return;
    const Stage& L = kp_.stages[li - 1];
    const Primitive& lp = g_.node(L.node);
    if (L.kind != StageKind::library || !one_of(lp.kind, {Op::Conv, Op::MatMul}) || lp.out.dtype != DType::f32) return;
    const auto& ls = shape(L.node);
    if (ls.empty()) return;
    std::vector<NodeId> order(kp_.members.begin(), kp_.members.end());
    std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return g_.topo_index(a) < g_.topo_index(b); });
    std::set<NodeId> dep = {L.node};
    for (NodeId m : order) {
      if (m == L.node) continue;
      bool reads = false, same = true;
      for (NodeId o : g_.operands(m))
        if (dep.count(o)) {
          reads = true;
          same = same && shape(o) == ls;
        }
      if (!reads) continue;
      const Primitive& p = g_.node(m);
      if (!same || shape(m) != ls || !(traits(p).is_scalar() || p.kind == Op::Cast)) return;
      dep.insert(m);
    }
    std::vector<NodeId> tail;
    for (std::size_t i = li; i < kp_.stages.size(); ++i) {
      if (!dep.count(kp_.stages[i].node)) return;
      tail.push_back(kp_.stages[i].node);
    }
    epi_lib_ = L.node;
    epi_stages_ = tail;
    NodeId last = tail.back();
    // The contraction writes into the last stage's buffer only where both
    // have one layout (graph/layout.h: a Cast of a blocked output is plain).
    if (!L.global && is_global(last) && g_.node(last).out.dtype == DType::f32 &&
        lay_.is_blocked(last) == lay_.is_blocked(L.node))
      epi_alias_ = last;
    if (!L.global && unblocks(last)) epi_unblock_ = last;
  }
  bool in_epilogue(NodeId n) const { return std::find(epi_stages_.begin(), epi_stages_.end(), n) != epi_stages_.end(); }

  // The epilogue as a lambda over a flat run [p, p+len) of the contraction's
  // output (at least kEpilogueMinRun elements, emit/cpu/runtime.h): runs
  // over its trailing dims [t, rank), leading coordinates once per run.
  // The trailing dims coalesce as a loop stage's do (coalescible). Where
  // they still make a run shorter than a vector, the whole output is one
  // run and every coordinate is computed from the flat index: a GEMM
  // output in rows of 2 (distilbert_tiny's FFN) otherwise ran its Erf
  // epilogue in runs of 2, scalar SLEEF calls, 11.8 us; with the flat
  // index its bias is gathered, its output read and written contiguously
  // (flat_), and the Erf is one vector call (2.8 us).
  // epilogue_run: the first dim of the run (t), and whether it is the flat run.
  std::pair<int, bool> epilogue_run(const std::vector<int64_t>& s) const {
    const int r = static_cast<int>(s.size());
    if (r == 0) return {0, false};
    std::vector<uint8_t> breaks(r, 0);
    int t = r - 1;
    bool coalesce = true;
    for (NodeId n : epi_stages_) coalesce = coalesce && shape(n) == s && coalescible(n, n, 0, breaks);
    if (coalesce)
      while (t > 0 && !breaks[t]) --t;
    if (t > 0 && numel(std::vector<int64_t>(s.begin() + t, s.end())) < kVectorRun) return {0, true};
    return {t, false};
  }
  void print_epilogue_lambda() {
    if (lay_.is_blocked(epi_lib_)) return print_blocked_epilogue_lambda();
    const auto& s = shape(epi_lib_);
    const auto [t, flat] = epilogue_run(s);
    const int r = static_cast<int>(s.size());
    const std::string last = std::to_string(numel(std::vector<int64_t>(s.begin() + t, s.end())));
    line("auto epi = [&](int64_t p, const int64_t len) {");
    ++ind_;
    line("const int64_t e = p + len;");
    line("while (p < e) {");
    ++ind_;
    line("const int64_t q = p / " + last + ", w0 = p - q * " + last + ";");
    line("const int64_t run = std::min<int64_t>(" + last + " - w0, e - p);");
    Coords c = delinearise(std::vector<int64_t>(s.begin(), s.begin() + t), "q");
    for (int d = 0; d < t; ++d) {
      if (c[d] == "0") continue;
      line("const int64_t i" + std::to_string(d) + " = " + c[d] + ";");
      c[d] = "i" + std::to_string(d);
    }
    // The run's variable: at its last dim longer than 1, "0" at the others
    // (as coalesced_loops: linear_offset drops dims of size 1), where every
    // read steps 1 or 0 per element; else the flat index of every dim.
    int at = r - 1;
    while (at > t && s[at] == 1) --at;
    const std::string v = flat ? "f" : "i" + std::to_string(at);
    line("#pragma omp simd");  // independent elements, as a loop stage's (open_loops)
    line("for (int64_t " + v + " = w0; " + v + " < w0 + run; ++" + v + ") {");
    ++ind_;
    push();
    if (flat) {
      c = delinearise(s, v);
      flat_ = FlatIndex{s, c, v};
    } else
      for (int d = t; d < r; ++d) c.push_back(d == at ? v : "0");
    for (NodeId n : epi_stages_) {
      line("// " + g_.node(n).op + " '" + comment_escape(g_.node(n).name) + "'");
      std::string x = define(n, key(n, c), compute(n, c));
      line(buf(n) + "[" + offset(n, c) + "] = " + x + ";");
    }
    pop();
    flat_.reset();
    --ind_;
    line("}");
    line("p += run;");
    --ind_;
    line("}");
    --ind_;
    line("};");
  }
  // The epilogue over a contraction output stored blocked: each run is one
  // channel block of one image (conv_epilogue, emit/cpu/runtime.h), walked
  // as (h, w, lane) so the innermost loop is one vector of channels.
  void print_blocked_epilogue_lambda() {
    const auto& s = shape(epi_lib_);
    const int64_t cb = s[1] / lay_.block, plane = s[2] * s[3] * lay_.block;
    line("auto epi = [&](int64_t p, const int64_t) {");
    ++ind_;
    line("const int64_t q = p / " + std::to_string(plane) + ";");
    line("const int64_t i0 = q / " + std::to_string(cb) + ", i1 = q % " + std::to_string(cb) + ";");
    const Coords pc = {"i0", "i1", "i2", "i3", "i4"};
    line("for (int64_t i2 = 0; i2 < " + std::to_string(s[2]) + "; ++i2)");
    line("for (int64_t i3 = 0; i3 < " + std::to_string(s[3]) + "; ++i3)");
    line("#pragma omp simd");
    line("for (int64_t i4 = 0; i4 < " + std::to_string(lay_.block) + "; ++i4) {");
    ++ind_;
    push();
    const Coords c = blocked_loop_coords(pc);
    for (NodeId n : epi_stages_) {
      line("// " + g_.node(n).op + " '" + comment_escape(g_.node(n).name) + "'");
      std::string x = define(n, key(n, c), compute(n, c));
      if (n == epi_unblock_)  // over the contraction's scratch, unblocked after the call
        line(buf(epi_lib_) + "[" + blocked_offset(shape(n), c) + "] = " + x + ";");
      else
        line(buf(n) + "[" + offset(n, c) + "] = " + x + ";");
    }
    pop();
    split_.clear();
    --ind_;
    line("}");
    --ind_;
    line("};");
  }
  // Logical [N, C, H, W] coordinates of a loop nest over a blocked tensor's
  // storage order [N, C/B, H, W, B] (loop variables pc).
  Coords blocked_loop_coords(const Coords& pc) {
    const std::string ch = "(" + pc[1] + "*" + std::to_string(lay_.block) + "+" + pc[4] + ")";
    split_[ch] = {pc[1], pc[4]};
    return {pc[0], ch, pc[2], pc[3]};
  }
  // Offset of logical coordinates c in a blocked tensor of logical shape s.
  std::string blocked_offset(const std::vector<int64_t>& s, const Coords& c) const {
    const std::vector<int64_t> storage = {s[0], s[1] / lay_.block, s[2], s[3], lay_.block};
    auto it = split_.find(c[1]);
    const std::string b = std::to_string(lay_.block);
    if (it != split_.end()) return linear_offset(storage, {c[0], it->second.first, c[2], c[3], it->second.second});
    return linear_offset(storage, {c[0], "(" + c[1] + ")/" + b, c[2], c[3], "(" + c[1] + ")%" + b});
  }

  // Offset of coordinates c in n's buffer (scratch holds one row in row mode).
  std::string offset(NodeId n, const Coords& c) const {
    if (flat_ && c == flat_->coords && shape(n) == flat_->shape && !lay_.is_blocked(n) &&
        (kp_.row_dims == 0 || is_global(n)))
      return flat_->index;
    if (lay_.is_blocked(n) && (kp_.row_dims == 0 || is_global(n))) return blocked_offset(shape(n), c);
    if (kp_.row_dims > 0 && !is_global(n)) {
      std::vector<int64_t> tail(shape(n).begin() + kp_.row_dims, shape(n).end());
      return linear_offset(tail, Coords(c.begin() + kp_.row_dims, c.end()));
    }
    return linear_offset(shape(n), c);
  }
  std::vector<int64_t> scratch_shape(NodeId n) const {
    if (kp_.row_dims == 0) return shape(n);
    return std::vector<int64_t>(shape(n).begin() + kp_.row_dims, shape(n).end());
  }

  // Opens loops over dims [from, shape.size()) named <var><d>; returns coords.
  // `simd`: the innermost loop's iterations are independent (a loop stage
  // writes one element per iteration from values computed before the loop);
  // `omp simd` says so. Without it GCC fully unrolls a short row (16
  // elements of a fused softmax) before it vectorises, and a transcendental
  // in it becomes 16 scalar SLEEF calls: distilbert_tiny's fused
  // sub-exp-sum took 3.2 us where the unfused Exp took 0.5 (Zen 4, 1 thread).
  // simd_at: the dim whose loop is `omp simd` (default the last); the
  // loops inside it are plain, for GCC to unroll.
  Coords open_loops(const std::vector<int64_t>& s, int from, const std::string& var, Coords c, bool parallel,
                    bool simd = false, int simd_at = -1) {
    if (simd_at < 0) simd_at = static_cast<int>(s.size()) - 1;
    int loops = static_cast<int>(s.size()) - from, collapse = 0;
    if (parallel && loops > 0) {
      int64_t work = numel(s), lead = 1;
      while (collapse < loops && lead < 64) lead *= s[from + collapse++];
      if (work >= kParallelMinWork && lead > 1)
        line("#pragma omp parallel for " + std::string(simd && collapse == loops ? "simd " : "") +
             "schedule(static) collapse(" + std::to_string(collapse) + ")");
      else
        collapse = 0;
    }
    for (int d = from; d < static_cast<int>(s.size()); ++d) {
      std::string v = var + std::to_string(d);
      if (simd && d == simd_at && d - from >= collapse) line("#pragma omp simd");
      line("for (int64_t " + v + " = 0; " + v + " < " + std::to_string(s[d]) + "; ++" + v + ")");
      c.push_back(v);
    }
    line("{");
    ++ind_;
    push();
    return c;
  }
  // Whether reduction n folds fewer than a vector's elements per output, one
  // at a time (no lanes: graph/op_attrs.h reduce_lanes).
  bool short_reduction(NodeId n) const {
    const NodeId in = g_.operands(n)[0];
    const auto& is = shape(in);
    const ReduceParams rp = reduce_params(g_.node(n), static_cast<int>(is.size()));
    int64_t row = 1;
    for (int a : rp.axes) row *= is[a];
    return row < kVectorRun && reduce_lanes(rp, is, g_.node(in).out.dtype) <= 1;
  }
  // The dim whose loop a loop stage vectorises (`omp simd`), or -1 for none:
  // the innermost one longer than 1 when it fills a vector, else the one
  // outside it when that does (the short loop inside unrolled), else none,
  // and GCC picks. `omp simd` on a loop of 1 or 2 iterations forces its
  // vector there: distilbert_tiny's [1, 128, 2, 1] reshape copy took
  // 0.09 us so, 0.04 as GCC vectorised it (one Zen 4 thread).
  static int vector_dim(const std::vector<int64_t>& s, int from) {
    int inner = -1;
    for (int d = static_cast<int>(s.size()) - 1; d >= from; --d) {
      if (s[d] == 1) continue;
      if (s[d] >= kVectorRun) return d;
      if (inner >= 0) return -1;
      inner = d;
    }
    return -1;
  }
  void close_loops() {
    pop();
    --ind_;
    line("}");
  }

  void print_stage(const Stage& st, const Coords& outer, bool parallel) {
    const Primitive& p = g_.node(st.node);
    line("// " + p.op + " '" + comment_escape(p.name) + "'");
    current_ = &st;
    if (st.kind == StageKind::library) return print_library(st);
    const auto& s = shape(st.node);
    int from = static_cast<int>(outer.size());
    if (st.kind == StageKind::loop) {
      if (outer.empty() && print_view_copy(st)) return;
      if (outer.empty() && p.kind == Op::Concat && !lay_.is_blocked(st.node)) return print_concat_stage(st, parallel);
      if (outer.empty() && unblocks(st.node)) return print_unblocked_stage(st, parallel);
      // A stage writing a blocked tensor loops in its storage order.
      const bool blocked = lay_.is_blocked(st.node) && outer.empty();
      Coords c;
      if (blocked)
        c = blocked_loop_coords(
            open_loops({s[0], s[1] / lay_.block, s[2], s[3], lay_.block}, 0, "i", {}, parallel, true));
      else if (auto merged = coalesced_loops(st.node, from, outer, parallel))
        c = *merged;
      else {
        const int vd = vector_dim(s, from);
        c = open_loops(s, from, "i", outer, parallel, vd >= 0, vd);
      }
      std::string v = compute(st.node, c);
      line(buf(st.node) + "[" + offset(st.node, c) + "] = " + v + ";");
      close_loops();
      split_.clear();
      flat_.reset();
      return;
    }
    // reduce: per output element, reduced elements in row-major order. A
    // row shorter than a vector (no lanes) vectorises across the outputs
    // instead, each lane one output's chain in its order: distilbert_tiny's
    // means over rows of 2 took 0.05 us for 128 rows, one at a time.
    const int across = short_reduction(st.node) ? vector_dim(s, from) : -1;
    Coords c = open_loops(s, from, "i", outer, parallel, across >= 0, across);
    reduce_loop(st.node, c, "acc", "r");
    line(buf(st.node) + "[" + offset(st.node, c) + "] = acc;");
    close_loops();
  }

  // Dimension coalescing of a loop stage: adjacent dims d, d+1 (from `from`
  // on) share one loop when every tensor the stage's inlined expression
  // reads or computes (scalar ops, Cast and Where; operands broadcast
  // right-aligned) spans both in full or broadcasts both: a tensor's offset
  // then steps 1 or 0 per element of the merged dims. Sets breaks[d] where
  // dim d must open a loop of its own; false when some read is not of that
  // form (a blocked or nested tensor, an index op).
  bool coalescible(NodeId n, NodeId root, int from, std::vector<uint8_t>& breaks) const {
    const Primitive& p = g_.node(n);
    if (!(traits(p).is_scalar() || p.kind == Op::Cast || p.kind == Op::Where)) return false;
    const auto& rs = shape(root);
    const int r = static_cast<int>(rs.size());
    for (NodeId o : g_.operands(n)) {
      if (kp_.immediates.count(o)) continue;
      const auto& os = shape(o);
      const int lead = r - static_cast<int>(os.size());
      if (lead < 0 || lay_.is_blocked(o) || kp_.nested.count(o)) return false;
      auto ext = [&](int d) { return d < lead ? int64_t{1} : os[d - lead]; };
      for (int d = from; d + 1 < r; ++d) {
        const bool full = ext(d) == rs[d] && ext(d + 1) == rs[d + 1], bcast = ext(d) == 1 && ext(d + 1) == 1;
        if (!full && !bcast) breaks[d + 1] = 1;
      }
      if (kp_.members.count(o) && !kp_.is_stage(o) && !coalescible(o, root, from, breaks)) return false;
    }
    return true;
  }
  // The loops of a coalescible stage over dims [from, rank) of s: one per
  // run of merged dims, its variable at the run's last dim longer than 1
  // (whose stride is the run's step; linear_offset drops dims of size 1),
  // "0" at the run's other dims. Empty when no dims merge. A short last dim
  // no longer bounds the vector loop: distilbert_tiny's Erf over [1, 128, 2]
  // took 7.9 us in a 2-iteration inner loop of scalar SLEEF calls.
  // Where the innermost run is still shorter than a vector (a bias over
  // rows of 2 breaks the merge) and the stage is not inside row loops, one
  // flat loop over the whole output, each coordinate computed from the flat
  // index (as print_epilogue_lambda) and a tensor of the output's shape read
  // and written at the index itself (flat_): distilbert_tiny's bias Adds
  // over [1, 128, 2] took 0.18 us as 128 loops of 2.
  std::optional<Coords> coalesced_loops(NodeId n, int from, const Coords& outer, bool parallel) {
    const auto& s = shape(n);
    const int r = static_cast<int>(s.size());
    if (lay_.is_blocked(n) || r - from < 2) return std::nullopt;
    std::vector<uint8_t> breaks(r, 0);
    if (!coalescible(n, n, from, breaks)) return std::nullopt;
    std::vector<std::pair<int, int>> runs;  // [first, last] dims
    for (int d = from; d < r; ++d)
      if (d == from || breaks[d]) runs.push_back({d, d});
      else runs.back().second = d;
    std::vector<int64_t> ext;
    for (auto [f, l] : runs) ext.push_back(numel(std::vector<int64_t>(s.begin() + f, s.begin() + l + 1)));
    const auto longer = std::count_if(ext.begin(), ext.end(), [](int64_t e) { return e > 1; });
    auto last = std::find_if(ext.rbegin(), ext.rend(), [](int64_t e) { return e > 1; });
    // The innermost run short, the one outside it at least a vector: the
    // vector loop is that outer run's, the short run's loop inside it
    // unrolled (distilbert_tiny's [128, 2] - [128, 1]: 0.13 us as a flat
    // loop, whose broadcast read divides the index per element).
    const auto prev = longer > 1 ? std::find_if(last + 1, ext.rend(), [](int64_t e) { return e > 1; }) : ext.rend();
    const bool short_inside = prev != ext.rend() && *last < kVectorRun && *prev >= kVectorRun;
    if (from == 0 && longer > 1 && *last < kVectorRun && !short_inside) {
      const Coords v = open_loops({numel(s)}, 0, "f", {}, parallel, true);
      flat_ = FlatIndex{s, delinearise(s, v[0]), v[0]};
      return flat_->coords;
    }
    if (static_cast<int>(runs.size()) == r - from && !short_inside) return std::nullopt;
    const int simd_at = short_inside ? static_cast<int>(ext.rend() - prev) - 1 : -1;
    const Coords v = open_loops(ext, 0, "f", {}, parallel, true, simd_at);
    Coords c = outer;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      int at = runs[k].second;
      while (at > runs[k].first && s[at] == 1) --at;
      for (int d = runs[k].first; d <= runs[k].second; ++d) c.push_back(d == at ? v[k] : "0");
    }
    return c;
  }

  // A stored stage of at least kViewCopyMinBytes that is a strided view of
  // one buffer (loaded, or an earlier stage's) whose loop would gather: one
  // fprt::copy_view (kernel_plan.h strided_view). False (nothing printed)
  // otherwise.
  bool print_view_copy(const Stage& st) {
    const Primitive& p = g_.node(st.node);
    const int64_t elem = dtype_bytes(p.out.dtype);
    if (!st.global || lay_.is_blocked(st.node) || (elem != 1 && elem != 4 && elem != 8) ||
        numel(shape(st.node)) * elem < kViewCopyMinBytes)
      return false;
    const std::optional<StridedView> v = strided_view(g_, kp_, st.node);
    // The loop reads whole rows of the stage's last dim in order when the
    // source steps 1 along it: no gather to save.
    if (!v || lay_.is_blocked(v->source) || (v->strides.back() == 1 && v->dims.back() >= shape(st.node).back()))
      return false;
    line("{");
    ++ind_;
    line("static const int64_t vd[] = " + shape_array(v->dims) + ";");
    line("static const int64_t vs[] = " + shape_array(v->strides) + ";");
    line("fprt::copy_view(" + buf(v->source) + (v->offset ? "+" + std::to_string(v->offset) : "") + "," + buf(st.node) + "," +
         std::to_string(v->dims.size()) + ",vd,vs," + std::to_string(elem) + ");");
    --ind_;
    line("}");
    return true;
  }

  // A Concat stage, one loop nest per operand over its slice of the output
  // (no per-element select that computes every operand and keeps one: an
  // Inception block's 4-way channel concat of BN+ReLU branches took 0.67
  // ms for 1 MB that way, one Zen 4 thread). An operand of whole channel
  // blocks that reads or computes a blocked tensor of its shape is computed
  // in blocked order into scratch and copied into its channel slice, one
  // image at a time, by the exact reorder fprt::unblock: an NCHW-order loop
  // read each blocked vector 16 floats apart.
  void print_concat_stage(const Stage& st, bool parallel) {
    const NodeId n = st.node;
    const auto& os = shape(n);
    const int ax = static_cast<int>(g_.node(n).attr_int("axis", 0));  // normalised on import
    const std::vector<NodeId> members(kp_.members.begin(), kp_.members.end());
    int64_t off = 0;
    for (NodeId o : g_.operands(n)) {
      const auto& s = shape(o);
      const int64_t at = off;
      off += s[ax];
      if (numel(s) == 0) continue;
      if (concat_operand_blocked(g_, lay_, n, o, members)) {
        line("{");
        ++ind_;
        // A blocked buffer (loaded or an earlier stage's) is copied as it is.
        const bool stored = lay_.is_blocked(o) && (!kp_.members.count(o) || kp_.is_stage(o));
        const std::string bytes = std::to_string(numel(s)) + "*sizeof(float)+1";
        if (stored) {
          line("const float* u = " + buf(o) + ";");
        } else {
          line("float* u = (float*)fprt::scratch_alloc(" + bytes + ");");
          const Coords c = blocked_loop_coords(
              open_loops({s[0], s[1] / lay_.block, s[2], s[3], lay_.block}, 0, "i", {}, parallel, true));
          line("u[" + blocked_offset(s, c) + "] = " + val(o, c) + ";");
          close_loops();
          split_.clear();
        }
        const int64_t plane = s[2] * s[3];
        line("static const int64_t us[] = " + shape_array({1, s[1], s[2], s[3]}) + ";");
        line("for (int64_t im = 0; im < " + std::to_string(s[0]) + "; ++im)");
        line("  fprt::unblock(u+im*" + std::to_string(s[1] * plane) + "," + buf(n) + "+im*" + std::to_string(os[1] * plane) +
             "+" + std::to_string(at * plane) + ",us," + std::to_string(lay_.block) + ");");
        if (!stored) line("fprt::scratch_free(u, " + bytes + ");");
        --ind_;
        line("}");
        continue;
      }
      const Coords c = open_loops(s, 0, "i", {}, parallel, true);
      Coords oc = c;
      if (at) oc[ax] = "(" + c[ax] + "+" + std::to_string(at) + ")";
      line(buf(n) + "[" + offset(n, oc) + "] = " + val(o, c) + ";");
      close_loops();
    }
  }

  // Whether loop stage n, stored NCHW, reads or computes a blocked tensor of
  // its shape: it then loops in blocked order into a blocked temporary and
  // one exact reorder stores it (fprt::unblock; graph/layout.h
  // unblocked_store, where the cost model counts it). Looping in NCHW
  // order read each blocked operand 16 floats apart: resnet50_bottleneck's
  // final ReLU took 0.73 ms for 3.2 MB.
  bool unblocks(NodeId n) const {
    const std::vector<NodeId> members(kp_.members.begin(), kp_.members.end());
    return is_global(n) && unblocked_store(g_, lay_, n, members);
  }
  void print_unblocked_stage(const Stage& st, bool parallel) {
    const auto& s = shape(st.node);
    line("{");
    ++ind_;
    const std::string bytes = std::to_string(numel(s)) + "*sizeof(float)+1";
    line("float* u = (float*)fprt::scratch_alloc(" + bytes + ");");
    Coords c =
        blocked_loop_coords(open_loops({s[0], s[1] / lay_.block, s[2], s[3], lay_.block}, 0, "i", {}, parallel, true));
    line("u[" + blocked_offset(s, c) + "] = " + compute(st.node, c) + ";");
    close_loops();
    split_.clear();
    line("static const int64_t us[] = " + shape_array(s) + ";");
    line("fprt::unblock(u," + buf(st.node) + ",us," + std::to_string(lay_.block) + ");");
    line("fprt::scratch_free(u, " + bytes + ");");
    --ind_;
    line("}");
  }

  // Reduction n at output coordinates c in the canonical CPU order (the
  // reference executor's, graph/op_attrs.h reduce_lanes): `acc` starts at
  // the identity and folds the reduced elements one by one in row-major
  // order over loops named <var><d>; or, in lanes, the last reduced loop
  // steps kReduceLanes elements at a time and an inner loop <var>l0 over the
  // lanes folds each into its own accumulator <acc>_l[<var>l0] (independent
  // chains GCC vectorises without reassociating, `omp simd`), and fprt::fold_lanes
  // folds the lanes. A mean divides once at the end. A nested reduction's
  // reduced input (search/nested_reduction.h) prints its own loop inside
  // this one.
  void reduce_loop(NodeId n, const Coords& c, const std::string& acc, const std::string& var) {
    NodeId in = g_.operands(n)[0];
    const auto& is = shape(in);
    ReduceParams rp = reduce_params(g_.node(n), static_cast<int>(is.size()));
    std::string T = ty(n);
    const std::string lim = "std::numeric_limits<" + T + ">";
    std::string init = "(" + T + ")0";  // sum, mean
    if (rp.kind == ReduceKind::prod) init = "(" + T + ")1";
    if (rp.kind == ReduceKind::max) init = "(" + lim + "::has_infinity ? -" + lim + "::infinity() : " + lim + "::lowest())";
    if (rp.kind == ReduceKind::min) init = "(" + lim + "::has_infinity ? " + lim + "::infinity() : " + lim + "::max())";
    const int64_t lanes = reduce_lanes(rp, is, g_.node(in).out.dtype);
    const std::string a = lanes > 1 ? acc + "_l[" + var + "l0]" : acc;  // the accumulator a step folds into
    if (lanes > 1) {
      line(T + " " + acc + ";");
      line(T + " " + acc + "_l[" + std::to_string(lanes) + "];");
      line("for (int l = 0; l < " + std::to_string(lanes) + "; ++l) " + acc + "_l[l] = " + init + ";");
    } else {
      line(T + " " + acc + " = " + init + ";");
    }
    std::vector<int64_t> rshape;
    int64_t count = 1;
    for (int ax : rp.axes) { rshape.push_back(is[ax]); count *= is[ax]; }
    if (lanes > 1) rshape.back() /= lanes;
    Coords rc = open_loops(rshape, 0, var, {}, false);
    std::string lane_channel;  // a blocked read's channel coordinate the lanes split as its block does
    if (lanes > 1) {
      // The lanes are independent (each iteration folds into its own
      // accumulator): `omp simd` says so, or GCC unrolls a short lane loop
      // and finds no reduction pattern in 16 max_ chains.
      const std::string outer = rc.back();
      line("#pragma omp simd");
      const std::string lane = open_loops({lanes}, 0, var + "l", {}, false)[0];
      rc.back() = "(" + outer + "*" + std::to_string(lanes) + "+" + lane + ")";
      // Lanes over the channels of a blocked tensor, one block wide: the
      // read is at (outer, lane) of its storage, a contiguous vector, not
      // at a division of the channel per element (a channel sum of a
      // [1,64,56,56] nChw16c tensor: shared_conv_two_consumers' pixsum).
      if (lanes == lay_.block && !split_.count(rc.back())) {
        lane_channel = rc.back();
        split_[lane_channel] = {outer, lane};
      }
    }
    Coords ic;
    for (int d = 0, k = 0, o = 0; d < static_cast<int>(is.size()); ++d) {
      bool red = std::find(rp.axes.begin(), rp.axes.end(), d) != rp.axes.end();
      ic.push_back(red ? rc[k++] : c[rp.keepdims ? d : o]);
      if (!red) ++o;
    }
    std::string v = val(in, ic);
    if (rp.kind == ReduceKind::max) line(a + " = fprt::max_(" + a + ", " + v + ");");
    else if (rp.kind == ReduceKind::min) line(a + " = fprt::min_(" + a + ", " + v + ");");
    else if (rp.kind == ReduceKind::prod) line(a + " = (" + T + ")(" + a + " * " + v + ");");
    else line(a + " = (" + T + ")(" + a + " + " + v + ");");
    close_loops();
    if (!lane_channel.empty()) split_.erase(lane_channel);
    if (lanes > 1) {
      close_loops();
      line(acc + " = fprt::fold_lanes(" + acc + "_l, " + std::to_string(fold_lanes_kind(rp.kind)) + ");");
    }
    if (rp.kind == ReduceKind::mean) line(acc + " = fprt::div_(" + acc + ", (" + T + ")" + std::to_string(count) + ");");
  }

  // Nested reduction: its loop inside the outer reduction's, once per
  // element of the outer row; loop and accumulator names carry its id.
  std::string nested_reduce(NodeId n, const Coords& c, const std::string& key) override {
    line("// nested " + g_.node(n).op + " '" + comment_escape(g_.node(n).name) + "'");
    const std::string acc = "acc" + id(n);
    reduce_loop(n, c, acc, "r" + id(n) + "_");
    return define(n, key, acc);
  }
  void store_nested(NodeId n, const Coords& c, const std::string& v) override {
    line(buf(n) + "[" + offset(n, c) + "] = " + v + ";");
  }

  void print_library(const Stage& st) {
    const Primitive& p = g_.node(st.node);
    auto ops = g_.operands(st.node);
    line("{");
    ++ind_;
    auto arr = [&](const std::string& name, const std::vector<int64_t>& v) {
      line("static const int64_t " + name + "[] = " + shape_array(v) + ";");
    };
    arr("ys", shape(st.node));
    for (std::size_t k = 0; k < ops.size(); ++k) arr("xs" + std::to_string(k), shape(ops[k]));
    std::string y = buf(st.node), T = ty(st.node);
    auto x = [&](int k) { return buf(ops[k]); };
    int r = static_cast<int>(shape(st.node).size());
    std::string rs = std::to_string(r);
    auto rank = [&](int k) { return std::to_string(shape(ops[k]).size()); };
    bool epi = st.node == epi_lib_;
    if (epi) print_epilogue_lambda();
    const std::optional<MatMulBView> strided_b = strided_matmul_b_view(g_, kp_, st.node);
    // The weights operand is a source: constant for the run (exec/onednn.h).
    const std::string w_const = ops.size() > 1 && g_.node(ops[1]).op_class == OpClass::source ? "1" : "0";
    if (p.kind == Op::MatMul && strided_b) {
      // B is a view of a loaded buffer, passed with its strides (kernel_plan.h strided_matmul_b_view).
      arr("bst", strided_b->strides);
      line(std::string("fprt::matmul_view_epilogue(") + x(0) + ",xs0," + rank(0) + "," + buf(strided_b->source) +
           (strided_b->offset ? "+" + std::to_string(strided_b->offset) : "") + ",xs1," + rank(1) + ",bst," + y +
           ",ys," + rs + "," + std::to_string(p.attr_int("transA", 0)) + "," + std::to_string(p.attr_int("transB", 0)) +
           (epi ? ",epi);" : ");"));
    } else if (p.kind == Op::MatMul) {
      line(std::string(epi ? "fprt::matmul_epilogue(" : "fprt::matmul(") + x(0) + ",xs0," + rank(0) + "," + x(1) +
           ",xs1," + rank(1) + "," + y + ",ys," + rs + "," + std::to_string(p.attr_int("transA", 0)) + "," +
           std::to_string(p.attr_int("transB", 0)) + "," + w_const + (epi ? ",epi);" : ");"));
    } else if (one_of(p.kind, {Op::Conv, Op::ConvTranspose, Op::MaxPool, Op::AveragePool})) {
      WindowParams w = window_params(p, r - 2);
      arr("st", w.strides);
      arr("pd", w.pads);
      arr("dl", w.dilations);
      if (p.kind == Op::Conv || p.kind == Op::ConvTranspose) {
        line(std::string(p.kind == Op::Conv ? (epi ? "fprt::conv_epilogue(" : "fprt::conv(") : "fprt::conv_transpose(") +
             x(0) + ",xs0," + x(1) + ",xs1," + y + ",ys," + std::to_string(r - 2) + ",st,pd,dl," +
             std::to_string(w.group) + "," + w_const +
             (p.kind == Op::Conv ? "," + std::to_string(lay_.conv_bits(g_, st.node, false)) : "") +
             (epi ? ",epi);" : ");"));
        if (epi && epi_unblock_ != kNoNode)
          line("fprt::unblock(" + y + "," + buf(epi_unblock_) + ",ys," + std::to_string(lay_.block) + ");");
      } else {
        arr("ks", w.kernel);
        line("fprt::pool(" + x(0) + ",xs0," + y + ",ys," + std::to_string(r - 2) + ",ks,st,pd,dl," +
             (p.kind == Op::MaxPool ? "1," : "0,") + std::to_string(p.attr_int("count_include_pad", 0)) + ");");
      }
    } else if (p.kind == Op::Resize) {
      ResizeParams rp = resize_params(p, shape(ops[0]), shape(st.node));
      std::string sc = "{";
      for (std::size_t i = 0; i < rp.scales.size(); ++i) sc += (i ? "," : "") + c_literal(rp.scales[i], DType::f32);
      line("static const float sc[] = " + sc + "};");
      line("fprt::resize_linear(" + x(0) + ",xs0," + rs + "," + y + ",ys,sc," + std::to_string(rp.coord_mode) + ");");
    } else {
      static const char* reds[] = {"none", "add", "mul", "max", "min"};
      int red = 0;
      for (int k = 0; k < 5; ++k)
        if (p.attr_string("reduction", "none") == reds[k]) red = k;
      std::string ax = std::to_string(p.attr_int("axis", 0));
      if (p.kind == Op::CumSum)
        line("fprt::cumsum<" + T + ">(" + x(0) + ",xs0," + rank(0) + "," + y + "," + ax + "," +
             std::to_string(p.attr_int("exclusive", 0)) + "," + std::to_string(p.attr_int("reverse", 0)) + ");");
      else if (p.kind == Op::GatherND)
        line("fprt::gather_nd<" + T + ">(" + x(0) + ",xs0," + rank(0) + "," + x(1) + ",xs1," + rank(1) + "," + y + ");");
      else if (p.kind == Op::ScatterND)
        line("fprt::scatter_nd<" + T + ">(" + x(0) + ",xs0," + rank(0) + "," + x(1) + ",xs1," + rank(1) + "," + x(2) +
             "," + y + "," + std::to_string(red) + ");");
      else
        line("fprt::scatter_elements<" + T + ">(" + x(0) + ",xs0," + rank(0) + "," + x(1) + ",xs1," + x(2) + "," + y +
             "," + ax + "," + std::to_string(red) + ");");
    }
    --ind_;
    line("}");
  }

  // Kernel scratch through fprt::scratch_alloc/scratch_free: a large block
  // is kept for the kernel's next call (emit/cpu/runtime.h).
  void alloc_scratch(bool rows) {
    for (const Stage& s : kp_.stages)
      if (!s.global && !(s.node == epi_lib_ && epi_alias_ != kNoNode)) {
        const std::string bytes =
            std::to_string(numel(rows ? scratch_shape(s.node) : shape(s.node))) + "*sizeof(" + ty(s.node) + ")+1";
        scratch_bytes_[s.node] = bytes;
        line(ty(s.node) + "* s" + id(s.node) + " = (" + ty(s.node) + "*)fprt::scratch_alloc(" + bytes + ");");
      }
  }
  void free_scratch() {
    for (const Stage& s : kp_.stages)
      if (!s.global && !(s.node == epi_lib_ && epi_alias_ != kNoNode))
        line("fprt::scratch_free(s" + id(s.node) + ", " + scratch_bytes_.at(s.node) + ");");
  }
  std::map<NodeId, std::string> scratch_bytes_;  // alloc_scratch's byte count per scratch stage

  void print_flat() {
    alloc_scratch(false);
    for (const Stage& s : kp_.stages)
      if (!in_epilogue(s.node)) print_stage(s, {}, true);
    free_scratch();
  }

  // Multipass: one outer loop over the rows; every stage of a row runs
  // before the next row starts, so the row stays in cache.
  void print_rows() {
    int64_t rows = numel(kp_.row_shape), work = 0;
    for (const Stage& s : kp_.stages) work += numel(shape(s.node));
    for (NodeId n : kp_.loads) work = std::max(work, numel(shape(n)));
    if (work >= kParallelMinWork && rows > 1) line("#pragma omp parallel");
    line("{");
    ++ind_;
    alloc_scratch(true);
    if (work >= kParallelMinWork && rows > 1) line("#pragma omp for schedule(static)");
    line("for (int64_t o = 0; o < " + std::to_string(rows) + "; ++o) {");
    ++ind_;
    push();
    Coords outer;
    int64_t stride = rows;
    for (int d = 0; d < kp_.row_dims; ++d) {
      stride /= kp_.row_shape[d];
      std::string v = "o" + std::to_string(d);
      line("const int64_t " + v + " = (o / " + std::to_string(stride) + ") % " + std::to_string(kp_.row_shape[d]) + ";");
      outer.push_back(v);
    }
    for (const Stage& s : kp_.stages) print_stage(s, outer, false);
    pop();
    --ind_;
    line("}");
    free_scratch();
    --ind_;
    line("}");
  }
};

}  // namespace

void set_tile_epilogue(bool on) { g_tile_epilogue = on; }

// Whether a row-resident kernel plan runs each stage over all rows instead
// (print_cpp); the arithmetic of every element, and so the bits, are the
// same. Two cases, measured on one Zen 4 thread:
// - every stage's row (its dims past the row dims) is shorter than a vector
//   while the rows fill one: a row loop vectorises nothing, a stage loop
//   across the rows does (distilbert_tiny's LayerNorm over rows of 2);
// - the kernel evaluates a float transcendental op: a row's reduction chain
//   then waits behind the previous row's long vector-math pass, and each
//   row's pass pays its loop's entry; softmax's max .. exp over rows of 128
//   took 18.1 us row by row and 14.7 stage by stage at distilbert_tiny's
//   [2,128,128], 111-139 against 95 us at bert_base_layer's [12,128,128],
//   871-937 against 806-848 at its batch 8. Without one, a row in L1 for
//   the next pass pays more: the LayerNorm and sum .. div kernels of
//   bert_base_layer took 35-40 us row by row and 48-52 stage by stage.
bool runs_stage_by_stage(const Graph& g, const KernelPlan& kp) {
  auto numel = [](auto first, auto last) { return std::accumulate(first, last, int64_t{1}, std::multiplies<>()); };
  if (kp.row_dims == 0) return false;
  for (NodeId n : kp.members)
    if (calls_transcendental(g, n) && g.node(n).out.dtype == DType::f32) return true;
  if (numel(kp.row_shape.begin(), kp.row_shape.end()) < kVectorRun) return false;
  for (const Stage& st : kp.stages) {
    const auto& s = g.node(st.node).out.shape;
    if (numel(s.begin() + std::min<std::size_t>(kp.row_dims, s.size()), s.end()) >= kVectorRun) return false;
  }
  return true;
}

std::string print_cpp(const Graph& g, const std::vector<KernelPlan>& kernels, std::string_view title) {
  std::ostringstream os;
  os << "// fuseplan CPU kernels: " << comment_escape(title) << "\n";
  os << "// Generated code; identifiers are generated, model names appear only in comments.\n";
  os << kRuntimeText << "\n";
  os << "#ifdef _OPENMP\n#include <omp.h>\n#endif\n";
  os << "extern \"C\" void fp_set_num_threads(int n) {\n#ifdef _OPENMP\n  if (n > 0) omp_set_num_threads(n);\n#endif\n}\n\n";
  // Weak: the compiler may split the unit into parts that each carry it.
  os << "extern \"C\" __attribute__((weak)) void fp_bind_contractions(const fprt::ContractionLibrary* lib) {\n  fprt::contraction_library() = lib;\n}\n\n";
  const Layouts& layouts = layouts_of(g);
  for (const KernelPlan& kp : kernels) {
    if (!runs_stage_by_stage(g, kp)) {
      KernelPrinter(g, kp, layouts, os).print();
      continue;
    }
    KernelPlan flat = kp;
    flat.row_dims = 0;
    flat.row_shape.clear();
    KernelPrinter(g, flat, layouts, os).print();
  }
  return os.str();
}

}  // namespace fuseplan::cpu
