// Search time per strategy versus graph size on synthetic graphs built in
// code: stacked transformer-like blocks (layer norm, projections with bias,
// softmax attention scores, GELU MLP, residuals; 37 primitives per block) at
// about 1k, 10k and 100k primitives. `optimal` runs on the 1k graph only.
// Counters: primitives, kernels, predicted_us.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "costmodel/device.h"
#include "search/strategy.h"

namespace fuseplan {
namespace {

constexpr int64_t kSeq = 128, kHidden = 768;  // BERT-base-like row and width
constexpr int kPrimsPerBlock = 37;

class Builder {
 public:
  Graph g;
  NodeId source(const std::string& name, std::vector<int64_t> shape, SourceKind k) {
    Primitive p;
    p.name = name;
    p.op = k == SourceKind::graph_input ? "Input" : k == SourceKind::weight ? "Weight" : "Constant";
    p.op_class = OpClass::source;
    p.source = k;
    p.out.shape = std::move(shape);
    if (k == SourceKind::constant) p.data.f32 = {1e-5f};
    return add(std::move(p), {});
  }
  NodeId op(const std::string& op, OpClass c, std::vector<int64_t> shape, std::vector<NodeId> ins,
            std::map<std::string, AttrValue> attrs = {}) {
    Primitive p;
    p.name = "n" + std::to_string(g.size());
    p.op = op;
    p.op_class = c;
    p.onnx_op = op;
    p.origin = p.name;
    p.out.shape = std::move(shape);
    p.attrs = std::move(attrs);
    return add(std::move(p), ins);
  }
  NodeId unary(const std::string& op, NodeId x) { return this->op(op, OpClass::elementwise, shape(x), {x}); }
  NodeId binary(const std::string& op, NodeId a, NodeId b) {
    const bool same = shape(a) == shape(b);
    const auto& big = g.node(a).out.numel() >= g.node(b).out.numel() ? shape(a) : shape(b);
    return this->op(op, same ? OpClass::elementwise : OpClass::broadcast, big, {a, b});
  }
  NodeId reduce(const std::string& op, NodeId x) {
    auto s = shape(x);
    s.back() = 1;
    return this->op(op, OpClass::reduction, s, {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{1}}});
  }
  NodeId matmul(NodeId x, int64_t n) {
    const NodeId w = source("w" + std::to_string(g.size()), {shape(x).back(), n}, SourceKind::weight);
    return op("MatMul", OpClass::contraction, {shape(x)[0], n}, {x, w});
  }
  NodeId weight(int64_t n) { return source("b" + std::to_string(g.size()), {n}, SourceKind::weight); }
  std::vector<int64_t> shape(NodeId n) const { return g.node(n).out.shape; }

 private:
  NodeId add(Primitive p, const std::vector<NodeId>& ins) {
    const NodeId id = g.add_node(std::move(p));
    for (std::size_t i = 0; i < ins.size(); ++i) g.add_use(ins[i], id, static_cast<int>(i));
    return id;
  }
};

NodeId layer_norm(Builder& b, NodeId x, NodeId eps) {  // 9 primitives
  const NodeId mean = b.reduce("ReduceMean", x);
  const NodeId d = b.binary("Sub", x, mean);
  const NodeId var = b.reduce("ReduceMean", b.binary("Mul", d, d));
  const NodeId sd = b.unary("Sqrt", b.binary("Add", var, eps));
  return b.binary("Add", b.binary("Mul", b.binary("Div", d, sd), b.weight(kHidden)), b.weight(kHidden));
}

NodeId block(Builder& b, NodeId x, NodeId eps) {
  const NodeId ln1 = layer_norm(b, x, eps);
  const NodeId scores = b.binary("Add", b.matmul(ln1, kSeq), b.weight(kSeq));  // 2
  const NodeId mx = b.reduce("ReduceMax", scores);                             // softmax: 5
  const NodeId ex = b.unary("Exp", b.binary("Sub", scores, mx));
  const NodeId probs = b.binary("Div", ex, b.reduce("ReduceSum", ex));
  const NodeId h = b.binary("Add", x, b.matmul(probs, kHidden));  // 2
  const NodeId ln2 = layer_norm(b, h, eps);                       // 9
  const NodeId up = b.binary("Add", b.matmul(ln2, kHidden), b.weight(kHidden));  // 2
  const NodeId half = b.weight(1), one = b.weight(1);                            // GELU: 5
  const NodeId erf = b.unary("Erf", b.binary("Mul", up, half));
  const NodeId gelu = b.binary("Mul", b.binary("Mul", up, b.binary("Add", erf, one)), half);
  const NodeId down = b.binary("Add", b.matmul(gelu, kHidden), b.weight(kHidden));  // 2
  return b.binary("Add", h, down);                                                  // 1
}

Graph transformer(int blocks) {
  Builder b;
  NodeId x = b.source("x", {kSeq, kHidden}, SourceKind::graph_input);
  const NodeId eps = b.source("eps", {}, SourceKind::constant);
  for (int i = 0; i < blocks; ++i) x = block(b, x, eps);
  b.g.set_graph_outputs({x});
  b.g.finalize();
  return std::move(b.g);
}

const DeviceSpec& device() {
  static const DeviceSpec d = load_device("h100-sxm");
  return d;
}

void BM_Search(benchmark::State& state, const std::string& strategy) {
  const int target = static_cast<int>(state.range(0));
  const Graph g = transformer(std::max(1, target / kPrimsPerBlock));
  SearchOptions o;
  o.time_limit_s = 30;
  Plan plan;
  for (auto _ : state) plan = search(g, device(), strategy, o);
  int64_t prims = 0;
  for (NodeId n = 0; n < g.size(); ++n) prims += g.node(n).op_class != OpClass::source;
  state.counters["primitives"] = static_cast<double>(prims);
  state.counters["kernels"] = static_cast<double>(plan.totals.kernels);
  state.counters["predicted_us"] = plan.totals.predicted_us;
  state.SetLabel(plan.status);
}

void register_all() {
  for (const auto& s : strategy_names()) {
    auto* b = benchmark::RegisterBenchmark(("search/" + s).c_str(), [s](benchmark::State& st) { BM_Search(st, s); });
    b->Unit(benchmark::kMillisecond)->Iterations(1);
    if (s == "optimal") b->Arg(1000);
    else b->Arg(1000)->Arg(10000)->Arg(100000);
  }
}

}  // namespace
}  // namespace fuseplan

int main(int argc, char** argv) {
  fuseplan::register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
