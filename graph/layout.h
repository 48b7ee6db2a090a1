// Activation layouts of the CPU backend: which 4-D tensors are stored in
// oneDNN's channel-blocked layout (nChw8c on AVX2, nChw16c on AVX-512)
// between convolutions instead of row-major NCHW (docs/layouts.md).
//
// oneDNN runs most convolutions on blocked activations; a convolution that
// reads and writes NCHW pays a reorder in and out around every call (on a
// 2-core Zen 3, MobileNetV2's reorders cost more than its depthwise convs).
// The assignment keeps a tensor blocked from the convolution that writes it
// to the convolutions that read it when every op in between is an
// elementwise op whose other operands are scalars or per-channel vectors:
// the emitted kernels run those ops over the blocked storage (their values
// do not depend on the element order), and any other emitted op reads a
// blocked tensor through its offset expression. Verification stays
// bit-identical: the reference executor calls each convolution with the
// same primitive on NCHW buffers, and the reorders around it copy exactly.
//
// The assignment is a function of the graph alone, not of the fusion plan:
// every strategy's plan of a model, and the reference executor, store the
// same tensors blocked and call every convolution with the same primitive.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace fuseplan {

/// Channels per block of this host's blocked layout: one vector register of
/// floats, the block oneDNN's direct convolutions read and write on the ISA
/// it dispatches to: 16 (nChw16c, jit:avx512_core) where the CPU has
/// AVX-512 F, BW, VL and DQ (oneDNN's avx512_core), 8 (nChw8c, jit:avx2)
/// otherwise. On a Zen 4 core oneDNN runs nChw8c through its AVX2 kernels
/// and reorders to 16c wherever it picks the AVX-512 ones: 7-68% slower per
/// conv (docs/layouts.md). The environment variable FUSEPLAN_CHANNEL_BLOCK=8
/// or 16 overrides it (to compare both on one machine); any other value
/// throws Error.
int64_t host_channel_block();
/// Overrides host_channel_block() for this process from now on (8 or 16; 0
/// restores the host's block): the tests run both blocks on one machine.
void set_host_channel_block(int64_t block);

/// How a Conv's activations are laid out (the `layout` argument of the
/// runtime's fprt::conv, emit/cpu/runtime.h): bit kConvXBlocked / kConvYBlocked
/// when the plan stores x / y blocked; kConvBlockedPrimitive when the
/// convolution runs oneDNN's blocked primitive (conv_blocking): whenever
/// either side is blocked, and for a conv with both sides NCHW where
/// conv_blocking is not `none` and the gemm convolution does not apply (its
/// NCHW <-> nChw16c reorders cost a third of those to NHWC that oneDNN's
/// `any` picks); also by the reference executor, which passes plain buffers,
/// so that both run one primitive; kConvBlock16 when the
/// blocked primitive's sides hold 16-channel blocks (nChw16c) rather than 8
/// (nChw8c), for plain buffers too.
inline constexpr int kConvXBlocked = 1, kConvYBlocked = 2, kConvBlockedPrimitive = 4, kConvBlock16 = 8;

/// How oneDNN's blocked direct convolution (jit:avx512_core, jit:avx2, their
/// depthwise kernels) lays out a 2-D conv of C input and M output channels
/// in `group` groups, blocks of `block` channels: `both` sides blocked where
/// both channel counts fill whole blocks and each group has one channel
/// (depthwise) or whole blocks on both sides; `y_only` for an ungrouped conv
/// with fewer input channels than a block (a stem conv over 3 colour
/// planes), which reads x as NCHW and writes y blocked; `none` otherwise
/// (4 channels per group: oneDNN 2.6 runs it on nChw4c only, and forced onto
/// nChw16c it falls back to its reference kernel, 700x slower; measured on
/// a Zen 4 core, docs/layouts.md).
enum class ConvBlocking { none, both, y_only };
ConvBlocking conv_blocking(int64_t C, int64_t M, int64_t group, int64_t block);

