#include "emit/kernel_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "graph/op_attrs.h"
#include "search/nested_reduction.h"

namespace fuseplan {

bool KernelPlan::is_stage(NodeId n) const {
  for (const Stage& s : stages)
    if (s.node == n) return true;
  return false;
}

bool KernelPlan::is_nested_store(NodeId n) const {
  return nested.count(n) > 0 && std::find(stores.begin(), stores.end(), n) != stores.end();
}

namespace {

// The nests of a group's reductions of different rows (per horizontal
// branch), into kp.nested and kp.nest_outer; a group whose reductions do not
// nest keeps every reduction a stage.
void find_nests(const Graph& g, const Group& grp, KernelPlan& kp) {
  std::vector<std::vector<NodeId>> parts = grp.branches;
  if (grp.kind != GroupKind::horizontal || parts.size() < 2) parts = {grp.nodes};
  for (const auto& part : parts) {
    std::vector<NodeId> reds;
    for (NodeId n : part)
      if (g.op_class(n) == OpClass::reduction) reds.push_back(n);
    ReductionNest nest;
    if (reduce_same_rows(g, reds) || !can_nest_reductions(g, part, &nest).ok()) continue;
    kp.nested.insert(nest.inner.begin(), nest.inner.end());
    kp.nest_outer.insert(nest.chain.begin() + 1, nest.chain.end());
  }
}

bool is_row_op(const Primitive& p, int rank, int* min_axis) {
  if (p.out.rank() != rank) return false;
  if (traits(p).is_reduce()) {
    ReduceParams rp = reduce_params(p, rank);
    if (!rp.keepdims || rp.axes.empty()) return false;
    *min_axis = std::min(*min_axis, rp.axes.front());
    return true;
  }
  return (traits(p).is_scalar() && p.kind != Op::Where) || p.kind == Op::Cast;
}

// Row-resident multipass: every member has the same rank and leading dims,
// is per-element or a keepdims reduction over trailing axes. Returns the
// number of shared leading dims (0 = not applicable).
int row_dims_of(const Graph& g, const std::vector<NodeId>& nodes) {
  if (nodes.empty()) return 0;
  int rank = g.node(nodes.front()).out.rank();
  int min_axis = rank;
  bool has_reduce = false;
  for (NodeId n : nodes) {
    if (!is_row_op(g.node(n), rank, &min_axis)) return 0;
    has_reduce = has_reduce || traits(g.node(n)).is_reduce();
  }
  if (!has_reduce || min_axis < 1) return 0;
  const auto& lead = g.node(nodes.front()).out.shape;
  for (NodeId n : nodes)
    for (int d = 0; d < min_axis; ++d)
      if (g.node(n).out.shape[d] != lead[d]) return 0;
  return min_axis;
}

std::string paren(const std::string& s) { return "(" + s + ")"; }

// "(int8_t)(-5LL)"; INT64_MIN spelled as an expression (its literal would overflow).
std::string int_literal(int64_t i, const std::string& ty) {
  if (i == std::numeric_limits<int64_t>::min()) return "(" + ty + ")(-9223372036854775807LL-1)";
  return "(" + ty + ")(" + std::to_string(i) + "LL)";
}

}  // namespace

KernelPlan plan_kernel(const Graph& g, const Group& grp, bool strided_matmul_b) {
  KernelPlan kp;
  kp.group_id = grp.id;
  kp.fn_name = "fp_group_" + std::to_string(grp.id);
  kp.members.insert(grp.nodes.begin(), grp.nodes.end());
  std::set<NodeId> stage_set(grp.materialised.begin(), grp.materialised.end()), loads;
  for (NodeId n : grp.nodes) {
    const Primitive& p = g.node(n);
    if (p.op_class == OpClass::source) throw Error("group " + std::to_string(grp.id) + " holds source '" + p.name + "'");
    if (p.op_class == OpClass::opaque)
      throw Error("cannot execute opaque primitive '" + p.name + "' (op " + p.op + ")");
    if (!p.out.known) throw Error("cannot emit '" + p.name + "': its shape is not known");
    c_type(p.out.dtype);  // rejects dtypes the backend cannot hold
    if (traits(p).is_reduce() || is_library_op(p)) stage_set.insert(n);
    for (NodeId o : g.operands(n))
      if (!kp.members.count(o)) {
        if (reads_as_immediate(p, g.node(o))) kp.immediates.insert(o);
        else loads.insert(o);
      }
  }
  // Library routines read whole buffers.
  auto member = [&](NodeId o) { return kp.members.count(o) > 0; };
  auto stage = [&](NodeId, NodeId o) { stage_set.insert(o); };
  if (strided_matmul_b) for_each_computed_library_operand(g, grp.nodes, member, stage);
  else for_each_library_operand(g, grp.nodes, member, stage);
  for (NodeId n : grp.materialised)
    if (!kp.members.count(n)) throw Error("group " + std::to_string(grp.id) + " materialises a node it does not hold");
  find_nests(g, grp, kp);
  for (NodeId n : kp.nested) stage_set.erase(n);
  std::vector<NodeId> order(grp.nodes);
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return g.topo_index(a) < g.topo_index(b); });
  std::set<NodeId> mat(grp.materialised.begin(), grp.materialised.end());
  for (NodeId n : order) {
    if (!stage_set.count(n)) continue;
    const Primitive& p = g.node(n);
    StageKind k = traits(p).is_reduce() ? StageKind::reduce : (is_library_op(p) ? StageKind::library : StageKind::loop);
    kp.stages.push_back({n, k, mat.count(n) > 0});
  }
  kp.loads.assign(loads.begin(), loads.end());
  kp.stores.assign(grp.materialised.begin(), grp.materialised.end());
  std::sort(kp.stores.begin(), kp.stores.end());
  kp.row_dims = kp.nested.empty() ? row_dims_of(g, order) : 0;
  if (kp.row_dims > 0) {
    const auto& s = g.node(order.front()).out.shape;
    kp.row_shape.assign(s.begin(), s.begin() + kp.row_dims);
  }
  return kp;
}

