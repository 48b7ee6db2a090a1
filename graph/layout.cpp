// The CPU backend's activation layout assignment (see graph/layout.h).
#include "graph/layout.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <numeric>

#include "graph/op_attrs.h"
#include "graph/op_traits.h"
#include "support/error.h"

namespace fuseplan {
namespace {

bool is_conv2d(const Primitive& p) { return p.kind == Op::Conv && p.out.rank() == 4; }

// An f32 [N, C, H, W] activation whose channels fill whole blocks.
bool blockable_shape(const TensorType& t, int64_t block) {
  return t.known && t.dtype == DType::f32 && t.rank() == 4 && t.shape[1] > 0 && t.shape[1] % block == 0;
}

// An operand an elementwise op over a blocked tensor of shape `out` may read
// whatever its layout: one element, or one per channel ([C,1,1] broadcast).
bool layout_free_operand(const std::vector<int64_t>& s, const std::vector<int64_t>& out) {
  const int64_t n = std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  if (n == 1) return true;
  if (s.size() > out.size()) return false;
  const std::size_t off = out.size() - s.size();
  for (std::size_t d = 0; d < s.size(); ++d) {
    const std::size_t od = d + off;
    if (s[d] != (od == 1 ? out[1] : 1)) return false;
  }
  return off <= 1;  // the channel dim is present
}

struct UnionFind {
  std::vector<NodeId> parent;
  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), NodeId{0}); }
  NodeId find(NodeId x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(NodeId a, NodeId b) { parent[find(a)] = find(b); }
};

// Whether `n` is an elementwise op whose every operand is a same-shape
// tensor (a member of its set) or layout-free.
bool blocked_elementwise(const Graph& g, NodeId n, int64_t block) {
  const Primitive& p = g.node(n);
  if (!traits(p).is_scalar() || !blockable_shape(p.out, block)) return false;
  for (NodeId o : g.operands(n)) {
    const auto& s = g.node(o).out.shape;
    if (s != p.out.shape && !layout_free_operand(s, p.out.shape)) return false;
  }
  return true;
}

std::atomic<int64_t> channel_block_override{0};

}  // namespace

void set_host_channel_block(int64_t block) {
  FUSEPLAN_ASSERT(block == 0 || block == 8 || block == 16, "channel block " + std::to_string(block));
  channel_block_override = block;
}

int64_t host_channel_block() {
  if (const int64_t b = channel_block_override.load()) return b;
  static const int64_t block = [] {
    if (const char* e = std::getenv("FUSEPLAN_CHANNEL_BLOCK")) {
      const std::string v = e;
      if (v == "8" || v == "16") return static_cast<int64_t>(std::stoi(v));
      throw Error("FUSEPLAN_CHANNEL_BLOCK must be 8 or 16, got '" + v + "'");
    }
    __builtin_cpu_init();
    const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    return int64_t{avx512_core ? 16 : 8};
  }();
  return block;
}

Layouts assign_layouts(const Graph& g, int64_t block) {
  FUSEPLAN_ASSERT(block == 8 || block == 16, "channel block " + std::to_string(block));
  const std::size_t n = g.size();
  std::vector<uint8_t> cand(n, 0);
  UnionFind sets(n);
  for (NodeId v = 0; v < n; ++v) {
    const Primitive& p = g.node(v);
    if (!blockable_shape(p.out, block) || p.is_graph_output || p.op_class == OpClass::source) continue;
    cand[v] = is_conv2d(p) || blocked_elementwise(g, v, block);
  }
  for (NodeId v = 0; v < n; ++v)
    if (cand[v] && !is_conv2d(g.node(v)))
      for (NodeId o : g.operands(v))
        if (cand[o] && g.node(o).out.shape == g.node(v).out.shape) sets.unite(o, v);
  // A set stays plain when a library routine other than a Conv (as its x)
  // reads a member: the routine takes the buffer as NCHW. Emitted loops
  // read a blocked tensor at any coordinates (emit/cpu/cpp_printer.cpp).
  std::vector<uint8_t> bad(n, 0), touches_conv(n, 0);
  for (NodeId v = 0; v < n; ++v) {
    if (!cand[v]) continue;
    const NodeId r = sets.find(v);
    if (is_conv2d(g.node(v))) touches_conv[r] = 1;
    for (const OutEdge& e : g.out_edges(v)) {
      const Primitive& c = g.node(e.dst);
      if (is_conv2d(c) && e.operand == 0) touches_conv[r] = 1;
      else if (is_library_op(c)) bad[r] = 1;
    }
  }
  Layouts out;
  out.block = block;
  out.blocked.assign(n, 0);
  for (NodeId v = 0; v < n; ++v) {
    const NodeId r = sets.find(v);
    out.blocked[v] = cand[v] && !bad[r] && touches_conv[r];
  }
  return out;
}

const Layouts& layouts_of(const Graph& g) {
  thread_local uint64_t revision = 0;
  thread_local Layouts layouts;
  const int64_t block = host_channel_block();
  if (g.revision() == 0 || revision != g.revision() || layouts.block != block) {
    revision = g.revision();
    layouts = assign_layouts(g, block);
  }
  return layouts;
}

