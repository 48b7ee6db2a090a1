// Per-output-element bodies of the contraction and pooling stages, in the
// canonical order of the CPU runtime (emit/cpu/runtime.h): GEMM k ascending
// from 0 with acc = acc + a*b; convolution as the implicit im2col GEMM
// (channel, then kernel positions row-major; padded taps multiply an
// explicit 0); pooling windows row-major. With -fmad=false these round
// exactly as the CPU reference does.
#include <algorithm>

#include "emit/cuda/cuda_expr.h"
#include "graph/op_attrs.h"

namespace fuseplan::cuda {

namespace {
std::string s(int64_t v) { return std::to_string(v); }
}  // namespace

std::string ExprPrinter::library_at(NodeId n, const Coords& c) {
  const Primitive& p = g_.node(n);
  auto ops = g_.operands(n);
  std::string T = ty(n), acc = "acc" + id(n);
  if (p.kind == Op::MatMul) {
    if (p.out.dtype != DType::f32) throw Error("the CUDA backend computes MatMul in f32 only ('" + p.name + "')");
    const auto& A = shape(ops[0]);
    const auto& B = shape(ops[1]);
    int ar = static_cast<int>(A.size()), br = static_cast<int>(B.size()), r = static_cast<int>(c.size());
    bool ta = p.attr_int("transA", 0) != 0, tb = p.attr_int("transB", 0) != 0;
    int64_t M = ar == 1 ? 1 : (ta ? A[ar - 1] : A[ar - 2]), K = ar == 1 ? A[0] : (ta ? A[ar - 2] : A[ar - 1]);
    int64_t N = br == 1 ? 1 : (tb ? B[br - 2] : B[br - 1]);
    int64_t sam = ta ? 1 : K, sak = ar == 1 ? 1 : (ta ? M : 1), sbk = br == 1 ? 1 : (tb ? 1 : N), sbn = tb ? K : 1;
    int an = std::max(ar, 2), bn = std::max(br, 2), nb = std::max(an, bn) - 2;
    std::string i = ar == 1 ? "0" : c[nb], j = br == 1 ? "0" : c[r - 1];
    std::string oa = "(" + i + ")*" + s(sam), ob = "(" + j + ")*" + s(sbn);
    int64_t stA = M * K, stB = K * N;
    for (int d = nb - 1; d >= 0; --d) {
      int ia = d - (nb - (an - 2)), ib = d - (nb - (bn - 2));
      int64_t da = ia >= 0 ? A[ia] : 1, db = ib >= 0 ? B[ib] : 1;
      if (da != 1) oa += "+(" + c[d] + ")*" + s(stA);
      if (db != 1) ob += "+(" + c[d] + ")*" + s(stB);
      stA *= da;
      stB *= db;
    }
    std::string a = load(ops[0], Coords(A.size(), "0")), b = load(ops[1], Coords(B.size(), "0"));
    a = a.substr(0, a.find('['));
    b = b.substr(0, b.find('['));
    line("float " + acc + " = 0.0f;");
    line("{");
    ++ind_;
    line("const " + ty(ops[0]) + "* pa = " + a + " + " + oa + ";");
    line("const " + ty(ops[1]) + "* pb = " + b + " + " + ob + ";");
    line("for (int64_t k = 0; k < " + s(K) + "; ++k) " + acc + " = " + acc + " + pa[k*" + s(sak) + "] * pb[k*" +
         s(sbk) + "];");
    --ind_;
    line("}");
    return define(n, key(n, c), acc);
  }
  if (p.kind == Op::Conv || p.kind == Op::MaxPool || p.kind == Op::AveragePool) {
    if (p.out.dtype != DType::f32) throw Error("the CUDA backend computes " + p.op + " in f32 only ('" + p.name + "')");
    const auto& xs = shape(ops[0]);
    const auto& ys = shape(n);
    int sr = static_cast<int>(ys.size()) - 2;
    if (sr < 1 || sr > 3) throw Error("the CUDA backend supports 1-3 spatial dims ('" + p.name + "')");
    WindowParams w = window_params(p, sr);
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0},
            dl[3] = {1, 1, 1};
    std::string oc[3] = {"0", "0", "0"};
    const auto ws = p.kind == Op::Conv ? shape(ops[1]) : std::vector<int64_t>{};
    for (int q = 0; q < sr; ++q) {
      int o = 3 - sr + q;
      in[o] = xs[2 + q];
      k[o] = p.kind == Op::Conv ? ws[2 + q] : w.kernel.at(q);
      st[o] = w.strides[q];
      pb[o] = w.pads[q];
      pe[o] = w.pads[sr + q];
      dl[o] = w.dilations[q];
      oc[o] = c[2 + q];
    }
    std::string x = load(ops[0], Coords(xs.size(), "0"));
    x = x.substr(0, x.find('['));
    std::string pos[3];
    for (int q = 0; q < 3; ++q)
      pos[q] = "(" + oc[q] + ")*" + s(st[q]) + "-" + s(pb[q]) + "+" + std::string(1, "abe"[q]) + "*" + s(dl[q]);
    std::string inside = "i0 >= 0 && i0 < " + s(in[0]) + " && i1 >= 0 && i1 < " + s(in[1]) + " && i2 >= 0 && i2 < " +
                         s(in[2]);
    std::string ivol = s(in[0] * in[1] * in[2]), kvol = s(k[0] * k[1] * k[2]);
    std::string xoff = "((i0)*" + s(in[1]) + "+i1)*" + s(in[2]) + "+i2";
    auto loops = [&]() {
      line("for (int64_t a = 0; a < " + s(k[0]) + "; ++a)");
      line("for (int64_t b = 0; b < " + s(k[1]) + "; ++b)");
      line("for (int64_t e = 0; e < " + s(k[2]) + "; ++e) {");
      ++ind_;
      line("const int64_t i0 = " + pos[0] + ", i1 = " + pos[1] + ", i2 = " + pos[2] + ";");
    };
    if (p.kind == Op::Conv) {
      int64_t C = xs[1], M = ws[0], Cg = C / w.group, Mg = M / w.group;
      std::string wb = load(ops[1], Coords(ws.size(), "0"));
      wb = wb.substr(0, wb.find('['));
      line("float " + acc + " = 0.0f;");
      line("{");
      ++ind_;
      line("const float* px = " + x + " + ((" + c[0] + ")*" + s(C) + " + ((" + c[1] + ")/" + s(Mg) + ")*" + s(Cg) +
           ")*" + ivol + ";");
      line("const float* pw = " + wb + " + (" + c[1] + ")*" + s(Cg) + "*" + kvol + ";");
      line("for (int64_t ci = 0; ci < " + s(Cg) + "; ++ci)");
      loops();
      line("const float xv = (" + inside + ") ? px[ci*" + ivol + "+" + xoff + "] : 0.0f;");
      line(acc + " = " + acc + " + pw[(ci*" + s(k[0]) + "+a)*" + s(k[1] * k[2]) + "+b*" + s(k[2]) + "+e] * xv;");
      --ind_;
      line("}");
      --ind_;
      line("}");
      return define(n, key(n, c), acc);
    }
    bool is_max = p.kind == Op::MaxPool;
    int cip = static_cast<int>(p.attr_int("count_include_pad", 0));
    line(std::string("float ") + acc + " = " + (is_max ? "-fprt::numeric_limits<float>::infinity()" : "0.0f") + ";");
    line("int64_t cnt" + id(n) + " = 0, full" + id(n) + " = 0;");
    line("{");
    ++ind_;
    line("const float* px = " + x + " + ((" + c[0] + ")*" + s(xs[1]) + "+(" + c[1] + "))*" + ivol + ";");
    loops();
    line("if (i0 < " + s(in[0] + pe[0]) + " && i1 < " + s(in[1] + pe[1]) + " && i2 < " + s(in[2] + pe[2]) +
         ") ++full" + id(n) + ";");
    line("if (!(" + inside + ")) continue;");
    line("const float v = px[" + xoff + "];");
    line(acc + " = " + (is_max ? "fprt::max_(" + acc + ", v)" : acc + " + v") + ";");
    line("++cnt" + id(n) + ";");
    --ind_;
    line("}");
    --ind_;
    line("}");
    if (!is_max)
      line(acc + " = " + acc + " / float(" + (cip ? "full" + id(n) : "(cnt" + id(n) + " ? cnt" + id(n) + " : 1)") +
           ");");
    return define(n, key(n, c), acc);
  }
  if (p.kind == Op::CumSum) {
    // y[..i..] folds x along the axis in scan order, like fprt::cumsum.
    int ax = static_cast<int>(p.attr_int("axis", 0));
    if (ax < 0) ax += static_cast<int>(c.size());
    bool rev = p.attr_int("reverse", 0) != 0, excl = p.attr_int("exclusive", 0) != 0;
    int64_t len = shape(n)[ax];
    Coords xc = c;
    xc[ax] = "t";
    std::string x = load(ops[0], Coords(c.size(), "0"));
    x = x.substr(0, x.find('['));
    line(T + " " + acc + " = (" + T + ")0;");
    std::string i = c[ax];
    std::string loop = rev ? "for (int64_t t = " + s(len - 1) + "; t " + (excl ? ">" : ">=") + " (" + i + "); --t) "
                           : "for (int64_t t = 0; t " + std::string(excl ? "<" : "<=") + " (" + i + "); ++t) ";
    line(loop + acc + " = (" + T + ")(" + acc + " + " + x + "[" + linear_offset(shape(ops[0]), xc) + "]);");
    return define(n, key(n, c), acc);
  }
  if (p.kind == Op::Resize) {
    // Linear (n-linear) Resize per output element, the exact operations of
    // fprt::resize_linear (emit/cpu/runtime.h): per resized axis the source
    // coordinate (fprt::resize_src, clamped at 0), lo = min(floor(s), in-1),
    // hi = min(lo+1, in-1), wl = 1-(s-lo) (1 at or past the last input);
    // then the 2^k corners in corner order (bit 0 = last resized axis),
    // wgt = 1 * w_0 * w_1 ..., acc = acc + wgt*x. Scales and modes from the
    // shared op_attrs::resize_params; the corner loop is unrolled here.
    if (p.out.dtype != DType::f32 || g_.node(ops[0]).out.dtype != DType::f32)
      throw Error("the CUDA backend computes linear Resize in f32 only ('" + p.name + "')");
    const auto& xs = shape(ops[0]);
    const auto& ys = shape(n);
    ResizeParams rp = resize_params(p, xs, ys);
    std::vector<int> ax;
    for (std::size_t d = 0; d < ys.size(); ++d)
      if (xs[d] != ys[d] || rp.scales[d] != 1.0f) ax.push_back(static_cast<int>(d));
    if (ax.size() > 8) throw Error("linear Resize over more than 8 axes ('" + p.name + "')");
    std::string x = load(ops[0], Coords(xs.size(), "0"));
    x = x.substr(0, x.find('['));
    line("float " + acc + " = 0.0f;");
    line("{");
    ++ind_;
    for (std::size_t a = 0; a < ax.size(); ++a) {
      int d = ax[a];
      std::string A = std::to_string(a), sv = "rs" + A, lv = "rl" + A;
      line("float " + sv + " = fprt::resize_src(" + c[d] + ", " + c_literal(rp.scales[d], DType::f32) + ", " +
           s(xs[d]) + ", " + s(ys[d]) + ", " + std::to_string(rp.coord_mode) + ");");
      line("if (" + sv + " < 0.0f) " + sv + " = 0.0f;");
      line("int64_t " + lv + " = int64_t(floor(" + sv + "));");
      line("if (" + lv + " > " + s(xs[d] - 1) + ") " + lv + " = " + s(xs[d] - 1) + ";");
      line("const int64_t rh" + A + " = " + lv + " + 1 < " + s(xs[d]) + " ? " + lv + " + 1 : " + lv + ";");
      line("float rw" + A + " = 1.0f - (" + sv + " - float(" + lv + "));");
      line("if (" + sv + " >= float(" + s(xs[d] - 1) + ")) rw" + A + " = 1.0f;");
    }
    const int na = static_cast<int>(ax.size());
    for (int corner = 0; corner < (1 << na); ++corner) {
      Coords cc(c.begin(), c.end());
      std::string w = "1.0f";
      for (int a = 0; a < na; ++a) {
        bool up = (corner >> (na - 1 - a)) & 1;
        std::string A = std::to_string(a);
        cc[ax[a]] = up ? "rh" + A : "rl" + A;
        w = "(" + w + " * " + (up ? "(1.0f - rw" + A + ")" : "rw" + A) + ")";
      }
      line(acc + " = " + acc + " + " + w + " * " + x + "[" + linear_offset(xs, cc) + "];");
    }
    --ind_;
    line("}");
    return define(n, key(n, c), acc);
  }
  throw Error("the CUDA backend has no kernel for primitive '" + p.name + "' (op " + p.op +
              "); supported library ops: MatMul, Conv, MaxPool, AveragePool, CumSum, Resize (linear)");
}

}  // namespace fuseplan::cuda