std::optional<MatMulBView> strided_matmul_b_view(const Graph& g, const KernelPlan& kp, NodeId mm) {
  const auto ops = g.operands(mm);
  if (ops.size() > 1 && kp.is_stage(ops[1])) return std::nullopt;
  return strided_matmul_operand(g, mm, [&](NodeId at) { return kp.members.count(at) > 0; });
}

std::optional<StridedView> strided_view(const Graph& g, const KernelPlan& kp, NodeId n) {
  // The chain from n down to its source: n, then members that are no stage.
  if (!kp.members.count(n)) return std::nullopt;
  const std::optional<ViewFactors> v =
      view_factors(g, n, [&](NodeId at) { return at == n || (kp.members.count(at) && !kp.is_stage(at)); });
  if (!v || (!kp.is_stage(v->source) && std::find(kp.loads.begin(), kp.loads.end(), v->source) == kp.loads.end()))
    return std::nullopt;
  // Flatten, drop size-1 factors, merge factors contiguous in the source.
  StridedView out;
  out.source = v->source;
  out.offset = v->offset;
  for (const auto& d : v->dims)
    for (auto [size, stride] : d) {
      if (size == 1) continue;
      if (!out.dims.empty() && out.strides.back() == stride * size) {
        out.dims.back() *= size;
        out.strides.back() = stride;
      } else {
        out.dims.push_back(size);
        out.strides.push_back(stride);
      }
    }
  return out;
}

std::string linear_offset(const std::vector<int64_t>& shape, const Coords& c) {
  std::string off;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    off = off.empty() ? paren(c[d]) : "(" + off + "*" + std::to_string(shape[d]) + "+" + paren(c[d]) + ")";
  }
  return off.empty() ? "0" : off;
}

Coords delinearise(const std::vector<int64_t>& shape, const std::string& offset) {
  Coords c(shape.size(), "0");
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) {
      std::string q = stride == 1 ? paren(offset) : "(" + paren(offset) + "/" + std::to_string(stride) + ")";
      c[d] = d == 0 ? q : "(" + q + "%" + std::to_string(shape[d]) + ")";
    }
    stride *= shape[d];
  }
  return c;
}

