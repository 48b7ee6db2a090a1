#include "graph/view.h"

#include "graph/op_attrs.h"

namespace fuseplan {

namespace {

using Factors = std::vector<std::pair<int64_t, int64_t>>;

bool is_view_op(const Primitive& p) { return one_of(p.kind, {Op::Reshape, Op::Identity, Op::Transpose, Op::Slice}); }

// v reshaped to shape os (same element count): the factors regrouped in
// order, a factor split where a new dim ends inside it; false where a new
// dim's size does not divide or is not divided by the factor it meets.
bool reshape_view(std::vector<Factors>& v, const std::vector<int64_t>& os) {
  Factors flat;
  for (const Factors& d : v)
    for (auto f : d)
      if (f.first != 1) flat.push_back(f);
  std::vector<Factors> out(os.size());
  std::size_t k = 0;
  for (std::size_t d = 0; d < os.size(); ++d) {
    int64_t need = os[d];
    while (need > 1) {
      if (k == flat.size()) return false;
      auto [size, stride] = flat[k];
      if (need % size == 0) {
        out[d].push_back(flat[k++]);
        need /= size;
      } else if (size % need == 0) {
        out[d].push_back({need, stride * (size / need)});
        flat[k].first = size / need;
        need = 1;
      } else {
        return false;
      }
    }
  }
  if (k != flat.size()) return false;
  v = std::move(out);
  return true;
}

}  // namespace

std::optional<ViewFactors> view_factors(const Graph& g, NodeId n, const std::function<bool(NodeId)>& through) {
  std::vector<NodeId> chain;
  NodeId at = n;
  while (through(at)) {
    if (!is_view_op(g.node(at))) return std::nullopt;
    chain.push_back(at);
    at = g.operands(at).at(0);
  }
  if (chain.empty()) return std::nullopt;
  // The source: row-major, one factor per dim.
  const auto& ss = g.node(at).out.shape;
  std::vector<Factors> v(ss.size());
  int64_t step = 1;
  for (int d = static_cast<int>(ss.size()) - 1; d >= 0; --d) {
    v[d] = {{ss[d], step}};
    step *= ss[d];
  }
  ViewFactors out;
  out.source = at;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Primitive& p = g.node(*it);
    const auto& os = p.out.shape;
    const int r = static_cast<int>(os.size());
    if (p.kind == Op::Transpose) {
      auto perm = p.attr_ints("perm");
      if (perm.empty())
        for (int d = r - 1; d >= 0; --d) perm.push_back(d);
      std::vector<Factors> t(r);
      for (int d = 0; d < r; ++d) t[d] = v.at(perm[d]);
      v = std::move(t);
    } else if (p.kind == Op::Slice) {
      const SliceParams sp = slice_params(p, r);
      for (int d = 0; d < r; ++d) {
        if (sp.start[d] == 0 && sp.step[d] == 1 && os[d] == g.node(g.operands(*it)[0]).out.shape[d]) continue;
        Factors f;
        for (auto x : v[d])
          if (x.first != 1) f.push_back(x);
        if (sp.start[d] < 0 || sp.step[d] <= 0 || f.size() > 1) return std::nullopt;
        const int64_t stride = f.empty() ? 0 : f[0].second;
        out.offset += sp.start[d] * stride;
        v[d] = {{os[d], stride * sp.step[d]}};
      }
    } else if (!reshape_view(v, os)) {
      return std::nullopt;
    }
  }
  out.dims = std::move(v);
  return out;
}

std::optional<std::vector<int64_t>> view_strides(const ViewFactors& v) {
  std::vector<int64_t> strides;
  for (const Factors& d : v.dims) {
    int64_t stride = 0, span = 0;  // the run's innermost stride, and the elements it spans so far
    for (auto it = d.rbegin(); it != d.rend(); ++it) {
      const auto [size, s] = *it;
      if (size == 1) continue;
      if (span == 0) {
        stride = s;
        span = size;
      } else if (s == stride * span) {
        span *= size;
      } else {
        return std::nullopt;
      }
    }
    strides.push_back(stride);
  }
  return strides;
}

std::optional<MatMulBView> strided_matmul_operand(const Graph& g, NodeId mm,
                                                 const std::function<bool(NodeId)>& member) {
  const Primitive& p = g.node(mm);
  if (p.kind != Op::MatMul || g.operands(mm).size() < 2) return std::nullopt;
  const NodeId b = g.operands(mm)[1];
  if (!member(b) || g.node(b).out.dtype != DType::f32 || g.node(b).out.rank() < 2) return std::nullopt;
  const std::optional<ViewFactors> v = view_factors(g, b, member);
  if (!v || member(v->source) || g.op_class(v->source) == OpClass::source) return std::nullopt;
  const std::optional<std::vector<int64_t>> st = view_strides(*v);
  // B's contiguous dim is its reduced one (K, B's next-to-last dim; its last
  // under transB): a transposed B, which oneDNN packs as fast as a row-major
  // one. A view whose rows are strided (attention's V, rows 2304 floats
  // apart in the QKV output) measured 245 us slower at GPT-2 batch 8 than
  // the row-major copy the projection's epilogue writes for free.
  const auto& bs = g.node(b).out.shape;
  const std::size_t k_dim = bs.size() - (p.attr_int("transB", 0) ? 1 : 2);
  if (!st || (*st)[k_dim] != 1 || bs[k_dim] == 1) return std::nullopt;
  return MatMulBView{v->source, v->offset, *st};
}

}  // namespace fuseplan
