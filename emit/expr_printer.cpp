#include "emit/expr_printer.h"

#include "graph/op_attrs.h"

namespace fuseplan {

int64_t InlineExprPrinter::numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool InlineExprPrinter::is_global(NodeId n) const {
  if (!kp_.members.count(n)) return true;
  for (const Stage& s : kp_.stages)
    if (s.node == n) return s.global;
  return kp_.is_nested_store(n);
}

std::string InlineExprPrinter::key(NodeId n, const Coords& c) const {
  std::string k = id(n) + "@";
  for (const auto& x : c) k += x + ",";
  return k;
}

std::string InlineExprPrinter::define(NodeId n, const std::string& k, const std::string& expr) {
  std::string v = "v" + std::to_string(tmp_++);
  line("const " + ty(n) + " " + v + " = " + expr + ";");
  memo_.back()[k] = v;
  return v;
}

std::string InlineExprPrinter::val(NodeId n, const Coords& c) {
  // A scalar constant is compiled in (graph/op_attrs.h reads_as_immediate):
  // no load, no local.
  if (kp_.immediates.count(n)) return immediate_literal(g_.node(n));
  std::string k = key(n, c);
  for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
    auto f = it->find(k);
    if (f != it->end()) return f->second;
  }
  return value(n, c, k);
}

std::string InlineExprPrinter::value(NodeId n, const Coords& c, const std::string& k) {
  if (!kp_.members.count(n) || kp_.is_stage(n)) return define(n, k, load(n, c));
  const std::string v = kp_.nested.count(n) && traits(g_.node(n)).is_reduce() ? nested_reduce(n, c, k)
                                                                             : define(n, k, compute(n, c));
  if (kp_.is_nested_store(n)) store_nested(n, c, v);
  return v;
}

std::string InlineExprPrinter::as(DType want, NodeId n, const std::string& v) {
  return g_.node(n).out.dtype == want ? v : "fprt::cast<" + c_type(want) + ">(" + v + ")";
}

std::string InlineExprPrinter::compute(NodeId n, const Coords& c) {
  const Primitive& p = g_.node(n);
  auto ops = g_.operands(n);
  std::string T = ty(n);
  if (p.kind == Op::Where) {
    auto at = [&](int k) { return val(ops[k], broadcast_coords(shape(ops[k]), c)); };
    std::string cond = as(DType::boolean, ops[0], at(0));
    return "fprt::select<" + T + ">(" + cond + ", " + as(p.out.dtype, ops[1], at(1)) + ", " +
           as(p.out.dtype, ops[2], at(2)) + ")";
  }
  if (one_of(p.kind, {Op::Reshape, Op::Expand, Op::Slice, Op::Tile, Op::Transpose, Op::Resize, Op::DepthToSpace,
                      Op::SpaceToDepth, Op::Identity}))
    return val(ops[0], operand_coords(g_, n, 0, c));
  if (p.kind == Op::Cast) return "fprt::cast<" + T + ">(" + val(ops[0], broadcast_coords(shape(ops[0]), c)) + ")";
  if (traits(p).is_scalar()) {
    ScalarOp s = scalar_op(p);
    DType in = g_.node(ops[0]).out.dtype;
    std::vector<std::string> a;
    for (std::size_t k = 0; k < ops.size(); ++k)
      a.push_back(as(in, ops[k], val(ops[k], broadcast_coords(shape(ops[k]), c))));
    if (s.fn == "!") return "(!" + a[0] + ")";
    if (s.fn.empty()) return a[0];
    if (s.infix) return s.bool_result ? "(" + a[0] + s.fn + a[1] + ")" : "(" + T + ")(" + a[0] + s.fn + a[1] + ")";
    for (double e : s.extra) a.push_back(p.kind == Op::Mod ? std::to_string(static_cast<int>(e)) : c_literal(e, in));
    std::string args;
    for (std::size_t k = 0; k < a.size(); ++k) args += (k ? "," : "") + a[k];
    return "(" + T + ")" + s.fn + "(" + args + ")";
  }
  if (p.kind == Op::Concat) return concat(n, c);
  if (p.kind == Op::Pad) return pad(n, c);
  if (p.kind == Op::Gather || p.kind == Op::GatherElements) {
    int ax = static_cast<int>(p.attr_int("axis", 0));
    const auto& ds = shape(ops[0]);
    int q = static_cast<int>(shape(ops[1]).size());
    Coords ic = p.kind == Op::Gather ? Coords(c.begin() + ax, c.begin() + ax + q) : c;
    std::string iv = "fprt::norm_index((int64_t)" + val(ops[1], ic) + "," + std::to_string(ds[ax]) + ")";
    Coords dc;
    for (int d = 0; d < static_cast<int>(ds.size()); ++d)
      dc.push_back(d == ax ? iv : (p.kind == Op::GatherElements || d < ax ? c[d] : c[d + q - 1]));
    return val(ops[0], dc);
  }
  if (p.kind == Op::OneHot) {
    int r = static_cast<int>(c.size());
    int ax = static_cast<int>(p.attr_int("axis", -1));
    if (ax < 0) ax += r;
    std::string depth = std::to_string(p.attr_int("depth", shape(n)[ax]));
    Coords ic;
    for (int d = 0; d < r; ++d)
      if (d != ax) ic.push_back(c[d]);
    std::string v = "(int64_t)" + val(ops[0], ic);
    return "(((" + v + "<0 ? " + v + "+" + depth + " : " + v + ") == (" + c[ax] + ")) ? " +
           c_literal(p.attr_float("on", 1), p.out.dtype) + " : " + c_literal(p.attr_float("off", 0), p.out.dtype) + ")";
  }
  if (p.kind == Op::QuantizeLinear || p.kind == Op::DequantizeLinear) {
    int ax = static_cast<int>(p.attr_int("axis", 1));
    bool quant = p.kind == Op::QuantizeLinear;
    DType qt = quant ? p.out.dtype : g_.node(ops[0]).out.dtype;
    auto param = [&](NodeId o) {
      Coords pc(shape(o).size(), "0");
      if (numel(shape(o)) > 1)
        for (std::size_t d = 0; d < pc.size(); ++d)
          if (shape(o)[d] > 1) pc[d] = c[ax];
      return val(o, pc);
    };
    std::string x = val(ops[0], c), scale = as(DType::f32, ops[1], param(ops[1]));
    std::string zp = ops.size() > 2 ? as(qt, ops[2], param(ops[2])) : "(" + c_type(qt) + ")0";
    return quant ? "fprt::quantize<" + c_type(qt) + ">(" + as(DType::f32, ops[0], x) + "," + scale + "," + zp + ")"
                 : "fprt::dequantize<" + c_type(qt) + ">(" + x + "," + scale + "," + zp + ")";
  }
  throw Error("the " + backend_ + " backend cannot inline primitive '" + p.name + "' (op " + p.op + ")");
}

