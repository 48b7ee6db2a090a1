#include "emit/cuda/lowering.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "emit/cpu/cpp_printer.h"
#include "graph/op_attrs.h"

namespace fuseplan::cuda {

std::string LibraryOptions::str() const {
  std::string s;
  if (cublaslt) s += fused_epilogue ? "cublaslt+fused-epilogue" : "cublaslt";
  if (cudnn) s += s.empty() ? "cudnn" : "+cudnn";
  return s.empty() ? "emitted" : s;
}

const char* to_string(GroupLowering::Route r) {
  switch (r) {
    case GroupLowering::Route::cublaslt: return "cublaslt";
    case GroupLowering::Route::cudnn: return "cudnn";
    case GroupLowering::Route::fallback: return "emitted-fallback";
    default: return "emitted";
  }
}

namespace {

int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The one member of grp with op `op` (kNoNode when none; `count` says how many).
NodeId only_member(const Graph& g, const Group& grp, Op op, int* count) {
  NodeId found = kNoNode;
  *count = 0;
  for (NodeId n : grp.nodes)
    if (g.node(n).kind == op) {
      found = n;
      ++*count;
    }
  return found;
}

bool is_member(const Group& grp, NodeId n) { return std::find(grp.nodes.begin(), grp.nodes.end(), n) != grp.nodes.end(); }

bool is_materialised(const Group& grp, NodeId n) {
  return std::find(grp.materialised.begin(), grp.materialised.end(), n) != grp.materialised.end();
}

// Every covered node but `last` is consumed only inside `covered` and not
// materialised: the library call may skip writing it.
bool chain_closed(const Graph& g, const Group& grp, const std::vector<NodeId>& covered, NodeId last) {
  std::set<NodeId> in(covered.begin(), covered.end());
  for (NodeId n : covered) {
    if (n == last) continue;
    if (is_materialised(grp, n)) return false;
    for (NodeId c : g.consumers(n))
      if (!in.count(c)) return false;
  }
  return true;
}

// The members of grp the contraction `c` depends on inside the group
// (transitively): they run first, as the prologue kernel.
std::vector<NodeId> prologue_nodes(const Graph& g, const Group& grp, NodeId c) {
  std::set<NodeId> need;
  std::vector<NodeId> todo = g.operands(c);
  while (!todo.empty()) {
    NodeId n = todo.back();
    todo.pop_back();
    if (!is_member(grp, n) || !need.insert(n).second) continue;
    for (NodeId o : g.operands(n)) todo.push_back(o);
  }
  std::vector<NodeId> out;
  for (NodeId n : grp.nodes)
    if (need.count(n)) out.push_back(n);
  return out;
}

// The members in `keep` (group order) as one emitted group: kind loop, or
// reduction when it holds one; a member materialises when grp materialises
// it or when a node outside `keep` reads it (the library call, the other
// sub-group, another group).
Group sub_group(const Graph& g, const Group& grp, const std::vector<NodeId>& keep) {
  Group e;
  e.id = grp.id;
  e.kind = GroupKind::loop;
  std::set<NodeId> in(keep.begin(), keep.end());
  for (NodeId n : grp.nodes) {
    if (!in.count(n)) continue;
    e.nodes.push_back(n);
    if (g.node(n).op_class == OpClass::reduction) e.kind = GroupKind::reduction;
    bool out = is_materialised(grp, n) || g.node(n).is_graph_output;
    for (NodeId c : g.consumers(n)) out = out || !in.count(c);
    if (out) e.materialised.push_back(n);
  }
  return e;
}

std::string parts_str(const GroupLowering& l) {
  std::string s;
  if (!l.prologue.nodes.empty()) s += " after a prologue kernel of " + std::to_string(l.prologue.nodes.size()) + " primitives";
  s += l.epilogue.nodes.empty() ? std::string(" + no epilogue kernel")
                                : " + epilogue kernel of " + std::to_string(l.epilogue.nodes.size()) + " primitives";
  return s;
}

// Splits grp into prologue / library (`covered`) / epilogue.
void split(const Graph& g, const Group& grp, NodeId contraction, const std::vector<NodeId>& covered, GroupLowering* l) {
  l->prologue = sub_group(g, grp, prologue_nodes(g, grp, contraction));
  std::set<NodeId> taken(covered.begin(), covered.end());
  taken.insert(l->prologue.nodes.begin(), l->prologue.nodes.end());
  std::vector<NodeId> rest;
  for (NodeId n : grp.nodes)
    if (!taken.count(n)) rest.push_back(n);
  l->epilogue = sub_group(g, grp, rest);
}

std::string dims_str(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

LibraryMatch match_cublaslt(const Graph& g, const Group& grp) {
  LibraryMatch m;
  if (grp.kind != GroupKind::contraction) return m;
  NodeId mm = kNoNode;
  for (NodeId n : grp.nodes)
    if (g.node(n).kind == Op::MatMul) mm = n;
  if (mm == kNoNode || g.node(mm).out.dtype != DType::f32) return m;
  auto ops = g.operands(mm);
  if (g.node(ops[1]).out.rank() != 2 || g.node(ops[0]).out.rank() < 2) return m;
  int64_t N = g.node(mm).out.shape.back();
  m.epilogue = "DEFAULT";
  m.covered = 1;
  m.covered_nodes = {mm};
  const bool trans_a = g.node(mm).attr_int("transA", 0) != 0;
  std::set<NodeId> in(grp.nodes.begin(), grp.nodes.end());
  auto sole_consumer = [&](NodeId n) -> NodeId {
    auto cs = g.consumers(n);
    if (cs.size() != 1 || !in.count(cs[0])) return kNoNode;
    for (NodeId x : grp.materialised)
      if (x == n) return kNoNode;  // the intermediate is needed in memory
    return cs[0];
  };
  NodeId cur = mm, next = sole_consumer(mm);
  if (next != kNoNode && g.node(next).kind == Op::Add) {
    for (NodeId o : g.operands(next)) {
      const auto& s = g.node(o).out.shape;
      if (o != cur && g.node(o).op_class == OpClass::source && numel_of(s) == N && s.back() == N &&
          g.node(o).out.dtype == DType::f32) {
        m.epilogue = "BIAS";
        m.covered = 2;
        m.covered_nodes.push_back(next);
        m.bias = o;
        cur = next;
        next = sole_consumer(cur);
        break;
      }
    }
  }
  if (next != kNoNode && g.node(next).kind == Op::Relu) {
    m.epilogue = m.epilogue == "BIAS" ? "RELU_BIAS" : "RELU";
    ++m.covered;
    m.covered_nodes.push_back(next);
    cur = next;
  } else if (next != kNoNode && g.node(next).onnx_kind == Op::Gelu) {
    // cuBLASLt's GELU epilogue is the tanh approximation: only that form matches.
    std::vector<NodeId> prims;
    bool tanh = false;
    for (NodeId n : grp.nodes)
      if (g.node(n).origin == g.node(next).origin) {
        prims.push_back(n);
        tanh = tanh || g.node(n).kind == Op::Tanh;
      }
    std::vector<NodeId> with = m.covered_nodes;
    with.insert(with.end(), prims.begin(), prims.end());
    if (tanh && chain_closed(g, grp, with, prims.back())) {
      m.epilogue = m.epilogue == "BIAS" ? "GELU_BIAS" : "GELU";
      m.covered += static_cast<int>(prims.size());
      m.covered_nodes = with;
      cur = prims.back();  // the GELU's last primitive (topological order)
    }
  }
  m.remaining = static_cast<int>(grp.nodes.size()) - m.covered;
  if (!trans_a) {
    const auto& A = g.node(ops[0]).out.shape;
    m.a = ops[0];
    m.b = ops[1];
    m.trans_b = g.node(mm).attr_int("transB", 0) != 0;
    m.out = cur;
    m.N = N;
    m.K = A.back();
    m.M = numel_of(A) / m.K;
  }
  return m;
}

GroupLowering lower_group(const Graph& g, const Group& grp, const LibraryOptions& o) {
  GroupLowering l;
  auto emitted = [&](std::string why) {
    l = GroupLowering{};
    l.why = "emitted: " + std::move(why);
    return l;
  };
  // A contraction an enabled library refuses.
  auto fallback = [&](std::string why) {
    l = GroupLowering{};
    l.route = GroupLowering::Route::fallback;
    l.why = "emitted fallback: " + std::move(why);
    return l;
  };
  if (!o.any()) return emitted("no library enabled");
  if (grp.kind != GroupKind::contraction) return emitted("not a contraction group");
  int n_mm = 0, n_conv = 0;
  NodeId mm = only_member(g, grp, Op::MatMul, &n_mm);
  NodeId cv = only_member(g, grp, Op::Conv, &n_conv);
  if (n_mm + n_conv == 0)
    for (NodeId n : grp.nodes)
      if (g.node(n).op_class == OpClass::contraction) return fallback(g.node(n).op + " has no library route");
  if (n_mm + n_conv != 1) return fallback(std::to_string(n_mm + n_conv) + " contractions in the group");
  if (mm != kNoNode) {
    if (!o.cublaslt) return emitted("cuBLASLt not enabled");
    LibraryMatch m = match_cublaslt(g, grp);
    if (m.epilogue.empty()) return fallback("MatMul is not f32 with a 2-D B");
    if (m.out == kNoNode) return fallback("MatMul with transposed A");
    if (!o.fused_epilogue || !chain_closed(g, grp, m.covered_nodes, m.out)) {
      m.epilogue = "DEFAULT";
      m.bias = kNoNode;
      m.covered_nodes = {mm};
      m.covered = 1;
      m.remaining = static_cast<int>(grp.nodes.size()) - 1;
      m.out = mm;
    }
    l.route = GroupLowering::Route::cublaslt;
    l.gemm = m;
    l.library_out = m.out;
    split(g, grp, mm, m.covered_nodes, &l);
    l.why = "cublasLtMatmul " + m.epilogue + " " + std::to_string(m.M) + "x" + std::to_string(m.N) + "x" +
            std::to_string(m.K) + (m.trans_b ? " (B transposed)" : "") + parts_str(l);
    return l;
  }
  if (!o.cudnn) return emitted("cuDNN not enabled");
  const Primitive& p = g.node(cv);
  auto ops = g.operands(cv);
  if (ops.size() != 2) return fallback("Conv with " + std::to_string(ops.size()) + " operands");
  if (p.out.dtype != DType::f32 || g.node(ops[0]).out.dtype != DType::f32 || g.node(ops[1]).out.dtype != DType::f32)
    return fallback("Conv is not f32");
  const auto& xs = g.node(ops[0]).out.shape;
  const auto& ws = g.node(ops[1]).out.shape;
  const auto& ys = p.out.shape;
  const int sr = static_cast<int>(ys.size()) - 2;
  if (sr < 1 || sr > 3 || xs.size() != ys.size() || ws.size() != ys.size())
    return fallback("Conv with " + std::to_string(sr) + " spatial dims");
  WindowParams w = window_params(p, sr);
  for (int q = 0; q < sr; ++q)
    if (w.pads[q] != w.pads[sr + q]) return fallback("Conv with asymmetric padding (cuDNN pads symmetrically)");
  for (int64_t d : xs)
    if (d > (int64_t{1} << 31) - 1) return fallback("Conv dims exceed int");
  ConvMatch c;
  c.x = ops[0];
  c.w = ops[1];
  c.out = cv;
  c.groups = static_cast<int>(w.group);
  const int pad1 = sr == 1 ? 1 : 0;  // 1-D as 2-D with H = 1
  auto dims = [&](const std::vector<int64_t>& s) {
    std::vector<int> v{static_cast<int>(s[0]), static_cast<int>(s[1])};
    if (pad1) v.push_back(1);
    for (int q = 0; q < sr; ++q) v.push_back(static_cast<int>(s[2 + q]));
    return v;
  };
  c.x_dims = dims(xs);
  c.w_dims = dims(ws);
  c.y_dims = dims(ys);
  if (pad1) {
    c.pads.push_back(0);
    c.strides.push_back(1);
    c.dilations.push_back(1);
  }
  for (int q = 0; q < sr; ++q) {
    c.pads.push_back(static_cast<int>(w.pads[q]));
    c.strides.push_back(static_cast<int>(w.strides[q]));
    c.dilations.push_back(static_cast<int>(w.dilations[q]));
  }
  l.route = GroupLowering::Route::cudnn;
  l.conv = c;
  l.library_out = cv;
  split(g, grp, cv, {cv}, &l);
  l.why = "cudnnConvolutionForward IMPLICIT_GEMM x " + dims_str(c.x_dims) + " w " + dims_str(c.w_dims) + " groups " +
          std::to_string(c.groups) + parts_str(l);
  return l;
}

CudaGroupSource print_lowered_group(const Graph& g, const Group& grp, const GroupLowering& l, const CudaOptions& o,
                                    std::string_view title) {
  if (!l.library()) return print_cuda_group(g, grp, o, title);
  CudaGroupSource s;
  s.group_id = grp.id;
  std::ostringstream os;
  os << "// fuseplan CUDA group " << grp.id << " (" << to_string(grp.kind) << "): " << cpu::comment_escape(title)
     << "\n// library: " << cpu::comment_escape(l.why) << "; writes node " << l.library_out << " '"
     << cpu::comment_escape(g.node(l.library_out).name) << "'\n";
  if (l.prologue.nodes.empty() && l.epilogue.nodes.empty()) {
    os << "// no kernels\n";
    s.source = os.str();
    s.library_slot = 0;
    return s;
  }
  os << "// Generated code; identifiers are generated, model names appear only in escaped comments.\n";
  os << kDeviceRuntimeText << "\n";
  const std::string gp = "fp_g" + std::to_string(grp.id);
  if (!l.prologue.nodes.empty()) {
    os << "// prologue: runs before the library call\n";
    print_group_kernels(g, l.prologue, o, gp + "_pro", os, &s.launches);
  }
  s.library_slot = static_cast<int>(s.launches.size());
  if (!l.epilogue.nodes.empty()) {
    os << "\n// epilogue: runs after the library call, reads its output\n";
    print_group_kernels(g, l.epilogue, o, gp, os, &s.launches);
  }
  s.source = os.str();
  return s;
}

}  // namespace fuseplan::cuda
