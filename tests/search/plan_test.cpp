// Plans of every shared model load back and validate; identical inputs give
// byte-identical JSON; malformed plans fail with one clear error.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "costmodel/device.h"
#include "emit/plan_json.h"
#include "graph/import.h"
#include "search/plan.h"
#include "search/strategy.h"
#include "tests/builder.h"
#include "tests/costmodel/cost_test_util.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {

const DeviceSpec& h100() {
  static DeviceSpec d = load_device("h100-sxm");
  return d;
}

std::string json_without_time(const Graph& g, Plan p) {
  p.totals.search_ms = 0;
  return plan_to_json(g, p);
}

class SharedModelPlan : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {};

TEST_P(SharedModelPlan, CostPlanLoadsBackIdentically) {
  const auto& [file, batch] = GetParam();
  ImportOptions o;
  o.batch = batch;
  o.dims = test::model_dims(file);
  Graph g = import_model(test::shared_models_dir() + "/" + file, o);
  Plan p = search(g, h100(), "cost");
  EXPECT_LE(p.totals.kernels, search(g, h100(), "unfused").totals.kernels);
  const std::string text = json_without_time(g, p);
  Plan back = load_plan(text, g, h100());
  EXPECT_EQ(json_without_time(g, back), text);
}

INSTANTIATE_TEST_SUITE_P(All, SharedModelPlan,
                         ::testing::Combine(::testing::ValuesIn(test::shared_model_files()),
                                            ::testing::Values<int64_t>(1, 64)));
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SharedModelPlan);  // no ../shared

// The user's --max-group-size travels with the plan: loaded back, the
// re-derived decisions name the cuts it made (`group_size`) again.
TEST(PlanJson, TheUsersGroupSizeCapLoadsBackWithItsCuts) {
  std::string t = "<ir_version: 8, opset_import: [\"\" : 17]>\nm (float[8, 256] x) => (float[8, 256] y) {\n";
  for (int i = 0; i < 10; ++i) t += std::string("  ") + (i == 9 ? "y" : "t" + std::to_string(i)) + " = Relu(" +
                                    (i == 0 ? "x" : "t" + std::to_string(i - 1)) + ")\n";
  Graph g = import_onnx_text(t + "}\n", {}, "chain");
  SearchOptions o;
  o.max_group_size = 4;
  Plan p = search(g, h100(), "elementwise", o);
  ASSERT_EQ(p.totals.kernels, 3);  // 4 + 4 + 2
  const std::string text = json_without_time(g, p);
  EXPECT_NE(text.find("\"max_group_size\": 4,"), std::string::npos);
  Plan back = load_plan(text, g, h100());
  EXPECT_EQ(back.max_group_size, 4);
  EXPECT_EQ(json_without_time(g, back), text);
  int blocked = 0;
  for (const auto& r : back.decisions) blocked += r.blocker == Blocker::group_size;
  EXPECT_EQ(blocked, 2);
  // Without a cap of the user's the key is absent.
  EXPECT_EQ(json_without_time(g, search(g, h100(), "elementwise")).find("max_group_size"), std::string::npos);
}

TEST(PlanJson, SearchIsDeterministic) {
  ImportOptions o;
  o.batch = 8;
  o.dims = {{"S", 128}};
  Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/bert_base_layer.onnxtxt", o);
  EXPECT_EQ(json_without_time(g, search(g, h100(), "cost")), json_without_time(g, search(g, h100(), "cost")));
}

// A plan tuned at batch 1 serves batch 8 (dispatch.json's ranges): it loads,
// re-priced at 8; a plan made at another sequence length is refused.
// examples/bert_base_layer.onnxtxt ([N, S, 768] x) with `dims` bound and, if
// given, --batch.
Graph bert_layer_at(std::map<std::string, int64_t> dims, std::optional<int64_t> batch = std::nullopt) {
  ImportOptions o;
  o.batch = batch;
  o.dims = std::move(dims);
  return import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/bert_base_layer.onnxtxt", o);
}

