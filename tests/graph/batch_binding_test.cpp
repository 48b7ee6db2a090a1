// What --batch binds (ImportOptions::batch, graph/README.md "Binding dims"):
// the batch dim, by name, and no other dim. Regression: it bound the first
// still-symbolic dim of every data input, so a causal mask [S, S] next to
// x[N, S, D] got S = B, and --dim N=V made --batch bind S instead.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "graph/import.h"
#include "test_util.h"

namespace fuseplan {
namespace {

std::map<std::string, std::vector<int64_t>> input_shapes(const Graph& g) {
  std::map<std::string, std::vector<int64_t>> out;
  for (NodeId v : g.graph_inputs()) out[g.node(v).name] = g.node(v).out.shape;
  return out;
}

std::string import_error(const std::string& text, const ImportOptions& o) {
  try {
    test::import_text(text, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// gpt2_block's inputs: the mask's S is the sequence, not the batch.
const char* kMasked = R"(<ir_version: 8, opset_import: ["" : 17]>
masked (float[N, S, 4] x, float[S, S] mask) => (float[N, S, 4] y) {
  r = ReduceMax <axes = [1]> (mask)
  y = Add(x, r)
})";

TEST(BatchBinding, BindsTheBatchDimNotTheMasksSequenceDim) {
  const Graph g = test::import_text(kMasked, test::opts(8, {{"S", 16}}));
  auto shapes = input_shapes(g);
  EXPECT_EQ(shapes["x"], (std::vector<int64_t>{8, 16, 4}));
  EXPECT_EQ(shapes["mask"], (std::vector<int64_t>{16, 16}));
  EXPECT_TRUE(g.warnings.empty()) << g.warnings[0];
}

TEST(BatchBinding, LeavesTheMasksSequenceDimToDimAndSaysWhatBatchBound) {
  const std::string e = import_error(kMasked, test::opts(8));
  EXPECT_EQ(e, "unbound symbolic dim 'S' of input 'x' (use --dim S=V; --batch binds only the batch dim 'N' of 'x')");
}

TEST(BatchBinding, DimWinsAndBatchThenBindsNothingElse) {
  // Before: --dim N=2 made --batch bind the next symbolic dim, S.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 17]>
two (float[N, S] x) => (float[N, S] y) {
  y = Relu(x)
})";
  auto shapes = input_shapes(test::import_text(text, test::opts(8, {{"N", 2}, {"S", 3}})));
  EXPECT_EQ(shapes["x"], (std::vector<int64_t>{2, 3}));
  EXPECT_NE(import_error(text, test::opts(8, {{"N", 2}})).find("unbound symbolic dim 'S'"), std::string::npos);
}

TEST(BatchBinding, OnlyALeadingDimIsTheBatchDim) {
  // x[1, S]: the leading dim is fixed; S is not the batch (before: S = B).
  const char* text = R"(<ir_version: 8, opset_import: ["" : 17]>
fixed (float[1, S] x) => (float[1, S] y) {
  y = Relu(x)
})";
  EXPECT_NE(import_error(text, test::opts(8)).find("unbound symbolic dim 'S'"), std::string::npos);
}

TEST(BatchBinding, TheBatchNameIsBoundWhereverItAppears) {
  // past[2, B, P]: B follows ids[B, T] by name; P is left to --dim.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 17]>
kv (float[B, T] ids, float[2, B, P] past) => (float[B, T] a, float[2, B, P] y) {
  a = Relu(ids)
  y = Relu(past)
})";
  auto shapes = input_shapes(test::import_text(text, test::opts(5, {{"T", 7}, {"P", 3}})));
  EXPECT_EQ(shapes["ids"], (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(shapes["past"], (std::vector<int64_t>{2, 5, 3}));
}

TEST(BatchBinding, LeadingDimsNamedApartAtNoOtherAxisAreBoundWithOneWarning) {
  // tf2onnx names each input's batch apart (bertsquad: unk__492..495).
  const char* text = R"(<ir_version: 8, opset_import: ["" : 17]>
apart (float[u1, 4] a, float[u2, 4] b, float[u3] c) => (float[u1, 4] y, float[u3] z) {
  y = Add(a, b)
  z = Relu(c)
})";
  const Graph g = test::import_text(text, test::opts(8));
  auto shapes = input_shapes(g);
  EXPECT_EQ(shapes["a"], (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(shapes["b"], (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(shapes["c"], (std::vector<int64_t>{8}));
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_EQ(g.warnings[0],
            "--batch binds the batch dim 'u1' of 'a' and also the leading dims 'u2' of 'b', 'u3' of 'c' (named "
            "differently, but at no other axis of any input; --dim NAME=V binds one otherwise)");
  // A leading dim --dim binds keeps its value and leaves the warning.
  const Graph h = test::import_text(text, test::opts(8, {{"u3", 2}}));
  EXPECT_EQ(input_shapes(h)["b"], (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(input_shapes(h)["c"], (std::vector<int64_t>{2}));
  ASSERT_EQ(h.warnings.size(), 1u);
  EXPECT_NE(h.warnings[0].find("also the leading dims 'u2' of 'b' ("), std::string::npos) << h.warnings[0];
}

TEST(BatchBinding, BertSquadBindsEveryInputsBatch) {
  const std::string path = test::models_dir() + "/zoo_bertsquad-12.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no shared models";
  const Graph g = import_model(path, test::opts(4));
  auto shapes = input_shapes(g);
  for (const char* in : {"unique_ids_raw_output___9:0", "segment_ids:0", "input_mask:0", "input_ids:0"})
    EXPECT_EQ(shapes[in].at(0), 4) << in;
  int batch_warnings = 0;
  for (const auto& w : g.warnings)
    if (w.rfind("--batch binds", 0) == 0) {
      ++batch_warnings;
      EXPECT_NE(w.find("'unk__492' of 'unique_ids_raw_output___9:0' and also the leading dims 'unk__493' of "
                       "'segment_ids:0', 'unk__494' of 'input_mask:0', 'unk__495' of 'input_ids:0'"),
                std::string::npos)
          << w;
    }
  EXPECT_EQ(batch_warnings, 1);
}

}  // namespace
}  // namespace fuseplan
