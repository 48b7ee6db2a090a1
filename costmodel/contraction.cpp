// The contraction classes (costmodel/contraction.h): one node's class, the
// classes' names.
#include "costmodel/contraction.h"

#include <algorithm>

namespace fuseplan {

namespace {

constexpr std::string_view kNames[kContractionClassCount] = {
    "conv_1x1", "conv_spatial", "conv_depthwise", "conv_grouped",
    "gemm_skinny", "gemm_square", "gemm_tall", "matmul_batched"};

const TensorType* operand_type(const Graph& g, NodeId n, int k) {
  for (const InEdge& e : g.in_edges(n))
    if (e.operand == k) return &g.node(e.src).out;
  return nullptr;
}

double product(const std::vector<int64_t>& v, std::size_t from, std::size_t to) {
  double p = 1;
  for (std::size_t i = from; i < to && i < v.size(); ++i) p *= static_cast<double>(v[i]);
  return p;
}

// As exec/onednn.cpp's matmul() sets the problem up (1-D operands promoted).
ContractionClass matmul_class(const Primitive& p, const TensorType& a, const TensorType& b) {
  const bool trans_a = p.attr_int("transA", 0) != 0;
  const double batch_a = a.rank() > 2 ? product(a.shape, 0, a.rank() - 2) : 1;
  const double batch_b = b.rank() > 2 ? product(b.shape, 0, b.rank() - 2) : 1;
  if (batch_b > 1 || (trans_a && batch_a > 1)) return ContractionClass::matmul_batched;
  double rows = 1;  // A's rows (1 for a 1-D A)
  if (a.rank() >= 2) rows = static_cast<double>(a.shape[a.rank() - (trans_a ? 1 : 2)]);
  const double m = rows * batch_a;  // B shared by the batch: one GEMM over all of A's rows
  if (m <= static_cast<double>(kSkinnyMaxM)) return ContractionClass::gemm_skinny;
  return m >= static_cast<double>(kTallMinM) ? ContractionClass::gemm_tall : ContractionClass::gemm_square;
}

}  // namespace

std::string_view contraction_class_name(ContractionClass c) { return kNames[static_cast<int>(c)]; }

std::optional<ContractionClass> contraction_class_named(std::string_view name) {
  for (int i = 0; i < kContractionClassCount; ++i)
    if (kNames[i] == name) return static_cast<ContractionClass>(i);
  return std::nullopt;
}

std::array<ContractionClass, kContractionClassCount> contraction_classes() {
  std::array<ContractionClass, kContractionClassCount> all{};
  for (int i = 0; i < kContractionClassCount; ++i) all[i] = static_cast<ContractionClass>(i);
  return all;
}

std::optional<ContractionClass> contraction_class(const Graph& g, NodeId n) {
  const Primitive& p = g.node(n);
  if (p.op_class != OpClass::contraction || !p.out.known) return std::nullopt;
  const TensorType* a = operand_type(g, n, 0);
  const TensorType* b = operand_type(g, n, 1);
  if (!a || !b) return std::nullopt;
  if (p.kind == Op::MatMul) return matmul_class(p, *a, *b);
  if (b->rank() < 3) return std::nullopt;
  // Conv weights [M, C/group, k...]; ConvTranspose [C, M/group, k...].
  const int64_t group = std::max<int64_t>(1, p.attr_int("group", 1));
  const double c_per_group = p.kind == Op::ConvTranspose ? static_cast<double>(b->shape[0]) / static_cast<double>(group)
                                                         : static_cast<double>(b->shape[1]);
  if (group > 1) return c_per_group == 1 ? ContractionClass::conv_depthwise : ContractionClass::conv_grouped;
  return product(b->shape, 2, b->rank()) == 1 ? ContractionClass::conv_1x1 : ContractionClass::conv_spatial;
}

double contraction_lane_fill(const Graph& g, NodeId n, int lanes) {
  const Primitive& p = g.node(n);
  if (p.kind != Op::MatMul || !p.out.known || lanes <= 1) return 1;
  const TensorType* b = operand_type(g, n, 1);
  // A 1-D B is one column (exec/onednn.cpp promotes it to [K, 1]).
  const int64_t cols = b && b->rank() == 1 ? 1 : p.out.rank() > 0 ? p.out.shape.back() : 1;
  if (cols <= 0) return 1;
  const int64_t padded = (cols + lanes - 1) / lanes * lanes;
  return static_cast<double>(cols) / static_cast<double>(padded);
}

}  // namespace fuseplan
