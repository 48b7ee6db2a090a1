#include "graph/op_attrs.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>

namespace fuseplan {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

SliceParams slice_params(const Primitive& p, int rank) {
  SliceParams sp{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1)};
  auto starts = p.attr_ints("starts"), axes = p.attr_ints("axes"), steps = p.attr_ints("steps");
  for (std::size_t i = 0; i < starts.size(); ++i) {
    int64_t ax = i < axes.size() ? axes[i] : static_cast<int64_t>(i);
    if (ax < 0) ax += rank;
    if (ax < 0 || ax >= rank) throw Error("Slice '" + p.name + "': axis out of range");
    sp.start[ax] = starts[i];
    sp.step[ax] = i < steps.size() ? steps[i] : 1;
  }
  return sp;
}

PadParams pad_params(const Primitive& p, int rank) {
  PadParams pp;
  auto pads = p.attr_ints("pads");
  pp.begin.assign(rank, 0);
  for (int i = 0; i < rank && i < static_cast<int>(pads.size()); ++i) pp.begin[i] = pads[i];
  std::string m = p.attr_string("mode", "constant");
  pp.mode = m == "reflect" ? 1 : (m == "edge" ? 2 : 0);
  if (m != "constant" && m != "reflect" && m != "edge") throw Error("Pad '" + p.name + "': unsupported mode '" + m + "'");
  pp.value = p.attr_float("value", 0.0);
  return pp;
}

