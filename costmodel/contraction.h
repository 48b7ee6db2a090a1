// The classes of contraction the CPU cost model prices at their own
// throughput: the shapes oneDNN (exec/onednn.h) runs at markedly different
// GFLOP/s on one core. `contraction_class()` decides a node's class — the
// one place that does: the probe's shape table (probe/contraction.h), the
// contraction term (costmodel/terms.cpp) and the breakdown all ask it.
// Reference: docs/cost-model.md, "Contraction classes".
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "graph/graph.h"

namespace fuseplan {

enum class ContractionClass {
  conv_1x1,        // Conv, kernel volume 1, ungrouped (any stride)
  conv_spatial,    // Conv/ConvTranspose, kernel volume > 1, ungrouped (3x3, 7x7, ...)
  conv_depthwise,  // grouped with one input channel per group (C/group = 1)
  conv_grouped,    // grouped, C/group > 1
  gemm_skinny,     // MatMul, one GEMM of M <= kSkinnyMaxM rows: weight-bandwidth-bound
  gemm_square,     // MatMul, one GEMM of kSkinnyMaxM < M < kTallMinM rows
  gemm_tall,       // MatMul, one GEMM of M >= kTallMinM rows
  matmul_batched,  // MatMul that oneDNN runs batched (B has batch dims, or A transposed under a batch):
                   // attention's [B,H,S,D] x [B,H,D,S]
};
inline constexpr int kContractionClassCount = 8;

/// GEMM rows at most which a MatMul is skinny: each weight read feeds at most
/// 16 rows (two AVX2 6-row register tiles and change), so B's bytes bound it
/// (estimate; BERT's pooler and the classifiers run at M = 1).
inline constexpr int64_t kSkinnyMaxM = 16;
/// GEMM rows from which a MatMul is tall: exec/onednn.cpp pads a constant B's
/// rows only below this M (kPadBelowM = 512), where oneDNN 2.6's gemm:jit
/// reads unpadded rows at half speed; from 512 rows it runs at full speed.
inline constexpr int64_t kTallMinM = 512;

/// The class's name as the device JSON (contraction_GFLOPs) and records
/// (contraction_class_flops) key it: "conv_1x1", ...
std::string_view contraction_class_name(ContractionClass c);
/// The class named `name`, nullopt when none is.
std::optional<ContractionClass> contraction_class_named(std::string_view name);
/// Every class, in enum order.
std::array<ContractionClass, kContractionClassCount> contraction_classes();

/// The class of contraction node n (MatMul, Conv, ConvTranspose with known
/// shapes), nullopt for any other node. MatMul: batched where exec/onednn.cpp
/// runs oneDNN's batched matmul (B has a batch of more than one, or A is
/// transposed under a batch), else one GEMM of M = A's rows × A's batch,
/// skinny / square / tall by M. Conv: depthwise, grouped, 1x1 or spatial by
/// group and kernel volume.
std::optional<ContractionClass> contraction_class(const Graph& g, NodeId n);

/// The fraction of a vector's `lanes` a MatMul's columns fill: N / (N
/// rounded up to a multiple of `lanes`), in (0, 1]; 1 for any other node
/// and for lanes <= 1. oneDNN's brgemm matmul vectorises over B's columns
/// (N) and broadcasts A's elements, so a matmul of N < lanes runs at N /
/// lanes of its class's throughput: distilbert_tiny's [2,128,128] x
/// [2,128,1] took 9-10 us in oneDNN 2.6 (its verbose log, one Zen 4
/// thread), 65536 FLOPs at 7 GFLOP/s against the batched class's 115 = 1/16
/// of it. The probe's shapes (probe/contraction.cpp) all have N >= 64, so
/// the class rates carry no such loss. Convolutions count 1 (their kernels
/// block output channels by the vector, but no probed shape tells how the
/// library handles a short block).
double contraction_lane_fill(const Graph& g, NodeId n, int lanes);

}  // namespace fuseplan
