#include "emit/cuda/cuda_printer.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "emit/cpu/cpp_printer.h"
#include "emit/cuda/cuda_expr.h"
#include "emit/kernel_plan.h"
#include "graph/op_attrs.h"

namespace fuseplan::cuda {

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// The purely elementwise f32 case: one phase of loop stages, every load and
// stage of the same shape, numel divisible by 4 -> float4 loads/stores.
bool is_vec4(const Graph& g, const KernelPlan& kp) {
  if (kp.row_dims > 0 || kp.stages.empty()) return false;
  const auto& s = g.node(kp.stages.front().node).out.shape;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  if (n % 4 != 0 || n < 4) return false;
  for (const Stage& st : kp.stages)
    if (st.kind != StageKind::loop || g.node(st.node).out.shape != s) return false;
  for (NodeId m : kp.members)
    if (g.node(m).op_class != OpClass::elementwise || g.node(m).out.dtype != DType::f32 || g.node(m).out.shape != s)
      return false;
  for (NodeId l : kp.loads)
    if (g.node(l).out.dtype != DType::f32 || g.node(l).out.shape != s) return false;
  return true;
}

}  // namespace

/// Prints the phases of one kernel plan as __device__ bodies.
class PhasePrinter : public ExprPrinter {
 public:
  PhasePrinter(const Graph& g, const KernelPlan& kp, const CudaOptions& o, std::string prefix)
      : ExprPrinter(g, kp), o_(o), prefix_(std::move(prefix)) {}

  std::vector<PhaseCode> build() {
    run();  // pass 1: learn which scratch buffers another phase reads
    for (auto& [n, phases] : reads_)
      for (int p : phases)
        if (p != phase_of_[n]) needed_scratch_.insert(n);
    run();
    return std::move(out_);
  }

 private:
  const CudaOptions& o_;
  std::string prefix_;
  std::vector<PhaseCode> out_;
  std::map<NodeId, int> phase_of_;
  std::set<NodeId> needed_scratch_;
  bool final_pass_ = false;

  struct Cur {
    PhaseKind kind = PhaseKind::elem;
    std::vector<int64_t> shape;
    std::string pre, tail;  // block: pre = all threads, tail = thread 0
    Coords c;
    std::string desc;
  };

  void run() {
    out_.clear();
    reset();
    const auto& st = kp_.stages;
    if (kp_.row_dims > 0) {
      row_phase();
      final_pass_ = true;
      return;
    }
    if (is_vec4(g_, kp_)) {
      vec4_phase();
      final_pass_ = true;
      return;
    }
    Cur cur;
    bool open = false;
    for (const Stage& s : st) {
      if (open && s.kind == StageKind::loop && (cur.kind == PhaseKind::elem || cur.kind == PhaseKind::block) &&
          shape(s.node) == cur.shape && try_merge(cur, s))
        continue;
      if (open) finish(cur);
      cur = start(s);
      open = true;
    }
    if (open) finish(cur);
    final_pass_ = true;
  }

  bool store_needed(NodeId n) const {
    if (is_global(n)) return true;
    return !final_pass_ || needed_scratch_.count(n) > 0;
  }

  void store(NodeId n, const Coords& c, const std::string& v) {
    if (!store_needed(n)) return;
    note_param(n, true);
    line(buf(n) + "[" + offset(n, c) + "] = " + v + ";");
  }

  // Opens a phase led by stage s.
  Cur start(const Stage& s) {
    Cur cur;
    cur.shape = shape(s.node);
    phase_stages_.clear();
    phase_stages_.insert(s.node);
    phase_of_[s.node] = static_cast<int>(out_.size());
    begin_phase(static_cast<int>(out_.size()));
    const Primitive& p = g_.node(s.node);
    cur.c = coord_vars(cur.shape, "i");
    if (s.kind == StageKind::reduce && !is_column_reduce(s.node)) {
      cur.kind = PhaseKind::block;
      cur.desc = "block-reduce";
      ind_ = 2;
      out_str_ = &cur.pre;
      push();
      std::string v = reduce_block(s.node, cur.c);
      ind_ = 3;
      out_str_ = &cur.tail;
      store(s.node, cur.c, v);
      return cur;
    }
    cur.kind = PhaseKind::elem;
    cur.desc = s.kind == StageKind::library ? "elem/" + p.op : (s.kind == StageKind::reduce ? "column-reduce" : "elem");
    ind_ = 2;
    out_str_ = &cur.tail;
    push();
    std::string v;
    if (s.kind == StageKind::reduce) v = reduce_seq(s.node, cur.c);
    else if (s.kind == StageKind::library) v = library_at(s.node, cur.c);
    else v = define(s.node, key(s.node, cur.c), compute(s.node, cur.c));
    store(s.node, cur.c, v);
    return cur;
  }