Coords reshape_coords(const std::vector<int64_t>& is, const std::vector<int64_t>& os, const Coords& c) {
  int64_t ni = 1, no = 1;
  for (int64_t v : is) ni *= v;
  for (int64_t v : os) no *= v;
  if (ni <= 0 || ni != no) return delinearise(is, linear_offset(os, c));  // empty: no element is read
  // Split both shapes into the shortest consecutive blocks of equal element
  // count (common factors). Within a block the input coordinates are the
  // output block's offset unravelled in the input block's dims; a block of
  // one dim > 1 on each side maps its coordinate straight through, and the
  // outermost dim > 1 of a block needs no modulo (the offset is below the
  // block's count). [1,128,2] -> [1,128,2,1] reads t[i1*2+i2], not
  // t[((L/2)%128)*2+L%2] with L = i1*2+i2.
  Coords ic(is.size(), "0");
  std::size_t i = 0, o = 0;
  while (i < is.size() || o < os.size()) {
    const std::size_t i0 = i, o0 = o;
    int64_t pi = 1, po = 1;
    do {
      if ((pi <= po && i < is.size()) || o == os.size()) pi *= is[i++];
      else po *= os[o++];
    } while (pi != po);
    std::vector<int64_t> ib(is.begin() + i0, is.begin() + i), ob(os.begin() + o0, os.begin() + o);
    const std::string off = linear_offset(ob, Coords(c.begin() + o0, c.begin() + o));
    int64_t stride = 1;
    std::size_t outer = ib.size();
    for (std::size_t d = 0; d < ib.size(); ++d)
      if (ib[d] != 1 && outer == ib.size()) outer = d;
    for (std::size_t d = ib.size(); d-- > 0;) {
      if (ib[d] == 1) continue;
      // off is parenthesised (linear_offset), so is q.
      std::string q = stride == 1 ? off : "(" + off + "/" + std::to_string(stride) + ")";
      ic[i0 + d] = d == outer ? q : "(" + q + "%" + std::to_string(ib[d]) + ")";
      stride *= ib[d];
    }
  }
  return ic;
}

Coords broadcast_coords(const std::vector<int64_t>& shape, const Coords& c) {
  Coords out(shape.size());
  std::size_t shift = c.size() - shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d) out[d] = shape[d] == 1 ? "0" : c[d + shift];
  return out;
}

Coords operand_coords(const Graph& g, NodeId n, int k, const Coords& c) {
  const Primitive& p = g.node(n);
  NodeId src = g.operands(n).at(k);
  const auto& is = g.node(src).out.shape;
  const auto& os = p.out.shape;
  int r = static_cast<int>(os.size());
  if (traits(p).is_scalar() || p.kind == Op::Cast || p.kind == Op::Expand) return broadcast_coords(is, c);
  if (p.kind == Op::Reshape || p.kind == Op::Identity) return is == os ? c : reshape_coords(is, os, c);
  Coords ic(is.size(), "0");
  if (p.kind == Op::Slice) {
    SliceParams sp = slice_params(p, r);
    for (int d = 0; d < r; ++d) {
      std::string m = sp.step[d] == 1 ? c[d] : paren(c[d]) + "*" + paren(std::to_string(sp.step[d]));
      ic[d] = sp.start[d] == 0 ? m : "(" + std::to_string(sp.start[d]) + "+" + m + ")";
    }
  } else if (p.kind == Op::Tile) {
    for (int d = 0; d < r; ++d) ic[d] = is[d] == os[d] ? c[d] : "(" + paren(c[d]) + "%" + std::to_string(is[d]) + ")";
  } else if (p.kind == Op::Transpose) {
    auto perm = p.attr_ints("perm");
    if (perm.empty())
      for (int d = r - 1; d >= 0; --d) perm.push_back(d);
    for (int d = 0; d < r; ++d) ic[perm[d]] = c[d];
  } else if (p.kind == Op::Resize) {
    ResizeParams rp = resize_params(p, is, os);
    for (int d = 0; d < r; ++d)
      ic[d] = (is[d] == os[d] && rp.scales[d] == 1.0f)
                  ? c[d]
                  : "fprt::resize_nearest(" + c[d] + "," + c_literal(rp.scales[d], DType::f32) + "," +
                        std::to_string(is[d]) + "," + std::to_string(os[d]) + "," + std::to_string(rp.coord_mode) +
                        "," + std::to_string(rp.nearest_mode) + ")";
  } else if (p.kind == Op::DepthToSpace || p.kind == Op::SpaceToDepth) {
    std::string b = std::to_string(p.attr_int("blocksize", 1));
    bool crd = p.attr_string("mode", "DCR") == "CRD";
    ic[0] = c[0];
    if (p.kind == Op::DepthToSpace) {
      std::string bh = "(" + paren(c[2]) + "%" + b + ")", bw = "(" + paren(c[3]) + "%" + b + ")";
      ic[1] = crd ? "(" + paren(c[1]) + "*" + b + "*" + b + "+" + bh + "*" + b + "+" + bw + ")"
                  : "((" + bh + "*" + b + "+" + bw + ")*" + std::to_string(os[1]) + "+" + paren(c[1]) + ")";
      ic[2] = "(" + paren(c[2]) + "/" + b + ")";
      ic[3] = "(" + paren(c[3]) + "/" + b + ")";
    } else {
      std::string icn = std::to_string(is[1]), blk = "(" + paren(c[1]) + "/" + icn + ")";
      ic[1] = "(" + paren(c[1]) + "%" + icn + ")";
      ic[2] = "(" + paren(c[2]) + "*" + b + "+" + blk + "/" + b + ")";
      ic[3] = "(" + paren(c[3]) + "*" + b + "+" + blk + "%" + b + ")";
    }
  } else {
    throw Error("operand_coords: " + p.op + " is not an affine index map");
  }
  return ic;
}

