// Cost model on ../shared/cases: the unfused and planned float32 bytes of
// cases/expected.json, with the plans built by hand (the search is not
// involved). Skips with one line while the ONNX importer is not available.
#include <gtest/gtest.h>

#include <string>

#include "costmodel/cost.h"
#include "graph/import.h"
#include "tests/costmodel/cost_test_util.h"

namespace fuseplan {
namespace {

using testing::make_group;
using testing::totals;
using testing::unfused;

// Imports a case, or returns false after GTEST_SKIP-able failure text.
bool load_case(const std::string& file, std::map<std::string, int64_t> dims, Graph& out, std::string& why) {
  ImportOptions opts;
  opts.dims = std::move(dims);
  try {
    out = import_model(std::string(FUSEPLAN_SHARED_DIR) + "/cases/" + file, opts);
    return true;
  } catch (const Error& e) {
    why = e.what();
    return false;
  }
}

#define LOAD_OR_SKIP(file, dims, g)                                             \
  Graph g;                                                                      \
  {                                                                             \
    std::string why;                                                            \
    if (!load_case(file, dims, g, why)) GTEST_SKIP() << "importer: " << why;    \
  }

DeviceSpec device() {
  try {
    return load_device("h100-sxm");
  } catch (const Error&) {
    return testing::h100();
  }
}

const std::map<std::string, int64_t> kNC{{"N", 4096}, {"C", 1024}};

std::vector<NodeId> computed(const Graph& g) {
  std::vector<NodeId> ns;
  for (NodeId n : g.topo_order())
    if (g.node(n).op_class != OpClass::source) ns.push_back(n);
  return ns;
}

TEST(CostCases, BiasRelu) {
  LOAD_OR_SKIP("bias_relu.onnxtxt", kNC, g);
  EXPECT_DOUBLE_EQ(totals(g, unfused(g), device()).bytes, 67112960);
  EXPECT_DOUBLE_EQ(cost(g, make_group(g, {"t", "y"}), device()).bytes(), 33558528);
}

TEST(CostCases, SumsqPrologue) {
  LOAD_OR_SKIP("sumsq_prologue.onnxtxt", kNC, g);
  EXPECT_DOUBLE_EQ(totals(g, unfused(g), device()).bytes, 50348032);
  EXPECT_DOUBLE_EQ(cost(g, make_group(g, {"sq", "y"}), device()).bytes(), 16793600);
}

TEST(CostCases, RownormEpilogue) {
  LOAD_OR_SKIP("rownorm_epilogue.onnxtxt", kNC, g);
  EXPECT_DOUBLE_EQ(totals(g, unfused(g), device()).bytes, 16826368);
  EXPECT_DOUBLE_EQ(cost(g, make_group(g, {"s", "y"}), device()).bytes(), 16793600);
}

TEST(CostCases, GraphOutputProducer) {
  LOAD_OR_SKIP("graph_output_producer.onnxtxt", kNC, g);
  EXPECT_DOUBLE_EQ(cost(g, make_group(g, {"t", "y"}), device()).bytes(), 50335744);
}

TEST(CostCases, SoftmaxRowIsOneMultipassKernel) {
  LOAD_OR_SKIP("softmax_row.onnxtxt", kNC, g);
  Group grp = make_group(g, computed(g));
  EXPECT_EQ(grp.kind, GroupKind::multipass);
  EXPECT_DOUBLE_EQ(cost(g, grp, device()).bytes(), 33554432);
}

TEST(CostCases, SharedProducerDuplicatedIntoTwoReductions) {
  LOAD_OR_SKIP("shared_producer_two_reductions.onnxtxt", kNC, g);
  Group a = make_group(g, {"p", "colsum"}, 0), b = make_group(g, {"p", "rowsum"}, 1);
  a.materialised = {g.at("colsum")};
  b.materialised = {g.at("rowsum")};
  a.duplicated = b.duplicated = {g.at("p")};
  EXPECT_LE(cost(g, a, device()).bytes() + cost(g, b, device()).bytes(), 33583104);
}

TEST(CostCases, ManySmallBranchesHorizontal) {
  LOAD_OR_SKIP("many_small_branches.onnxtxt", (std::map<std::string, int64_t>{{"S", 4096}}), g);
  double unfused_us = totals(g, unfused(g), device()).predicted_us;
  double planned_us = 0;
  for (int k = 0; k < 4; ++k) {
    Group grp;
    grp.kind = GroupKind::horizontal;
    for (int i = 16 * k; i < 16 * (k + 1); ++i) {
      NodeId y = g.at("y" + std::to_string(i));
      grp.nodes.push_back(y);
      grp.materialised.push_back(y);
      grp.branches.push_back({y});
    }
    planned_us += cost(g, grp, device()).predicted_us;
  }
  EXPECT_LE(planned_us / unfused_us, 0.125);
}

}  // namespace
}  // namespace fuseplan