// load_plan refuses `text`, a plan made at S=128, on graph `g` bound at S=64.
void expect_refused_at_s64(const std::string& text, const Graph& g, const std::map<std::string, int64_t>& dims) {
  try {
    load_plan(text, g, h100(), "", dims);
    FAIL() << "a plan made at S=128 loaded at S=64";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan was made for S=128, not S=64"), std::string::npos) << e.what();
  }
}

TEST(PlanJson, APlanLoadsAtAnotherBatchSizeButNotAnotherSequenceLength) {
  const Graph g1 = bert_layer_at({{"S", 128}}, 1), g8 = bert_layer_at({{"S", 128}}, 8),
              g8s64 = bert_layer_at({{"S", 64}}, 8);
  Plan p1 = search(g1, h100(), "cost");
  p1.dims = {{"batch", 1}, {"S", 128}};
  const std::string text = plan_to_json(g1, p1);
  const Plan at8 = load_plan(text, g8, h100(), "", {{"batch", 8}, {"S", 128}});
  EXPECT_EQ(at8.groups.size(), p1.groups.size());
  EXPECT_EQ(at8.dims.at("batch"), 8);
  EXPECT_DOUBLE_EQ(at8.totals.predicted_us, make_plan(g8, h100(), [&] {
                     std::vector<std::vector<NodeId>> part;
                     for (const auto& grp : at8.groups) part.push_back(grp.nodes);
                     return part;
                   }(), "cost").totals.predicted_us);
  EXPECT_GT(at8.totals.bytes, p1.totals.bytes);
  expect_refused_at_s64(text, g8s64, {{"batch", 8}, {"S", 64}});
}

// The batch dim bound by its name (--dim N=8) is a batch size too: such a
// plan loaded at --batch 12 but was refused at --dim N=12 ("made for N=8").
TEST(PlanJson, APlanMadeAtANamedBatchDimLoadsAtAnotherValueOfIt) {
  const Graph g8 = bert_layer_at({{"N", 8}, {"S", 128}}), g12 = bert_layer_at({{"N", 12}, {"S", 128}}),
              g12s64 = bert_layer_at({{"N", 12}, {"S", 64}});
  EXPECT_EQ(g8.batch_dim, "N");
  Plan p8 = search(g8, h100(), "cost");
  p8.dims = {{"N", 8}, {"S", 128}};
  const std::string text = plan_to_json(g8, p8);
  const Plan at12 = load_plan(text, g12, h100(), "", {{"N", 12}, {"S", 128}});
  EXPECT_EQ(at12.groups.size(), p8.groups.size());
  EXPECT_EQ(at12.dims.at("N"), 12);
  expect_refused_at_s64(text, g12s64, {{"N", 12}, {"S", 64}});
}

class BadPlan : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(BadPlan, FailsWithOneLineNamingTheProblem) {
  Graph g = import_onnx_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\nt (float[8, 4] x) => (float[8, 4] y) { t = Relu(x)\n y = Exp(t) }",
      {}, "t");
  const auto& [text, needle] = GetParam();
  try {
    load_plan(text, g, h100());
    FAIL() << "accepted: " << text;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadPlan,
    ::testing::Values(
        std::make_pair("{", "not JSON"), std::make_pair("[]", "no 'schema'"),
        std::make_pair(R"({"schema": "fuseplan.plan/0", "groups": []})", "schema"),
        std::make_pair(R"({"schema": "fuseplan.plan/1"})", "no 'groups'"),
        std::make_pair(R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "loop", "nodes": ["t", "zz"]}]})",
                       "no primitive named 'zz'"),
        std::make_pair(R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "loop", "nodes": ["t"]}]})",
                       "in no group"),
        std::make_pair(R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "blob", "nodes": ["t", "y"]}]})",
                       "blob"),
        std::make_pair(R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "loop", "nodes": "t"}]})",
                       "'nodes'"),
        std::make_pair(R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "loop", "nodes": ["x", "t", "y"]}]})",
                       "source"),
        // make_plan would drop the first group and re-derive the kind: the file is not the plan that runs.
        std::make_pair(R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "single", "nodes": ["t"]},
                          {"kind": "loop", "nodes": ["t", "y"]}]})",
                       "group 0 is extra: every primitive of it is in another group too ('t' is in group 1)"),
        std::make_pair(R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "horizontal", "nodes": ["t", "y"]}]})",
                       "group 0 says kind 'horizontal', but its primitives make a 'loop' group"),
        std::make_pair(R"({"schema": "fuseplan.plan/1", "groups": [{"kind": "loop", "nodes": ["t", "y", "t"]}]})",
                       "group 0 lists 't' twice"),
        std::make_pair(R"({"schema": "fuseplan.plan/1", "max_group_size": 0, "groups": [{"kind": "loop", "nodes": ["t", "y"]}]})",
                       "'max_group_size' is 0, not an integer from 1 to 1048576"),
        std::make_pair("{\n", "not JSON (line 2, column 1: unexpected end of input; expected string literal)")));