std::string c_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i64: return "int64_t";
    case DType::i32: return "int32_t";
    case DType::i16: return "int16_t";
    case DType::i8: return "int8_t";
    case DType::u8: return "uint8_t";
    case DType::boolean: return "bool";
    default: throw Error("the CPU backend cannot hold tensors of dtype " + std::string(to_string(t)));
  }
}

std::string c_literal(double v, DType t) {
  char buf[64];
  std::string ty = c_type(t);
  if (t == DType::f32 || t == DType::f64) {
    if (std::isnan(v)) return "std::numeric_limits<" + ty + ">::quiet_NaN()";
    if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + ty + ">::infinity()";
    if (t == DType::f32) {
      std::snprintf(buf, sizeof buf, "%af", static_cast<double>(static_cast<float>(v)));
    } else {
      std::snprintf(buf, sizeof buf, "%a", v);
    }
    return paren(buf);
  }
  if (t == DType::boolean) return v != 0 ? "true" : "false";
  return int_literal(static_cast<int64_t>(v), ty);
}

std::string immediate_literal(const Primitive& p) {
  FUSEPLAN_ASSERT(is_immediate(p), "'" + p.name + "' is an immediate");
  char buf[64];
  const ConstData& d = p.data;
  switch (p.out.dtype) {
    case DType::f32: {
      const float v = const_element<float>(d, 0);
      if (std::isfinite(v)) {
        std::snprintf(buf, sizeof buf, "(%af)", static_cast<double>(v));
      } else {
        uint32_t u;
        std::memcpy(&u, &v, sizeof u);
        std::snprintf(buf, sizeof buf, "fprt::f32_bits(0x%08xu)", static_cast<unsigned>(u));
      }
      return buf;
    }
    case DType::f64: {
      const double v = const_element<double>(d, 0);
      if (std::isfinite(v)) {
        std::snprintf(buf, sizeof buf, "(%a)", v);
      } else {
        uint64_t u;
        std::memcpy(&u, &v, sizeof u);
        std::snprintf(buf, sizeof buf, "fprt::f64_bits(0x%016llxull)", static_cast<unsigned long long>(u));
      }
      return buf;
    }
    case DType::boolean: return const_element<uint8_t>(d, 0) ? "true" : "false";
    case DType::i64: return int_literal(const_element<int64_t>(d, 0), "int64_t");
    case DType::i32: return int_literal(const_element<int32_t>(d, 0), "int32_t");
    case DType::i8: return int_literal(const_element<int8_t>(d, 0), "int8_t");
    case DType::u8: return int_literal(const_element<uint8_t>(d, 0), "uint8_t");
    default: break;
  }
  FUSEPLAN_ASSERT(false, "immediate '" + p.name + "' has a dtype the backends hold");
  return {};
}

}  // namespace fuseplan
