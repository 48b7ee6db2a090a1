#include "graph/synthetic.h"

#include <algorithm>
#include <string>

#include "graph/import.h"
#include "graph/import_internal.h"

namespace fuseplan {

namespace {

constexpr int64_t kSeq = 128, kHidden = 768;     // BERT-base-like row and width
constexpr int64_t kChannels = 64, kImage = 56;   // ResNet-50 conv2_x-like activations

enum class Trunk { transformer, conv };

std::string tensor(int64_t a) { return "float[" + std::to_string(a) + "]"; }

/// Appends one block of `t` reading `x`, writing `y`; weight inputs go to `sig`.
void block(Trunk t, int i, const std::string& x, const std::string& y, std::string& sig, std::string& body) {
  const std::string p = (t == Trunk::transformer ? "t" : "c") + std::to_string(i) + "_";
  auto w = [&](const std::string& name, const std::string& type) {
    sig += ", " + type + " " + p + name;
    return p + name;
  };
  auto line = [&](const std::string& s) { body += "  " + s + "\n"; };
  if (t == Trunk::transformer) {
    const std::string H = tensor(kHidden), S = tensor(kSeq);
    const std::string ln = "LayerNormalization<axis = -1, epsilon = 1e-5>";
    line(p + "ln1 = " + ln + "(" + x + ", " + w("g1", H) + ", " + w("be1", H) + ")");
    line(p + "s = MatMul(" + p + "ln1, " + w("wq", "float[768, 128]") + ")");
    line(p + "sb = Add(" + p + "s, " + w("bq", S) + ")");
    line(p + "pr = Softmax<axis = -1>(" + p + "sb)");
    line(p + "pv = MatMul(" + p + "pr, " + w("wv", "float[128, 768]") + ")");
    line(p + "h = Add(" + x + ", " + p + "pv)");
    line(p + "ln2 = " + ln + "(" + p + "h, " + w("g2", H) + ", " + w("be2", H) + ")");
    line(p + "up = MatMul(" + p + "ln2, " + w("w1", "float[768, 768]") + ")");
    line(p + "ub = Add(" + p + "up, " + w("b1", H) + ")");
    line(p + "ga = Div(" + p + "ub, gen_sqrt2)");  // GELU: 0.5 x (1 + erf(x / sqrt 2))
    line(p + "gb = Erf(" + p + "ga)");
    line(p + "gc = Add(" + p + "gb, gen_one)");
    line(p + "gd = Mul(" + p + "ub, " + p + "gc)");
    line(p + "ge = Mul(" + p + "gd, gen_half)");
    line(p + "dn = MatMul(" + p + "ge, " + w("w2", "float[768, 768]") + ")");
    line(p + "db = Add(" + p + "dn, " + w("b2", H) + ")");
    line(y + " = Add(" + p + "h, " + p + "db)");
  } else {
    const std::string C = tensor(kChannels);
    const std::string conv = "Conv<kernel_shape = [3, 3], pads = [1, 1, 1, 1]>";
    const std::string bn = "BatchNormalization<epsilon = 1e-5>";
    const std::string W = "float[64, 64, 3, 3]";
    auto bn_args = [&](const std::string& k) {
      return w("ga" + k, C) + ", " + w("be" + k, C) + ", " + w("mu" + k, C) + ", " + w("va" + k, C);
    };
    line(p + "c1 = " + conv + "(" + x + ", " + w("w1", W) + ", " + w("b1", C) + ")");
    line(p + "n1 = " + bn + "(" + p + "c1, " + bn_args("1") + ")");
    line(p + "r1 = Relu(" + p + "n1)");
    line(p + "c2 = " + conv + "(" + p + "r1, " + w("w2", W) + ", " + w("b2", C) + ")");
    line(p + "n2 = " + bn + "(" + p + "c2, " + bn_args("2") + ")");
    line(p + "s = Add(" + p + "n2, " + x + ")");
    line(y + " = Relu(" + p + "s)");
  }
}

std::string act_type(Trunk t) {
  return t == Trunk::transformer ? "float[128, 768]" : "float[1, 64, 56, 56]";
}

struct TrunkSpec {
  Trunk trunk;
  int blocks = 0;
  int64_t pad = 0;  // trailing Relu ops
};

std::string model_text(const std::vector<TrunkSpec>& trunks) {
  std::string sig, body, outs;
  body += "  gen_half = Constant<value = float {0.5}>()\n";
  body += "  gen_one = Constant<value = float {1.0}>()\n";
  body += "  gen_sqrt2 = Constant<value = float {1.41421356}>()\n";
  for (const auto& ts : trunks) {
    const std::string tag = ts.trunk == Trunk::transformer ? "t" : "c";
    const std::string in = "x_" + tag, out = "y_" + tag;
    sig += (sig.empty() ? "" : ", ") + act_type(ts.trunk) + " " + in;
    std::string cur = in;
    for (int i = 0; i < ts.blocks; ++i) {
      const bool last = i + 1 == ts.blocks && ts.pad == 0;
      const std::string next = last ? out : tag + std::to_string(i) + "_out";
      block(ts.trunk, i, cur, next, sig, body);
      cur = next;
    }
    for (int64_t k = 0; k < ts.pad; ++k) {
      const std::string next = k + 1 == ts.pad ? out : tag + "_pad" + std::to_string(k);
      body += "  " + next + " = Relu(" + cur + ")\n";
      cur = next;
    }
    outs += (outs.empty() ? "" : ", ") + act_type(ts.trunk) + " " + out;
  }
  return "<ir_version: 8, opset_import: [\"\" : 17]>\nsynthetic (" + sig + ") => (" + outs + ") {\n" + body + "}\n";
}

int64_t count_primitives(const std::vector<TrunkSpec>& trunks) {
  const Graph g = import_onnx_text(model_text(trunks), ImportOptions{}, "synthetic");
  int64_t n = 0;
  for (NodeId v = 0; v < g.size(); ++v) n += g.node(v).op_class != OpClass::source;
  return n;
}

/// Primitives of a trunk with b blocks = base + b * per_block (measured once by importing).
struct TrunkCount {
  int64_t base = 0, per_block = 0;
};
const TrunkCount& trunk_count(Trunk t) {
  static const TrunkCount counts[2] = {
      [] {
        const int64_t one = count_primitives({{Trunk::transformer, 1, 0}});
        const int64_t two = count_primitives({{Trunk::transformer, 2, 0}});
        return TrunkCount{one - (two - one), two - one};
      }(),
      [] {
        const int64_t one = count_primitives({{Trunk::conv, 1, 0}});
        const int64_t two = count_primitives({{Trunk::conv, 2, 0}});
        return TrunkCount{one - (two - one), two - one};
      }()};
  return counts[t == Trunk::transformer ? 0 : 1];
}

int64_t trunk_min(Trunk t) { return trunk_count(t).base + trunk_count(t).per_block; }

/// Blocks (at least one) of trunk t filling at most `budget` primitives.
int blocks_for(Trunk t, int64_t budget) {
  const TrunkCount& c = trunk_count(t);
  return static_cast<int>(std::max<int64_t>(1, (budget - c.base) / c.per_block));
}

std::vector<TrunkSpec> plan_trunks(SyntheticKind kind, int64_t n) {
  if (n < min_synthetic_primitives(kind))
    throw Error("--primitives " + std::to_string(n) + " is too small for kind '" + std::string(to_string(kind)) +
                "' (at least " + std::to_string(min_synthetic_primitives(kind)) + ")");
  if (n > kMaxSyntheticPrimitives)
    throw Error("--primitives " + std::to_string(n) + " is too large (at most " +
                std::to_string(kMaxSyntheticPrimitives) + ")");
  std::vector<TrunkSpec> out;
  int64_t rest = n;
  if (kind == SyntheticKind::conv || kind == SyntheticKind::mixed) {
    const Trunk t = Trunk::conv;
    const int64_t budget = kind == SyntheticKind::mixed ? std::min(n / 2, n - trunk_min(Trunk::transformer)) : n;
    const int b = blocks_for(t, budget);
    out.push_back({t, b, 0});
    rest -= trunk_count(t).base + b * trunk_count(t).per_block;
  }
  if (kind == SyntheticKind::transformer || kind == SyntheticKind::mixed) {
    const Trunk t = Trunk::transformer;
    const int b = blocks_for(t, rest);
    out.push_back({t, b, 0});
    rest -= trunk_count(t).base + b * trunk_count(t).per_block;
  }
  out.back().pad = rest;  // >= 0 by construction; Relu ops on the last trunk
  return out;
}

}  // namespace

SyntheticKind synthetic_kind_from_string(std::string_view s) {
  if (s == "transformer") return SyntheticKind::transformer;
  if (s == "conv") return SyntheticKind::conv;
  if (s == "mixed") return SyntheticKind::mixed;
  throw Error("unknown synthetic kind '" + std::string(s) + "' (known: transformer, conv, mixed)");
}

std::string_view to_string(SyntheticKind k) {
  switch (k) {
    case SyntheticKind::transformer: return "transformer";
    case SyntheticKind::conv: return "conv";
    default: return "mixed";
  }
}

int64_t min_synthetic_primitives(SyntheticKind kind) {
  switch (kind) {
    case SyntheticKind::transformer: return trunk_min(Trunk::transformer);
    case SyntheticKind::conv: return trunk_min(Trunk::conv);
    default: return trunk_min(Trunk::transformer) + trunk_min(Trunk::conv);
  }
}

std::string synthetic_onnx_text(SyntheticKind kind, int64_t primitives) {
  return model_text(plan_trunks(kind, primitives));
}

std::string synthetic_onnx_binary(SyntheticKind kind, int64_t primitives) {
  const onnx::ModelProto m = detail::load_text(synthetic_onnx_text(kind, primitives));
  std::string out;
  if (!m.SerializeToString(&out)) throw Error("could not serialise the synthetic model");
  return out;
}

Graph synthetic_graph(SyntheticKind kind, int64_t primitives) {
  return import_onnx_text(synthetic_onnx_text(kind, primitives), ImportOptions{},
                          "synthetic_" + std::string(to_string(kind)));
}

}  // namespace fuseplan
