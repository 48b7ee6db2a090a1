// CPU contractions through oneDNN (Debian libdnnl-dev, dnnl.hpp): the
// fprt::ContractionLibrary (emit/cpu/runtime.h) that the reference executor
// and every loaded kernel library call. One table per process, so fused and
// unfused plans, and the reference, run each contraction through the same
// primitive: the same implementation (oneDNN's impl string) with the same
// threads, hence the same bits.
//
// Primitives are created once per (op, shapes, strides, pads, dilations,
// groups, threads) and reused. Layouts:
//  - MatMul: plain row-major operands, transposes expressed as strides; batch
//    dims folded into M when B is shared by the whole batch and A is not
//    transposed (ONNX Runtime does the same), collapsed to one batch dim when
//    neither operand broadcasts.
//  - Conv/ConvTranspose: a 1x1 ungrouped conv runs on the NCHW tensors as
//    they are (oneDNN's jit_1x1 / gemm convolution reads them directly);
//    every other conv runs in the layout oneDNN prefers (format_tag::any,
//    blocked nChw8c on AVX2), the activation reordered in and the output
//    reordered out around the call: on a Zen 3 core, one thread, the 3x3 conv
//    64->64 at 56x56 took 7.2 ms on NCHW (gemm:jit) and 4.1 ms blocked
//    (jit:avx2), each reorder ~0.1 ms.
//  - MaxPool stays in fprt::pool: oneDNN's max pooling (2.6) drops NaN where
//    ONNX propagates it, and gives -FLT_MAX, not -inf, for a window wholly
//    in the padding (tried: 1.4 ms against fprt's 5.3 ms for ResNet-50's
//    stem pool, blocked, one loaded Zen 3 thread).
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

/// The threads a contraction runs on now, and setting them: the OpenMP
/// (libgomp) thread count that oneDNN and the generated kernels share.
int contraction_threads();
void set_contraction_threads(int n);

/// oneDNN's version, e.g. "oneDNN 2.6.3".
std::string onednn_version();

}  // namespace fuseplan
