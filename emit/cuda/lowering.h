// How each group of a plan runs on the GPU: as emitted kernels, or as one
// library call (cuBLASLt GEMM, cuDNN convolution) with at most one emitted
// kernel before it (the group's fused prologue) and one after it (the whole
// fused epilogue). Plain C++: decided and printed without a GPU;
// exec/cuda_run.cpp makes the calls.
//
// The rule (lower_group), under the default LibraryOptions (cuBLASLt and
// cuDNN on, cuBLASLt's fused epilogues off):
//  1. `cublaslt`: a contraction group whose contraction is one f32 MatMul
//     with a 2-D B (A's leading dims fold into M, A not transposed, B
//     possibly transposed) runs cublasLtMatmul with the DEFAULT epilogue
//     writing the MatMul's output; every primitive after it is one emitted
//     "epilogue" kernel that reads it; primitives the MatMul reads inside the
//     group (a fused reshape/transpose/elementwise prologue) are one emitted
//     kernel before the call. Fused and unfused plans issue the same call
//     (same M, N, K, layouts, first heuristic algorithm with split-K
//     reduction schemes excluded) on the same values: bit-identical across
//     plans on one GPU.
//  2. `cudnn`: a contraction group whose contraction is one f32 Conv with 1-3
//     spatial dims and symmetric padding runs cudnnConvolutionForward
//     (IMPLICIT_GEMM, FMA math: no TF32, deterministic) writing the Conv's
//     output, with the prologue/epilogue kernels of 1 (cuDNN's fused
//     bias/activation is not used). Bit-identical across plans on one GPU.
//  3. `fused_epilogue` (opt-in): as 1, but the primitives right after the
//     GEMM that cuBLASLt's epilogues compute (BIAS, RELU, RELU_BIAS, tanh
//     GELU, GELU_BIAS: match_cublaslt) go into the call; only the rest is the
//     epilogue kernel. None of them is provably the same bits as the DEFAULT
//     call plus the emitted epilogue, so none is on by default. BIAS's add
//     (alpha = 1, beta = 0: acc + bias[n], one f32 rounding) would round
//     like the emitted Add, but the heuristic is asked per epilogue and may
//     pick another algorithm (another accumulation order) than the unfused
//     plan's DEFAULT call; cuBLASLt documents RELU only as max(x, 0), while
//     the emitted fprt::relu is `x < 0 ? 0 : x` (relu(-0) = -0, relu(NaN) =
//     NaN, where a max may give +0 and 0); the GELU epilogues are tanh
//     approximations. Verified by tolerance, not bit identity.
//  4. Emitted: non-contraction groups, and every group when LibraryOptions
//     are none() (`--library none`: GEMM and convolution computed per output
//     element, k ascending, docs/cuda.md). A contraction
//     group whose contraction an enabled library refuses (batched MatMul
//     with a 3-D+ B, transposed A, asymmetric padding, non-f32, more than one
//     contraction in the group, more than 3 spatial dims) is the *fallback*
//     (Route::fallback): emitted the same way, labelled "emitted fallback:
//     <reason>" in `why`.
#pragma once

#include <string>
#include <vector>

#include "costmodel/group.h"
#include "emit/cuda/cuda_printer.h"
#include "graph/graph.h"