std::string InlineExprPrinter::concat(NodeId n, const Coords& c) {
  auto ops = g_.operands(n);
  int ax = static_cast<int>(g_.node(n).attr_int("axis", 0));
  std::vector<std::string> v;
  std::vector<int64_t> ends;
  int64_t off = 0;
  for (NodeId o : ops) {
    Coords oc = c;
    int64_t dim = shape(o)[ax];
    oc[ax] = "fprt::clamp_index((" + c[ax] + ")-" + std::to_string(off) + "," + std::to_string(dim) + ")";
    v.push_back(val(o, oc));
    off += dim;
    ends.push_back(off);
  }
  std::string e = v.back();
  for (int k = static_cast<int>(v.size()) - 2; k >= 0; --k)
    e = "((" + c[ax] + ")<" + std::to_string(ends[k]) + " ? " + v[k] + " : " + e + ")";
  return e;
}

std::string InlineExprPrinter::pad(NodeId n, const Coords& c) {
  const Primitive& p = g_.node(n);
  NodeId o = g_.operands(n)[0];
  const auto& is = shape(o);
  const auto& os = shape(n);
  PadParams pp = pad_params(p, static_cast<int>(os.size()));
  Coords ic = c;
  std::string inside = "true";
  for (std::size_t d = 0; d < os.size(); ++d) {
    if (pp.begin[d] == 0 && is[d] == os[d]) continue;
    // begin < 0 crops (ONNX allows negative pads): "(i0)-(-1)", never "(i0)--1".
    std::string i = "((" + c[d] + ")-(" + std::to_string(pp.begin[d]) + "))";
    std::string n_ = std::to_string(is[d]);
    ic[d] = pp.mode == 1 ? "fprt::reflect_index(" + i + "," + n_ + ")" : "fprt::clamp_index(" + i + "," + n_ + ")";
    if (pp.mode == 0) inside += " && " + i + ">=0 && " + i + "<" + n_;
  }
  std::string v = val(o, ic);
  if (pp.mode != 0) return v;
  return "((" + inside + ") ? " + v + " : " + c_literal(pp.value, p.out.dtype) + ")";
}

}  // namespace fuseplan
