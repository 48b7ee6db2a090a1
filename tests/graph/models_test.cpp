// Every shared model and case imports at batch 1 and 64; primitive counts and
// op-class counts are checked against values derived here independently of
// the importer: from the ONNX nodes themselves, the documented decomposition
// sizes (docs/ir.md) and a simple "all operands constant => folded" rule.
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/onnx_pb.h>

#include <chrono>
#include <set>
#include <unordered_set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "graph/shape_check.h"
#include "test_util.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {
using test::models_dir;

struct Expect {
  int64_t prims = 0, contraction = 0, reduction = 0, gather = 0, scan = 0;
};

// Expected counts from the ONNX graph: a node whose inputs are all constants
// (initializers with data, Constant/ConstantOfShape/Shape/Size outputs) is
// folded and contributes nothing; every other node contributes its documented
// decomposition size.
Expect derive(const onnx::ModelProto& m) {
  const auto& g = m.graph();
  std::unordered_set<std::string> konst;
  for (const auto& i : g.initializer())
    if (i.data_location() != onnx::TensorProto::EXTERNAL) konst.insert(i.name());
  auto attr_f = [](const onnx::NodeProto& n, const std::string& k, double d) {
    for (const auto& a : n.attribute())
      if (a.name() == k) return static_cast<double>(a.f());
    return d;
  };
  auto attr_s = [](const onnx::NodeProto& n, const std::string& k) {
    for (const auto& a : n.attribute())
      if (a.name() == k) return a.s();
    return std::string();
  };
  std::unordered_set<std::string> graph_in;
  for (const auto& i : g.input()) graph_in.insert(i.name());
  Expect e;
  for (const auto& n : g.node()) {
    const std::string& op = n.op_type();
    bool all_const = n.input_size() > 0;
    std::vector<std::string> ins;
    for (const auto& i : n.input())
      if (!i.empty()) ins.push_back(i), all_const = all_const && konst.count(i);
    int outs = 0;
    for (const auto& o : n.output()) outs += !o.empty();
    if (op == "Constant" || op == "Shape" || op == "Size" || op == "ConstantOfShape" || (all_const && !ins.empty())) {
      for (const auto& o : n.output()) konst.insert(o);
      continue;
    }
    int64_t k = outs;
    bool has2 = n.input_size() > 2 && !n.input(2).empty();
    // a computed conv bias (e.g. DequantizeLinear output) needs a Reshape to [C,1,...] (docs/ir.md)
    if (op == "Conv" || op == "ConvTranspose")
      k = 1 + has2 + (has2 && !konst.count(n.input(2)) && !graph_in.count(n.input(2))), e.contraction++;
    else if (op == "MatMul") e.contraction++;
    else if (op == "Gemm") {
      k = 1 + (attr_f(n, "alpha", 1) != 1) + has2 + (has2 && attr_f(n, "beta", 1) != 1 && !konst.count(n.input(2)));
      e.contraction++;
    } else if (op == "BatchNormalization") k = 2;
    else if (op == "InstanceNormalization") k = 9, e.reduction += 2;
    else if (op == "LayerNormalization") k = 8 + has2, e.reduction += 2;
    else if (op == "Softmax") k = 5, e.reduction += 2;
    else if (op == "LogSoftmax") k = 6, e.reduction += 2;
    else if (op == "Gelu") k = attr_s(n, "approximate") == "tanh" ? 9 : 5;
    else if (op == "ReduceL2") k = 3, e.reduction++;
    else if (op.rfind("Reduce", 0) == 0 || op.find("Pool") != std::string::npos) e.reduction += outs;
    else if (op == "Sum" || op == "Mean" || op == "Min" || op == "Max")
      k = ins.size() == 1 ? 1 : static_cast<int64_t>(ins.size()) - 1 + (op == "Mean");
    else if (op == "Dropout") k = 1;
    else if (op == "Gather") e.gather++;
    else if (op == "CumSum") e.scan++;
    e.prims += k;
  }
  return e;
}

onnx::ModelProto load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(ss.str())) << path;
  return m;
}

using test::model_dims;

nlohmann::json manifest() {
  std::ifstream f(models_dir() + "/manifest.json");
  return nlohmann::json::parse(f);
}

class SharedModel : public ::testing::TestWithParam<int64_t> {};