ConvBlocking conv_blocking(int64_t C, int64_t M, int64_t group, int64_t block) {
  const int64_t Cg = C / group, Mg = M / group;
  if (C % block == 0 && M % block == 0 &&
      (group == 1 || (Cg == 1 && Mg == 1) || (Cg % block == 0 && Mg % block == 0)))
    return ConvBlocking::both;
  if (group == 1 && C < block && M % block == 0) return ConvBlocking::y_only;
  return ConvBlocking::none;
}

bool gemm_conv_on_nchw(int64_t kernel_volume, int64_t group, bool unit_stride_no_pads, int64_t outputs_per_image) {
  constexpr int64_t kPlainMinOutputsPerImage = 28 * 28;
  return kernel_volume == 1 && group == 1 && unit_stride_no_pads && outputs_per_image >= kPlainMinOutputsPerImage;
}

namespace {

// gemm_conv_on_nchw for Conv node `conv`.
bool runs_gemm_on_nchw(const Graph& g, NodeId conv) {
  const Primitive& p = g.node(conv);
  const int sr = p.out.rank() - 2;
  const WindowParams w = window_params(p, sr);
  const auto& ws = g.node(g.operands(conv)[1]).out.shape;  // [M, C/group, k...]: the kernel's extent
  int64_t kvol = 1, outputs = 1;
  bool unit = static_cast<int>(ws.size()) == sr + 2;
  for (int i = 0; i < sr && unit; ++i) {
    kvol *= ws[2 + i];
    outputs *= p.out.shape[2 + i];
    unit = unit && w.strides[i] == 1 && w.pads[i] == 0 && w.pads[sr + i] == 0;
  }
  return gemm_conv_on_nchw(kvol, w.group, unit, outputs);
}

}  // namespace

int Layouts::conv_bits(const Graph& g, NodeId conv, bool plain_buffers) const {
  const NodeId x = g.operands(conv)[0];
  const bool bx = is_blocked(x), by = is_blocked(conv);
  // The block travels with plain buffers too: the primitive runs blocked
  // either way, in this block (exec/onednn.h).
  const int primitive = kConvBlockedPrimitive | (block == 16 ? kConvBlock16 : 0);
  if (!bx && !by) {
    // Both sides NCHW: the blocked primitive where oneDNN has one for these
    // channels, its reorders NCHW <-> nChw<B>c (a few us per MiB) being far
    // cheaper than those to NHWC that `any` picks (docs/layouts.md); the
    // gemm convolution where it wins without reorders.
    const Primitive& p = g.node(conv);
    if (!is_conv2d(p) || runs_gemm_on_nchw(g, conv)) return 0;
    const bool runs_blocked =
        conv_blocking(g.node(x).out.shape[1], p.out.shape[1], window_params(p, 2).group, block) != ConvBlocking::none;
    return runs_blocked ? primitive : 0;
  }
  int bits = primitive;
  if (!plain_buffers) bits |= (bx ? kConvXBlocked : 0) | (by ? kConvYBlocked : 0);
  return bits;
}

int Layouts::reorders(const Graph& g, NodeId conv) const {
  const Primitive& p = g.node(conv);
  if (p.kind == Op::ConvTranspose) return kReorderX | kReorderY;
  if (p.kind != Op::Conv) return 0;
  const int bits = conv_bits(g, conv, false);
  if (!(bits & kConvBlockedPrimitive) && runs_gemm_on_nchw(g, conv)) return 0;
  int r = (bits & kConvXBlocked ? 0 : kReorderX) | (bits & kConvYBlocked ? 0 : kReorderY);
  // A stem conv's NCHW x is read as it is (conv_blocking y_only).
  if ((bits & kConvBlockedPrimitive) && !(bits & kConvXBlocked) &&
      conv_blocking(g.node(g.operands(conv)[0]).out.shape[1], p.out.shape[1], window_params(p, 2).group, block) ==
          ConvBlocking::y_only)
    r &= ~kReorderX;
  return r;
}

bool unblocked_store(const Graph& g, const Layouts& lay, NodeId n, std::span<const NodeId> members) {
  const TensorType& t = g.node(n).out;
  if (lay.is_blocked(n) || t.dtype != DType::f32 || t.rank() != 4 || t.shape[1] % lay.block != 0) return false;
  auto blocked_like = [&](NodeId x) { return lay.is_blocked(x) && g.node(x).out.shape == t.shape; };
  for (NodeId m : members) {
    if (blocked_like(m)) return true;
    for (NodeId o : g.operands(m))
      if (blocked_like(o)) return true;
  }
  return false;
}

bool concat_operand_blocked(const Graph& g, const Layouts& lay, NodeId cat, NodeId o, std::span<const NodeId> members) {
  const Primitive& c = g.node(cat);
  return c.kind == Op::Concat && !lay.is_blocked(cat) && c.out.rank() == 4 && c.attr_int("axis", 0) == 1 &&
         (lay.is_blocked(o) || unblocked_store(g, lay, o, members));
}

int Layouts::count() const { return static_cast<int>(std::count(blocked.begin(), blocked.end(), uint8_t{1})); }

}  // namespace fuseplan