namespace fuseplan::cuda {

/// Which libraries contraction groups use. Default: MatMul through cuBLASLt
/// and Conv through cuDNN, without cuBLASLt's fused epilogues (the rule
/// above); none() emits every group.
struct LibraryOptions {
  bool cublaslt = true;         // MatMul through cublasLtMatmul (case 1 above)
  bool fused_epilogue = false;  // with cublaslt: cuBLASLt's fused epilogues (case 3 above)
  bool cudnn = true;            // Conv through cudnnConvolutionForward (case 2 above)
  /// Every GEMM and convolution emitted (case 4; `--library none`).
  static LibraryOptions none() { return {false, false, false}; }
  bool any() const { return cublaslt || cudnn; }
  /// "emitted", "cublaslt", "cublaslt+fused-epilogue", "cudnn", "cublaslt+cudnn" (the default), ...
  std::string str() const;
};

/// How a contraction group maps onto cuBLASLt: the matmul epilogue that
/// covers the primitives right after the GEMM ("BIAS", "RELU_BIAS", "RELU",
/// "GELU_BIAS", "GELU" for tanh-GELU only, "DEFAULT"), and how many of the
/// group's primitives remain for the one fused epilogue kernel. `epilogue`
/// is empty for groups that are not a 2-D-weight f32 MatMul contraction.
struct LibraryMatch {
  std::string epilogue;
  int covered = 0;    // primitives cuBLASLt computes (GEMM included)
  int remaining = 0;  // primitives left to the emitted epilogue kernel
  std::vector<NodeId> covered_nodes;  // the MatMul first, then the epilogue's primitives
  // Operands of the call (set when A is not transposed; B may be):
  // out[M,N] = epilogue(a[M,K] x op(b) + bias[N]), op(b) = b[K,N] or, with
  // trans_b, b[N,K] transposed; a's leading dims folded into M; row-major f32.
  NodeId a = kNoNode, b = kNoNode, bias = kNoNode, out = kNoNode;
  bool trans_b = false;
  int64_t M = 0, N = 0, K = 0;
  /// cuBLASLt computes the whole group (nothing remaining).
  bool callable() const { return !epilogue.empty() && remaining == 0 && out != kNoNode; }
};
LibraryMatch match_cublaslt(const Graph& g, const Group& grp);

/// A Conv primitive as cuDNN sees it: NCHW / NCDHW packed f32 tensors, a
/// 1-D convolution as 2-D with a unit height. Dims in elements.
struct ConvMatch {
  NodeId x = kNoNode, w = kNoNode, out = kNoNode;
  std::vector<int> x_dims, w_dims, y_dims;  // 4 or 5 entries
  std::vector<int> pads, strides, dilations;  // one per cuDNN spatial dim (2 or 3)
  int groups = 1;
  bool valid() const { return out != kNoNode; }
};

/// How one group runs (rule in the file comment).
struct GroupLowering {
  /// emitted: not a contraction group, or no library enabled for it;
  /// fallback: a contraction group an enabled library refuses, emitted.
  enum class Route { emitted, fallback, cublaslt, cudnn };
  Route route = Route::emitted;
  /// One line: what the library call computes, or why the group is emitted
  /// ("emitted: ..." or, for the fallback, "emitted fallback: ...").
  std::string why;
  LibraryMatch gemm;  // route cublaslt: the call (epilogue "DEFAULT" unless case 3 matched)
  ConvMatch conv;     // route cudnn
  /// The tensor the library call writes (the MatMul/Conv, or the last
  /// primitive of cuBLASLt's fused epilogue); kNoNode when emitted.
  NodeId library_out = kNoNode;
  /// The members the contraction reads inside the group (a fused prologue:
  /// reshape/transpose/elementwise producers), as one emitted group that runs
  /// before the call and materialises what the call and the epilogue read;
  /// `nodes` empty: none.
  Group prologue;
  /// The group's other primitives as one emitted group (same id; kind loop,
  /// or reduction when it holds one) run after the call; `nodes` empty: no
  /// epilogue kernel.
  Group epilogue;
  bool library() const { return route == Route::cublaslt || route == Route::cudnn; }
};
/// "emitted", "emitted-fallback", "cublaslt", "cudnn".
const char* to_string(GroupLowering::Route r);

/// Applies the rule to grp. Never throws for a group the printer can print.
GroupLowering lower_group(const Graph& g, const Group& grp, const LibraryOptions& o);

/// The source of grp under `l`: emitted groups print as print_cuda_group;
/// library groups get a comment naming the call, then the epilogue group's
/// kernels (fp_g<id>_k<i>), or no kernel when nothing remains.
CudaGroupSource print_lowered_group(const Graph& g, const Group& grp, const GroupLowering& l,
                                    const CudaOptions& o = {}, std::string_view title = "");

}  // namespace fuseplan::cuda
