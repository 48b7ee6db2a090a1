#include "emit/cpu/cpp_printer.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "emit/op_attrs.h"

namespace fuseplan::cpu {

std::string comment_escape(std::string_view s) {
  static const std::string_view ok = " _.:,=+#@()[]<>-/";
  std::string out;
  for (unsigned char ch : s) {
    if (out.size() >= 160) { out += "..."; break; }
    if (std::isalnum(ch) || ok.find(static_cast<char>(ch)) != std::string_view::npos) {
      out += static_cast<char>(ch);
    } else {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out;
}

namespace {

// Elements of work above which a loop runs on all threads (below, the fork/join
// costs more than it saves; guessed from ~5 µs OpenMP fork/join on a desktop core).
constexpr int64_t kParallelMinWork = 32768;

std::string join(const Coords& c) {
  std::string s;
  for (const auto& x : c) s += x + ",";
  return s;
}

std::string shape_array(const std::vector<int64_t>& s) {
  std::string a = "{";
  for (std::size_t i = 0; i < s.size(); ++i) a += (i ? "," : "") + std::to_string(s[i]);
  return a + (s.empty() ? "0}" : "}");
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

class KernelPrinter {
 public:
  KernelPrinter(const Graph& g, const KernelPlan& kp, std::ostringstream& os) : g_(g), kp_(kp), os_(os) {}

  void print() {
    line("// kernel of group " + std::to_string(kp_.group_id) + (kp_.row_dims ? " (row-resident, " +
         std::to_string(kp_.row_dims) + " row dims)" : ""));
    for (const Stage& s : kp_.stages)
      line("//   stage " + std::string(g_.node(s.node).op) + " '" + comment_escape(g_.node(s.node).name) + "'" +
           (s.global ? " -> buffer" : " -> scratch"));
    line("extern \"C\" void " + kp_.fn_name + "(void** b) {");
    ++ind_;
    for (NodeId n : kp_.loads) line("const " + ty(n) + "* __restrict t" + id(n) + " = (const " + ty(n) + "*)b[" + id(n) + "];");
    for (NodeId n : kp_.stores) line(ty(n) + "* __restrict t" + id(n) + " = (" + ty(n) + "*)b[" + id(n) + "];");
    if (kp_.row_dims > 0) print_rows();
    else print_flat();
    --ind_;
    line("}");
    line("");
  }

 private:
  const Graph& g_;
  const KernelPlan& kp_;
  std::ostringstream& os_;
  int ind_ = 0, tmp_ = 0;
  std::vector<std::map<std::string, std::string>> memo_;
  const Stage* current_ = nullptr;

  void line(const std::string& s) { os_ << std::string(2 * ind_, ' ') << s << "\n"; }
  std::string id(NodeId n) const { return std::to_string(n); }
  std::string ty(NodeId n) const { return c_type(g_.node(n).out.dtype); }
  const std::vector<int64_t>& shape(NodeId n) const { return g_.node(n).out.shape; }
  bool is_global(NodeId n) const {
    if (!kp_.members.count(n)) return true;
    for (const Stage& s : kp_.stages)
      if (s.node == n) return s.global;
    return false;
  }
  std::string buf(NodeId n) const { return (is_global(n) ? "t" : "s") + id(n); }
  // Offset of coordinates c in n's buffer (scratch holds one row in row mode).
  std::string offset(NodeId n, const Coords& c) const {
    if (kp_.row_dims > 0 && !is_global(n)) {
      std::vector<int64_t> tail(shape(n).begin() + kp_.row_dims, shape(n).end());
      return linear_offset(tail, Coords(c.begin() + kp_.row_dims, c.end()));
    }
    return linear_offset(shape(n), c);
  }
  std::vector<int64_t> scratch_shape(NodeId n) const {
    if (kp_.row_dims == 0) return shape(n);
    return std::vector<int64_t>(shape(n).begin() + kp_.row_dims, shape(n).end());
  }

  std::string fresh() { return "v" + std::to_string(tmp_++); }
  void push() { memo_.emplace_back(); }
  void pop() { memo_.pop_back(); }
  std::string define(NodeId n, const std::string& key, const std::string& expr) {
    std::string v = fresh();
    line("const " + ty(n) + " " + v + " = " + expr + ";");
    memo_.back()[key] = v;
    return v;
  }

  // Value of n at coordinates c: a load when n is produced outside the group
  // or is a stage, else computed inline (memoised per loop scope).
  std::string val(NodeId n, const Coords& c) {
    std::string key = id(n) + "@" + join(c);
    for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
      auto f = it->find(key);
      if (f != it->end()) return f->second;
    }
    if (!kp_.members.count(n) || kp_.is_stage(n)) return define(n, key, buf(n) + "[" + offset(n, c) + "]");
    return define(n, key, compute(n, c));
  }
  std::string as(DType want, NodeId n, const std::string& v) {
    return g_.node(n).out.dtype == want ? v : "fprt::cast<" + c_type(want) + ">(" + v + ")";
  }

  std::string compute(NodeId n, const Coords& c) {
    const Primitive& p = g_.node(n);
    auto ops = g_.operands(n);
    std::string T = ty(n);
    if (p.op == "Where") {
      auto at = [&](int k) { return val(ops[k], broadcast_coords(shape(ops[k]), c)); };
      std::string cond = as(DType::boolean, ops[0], at(0));
      return "(" + cond + " ? " + as(p.out.dtype, ops[1], at(1)) + " : " + as(p.out.dtype, ops[2], at(2)) + ")";
    }
    if (p.op == "Reshape" || p.op == "Expand" || p.op == "Slice" || p.op == "Tile" || p.op == "Transpose" ||
        p.op == "Resize" || p.op == "DepthToSpace" || p.op == "SpaceToDepth" || p.op == "Identity")
      return val(ops[0], operand_coords(g_, n, 0, c));
    if (p.op == "Cast") return "fprt::cast<" + T + ">(" + val(ops[0], broadcast_coords(shape(ops[0]), c)) + ")";
    if (is_scalar_op(p.op)) {
      ScalarOp s = scalar_op(p);
      DType in = g_.node(ops[0]).out.dtype;
      std::vector<std::string> a;
      for (std::size_t k = 0; k < ops.size(); ++k) a.push_back(as(in, ops[k], val(ops[k], broadcast_coords(shape(ops[k]), c))));
      if (s.fn == "!") return "(!" + a[0] + ")";
      if (s.infix) return s.bool_result ? "(" + a[0] + s.fn + a[1] + ")" : "(" + T + ")(" + a[0] + s.fn + a[1] + ")";
      for (double e : s.extra) a.push_back(p.op == "Mod" ? std::to_string(static_cast<int>(e)) : c_literal(e, in));
      std::string args;
      for (std::size_t k = 0; k < a.size(); ++k) args += (k ? "," : "") + a[k];
      return "(" + T + ")" + s.fn + "(" + args + ")";
    }
    if (p.op == "Concat") return concat(n, c);
    if (p.op == "Pad") return pad(n, c);
    if (p.op == "Gather" || p.op == "GatherElements") {
      int ax = static_cast<int>(p.attr_int("axis", 0));
      const auto& ds = shape(ops[0]);
      int q = static_cast<int>(shape(ops[1]).size());
      Coords ic = p.op == "Gather" ? Coords(c.begin() + ax, c.begin() + ax + q) : c;
      std::string iv = "fprt::norm_index((int64_t)" + val(ops[1], ic) + "," + std::to_string(ds[ax]) + ")";
      Coords dc;
      for (int d = 0; d < static_cast<int>(ds.size()); ++d)
        dc.push_back(d == ax ? iv : (p.op == "GatherElements" || d < ax ? c[d] : c[d + q - 1]));
      return val(ops[0], dc);
    }
    if (p.op == "OneHot") {
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
    if (p.op == "QuantizeLinear" || p.op == "DequantizeLinear") {
      int ax = static_cast<int>(p.attr_int("axis", 1));
      bool quant = p.op == "QuantizeLinear";
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
    throw Error("the CPU backend cannot inline primitive '" + p.name + "' (op " + p.op + ")");
  }

  std::string concat(NodeId n, const Coords& c) {
    const Primitive& p = g_.node(n);
    auto ops = g_.operands(n);
    int ax = static_cast<int>(p.attr_int("axis", 0));
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

  std::string pad(NodeId n, const Coords& c) {
    const Primitive& p = g_.node(n);
    NodeId o = g_.operands(n)[0];
    const auto& is = shape(o);
    const auto& os = shape(n);
    PadParams pp = pad_params(p, static_cast<int>(os.size()));
    Coords ic = c;
    std::string inside = "true";
    for (std::size_t d = 0; d < os.size(); ++d) {
      if (pp.begin[d] == 0 && is[d] == os[d]) continue;
      std::string i = "((" + c[d] + ")-" + std::to_string(pp.begin[d]) + ")";
      std::string n_ = std::to_string(is[d]);
      if (pp.mode == 1) ic[d] = "fprt::reflect_index(" + i + "," + n_ + ")";
      else ic[d] = "fprt::clamp_index(" + i + "," + n_ + ")";
      if (pp.mode == 0) inside += " && " + i + ">=0 && " + i + "<" + n_;
    }
    std::string v = val(o, ic);
    if (pp.mode != 0) return v;
    return "((" + inside + ") ? " + v + " : " + c_literal(pp.value, p.out.dtype) + ")";
  }

  // Opens loops over dims [from, shape.size()) named <var><d>; returns coords.
  Coords open_loops(const std::vector<int64_t>& s, int from, const std::string& var, Coords c, bool parallel) {
    int loops = static_cast<int>(s.size()) - from;
    if (parallel && loops > 0) {
      int64_t work = numel(s), lead = 1;
      int collapse = 0;
      while (collapse < loops && lead < 64) lead *= s[from + collapse++];
      if (work >= kParallelMinWork && lead > 1)
        line("#pragma omp parallel for schedule(static) collapse(" + std::to_string(collapse) + ")");
    }
    for (int d = from; d < static_cast<int>(s.size()); ++d) {
      std::string v = var + std::to_string(d);
      line("for (int64_t " + v + " = 0; " + v + " < " + std::to_string(s[d]) + "; ++" + v + ")");
      c.push_back(v);
    }
    line("{");
    ++ind_;
    push();
    return c;
  }
  void close_loops() {
    pop();
    --ind_;
    line("}");
  }

  void print_stage(const Stage& st, const Coords& outer, bool parallel) {
    const Primitive& p = g_.node(st.node);
    line("// " + p.op + " '" + comment_escape(p.name) + "'");
    current_ = &st;
    if (st.kind == StageKind::library) return print_library(st);
    const auto& s = shape(st.node);
    int from = static_cast<int>(outer.size());
    if (st.kind == StageKind::loop) {
      Coords c = open_loops(s, from, "i", outer, parallel);
      std::string v = compute(st.node, c);
      line(buf(st.node) + "[" + offset(st.node, c) + "] = " + v + ";");
      close_loops();
      return;
    }
    // reduce: per output element, reduced elements in row-major order
    NodeId in = g_.operands(st.node)[0];
    const auto& is = shape(in);
    ReduceParams rp = reduce_params(p, static_cast<int>(is.size()));
    std::string T = ty(st.node);
    Coords c = open_loops(s, from, "i", outer, parallel);
    std::string init = rp.kind == "sum" || rp.kind == "mean" ? "(" + T + ")0"
                       : rp.kind == "prod"                  ? "(" + T + ")1"
                       : rp.kind == "max" ? "(std::numeric_limits<" + T + ">::has_infinity ? -std::numeric_limits<" + T +
                                                ">::infinity() : std::numeric_limits<" + T + ">::lowest())"
                                          : "(std::numeric_limits<" + T + ">::has_infinity ? std::numeric_limits<" + T +
                                                ">::infinity() : std::numeric_limits<" + T + ">::max())";
    line(T + " acc = " + init + ";");
    std::vector<int64_t> rshape;
    int64_t count = 1;
    for (int a : rp.axes) { rshape.push_back(is[a]); count *= is[a]; }
    Coords rc = open_loops(rshape, 0, "r", {}, false);
    Coords ic;
    for (int d = 0, k = 0, o = 0; d < static_cast<int>(is.size()); ++d) {
      bool red = std::find(rp.axes.begin(), rp.axes.end(), d) != rp.axes.end();
      ic.push_back(red ? rc[k++] : c[rp.keepdims ? d : o]);
      if (!red) ++o;
    }
    std::string v = val(in, ic);
    if (rp.kind == "max") line("acc = fprt::max_(acc, " + v + ");");
    else if (rp.kind == "min") line("acc = fprt::min_(acc, " + v + ");");
    else if (rp.kind == "prod") line("acc = (" + T + ")(acc * " + v + ");");
    else line("acc = (" + T + ")(acc + " + v + ");");
    close_loops();
    if (rp.kind == "mean") line("acc = fprt::div_(acc, (" + T + ")" + std::to_string(count) + ");");
    line(buf(st.node) + "[" + offset(st.node, c) + "] = acc;");
    close_loops();
  }

  void print_library(const Stage& st) {
    const Primitive& p = g_.node(st.node);
    auto ops = g_.operands(st.node);
    line("{");
    ++ind_;
    auto arr = [&](const std::string& name, const std::vector<int64_t>& v) {
      line("static const int64_t " + name + "[] = " + shape_array(v) + ";");
    };
    arr("ys", shape(st.node));
    for (std::size_t k = 0; k < ops.size(); ++k) arr("xs" + std::to_string(k), shape(ops[k]));
    std::string y = buf(st.node), T = ty(st.node);
    auto x = [&](int k) { return buf(ops[k]); };
    int r = static_cast<int>(shape(st.node).size());
    std::string rs = std::to_string(r);
    auto rank = [&](int k) { return std::to_string(shape(ops[k]).size()); };
    if (p.op == "MatMul") {
      line("fprt::matmul(" + x(0) + ",xs0," + rank(0) + "," + x(1) + ",xs1," + rank(1) + "," + y + ",ys," + rs + "," +
           std::to_string(p.attr_int("transA", 0)) + "," + std::to_string(p.attr_int("transB", 0)) + ");");
    } else if (p.op == "Conv" || p.op == "ConvTranspose" || p.op == "MaxPool" || p.op == "AveragePool") {
      WindowParams w = window_params(p, r - 2);
      arr("st", w.strides);
      arr("pd", w.pads);
      arr("dl", w.dilations);
      if (p.op == "Conv" || p.op == "ConvTranspose") {
        line(std::string(p.op == "Conv" ? "fprt::conv(" : "fprt::conv_transpose(") + x(0) + ",xs0," + x(1) + ",xs1," +
             y + ",ys," + std::to_string(r - 2) + ",st,pd,dl," + std::to_string(w.group) + ");");
      } else {
        arr("ks", w.kernel);
        line("fprt::pool(" + x(0) + ",xs0," + y + ",ys," + std::to_string(r - 2) + ",ks,st,pd,dl," +
             (p.op == "MaxPool" ? "1," : "0,") + std::to_string(p.attr_int("count_include_pad", 0)) + ");");
      }
    } else if (p.op == "Resize") {
      ResizeParams rp = resize_params(p, shape(ops[0]), shape(st.node));
      std::string sc = "{";
      for (std::size_t i = 0; i < rp.scales.size(); ++i) sc += (i ? "," : "") + c_literal(rp.scales[i], DType::f32);
      line("static const float sc[] = " + sc + "};");
      line("fprt::resize_linear(" + x(0) + ",xs0," + rs + "," + y + ",ys,sc," + std::to_string(rp.coord_mode) + ");");
    } else {
      static const char* reds[] = {"none", "add", "mul", "max", "min"};
      int red = 0;
      for (int k = 0; k < 5; ++k)
        if (p.attr_string("reduction", "none") == reds[k]) red = k;
      std::string ax = std::to_string(p.attr_int("axis", 0));
      if (p.op == "CumSum")
        line("fprt::cumsum<" + T + ">(" + x(0) + ",xs0," + rank(0) + "," + y + "," + ax + "," +
             std::to_string(p.attr_int("exclusive", 0)) + "," + std::to_string(p.attr_int("reverse", 0)) + ");");
      else if (p.op == "GatherND")
        line("fprt::gather_nd<" + T + ">(" + x(0) + ",xs0," + rank(0) + "," + x(1) + ",xs1," + rank(1) + "," + y + ");");
      else if (p.op == "ScatterND")
        line("fprt::scatter_nd<" + T + ">(" + x(0) + ",xs0," + rank(0) + "," + x(1) + ",xs1," + rank(1) + "," + x(2) +
             "," + y + "," + std::to_string(red) + ");");
      else
        line("fprt::scatter_elements<" + T + ">(" + x(0) + ",xs0," + rank(0) + "," + x(1) + ",xs1," + x(2) + "," + y +
             "," + ax + "," + std::to_string(red) + ");");
    }
    --ind_;
    line("}");
  }

  void alloc_scratch(bool rows) {
    for (const Stage& s : kp_.stages)
      if (!s.global)
        line(ty(s.node) + "* s" + id(s.node) + " = (" + ty(s.node) + "*)std::malloc(" +
             std::to_string(numel(rows ? scratch_shape(s.node) : shape(s.node))) + "*sizeof(" + ty(s.node) + ")+1);");
  }
  void free_scratch() {
    for (const Stage& s : kp_.stages)
      if (!s.global) line("std::free(s" + id(s.node) + ");");
  }

  void print_flat() {
    alloc_scratch(false);
    for (const Stage& s : kp_.stages) print_stage(s, {}, true);
    free_scratch();
  }

  // Multipass: one outer loop over the rows; every stage of a row runs
  // before the next row starts, so the row stays in cache.
  void print_rows() {
    int64_t rows = numel(kp_.row_shape), work = 0;
    for (const Stage& s : kp_.stages) work += numel(shape(s.node));
    for (NodeId n : kp_.loads) work = std::max(work, numel(shape(n)));
    if (work >= kParallelMinWork && rows > 1) line("#pragma omp parallel");
    line("{");
    ++ind_;
    alloc_scratch(true);
    if (work >= kParallelMinWork && rows > 1) line("#pragma omp for schedule(static)");
    line("for (int64_t o = 0; o < " + std::to_string(rows) + "; ++o) {");
    ++ind_;
    push();
    Coords outer;
    int64_t stride = rows;
    for (int d = 0; d < kp_.row_dims; ++d) {
      stride /= kp_.row_shape[d];
      std::string v = "o" + std::to_string(d);
      line("const int64_t " + v + " = (o / " + std::to_string(stride) + ") % " + std::to_string(kp_.row_shape[d]) + ";");
      outer.push_back(v);
    }
    for (const Stage& s : kp_.stages) print_stage(s, outer, false);
    pop();
    --ind_;
    line("}");
    free_scratch();
    --ind_;
    line("}");
  }
};

}  // namespace

std::string print_cpp(const Graph& g, const std::vector<KernelPlan>& kernels, std::string_view title) {
  std::ostringstream os;
  os << "// fuseplan CPU kernels: " << comment_escape(title) << "\n";
  os << "// Generated code; identifiers are generated, model names appear only in comments.\n";
  os << kRuntimeText << "\n";
  os << "#ifdef _OPENMP\n#include <omp.h>\n#endif\n";
  os << "extern \"C\" void fp_set_num_threads(int n) {\n#ifdef _OPENMP\n  if (n > 0) omp_set_num_threads(n);\n#endif\n}\n\n";
  for (const KernelPlan& kp : kernels) KernelPrinter(g, kp, os).print();
  return os.str();
}

}  // namespace fuseplan::cpu
