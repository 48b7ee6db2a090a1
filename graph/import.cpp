// The import driver: initializers and inputs, node ordering (cycles,
// dangling names), per-node shape inference / folding / lowering, data-
// dependent regions, graph outputs.
#include <algorithm>
#include <deque>
#include <limits>

#include <onnx/defs/schema.h>

#include "graph/import_internal.h"
#include "graph/op_traits.h"
#include "graph/shape_check.h"

namespace fuseplan::detail {

Tensor& Ctx::tensor(const std::string& name) {
  auto it = t.find(name);
  if (it == t.end()) throw Error("tensor '" + name + "' is not defined");
  return it->second;
}

std::string Ctx::sub(const std::string& suffix) const {
  std::string base = origin + "/" + suffix, name = base;
  for (int k = 2; reserved.count(name) || g.find(name) != kNoNode; ++k) name = base + "_" + std::to_string(k);
  return name;
}

NodeId Ctx::use(const std::string& name) {
  Tensor& x = tensor(name);
  if (x.node != kNoNode) return x.node;
  Primitive p;
  p.name = p.origin = name;
  p.out = x.type;
  p.out.known = x.known;
  p.op_class = OpClass::source;
  switch (x.kind) {
    case Tensor::Kind::data_input: p.op = p.onnx_op = op_name(Op::Input), p.source = SourceKind::graph_input; break;
    case Tensor::Kind::weight:
      p.op = p.onnx_op = op_name(Op::Weight), p.source = SourceKind::weight;
      p.data = x.k && x.wdata.empty() ? to_const_data(*x.k) : x.wdata;
      break;
    case Tensor::Kind::constant:
      p.op = p.onnx_op = op_name(Op::Constant), p.source = SourceKind::constant;
      if (x.k) p.data = to_const_data(*x.k);
      break;
    case Tensor::Kind::computed: FUSEPLAN_ASSERT(false, "tensor '" + name + "' has no producer");
  }
  x.node = g.add_node(std::move(p));
  return x.node;
}

NodeId Ctx::emit(const std::string& name, Op op, const TensorType& out, const std::vector<NodeId>& operands,
                 std::map<std::string, AttrValue> attrs) {
  return emit(name, std::string(op_name(op)), out, operands, std::move(attrs));
}

NodeId Ctx::emit(const std::string& name, const std::string& op, const TensorType& out,
                 const std::vector<NodeId>& operands, std::map<std::string, AttrValue> attrs) {
  Primitive p;
  p.name = name;
  p.op = op;
  p.kind = op_from_name(op);  // classify() reads it; add_node sets it too
  p.origin = origin;
  p.onnx_op = cur ? onnx_op_name(*cur) : op;
  p.out = out;
  p.attrs = std::move(attrs);
  std::vector<const TensorType*> ots;
  for (NodeId o : operands) ots.push_back(&g.node(o).out);
  p.op_class = classify(p, ots);
  NodeId id = g.add_node(std::move(p));
  for (std::size_t k = 0; k < operands.size(); ++k) g.add_use(operands[k], id, static_cast<int>(k));
  auto it = t.find(name);
  if (it != t.end() && it->second.kind == Tensor::Kind::computed) it->second.node = id;
  return id;
}

NodeId Ctx::emit_const(const std::string& name, const Const& c, bool weight) {
  Primitive p;
  p.name = name;
  p.origin = origin;
  p.onnx_op = cur ? cur->op_type() : "";
  p.op = op_name(weight ? Op::Weight : Op::Constant);
  p.source = weight ? SourceKind::weight : SourceKind::constant;
  p.op_class = OpClass::source;
  p.out = c.type;
  p.data = to_const_data(c);
  return g.add_node(std::move(p));
}

NodeId Ctx::scalar(const std::string& suffix, double v, DType dt) {
  Const c;
  c.type = TensorType{dt, {}, true};
  c.f = {v};
  return emit_const(sub(suffix), c, false);
}

std::string onnx_op_name(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + ":" + n.op_type();
}

namespace {
std::string node_label(const onnx::NodeProto& n) {
  std::string nm = !n.name().empty() ? n.name() : n.output_size() ? n.output(0) : "?";
  return "node '" + nm + "' (" + onnx_op_name(n) + ")";
}

// Topological order of the ONNX nodes; throws on dangling names and cycles.
std::vector<int> order_nodes(const onnx::GraphProto& g, const Ctx& ctx) {
  int nn = g.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < nn; ++i)
    for (const auto& o : g.node(i).output()) {
      if (o.empty()) continue;
      if (ctx.t.count(o) || !producer.emplace(o, i).second)
        throw Error("tensor '" + o + "' is produced more than once (" + node_label(g.node(i)) + ")");
    }
  std::vector<std::vector<int>> succ(nn);
  std::vector<int> indeg(nn, 0);
  for (int i = 0; i < nn; ++i) {
    const auto& n = g.node(i);
    for (const auto& in : n.input()) {
      if (in.empty()) continue;
      auto it = producer.find(in);
      if (it != producer.end()) succ[it->second].push_back(i), ++indeg[i];
      else if (!ctx.t.count(in))
        throw Error(node_label(n) + " reads tensor '" + in + "' that no node, input or initializer produces");
    }
    // outer-scope names read inside subgraphs also order the node
    for (const auto& a : n.attribute()) {
      std::vector<const onnx::GraphProto*> gs;
      if (a.has_g()) gs.push_back(&a.g());
      for (const auto& sg : a.graphs()) gs.push_back(&sg);
      for (const auto* sg : gs)
        for (const auto& sn : sg->node())
          for (const auto& in : sn.input()) {
            auto it = producer.find(in);
            if (it != producer.end() && it->second != i) succ[it->second].push_back(i), ++indeg[i];
          }
    }
  }
  std::deque<int> ready;
  for (int i = 0; i < nn; ++i)
    if (!indeg[i]) ready.push_back(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (int s : succ[i])
      if (--indeg[s] == 0) ready.push_back(s);
  }
  if (static_cast<int>(order.size()) != nn)
    for (int i = 0; i < nn; ++i)
      if (indeg[i]) throw Error("graph contains a cycle through " + node_label(g.node(i)));
  return order;
}

int64_t count_prims(const Ctx& ctx, std::size_t from) {
  int64_t c = 0;
  for (NodeId v = from; v < ctx.g.size(); ++v) c += ctx.g.node(v).op_class != OpClass::source;
  return c;
}

void mark_unknown(Ctx& ctx, const onnx::NodeProto& n, int root) {
  for (const auto& o : n.output())
    if (!o.empty()) {
      Tensor& t = ctx.t[o];
      t.known = false;
      t.type.known = false;
      t.taint_root = root;
    }
}

std::vector<TensorType> declared_or_unknown(Ctx& ctx, const onnx::NodeProto& n,
                                            const std::unordered_map<std::string, const onnx::TypeProto*>& decl) {
  std::vector<TensorType> out;
  for (const auto& o : n.output()) {
    auto it = decl.find(o);
    std::optional<TensorType> t;
    if (it != decl.end()) t = bind_declared(ctx, *it->second);
    out.push_back(t ? *t : TensorType{it != decl.end() ? dtype_from_onnx(it->second->tensor_type().elem_type())
                                                      : DType::unknown, {}, false});
  }
  return out;
}

// A default-domain node's input and output counts against its ONNX schema
// (libonnx's OpSchemaRegistry at the model's opset): a node short of a
// required operand would be lowered reading one that is not there. Above the
// newest opset libonnx knows (kLibOnnxMaxOpset) only the required counts are
// checked, since a later opset may have added inputs (ReduceMax's axes, 18).
// Throws Error naming the counts.
void check_arity(const onnx::NodeProto& n, int64_t opset) {
  if (!(n.domain().empty() || n.domain() == "ai.onnx")) return;
  const onnx::OpSchema* s =
      onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(std::min<int64_t>(opset, kLibOnnxMaxOpset)), "");
  if (!s) return;  // not an ONNX op: an opaque graph break
  const bool newer = opset > kLibOnnxMaxOpset;
  auto count = [&](const char* what, int got, int lo, int hi) {
    if (got >= lo && (newer || got <= hi)) return;
    std::string want = lo == hi ? std::to_string(lo)
                       : hi == std::numeric_limits<int>::max() ? "at least " + std::to_string(lo)
                                                                : std::to_string(lo) + " to " + std::to_string(hi);
    throw Error("takes " + want + " " + what + (want == "1" ? "" : "s") + " (ONNX schema at opset " +
                std::to_string(opset) + "), got " + std::to_string(got));
  };
  count("input", n.input_size(), s->min_input(), s->max_input());
  count("output", n.output_size(), s->min_output(), s->max_output());
  for (int i = 0; i < std::min(n.input_size(), s->min_input()); ++i)
    if (n.input(i).empty() && i < static_cast<int>(s->inputs().size()) &&
        s->inputs()[static_cast<std::size_t>(i)].GetOption() != onnx::OpSchema::Optional)
      throw Error("input " + std::to_string(i) + " ('" + s->inputs()[static_cast<std::size_t>(i)].GetName() +
                  "') is required but given as empty");
}