  bool try_merge(Cur& cur, const Stage& s) {
    auto snapshot_memo = memo_;
    int tmp = tmp_;
    auto params = params_;
    auto reads = reads_;
    std::size_t len = cur.tail.size();
    violation_ = false;
    phase_stages_.insert(s.node);
    out_str_ = &cur.tail;
    std::string v = define(s.node, key(s.node, cur.c), compute(s.node, cur.c));
    store(s.node, cur.c, v);
    if (!violation_) {
      phase_of_[s.node] = static_cast<int>(out_.size());
      return true;
    }
    memo_ = snapshot_memo;
    tmp_ = tmp;
    params_ = params;
    reads_ = reads;
    cur.tail.resize(len);
    phase_stages_.erase(s.node);
    violation_ = false;
    return false;
  }

  void finish(Cur& cur) {
    pop();
    int64_t n = numel(cur.shape);
    std::string body;
    std::string cdef;
    for (std::size_t d = 0; d < cur.c.size(); ++d) cdef += "    " + coord_def(cur.shape, cur.c, d, "o") + "\n";
    PhaseCode pc;
    pc.kind = cur.kind;
    pc.desc = cur.desc;
    if (cur.kind == PhaseKind::block) {
      pc.grid = std::min(n, o_.max_grid);
      body = "  for (int64_t o = bid; o < " + std::to_string(n) + "; o += nb) {\n" + cdef + cur.pre +
             "    if (threadIdx.x == 0) {\n" + cur.tail + "    }\n  }\n";
    } else {
      int64_t b = o_.threads_per_block;
      pc.grid = std::min((n + b - 1) / b, o_.max_grid);
      body = "  for (int64_t o = bid * blockDim.x + threadIdx.x; o < " + std::to_string(n) +
             "; o += nb * blockDim.x) {\n" + cdef + cur.tail + "  }\n";
    }
    emit_phase(pc, body, "");
  }

  // ---------------------------------------------------------------- vec4
  void vec4_phase() {
    begin_phase(0);
    const auto& s = shape(kp_.stages.front().node);
    int64_t n4 = numel(s) / 4;
    std::string body;
    out_str_ = &body;
    ind_ = 2;
    for (NodeId l : kp_.loads) {
      note_param(l, false);
      line("const float4 l" + id(l) + " = reinterpret_cast<const float4*>(t" + id(l) + ")[o];");
    }
    for (const Stage& st : kp_.stages) {
      phase_of_[st.node] = 0;
      if (store_needed(st.node)) line("float4 w" + id(st.node) + ";");
    }
    static const char* comp[] = {"x", "y", "z", "w"};
    for (int lane = 0; lane < 4; ++lane) {
      line("{");
      ++ind_;
      push();
      vec_lane_ = comp[lane];
      line("const int64_t e = o * 4 + " + std::to_string(lane) + ";");
      Coords c = coord_vars(s, "i");
      for (std::size_t d = 0; d < c.size(); ++d) line(coord_def(s, c, d, "e"));
      for (const Stage& st : kp_.stages) {
        std::string v = define(st.node, key(st.node, c), compute(st.node, c));
        if (store_needed(st.node)) line("w" + id(st.node) + "." + comp[lane] + " = " + v + ";");
      }
      pop();
      --ind_;
      line("}");
    }
    vec_lane_.clear();
    for (const Stage& st : kp_.stages)
      if (store_needed(st.node)) {
        note_param(st.node, true);
        line("reinterpret_cast<float4*>(" + buf(st.node) + ")[o] = w" + id(st.node) + ";");
      }
    PhaseCode pc;
    pc.kind = PhaseKind::elem;
    pc.desc = "elem/vec4";
    int64_t b = o_.threads_per_block;
    pc.grid = std::min((n4 + b - 1) / b, o_.max_grid);
    std::string full = "  for (int64_t o = bid * blockDim.x + threadIdx.x; o < " + std::to_string(n4) +
                       "; o += nb * blockDim.x) {\n" + body + "  }\n";
    emit_phase(pc, full, "");
  }

