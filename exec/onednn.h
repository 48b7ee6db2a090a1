// CPU contractions through oneDNN (Debian libdnnl-dev, dnnl.hpp): the
// fprt::ContractionLibrary (emit/cpu/runtime.h) that the reference executor
// and every loaded kernel library call. One table per process, so fused and
// unfused plans, and the reference, run each contraction through the same
// primitive: the same implementation (oneDNN's impl string) with the same
// threads, hence the same bits.
//
// Primitives are created once per (op, shapes, strides, pads, dilations,
// groups, layout bits, threads), keyed on those arguments' bytes, and
// reused with what a call needs bound once: memory objects whose data
// handles each call sets, and the reorders around the primitive. A 16x32x32
// MatMul call took 2.3 us with a key formatted as text and memories and
// reorders created per call, 0.8 us bound (0.54 us for the bare primitive;
// Zen 4, one thread): the fixed cost `fuseplan probe` measures as
// contraction_call_us (probe/contraction.h). Layouts:
//  - MatMul: plain row-major operands, transposes expressed as strides; batch
//    dims folded into M when B is shared by the whole batch and A is not
//    transposed (ONNX Runtime does the same), collapsed to one batch dim when
//    neither operand broadcasts. A constant B is copied once per run into the
//    layout the primitive reads; where that is row-major K x N with N a
//    multiple of 1024 and M < 512, its rows are padded by 16 floats: on a
//    Zen 3 core oneDNN 2.6's gemm:jit ran 128 x 768 x 3072 (BERT's FFN) at
//    29 GFLOP/s with rows of 3072 and 54 with rows of 3088 (2 threads: 64
//    and 110-130), 128 x 768 x 1024 at 32 and 55, 128 x 768 x 2048 at 29
//    and 58; from M = 512 up padding gained nothing (1024 x 768 x 3072, 2
//    threads: 125 unpadded, 117-119 padded).
//  - Conv/ConvTranspose: a 1x1 ungrouped unstrided conv with at least
//    28x28 outputs per image runs on the NCHW tensors as they are (oneDNN's
//    gemm convolution reads them directly). Every other 2-D conv whose
//    channels oneDNN's blocked kernels take (graph/layout.h
//    conv_blocking) runs its blocked primitive, created on nChw<B>c
//    source and destination (a stem conv: NCHW source, blocked
//    destination), whatever the caller's layout: where the plan stores x
//    or y blocked (layout bits kConvXBlocked / kConvYBlocked, block 16
//    with kConvBlock16) that side needs no reorder, a plain side is
//    reordered NCHW <-> nChw<B>c around the call. Left to `any`, oneDNN
//    2.6 on avx512_core picks brgconv on NHWC: a conv chain reordered in
//    and out of every conv, and a conv between NCHW tensors paid the
//    NHWC -> NCHW reorder, 3x slower than from nChw16c (depthwise 3x3 144
//    at 56x56, one Zen 4 thread: 99 + 272 us of reorders against 42 + 44;
//    docs/layouts.md). Any other conv (4 channels per group, 3-D, 1-D,
//    ConvTranspose) runs in the layout oneDNN prefers (format_tag::any),
//    reordered in and out.
//    Measured on a Zen 3 core, one thread (µs, NCHW gemm:jit against
//    blocked + both reorders): 3x3 64->64 at 56x56 5873 vs 3518 + 111;
//    1x1 256->64 at 56x56 1521 vs 1394 + 267; 1x1 128->512 at 28x28 1329
//    vs 1200 + 125; 1x1 256->1024 at 14x14 1472 vs 1260 + 75; 1x1
//    2048->512 at 7x7 3566 vs 1304 + 33; 1x1 stride 2 1024->2048 at 14x14
//    8469 vs 3049 + 70; depthwise 3x3 144 at 56x56 4505 vs 236 + 243.
//  - MaxPool stays in fprt::pool: oneDNN's max pooling (2.6) drops NaN where
//    ONNX propagates it, and gives -FLT_MAX, not -inf, for a window wholly
//    in the padding. ResNet-50's stem pool, one Zen 3 thread: oneDNN's
//    1.4 ms (blocked, loaded machine); fprt::pool's row-vector loop 0.92 ms.
//  - matmul_view: B given as a view (its own element strides per dim, a
//    transposed B: GPT-2's Kᵀ read straight from K) is described to oneDNN
//    with those strides, every batch dim kept. oneDNN packs B before its
//    GEMM kernel either way; the view runs as it is only where the
//    primitive picks the same implementation as on a row-major B of those
//    dims, else B is reordered row-major first, so the bits are the
//    reference's (which reads the copied B). GPT-2 block at batch 8, one
//    Zen 4 thread: the scores MatMul on the view 2.71 ms against 2.59 on a
//    row-major Kᵀ, whose separate transposing copy took 0.79 ms.
//  - copy_view: a strided view copied row-major (a reorder on u8 or s32
//    elements, an 8-byte element as two s32 lanes, so every bit is kept),
//    bound once per (dims, strides, element size, threads).
//  - Weights are reordered to the primitive's preferred layout; for a model
//    constant (w_const) the reordered copy is kept until forget_weights().
// oneDNN's own errors become Error "oneDNN cannot run OP on SHAPES: WHY".
#pragma once

#include <string>

#include "emit/cpu/runtime.h"

namespace fuseplan {

/// The process-wide table (created on first use).
const fprt::ContractionLibrary& onednn_contractions();

/// Drops the reordered copies of constant weights. Call at the start of every
/// run: a constant's address is only known to hold the same weights within
/// one run (a later run may place other data there).
void onednn_forget_weights();

/// oneDNN's implementation names of the primitives created so far, one per
/// line "OP SHAPES: IMPL" (for `run --json` and tests).
std::string onednn_implementations();

/// µs the last call's primitive itself ran (steady clock), without the
/// activation and weight reorders around it: what the probe's contraction
/// throughput counts (probe/contraction.h).
double onednn_last_primitive_us();

/// The threads a contraction runs on now, and setting them: the OpenMP
/// (libgomp) thread count that oneDNN and the generated kernels share.
int contraction_threads();
void set_contraction_threads(int n);

/// oneDNN's version, e.g. "oneDNN 2.6.3".
std::string onednn_version();

/// fp32 lanes of the vectors oneDNN's kernels use on this machine, from its
/// effective ISA (dnnl::get_effective_cpu_isa: 16 for the AVX-512 ISAs, 8
/// for AVX/AVX2, 4 for SSE4.1), and that ISA's name.
struct OnednnVectors {
  int fp32_lanes = 4;
  std::string isa;
};
OnednnVectors onednn_vectors();

}  // namespace fuseplan