// A source an earlier group of the plan reads is cached when a later group
// reads it (`measure` flushes before the plan, not between its groups): the
// later group lists it among its warm sources and pays no first touch for it.
// x is read by both kernels, w and bias by the first only; counted by hand.
TEST(PlanOrder, ASourceAnEarlierGroupReadIsWarm) {
  testing::GraphBuilder b;
  NodeId x = b.input("x", {64, 32});
  NodeId w = b.weight("w", {32, 32});
  NodeId bias = b.weight("bias", {32});
  NodeId mm = b.op("mm", "MatMul", OpClass::contraction, {64, 32}, {x, w});
  NodeId add = b.op("add", "Add", OpClass::broadcast, {64, 32}, {mm, bias});
  NodeId sq = b.op("sq", "Mul", OpClass::elementwise, {64, 32}, {add, add});
  NodeId out = b.op("out", "Add", OpClass::elementwise, {64, 32}, {sq, x});
  Graph g = b.finish({out});
  DeviceSpec d = testing::cpu_spec();
  d.cpu->source_read_us = 0.25;
  const Plan p = make_plan(g, d, {{mm, add}, {sq, out}}, "test");
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_TRUE(p.groups[0].warm_sources.empty());
  EXPECT_EQ(p.groups[1].warm_sources, std::vector<NodeId>{x});
  EXPECT_DOUBLE_EQ(p.costs[0].sources_read, 3);  // x, w, bias
  EXPECT_DOUBLE_EQ(p.costs[0].t_sources_us, 0.75);
  EXPECT_DOUBLE_EQ(p.costs[1].sources_read, 0);  // x: read by group 0
  EXPECT_DOUBLE_EQ(p.costs[1].t_sources_us, 0);
  // Priced alone (a search candidate), the second kernel counts x cold.
  EXPECT_DOUBLE_EQ(cost(g, testing::make_group(g, {"sq", "out"}), d).sources_read, 1);
}

}  // namespace
}  // namespace fuseplan

namespace fuseplan {
namespace {

// Regression: duplication can leave a kernel whose primitives every reader
// recomputes; make_plan drops it rather than keep a kernel that writes nothing.
TEST(MakePlan, DropsAKernelEveryPrimitiveOfWhichIsComputedElsewhere) {
  Graph g = import_onnx_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\nt (float[8, 4] x) => (float[8, 4] y) { t = Relu(x)\n y = Exp(t) }",
      {}, "t");
  Plan p = make_plan(g, h100(), {{g.at("t")}, {g.at("t"), g.at("y")}}, "test");
  ASSERT_EQ(p.totals.kernels, 1);
  EXPECT_EQ(p.groups[0].nodes.size(), 2u);
  EXPECT_EQ(p.totals.bytes, 8 * 4 * 4 * 2);  // read x, write y
}


}  // namespace
}  // namespace fuseplan