  // ----------------------------------------------------------------- row
  void row_phase() {
    int64_t smem = 0;
    for (const Stage& s : kp_.stages)
      if (!s.global) smem += numel(scratch_tail(s.node)) * dtype_bytes(g_.node(s.node).out.dtype);
    row_smem_ = smem <= o_.smem_row_bytes;
    begin_phase(0);
    std::string decl, body;
    for (const Stage& s : kp_.stages) {
      phase_of_[s.node] = 0;
      if (!s.global && row_smem_)
        decl += "  __shared__ " + ty(s.node) + " sh" + id(s.node) + "[" + std::to_string(numel(scratch_tail(s.node))) +
                "];\n";
      if (s.kind == StageKind::reduce && !is_column_reduce(s.node))
        decl += "  __shared__ " + ty(s.node) + " red" + id(s.node) + "[32];\n";
    }
    out_str_ = &body;
    ind_ = 2;
    push();
    Coords outer = coord_vars(kp_.row_shape, "r");
    for (int d = 0; d < kp_.row_dims; ++d) line(coord_def(kp_.row_shape, outer, d, "o"));
    for (const Stage& s : kp_.stages) {
      line("// " + g_.node(s.node).op + " '" + cpu::comment_escape(g_.node(s.node).name) + "'");
      std::vector<int64_t> tail(shape(s.node).begin() + kp_.row_dims, shape(s.node).end());
      Coords c = outer;
      Coords tc = coord_vars(tail, "j");
      for (auto& v : tc) v = "j" + std::to_string(&v - tc.data() + kp_.row_dims);
      c.insert(c.end(), tc.begin(), tc.end());
      int64_t tn = numel(tail);
      bool block = s.kind == StageKind::reduce && !is_column_reduce(s.node);
      line(block ? "for (int64_t q = 0; q < " + std::to_string(tn) + "; ++q) {"
                 : "for (int64_t q = threadIdx.x; q < " + std::to_string(tn) + "; q += blockDim.x) {");
      ++ind_;
      push();
      for (std::size_t d = 0; d < tc.size(); ++d) line(coord_def(tail, tc, d, "q"));
      std::string v;
      if (block) {
        v = reduce_block(s.node, c, "red" + id(s.node));
        line("if (threadIdx.x == 0) {");
        ++ind_;
        store(s.node, c, v);
        --ind_;
        line("}");
      } else {
        v = s.kind == StageKind::reduce ? reduce_seq(s.node, c) : define(s.node, key(s.node, c), compute(s.node, c));
        store(s.node, c, v);
      }
      pop();
      --ind_;
      line("}");
      line("__syncthreads();");
    }
    pop();
    PhaseCode pc;
    pc.kind = PhaseKind::row;
    pc.desc = std::string("row/") + (row_smem_ ? "smem" : "global-scratch");
    int64_t rows = numel(kp_.row_shape);
    pc.grid = std::min(rows, o_.max_grid);
    std::string full = "  for (int64_t o = bid; o < " + std::to_string(rows) + "; o += nb) {\n" + body + "  }\n";
    emit_phase(pc, full, decl);
  }

  std::vector<int64_t> scratch_tail(NodeId n) const {
    return std::vector<int64_t>(shape(n).begin() + kp_.row_dims, shape(n).end());
  }

  void emit_phase(PhaseCode& pc, const std::string& body, const std::string& decl) {
    pc.name = prefix_ + "_p" + std::to_string(out_.size());
    std::vector<std::string> sig;
    for (auto& [n, written] : params_) {
      pc.params.push_back(n);
      pc.written.push_back(written);
      sig.push_back(param_decl(n, written));
    }
    std::ostringstream os;
    os << "// phase " << out_.size() << ": " << pc.desc << "\n";
    for (const Stage& s : kp_.stages)
      if (phase_of_.count(s.node) && phase_of_.at(s.node) == static_cast<int>(out_.size()))
        os << "//   " << g_.node(s.node).op << " '" << cpu::comment_escape(g_.node(s.node).name) << "'"
           << (s.global ? " -> buffer" : " -> scratch") << "\n";
    os << "__device__ void " << pc.name << "(" << join(sig, ", ") << (sig.empty() ? "" : ", ")
       << "int64_t bid, int64_t nb) {\n"
       << decl << replace_all(body, "std::", "fprt::") << "}\n";
    pc.text = os.str();
    out_.push_back(pc);
  }
};