void process_node(Ctx& ctx, const onnx::NodeProto& n,
                  const std::unordered_map<std::string, const onnx::TypeProto*>& decl) {
  ctx.cur = &n;
  check_arity(n, ctx.opset);
  ctx.origin.clear();
  for (const auto& o : n.output())
    if (!o.empty()) { ctx.origin = o; break; }
  if (ctx.origin.empty()) return;  // produces nothing
  std::vector<const Tensor*> in;
  int taint = -1;
  bool from_weight = false;
  for (const auto& i : n.input()) {
    const Tensor* t = i.empty() ? nullptr : &ctx.tensor(i);
    if (t && !t->known && taint < 0) taint = t->taint_root;
    if (t && t->kind == Tensor::Kind::weight) from_weight = true;
    in.push_back(t);
  }
  while (!in.empty() && !in.back()) in.pop_back();
  const std::string op = onnx_op_name(n);
  const Op kind = op_from_name(op);  // the one lookup of the node's op type
  for (const auto& o : n.output())
    if (!o.empty()) ctx.t[o] = Tensor{};
  std::size_t before = ctx.g.size();
  if (taint >= 0) {  // downstream of a data-dependent op: opaque region
    auto types = declared_or_unknown(ctx, n, decl);
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) ctx.t[n.output(k)].type = types[k];
    mark_unknown(ctx, n, taint);
    emit_opaque(ctx, n);
    ctx.roots[taint].count += count_prims(ctx, before);
    return;
  }
  if (kind == Op::Constant) {
    Tensor& t = ctx.t[n.output(0)];
    t.kind = Tensor::Kind::constant;
    Attrs at{n};
    if (auto a = at.find("value")) read_tensor(a->t(), t, true);
    else if (at.has("value_float")) t.k = make_const(DType::f32, {}, {}, {at.f("value_float", 0)});
    else if (at.has("value_int")) t.k = make_const(DType::i64, {}, {at.i("value_int", 0)}, {});
    else if (at.has("value_floats")) { auto v = at.floats("value_floats"); t.k = make_const(DType::f32, {static_cast<int64_t>(v.size())}, {}, v); }
    else if (at.has("value_ints")) { auto v = at.ints("value_ints"); t.k = make_const(DType::i64, {static_cast<int64_t>(v.size())}, v, {}); }
    else throw Error(node_label(n) + ": Constant without a supported value attribute");
    if (t.k) t.type = t.k->type;
    return;
  }
  std::optional<std::vector<TensorType>> types;
  bool known_op = true;
  if (kind == Op::If) {
    Attrs at{n};
    types.emplace();
    if (auto a = at.find("then_branch"))
      for (int k = 0; k < n.output_size(); ++k) {
        std::optional<TensorType> t;
        if (k < a->g().output_size()) t = bind_declared(ctx, a->g().output(k).type());
        types->push_back(t ? *t : TensorType{DType::unknown, {}, false});
      }
  } else {
    types = infer_shapes(n, kind, in, ctx.opset);
  }
  bool custom = !n.domain().empty() && n.domain() != "ai.onnx";
  if (!types || custom) {
    known_op = false;
    if (ctx.warned_ops.insert(op).second)
      ctx.warn("unsupported op " + op + " imported as opaque (first: " + node_label(n) + ")");
    if (!types) types = declared_or_unknown(ctx, n, decl);
  }
  types->resize(n.output_size(), TensorType{DType::unknown, {}, false});
  bool all_known = true;
  for (int k = 0; k < n.output_size(); ++k) {
    if (n.output(k).empty()) continue;
    (*types)[k].numel();  // negative / overflowing shapes throw
    ctx.t[n.output(k)].type = (*types)[k];
    all_known = all_known && (*types)[k].known;
  }
  if (known_op) {
    const bool of_shape = one_of(kind, {Op::Shape, Op::Size});  // reads only its input's shape
    bool foldable = of_shape || !in.empty();
    for (const Tensor* t : in)
      if (t && !t->k && !of_shape) foldable = false;
    if (foldable && in.size() >= 1 && in[0]) {
      if (auto vals = fold_node(n, kind, in, *types, ctx.opset)) {
        for (int k = 0; k < n.output_size() && k < static_cast<int>(vals->size()); ++k) {
          if (n.output(k).empty()) continue;
          Tensor& t = ctx.t[n.output(k)];
          bool weight = from_weight && !of_shape;
          t.kind = weight ? Tensor::Kind::weight : Tensor::Kind::constant;
          t.k = (*vals)[k];
          t.type = t.k->type;
          t.wdata = to_const_data(*t.k);
        }
        return;
      }
    }
  }
  if (!all_known) {
    ctx.roots.push_back({op + " '" + ctx.origin + "'", 0});
    mark_unknown(ctx, n, static_cast<int>(ctx.roots.size()) - 1);
    emit_opaque(ctx, n);
    ctx.roots.back().count += count_prims(ctx, before);
    return;
  }
  if (!known_op) emit_opaque(ctx, n);
  else lower_node(ctx, n, kind);
}
}  // namespace