ResizeParams resize_params(const Primitive& p, const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  ResizeParams rp;
  std::vector<double> sc;
  auto it = p.attrs.find("scales");
  if (it != p.attrs.end()) {
    if (auto v = std::get_if<std::vector<double>>(&it->second)) sc = *v;
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    rp.scales.push_back(i < sc.size() && sc[i] > 0 ? static_cast<float>(sc[i])
                                                   : static_cast<float>(out[i]) / static_cast<float>(in[i]));
  std::string mode = p.attr_string("mode", "nearest");
  rp.linear = mode == "linear";
  if (mode != "nearest" && mode != "linear") throw Error("Resize '" + p.name + "': unsupported mode '" + mode + "'");
  static const std::map<std::string, int> coord = {{"half_pixel", 0}, {"asymmetric", 1}, {"align_corners", 2},
                                                   {"pytorch_half_pixel", 3}, {"tf_half_pixel_for_nn", 4}};
  static const std::map<std::string, int> nearest = {
      {"round_prefer_floor", 0}, {"round_prefer_ceil", 1}, {"floor", 2}, {"ceil", 3}};
  auto c = coord.find(p.attr_string("coordinate_transformation_mode", "half_pixel"));
  if (c == coord.end()) throw Error("Resize '" + p.name + "': unsupported coordinate_transformation_mode");
  rp.coord_mode = c->second;
  auto n = nearest.find(p.attr_string("nearest_mode", "round_prefer_floor"));
  if (n == nearest.end()) throw Error("Resize '" + p.name + "': unsupported nearest_mode");
  rp.nearest_mode = n->second;
  return rp;
}

WindowParams window_params(const Primitive& p, int spatial) {
  WindowParams w;
  auto get = [&](const char* k, int64_t dflt, int n) {
    auto v = p.attr_ints(k);
    if (v.empty()) v.assign(n, dflt);
    if (static_cast<int>(v.size()) != n) throw Error(p.op + " '" + p.name + "': attribute " + k + " has wrong length");
    return v;
  };
  w.kernel = p.attr_ints("kernel_shape");
  w.strides = get("strides", 1, spatial);
  w.pads = get("pads", 0, 2 * spatial);
  w.dilations = get("dilations", 1, spatial);
  w.group = p.attr_int("group", 1);
  return w;
}

ReduceParams reduce_params(const Primitive& p, int in_rank) {
  ReduceParams rp;
  rp.kind = traits(p).reduce;
  FUSEPLAN_ASSERT(rp.kind != ReduceKind::none, "reduce_params of '" + p.name + "' (op " + p.op + "), not a reduce op");
  if (one_of(p.kind, {Op::GlobalAveragePool, Op::GlobalMaxPool})) {
    for (int a = 2; a < in_rank; ++a) rp.axes.push_back(a);
    return rp;
  }
  for (int64_t a : p.attr_ints("axes")) rp.axes.push_back(static_cast<int>(a < 0 ? a + in_rank : a));
  if (rp.axes.empty())
    for (int a = 0; a < in_rank; ++a) rp.axes.push_back(a);
  std::sort(rp.axes.begin(), rp.axes.end());
  rp.axes.erase(std::unique(rp.axes.begin(), rp.axes.end()), rp.axes.end());
  rp.keepdims = p.attr_int("keepdims", 1) != 0;
  return rp;
}

int64_t reduce_lanes(const ReduceParams& rp, const std::vector<int64_t>& in_shape, DType t) {
  if ((t != DType::f32 && t != DType::f64) || rp.axes.empty()) return 1;
  const int last = rp.axes.back();  // sorted by reduce_params
  if (last < 0 || last >= static_cast<int>(in_shape.size())) return 1;
  const int64_t len = in_shape[static_cast<std::size_t>(last)];
  return len > 0 && len % kReduceLanes == 0 ? kReduceLanes : 1;
}

namespace {
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

ScalarOp scalar_op(const Primitive& p) {
  const ScalarFn& f = traits(p).scalar;
  if (!f.fn) throw Error("'" + p.op + "' is not a scalar op");
  ScalarOp s{f.fn, f.infix, {}, f.bool_result};
  switch (p.kind) {
    case Op::LeakyRelu: s.extra = {p.attr_float("alpha", 0.01)}; break;
    case Op::Clip: s.extra = {p.attr_float("min", -kInf), p.attr_float("max", kInf)}; break;
    case Op::HardSigmoid: s.extra = {p.attr_float("alpha", 0.2), p.attr_float("beta", 0.5)}; break;
    case Op::Elu: s.extra = {p.attr_float("alpha", 1.0)}; break;
    case Op::Mod: s.extra = {static_cast<double>(p.attr_int("fmod", 0))}; break;
    default: break;
  }
  return s;
}

bool is_library_op(const Primitive& p) {
  return traits(p).library || (p.kind == Op::Resize && p.attr_string("mode", "nearest") == "linear");
}

bool is_immediate(const Primitive& p) {
  if (p.op_class != OpClass::source || p.source == SourceKind::graph_input || p.data.empty() || !p.out.known)
    return false;
  switch (p.out.dtype) {
    case DType::f32: case DType::f64: case DType::i64: case DType::i32: case DType::i8: case DType::u8:
    case DType::boolean: break;
    default: return false;
  }
  return p.out.numel() == 1;
}

bool reads_as_immediate(const Primitive& consumer, const Primitive& operand) {
  return is_immediate(operand) && consumer.op_class != OpClass::source && !is_library_op(consumer);
}

bool calls_transcendental(const Graph& g, NodeId n) {
  const Primitive& p = g.node(n);
  return (p.op_class == OpClass::elementwise || p.op_class == OpClass::broadcast) && traits(p).transcendental() &&
         pow_multiplies(g, n) == 0;
}

int pow_multiplies(const Graph& g, NodeId n) {
  const Primitive& p = g.node(n);
  if (p.kind != Op::Pow || !p.out.known || (p.out.dtype != DType::f32 && p.out.dtype != DType::f64)) return 0;
  for (const InEdge& e : g.in_edges(n)) {
    if (e.operand != 1) continue;
    const Primitive& y = g.node(e.src);
    if (!reads_as_immediate(p, y)) return 0;
    const double v = const_element<double>(y.data, 0);
    return v == 2 ? 1 : (v == 3 ? 2 : 0);
  }
  return 0;
}

}  // namespace fuseplan