namespace {

std::string args_of(const PhaseCode& pc, const std::vector<std::string>& names) {
  std::string a;
  for (const auto& n : names) a += n + ", ";
  return a;
}

std::string global_kernel(const std::string& name, const std::vector<const PhaseCode*>& phases,
                          const std::vector<int64_t>& offsets, const Graph& g, std::vector<NodeId>* params_out,
                          int block) {
  std::map<NodeId, bool> params;
  for (const PhaseCode* p : phases)
    for (std::size_t i = 0; i < p->params.size(); ++i) params[p->params[i]] = params[p->params[i]] || p->written[i];
  std::vector<std::string> sig;
  for (auto& [n, w] : params) {
    params_out->push_back(n);
    std::string t = c_type(g.node(n).out.dtype);
    sig.push_back((w ? t + "* __restrict__ b" : "const " + t + "* __restrict__ b") + std::to_string(n));
  }
  std::ostringstream os;
  os << "extern \"C\" __global__ void __launch_bounds__(" << block << ") " << name << "(" << join(sig, ", ") << ") {\n";
  os << "  const int64_t b = blockIdx.x;\n";
  for (std::size_t i = 0; i < phases.size(); ++i) {
    std::vector<std::string> names;
    for (NodeId n : phases[i]->params) names.push_back("b" + std::to_string(n));
    int64_t lo = offsets[i], hi = offsets[i] + phases[i]->grid;
    std::string call = phases[i]->name + "(" + args_of(*phases[i], names) + "b - " + std::to_string(lo) + ", " +
                       std::to_string(phases[i]->grid) + ");";
    if (phases.size() == 1) os << "  " << phases[i]->name << "(" << args_of(*phases[i], names) << "b, gridDim.x);\n";
    else os << "  " << (i ? "else " : "") << "if (b < " << hi << ") " << call << "\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace

void print_group_kernels(const Graph& g, const Group& grp, const CudaOptions& o, const std::string& gp,
                         std::ostream& os, std::vector<CudaLaunch>* launches) {
  std::vector<std::vector<PhaseCode>> parts;
  if (grp.kind == GroupKind::horizontal && grp.branches.size() > 1) {
    for (std::size_t b = 0; b < grp.branches.size(); ++b) {
      Group sub;
      sub.id = grp.id;
      sub.kind = GroupKind::loop;
      sub.nodes = grp.branches[b];
      for (NodeId m : grp.materialised)
        if (std::find(sub.nodes.begin(), sub.nodes.end(), m) != sub.nodes.end()) sub.materialised.push_back(m);
      KernelPlan kp = plan_kernel(g, sub);
      parts.push_back(PhasePrinter(g, kp, o, gp + "_b" + std::to_string(b)).build());
    }
  } else {
    KernelPlan kp = plan_kernel(g, grp);
    parts.push_back(PhasePrinter(g, kp, o, gp).build());
  }
  for (NodeId n : grp.nodes)
    os << "// node " << n << ": " << g.node(n).op << " '" << cpu::comment_escape(g.node(n).name) << "' "
       << g.node(n).out.str() << "\n";
  for (const auto& part : parts)
    for (const PhaseCode& pc : part) os << "\n" << pc.text;
  bool one_launch = parts.size() > 1;
  for (const auto& part : parts) one_launch = one_launch && part.size() == 1;
  int block = o.threads_per_block;
  if (one_launch) {
    std::vector<const PhaseCode*> ph;
    std::vector<int64_t> off;
    int64_t total = 0;
    for (const auto& part : parts) {
      ph.push_back(&part[0]);
      off.push_back(total);
      total += part[0].grid;
    }
    CudaLaunch l{gp + "_k0", total, block, {}, "horizontal(" + std::to_string(parts.size()) + ")"};
    os << "\n" << global_kernel(l.kernel, ph, off, g, &l.params, block);
    launches->push_back(l);
  } else {
    int k = 0;
    for (const auto& part : parts)
      for (const PhaseCode& pc : part) {
        CudaLaunch l{gp + "_k" + std::to_string(k++), pc.grid, block, {}, pc.desc};
        os << "\n" << global_kernel(l.kernel, {&pc}, {0}, g, &l.params, block);
        launches->push_back(l);
      }
  }
}

CudaGroupSource print_cuda_group(const Graph& g, const Group& grp, const CudaOptions& o, std::string_view title) {
  CudaGroupSource out;
  out.group_id = grp.id;
  std::ostringstream os;
  os << "// fuseplan CUDA kernels of group " << grp.id << " (" << to_string(grp.kind) << "): "
     << cpu::comment_escape(title) << "\n";
  os << "// Generated code; identifiers are generated, model names appear only in escaped comments.\n";
  os << kDeviceRuntimeText << "\n";
  print_group_kernels(g, grp, o, "fp_g" + std::to_string(grp.id), os, &out.launches);
  out.source = os.str();
  return out;
}

}  // namespace fuseplan::cuda
