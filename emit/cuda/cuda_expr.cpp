#include "emit/cuda/cuda_expr.h"

#include <algorithm>

#include "emit/cpu/cpp_printer.h"
#include "graph/op_attrs.h"

namespace fuseplan::cuda {

std::string ExprPrinter::buf(NodeId n) const {
  if (is_global(n)) return "t" + id(n);
  return (kp_.row_dims > 0 && row_smem_ ? "sh" : "s") + id(n);
}

std::string ExprPrinter::offset(NodeId n, const Coords& c) const {
  if (kp_.row_dims > 0 && row_smem_ && !is_global(n)) {
    std::vector<int64_t> tail(shape(n).begin() + kp_.row_dims, shape(n).end());
    return linear_offset(tail, Coords(c.begin() + kp_.row_dims, c.end()));
  }
  return linear_offset(shape(n), c);
}

void ExprPrinter::note_param(NodeId n, bool written) {
  if (kp_.row_dims > 0 && row_smem_ && !is_global(n)) return;  // shared memory
  params_[n] = params_[n] || written;
}

std::string ExprPrinter::param_decl(NodeId n, bool written) const {
  return (written ? ty(n) + "* __restrict__ " : "const " + ty(n) + "* __restrict__ ") + buf(n);
}

std::string ExprPrinter::load(NodeId n, const Coords& c) {
  note_param(n, false);
  if (kp_.members.count(n)) reads_[n].insert(phase_idx_);
  return buf(n) + "[" + offset(n, c) + "]";
}

std::string ExprPrinter::value(NodeId n, const Coords& c, const std::string& k) {
  bool member = kp_.members.count(n) > 0;
  if (!member && !vec_lane_.empty()) {
    note_param(n, false);
    return "l" + id(n) + "." + vec_lane_;
  }
  // A stage of this phase is only in registers at this thread's own coordinates.
  if (member && kp_.is_stage(n) && phase_stages_.count(n) && kp_.row_dims == 0) violation_ = true;
  return InlineExprPrinter::value(n, c, k);
}

Coords ExprPrinter::coord_vars(const std::vector<int64_t>& s, const std::string& prefix, int from) const {
  Coords c;
  for (std::size_t d = 0; d < s.size(); ++d) c.push_back(s[d] == 1 ? "0" : prefix + std::to_string(from + d));
  return c;
}

std::string ExprPrinter::coord_def(const std::vector<int64_t>& s, const Coords& c, std::size_t d,
                                   const std::string& lin) const {
  if (s[d] == 1) return "// dim " + std::to_string(d) + " has size 1";
  int64_t stride = 1;
  for (std::size_t k = d + 1; k < s.size(); ++k) stride *= s[k];
  std::string q = stride == 1 ? lin : "(" + lin + " / " + std::to_string(stride) + ")";
  bool outer = true;
  for (std::size_t k = 0; k < d; ++k) outer = outer && s[k] == 1;
  return "const int64_t " + c[d] + " = " + (outer ? q : q + " % " + std::to_string(s[d])) + ";";
}

bool ExprPrinter::is_column_reduce(NodeId n) const {
  NodeId in = g_.operands(n)[0];
  int r = static_cast<int>(shape(in).size());
  ReduceParams rp = reduce_params(g_.node(n), r);
  return r > 0 && std::find(rp.axes.begin(), rp.axes.end(), r - 1) == rp.axes.end() && shape(in)[r - 1] > 1;
}

std::string ExprPrinter::reduce_init(NodeId n) const {
  ReduceParams rp = reduce_params(g_.node(n), static_cast<int>(shape(g_.operands(n)[0]).size()));
  std::string T = ty(n), L = "fprt::numeric_limits<" + T + ">";
  if (rp.kind == ReduceKind::sum || rp.kind == ReduceKind::mean) return "(" + T + ")0";
  if (rp.kind == ReduceKind::prod) return "(" + T + ")1";
  if (rp.kind == ReduceKind::max) return "(" + L + "::has_infinity ? -" + L + "::infinity() : " + L + "::lowest())";
  return "(" + L + "::has_infinity ? " + L + "::infinity() : " + L + "::max())";
}

std::string ExprPrinter::reduce_step(NodeId n, const std::string& acc, const std::string& v) const {
  ReduceParams rp = reduce_params(g_.node(n), static_cast<int>(shape(g_.operands(n)[0]).size()));
  std::string T = ty(n);
  if (rp.kind == ReduceKind::max) return "fprt::max_(" + acc + ", " + v + ")";
  if (rp.kind == ReduceKind::min) return "fprt::min_(" + acc + ", " + v + ")";
  if (rp.kind == ReduceKind::prod) return "(" + T + ")(" + acc + " * " + v + ")";
  return "(" + T + ")(" + acc + " + " + v + ")";
}

Coords ExprPrinter::reduce_input_coords(NodeId n, const Coords& c, const Coords& rc) const {
  const auto& is = shape(g_.operands(n)[0]);
  ReduceParams rp = reduce_params(g_.node(n), static_cast<int>(is.size()));
  Coords ic;
  for (int d = 0, k = 0, o = 0; d < static_cast<int>(is.size()); ++d) {
    bool red = std::find(rp.axes.begin(), rp.axes.end(), d) != rp.axes.end();
    ic.push_back(red ? rc[k++] : c[rp.keepdims ? d : o]);
    if (!red) ++o;
  }
  return ic;
}

namespace {
struct RedShape {
  std::vector<int64_t> shape;
  int64_t count = 1;
  ReduceKind kind = ReduceKind::none;
};
RedShape red_shape(const Graph& g, NodeId n) {
  const auto& is = g.node(g.operands(n)[0]).out.shape;
  ReduceParams rp = reduce_params(g.node(n), static_cast<int>(is.size()));
  RedShape r;
  r.kind = rp.kind;
  for (int a : rp.axes) {
    r.shape.push_back(is[a]);
    r.count *= is[a];
  }
  return r;
}
}  // namespace

std::string ExprPrinter::reduce_block(NodeId n, const Coords& c, const std::string& smem) {
  RedShape rs = red_shape(g_, n);
  std::string T = ty(n), a = "acc" + id(n), sm = smem.empty() ? "red" + id(n) : smem;
  // A nested reduction's names carry its id (it runs inside another
  // reduction's loop); the outer one of a nest loops over its row in every
  // thread, because the nested block reduction inside needs the whole block:
  // element r is folded by thread r % B, in the order thread r % B folds it
  // unnested (fprt::block_reduce).
  const bool nested = kp_.nested.count(n) > 0, outer = kp_.nest_outer.count(n) > 0;
  const std::string r = nested ? "r" + id(n) : "r", k = nested ? "k" + id(n) + "_" : "k";
  if (smem.empty()) line("__shared__ " + T + " " + sm + "[32];");
  line(T + " " + a + " = " + reduce_init(n) + ";");
  line(outer ? "for (int64_t " + r + " = 0; " + r + " < " + std::to_string(rs.count) + "; ++" + r + ") {"
             : "for (int64_t " + r + " = threadIdx.x; " + r + " < " + std::to_string(rs.count) + "; " + r +
                   " += blockDim.x) {");
  ++ind_;
  push();
  Coords rc = coord_vars(rs.shape, k);
  for (std::size_t d = 0; d < rc.size(); ++d) line(coord_def(rs.shape, rc, d, r));
  std::string v = val(g_.operands(n)[0], reduce_input_coords(n, c, rc));
  line(outer ? "if (" + r + " % blockDim.x == threadIdx.x) " + a + " = " + reduce_step(n, a, v) + ";"
             : a + " = " + reduce_step(n, a, v) + ";");
  pop();
  --ind_;
  line("}");
  const char* op = rs.kind == ReduceKind::prod ? "mul_op"
                   : rs.kind == ReduceKind::max ? "max_op"
                   : rs.kind == ReduceKind::min ? "min_op"
                                                : "add_op";  // sum, mean
  line(a + " = fprt::block_reduce<" + T + ">(" + a + ", " + reduce_init(n) + ", fprt::" + op + "<" + T + ">(), " + sm +
       ");");
  std::string e = rs.kind == ReduceKind::mean ? "fprt::div_(" + a + ", (" + T + ")" + std::to_string(rs.count) + ")" : a;
  return define(n, key(n, c), e);
}

std::string ExprPrinter::nested_reduce(NodeId n, const Coords& c, const std::string&) {
  // search/nested_reduction.h orders every nest's axes so that both levels
  // reduce over the innermost axis: the block strategy.
  if (is_column_reduce(n))
    throw Error("the CUDA backend cannot nest column reduction '" + g_.node(n).name + "' in another reduction");
  line("// nested " + g_.node(n).op + " '" + cpu::comment_escape(g_.node(n).name) + "'");
  return reduce_block(n, c);
}

void ExprPrinter::store_nested(NodeId n, const Coords& c, const std::string& v) {
  // Every thread holds the value (fprt::block_reduce returns it to all).
  note_param(n, true);
  line("if (threadIdx.x == 0) " + buf(n) + "[" + offset(n, c) + "] = " + v + ";");
}

std::string ExprPrinter::reduce_seq(NodeId n, const Coords& c) {
  RedShape rs = red_shape(g_, n);
  std::string T = ty(n), a = "acc" + id(n);
  line(T + " " + a + " = " + reduce_init(n) + ";");
  line("for (int64_t r = 0; r < " + std::to_string(rs.count) + "; ++r) {");
  ++ind_;
  push();
  Coords rc = coord_vars(rs.shape, "k");
  for (std::size_t d = 0; d < rc.size(); ++d) line(coord_def(rs.shape, rc, d, "r"));
  std::string v = val(g_.operands(n)[0], reduce_input_coords(n, c, rc));
  line(a + " = " + reduce_step(n, a, v) + ";");
  pop();
  --ind_;
  line("}");
  std::string e = rs.kind == ReduceKind::mean ? "fprt::div_(" + a + ", (" + T + ")" + std::to_string(rs.count) + ")" : a;
  return define(n, key(n, c), e);
}

}  // namespace fuseplan::cuda