TEST_P(SharedModel, ImportsWithIndependentCounts) {
  auto man = manifest();
  ASSERT_FALSE(man.empty());
  for (const auto& entry : man) {
    std::string file = entry["file"], path = models_dir() + "/" + file;
    SCOPED_TRACE(file);
    ImportOptions o;
    o.batch = GetParam();
    o.dims = model_dims(file);
    Graph g;
    ASSERT_NO_THROW(g = import_model(path, o));
    // data inputs: exactly the manifest's data inputs are graph_input sources (unused ones dropped)
    std::set<std::string> want;
    for (const auto& d : entry["data_inputs"]) want.insert(d[0].get<std::string>());
    for (NodeId v : g.graph_inputs()) EXPECT_TRUE(want.count(g.node(v).name)) << g.node(v).name;
    EXPECT_EQ(g.graph_outputs().size(), entry["outputs"].size());
    bool data_dependent = file.find("yolo") != std::string::npos;
    bool custom = file.find("ortfused") != std::string::npos;
    Expect e = derive(load(path));
    if (!data_dependent) {
      EXPECT_EQ(test::num_prims(g), e.prims);
      EXPECT_EQ(test::count_class(g, OpClass::contraction), e.contraction);
      EXPECT_EQ(test::count_class(g, OpClass::reduction), e.reduction);
      EXPECT_EQ(test::count_class(g, OpClass::gather), e.gather);
      EXPECT_EQ(test::count_class(g, OpClass::scan), e.scan);
      if (!custom) {
        EXPECT_EQ(test::count_class(g, OpClass::opaque), 0);
      }
    } else {
      EXPECT_GT(test::count_class(g, OpClass::opaque), 0);
      bool warned = false;
      for (const auto& w : g.warnings) warned |= w.find("data-dependent or not inferable") != std::string::npos;
      EXPECT_TRUE(warned);
    }
    for (NodeId v = 0; v < g.size(); ++v) {
      const Primitive& p = g.node(v);
      if (p.out.known) {
        EXPECT_NO_THROW(p.out.numel()) << p.name;
      }
      if (p.op_class == OpClass::source) {
        EXPECT_TRUE(g.num_uses(v) > 0 || p.is_graph_output) << p.name;
      }
    }
    // batch binds the leading dim of the first data input when it is symbolic
    NodeId in0 = g.find(entry["data_inputs"][0][0].get<std::string>());
    if (in0 != kNoNode && !entry["data_inputs"][0][2][0].is_number() && file.find("attention_head") == std::string::npos) {
      EXPECT_EQ(g.node(in0).out.shape[0], GetParam());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Batch, SharedModel, ::testing::Values(1, 64));

TEST(SharedModel, WeightPlaceholdersAreWeights) {
  for (const auto& entry : manifest()) {
    if (entry["n_stripped_weight_inputs"].get<int>() == 0) continue;
    std::string file = entry["file"];
    ImportOptions o;
    o.batch = 1;
    o.dims = model_dims(file);
    Graph g = import_model(models_dir() + "/" + file, o);
    int64_t weights = 0;
    for (NodeId v = 0; v < g.size(); ++v) weights += g.node(v).source == SourceKind::weight;
    EXPECT_GT(weights, 0) << file;
    EXPECT_LE(g.graph_inputs().size(), entry["data_inputs"].size()) << file;
  }
}

TEST(SharedModel, Gpt2ImportsFast) {
  ImportOptions o;
  o.batch = 1;
  o.dims = model_dims("zoo_gpt2-10.onnx");
  auto t0 = std::chrono::steady_clock::now();
  Graph g = import_model(models_dir() + "/zoo_gpt2-10.onnx", o);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.0);
  EXPECT_GT(test::num_prims(g), 500);
}

TEST(SharedModel, ShapesAgreeWithLibOnnx) {
  int checked_models = 0;
  for (const auto& entry : manifest()) {
    std::string file = entry["file"], path = models_dir() + "/" + file;
    if (entry["opsets"]["ai.onnx"].get<int>() > kLibOnnxMaxOpset) continue;
    ImportOptions o;
    o.batch = 1;
    o.dims = model_dims(file);
    Graph g = import_model(path, o);
    int compared = 0;
    auto bad = cross_check_shapes(path, g, &compared);
    EXPECT_TRUE(bad.empty()) << file << ": " << (bad.empty() ? "" : bad[0]) << " (+" << bad.size() << ")";
    checked_models += compared > 0;
  }
  EXPECT_GE(checked_models, 10);
}

TEST(SharedCases, ImportAtExpectedDimsAndBatches) {
  std::ifstream f(test::shared_dir() + "/cases/expected.json");
  auto j = nlohmann::json::parse(f);
  for (const auto& c : j["cases"]) {
    std::string path = test::shared_dir() + "/cases/" + c["file"].get<std::string>();
    for (int64_t b : {1, 64}) {
      ImportOptions o;
      o.batch = b;
      for (auto& [k, v] : c["dims"].items()) o.dims[k] = v.get<int64_t>();
      Graph g;
      ASSERT_NO_THROW(g = import_model(path, o)) << path;
      EXPECT_GT(test::num_prims(g), 0);
      for (const char* key : {"same_group", "separate"}) {
        if (!c.contains(key)) continue;
        for (const auto& grp : c[key])
          for (const auto& nm : grp) {
            EXPECT_NE(g.find(nm.get<std::string>()), kNoNode) << path << " " << nm;
          }
      }
      if (path.find("shared_conv") != std::string::npos) {
        EXPECT_EQ(g.node(g.at("c")).out.shape, (std::vector<int64_t>{8, 64, 56, 56}));
      }
    }
  }
}

TEST(Examples, ImportAtBatch1And64) {
  std::string dir = std::string(FUSEPLAN_SOURCE_DIR) + "/examples";
  std::vector<std::string> files;
  if (std::filesystem::exists(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".onnxtxt") files.push_back(e.path().string());
  if (files.empty()) GTEST_SKIP() << "no examples/*.onnxtxt yet";
  for (const auto& p : files)
    for (int64_t b : {1, 64}) {
      ImportOptions o;
      o.batch = b;
      o.dims = {{"seq", 128}, {"S", 128}, {"sequence", 128}, {"T", 128}};
      EXPECT_NO_THROW(import_model(p, o)) << p;
    }
}

}  // namespace
}  // namespace fuseplan