Graph import_proto(const onnx::ModelProto& m, const ImportOptions& opts, const std::string& name) {
  Ctx ctx;
  ctx.opts = opts;
  ctx.g.name = name;
  ctx.opset = check_opset(m);
  const onnx::GraphProto& g = m.graph();
  for (const auto& init : g.initializer()) {
    if (init.name().empty()) throw Error("an initializer has an empty name");
    Tensor t;
    t.kind = Tensor::Kind::weight;
    try {
      read_tensor(init, t, true);
    } catch (const Error& e) {
      throw Error("initializer '" + init.name() + "': " + e.what());
    }
    ctx.t[init.name()] = std::move(t);
  }
  bind_inputs(ctx, g);
  for (const auto& n : g.node())
    for (const auto& o : n.output()) ctx.reserved.insert(o);
  for (const auto& [k, v] : ctx.t) ctx.reserved.insert(k);
  std::unordered_map<std::string, const onnx::TypeProto*> decl;
  for (const auto& vi : g.value_info()) decl[vi.name()] = &vi.type();
  for (const auto& vi : g.output()) decl[vi.name()] = &vi.type();
  for (int i : order_nodes(g, ctx)) {
    const auto& n = g.node(i);
    try {
      process_node(ctx, n, decl);
    } catch (const Error& e) {
      std::string w = e.what();
      if (w.rfind("node '", 0) == 0) throw;
      throw Error(node_label(n) + ": " + w);
    }
  }
  ctx.cur = nullptr;
  std::vector<NodeId> outs;
  for (const auto& o : g.output()) {
    if (!ctx.has(o.name())) throw Error("graph output '" + o.name() + "' is not produced by any node or input");
    ctx.origin = o.name();
    outs.push_back(ctx.use(o.name()));
  }
  for (const auto& r : ctx.roots)
    ctx.warn(r.what + ": output shape is data-dependent or not inferable at these dims; " + std::to_string(r.count) +
             " primitives have unknown shapes (opaque region)");
  ctx.g.set_graph_outputs(outs);
  ctx.g.finalize();
  return std::move(ctx.g);
}

}  // namespace fuseplan::detail