/// Whether oneDNN's gemm convolution on NCHW activations beats the blocked
/// primitive plus both reorders for a conv with this kernel volume, group
/// count, stride/padding and output pixels per image: 1x1, ungrouped,
/// unstrided, unpadded, >= 28x28 outputs per image (measurements in
/// exec/onednn.h). Applies when the plan keeps both sides plain.
bool gemm_conv_on_nchw(int64_t kernel_volume, int64_t group, bool unit_stride_no_pads, int64_t outputs_per_image);

/// Bits of Layouts::reorders: the conv's x / y is reordered NCHW <-> the
/// primitive's blocked layout around each call.
inline constexpr int kReorderX = 1, kReorderY = 2;

struct Layouts {
  /// Channels per block (8 or 16): blocked tensors are nChw<block>c.
  int64_t block = 8;
  /// Per node: its output is stored blocked (shape [N, C, H, W] with C a
  /// multiple of block b, element (n, c, h, w) at offset
  /// ((n·C/b + c/b)·H·W + h·W + w)·b + c%b).
  std::vector<uint8_t> blocked;
  /// "nChw8c" or "nChw16c".
  std::string format() const { return "nChw" + std::to_string(block) + "c"; }
  bool is_blocked(NodeId n) const { return n < blocked.size() && blocked[n]; }
  /// The `layout` bits of Conv node `conv` for a kernel of the plan (plain
  /// buffers = false) or for the reference executor (plain buffers = true).
  int conv_bits(const Graph& g, NodeId conv, bool plain_buffers) const;
  /// Which activations of Conv/ConvTranspose node `conv` a kernel of the
  /// plan reorders around the call (kReorderX | kReorderY), 0 for none.
  int reorders(const Graph& g, NodeId conv) const;
  /// Number of blocked tensors.
  int count() const;
};

/// Whether node n, stored row-major NCHW (not blocked: a graph output, a
/// library op's input), is f32 [N, C, H, W] with C a multiple of the block
/// and `members` (the nodes its kernel computes) hold or read a blocked
/// tensor of its shape. The CPU backend then computes n in blocked order and
/// stores it with one exact reorder (emit/cpu/cpp_printer.cpp,
/// fprt::unblock); the cost model counts that copy's bytes.
bool unblocked_store(const Graph& g, const Layouts& lay, NodeId n, std::span<const NodeId> members);

/// Whether operand o of Concat `cat` (stored NCHW, along the channels) is
/// taken in blocked order: o is blocked, or is stored NCHW at the shape of a
/// blocked tensor `members` hold or read (unblocked_store). The CPU backend
/// then copies it into its channel slice with one exact reorder per image,
/// computing it first into blocked scratch unless it is a buffer already
/// (emit/cpu/cpp_printer.cpp print_concat_stage); the cost model counts
/// that scratch's bytes.
bool concat_operand_blocked(const Graph& g, const Layouts& lay, NodeId cat, NodeId o, std::span<const NodeId> members);

/// The assignment (see above). A tensor is blocked when it lies in a
/// connected set of f32 4-D tensors with C % block == 0 that are
/// not graph outputs, each written by a 2-D Conv or by an elementwise op
/// whose other operands have one element or one per channel ([C,1,1]
/// broadcast), linked by those ops reading each other at the same shape;
/// no member is read by a library routine (graph/op_attrs.h is_library_op)
/// other than as a 2-D Conv's x; and the set touches a Conv. Other ops read
/// blocked tensors through their index expressions. `block` is 8 or 16.
/// O(nodes).
Layouts assign_layouts(const Graph& g, int64_t block);
/// assign_layouts(g, host_channel_block()), computed once per graph revision
/// (Graph::revision), block and thread; the reference for the graph's
/// lifetime or until the next call for another graph on this thread.
const Layouts& layouts_of(const Graph& g);

}  // namespace fuseplan
