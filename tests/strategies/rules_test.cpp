// Each compared strategy on small inline graphs, pinned by the rule it implements.
#include <gtest/gtest.h>

#include "search/strategies/inductor_rules.h"
#include "tests/strategies/strategy_test_util.h"

namespace fuseplan {
namespace {

using testing::graph;
using testing::groups_holding;
using testing::h100;
using testing::same_group;

const char* kExpSum = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, C] x) => (float[N, 1] y) {
  a = Neg(x)
  e = Exp(a)
  ax = Constant<value = int64[1] {1}>()
  s = ReduceSum<keepdims = 1>(e, ax)
  y = Relu(s)
})";

TEST(Elementwise, FusesChainButNotIntoReduction) {
  Graph g = graph(kExpSum, {{"N", 4096}, {"C", 1024}});
  Plan p = search(g, h100(), "elementwise");
  EXPECT_TRUE(same_group(g, p, {"a", "e"}));
  EXPECT_FALSE(same_group(g, p, {"e", "s"}));
  EXPECT_FALSE(same_group(g, p, {"s", "y"}));
  EXPECT_EQ(p.totals.kernels, 3);
}

TEST(Tvm, ReductionTakesElementwisePrologueButNeverStartsAGroup) {
  Graph g = graph(kExpSum, {{"N", 4096}, {"C", 1024}});
  Plan p = search(g, h100(), "tvm");
  EXPECT_TRUE(same_group(g, p, {"a", "e", "s"}));
  EXPECT_FALSE(same_group(g, p, {"s", "y"}));  // TVM: kCommReduce does not fuse into its consumer
}

TEST(Tvm, FusesConvBatchNormRelu) {
  Graph g = graph(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 16, 32, 32] x, float[16, 16, 3, 3] w, float[16] sc, float[16] b, float[16] m, float[16] v) => (float[N, 16, 32, 32] y) {
  c = Conv<pads = [1, 1, 1, 1]>(x, w)
  bn = BatchNormalization(c, sc, b, m, v)
  y = Relu(bn)
})",
                  {{"N", 8}});
  Plan p = search(g, h100(), "tvm");
  EXPECT_EQ(p.totals.kernels, 1);
  EXPECT_TRUE(same_group(g, p, {"c", "bn", "y"}));
}

TEST(Tvm, DiamondOfElementwiseOpsClosesIntoOneGroup) {
  Graph g = graph(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, C] x) => (float[N, C] y) {
  a = Relu(x)
  b = Exp(a)
  c = Neg(a)
  y = Add(b, c)
})",
                  {{"N", 4096}, {"C", 1024}});
  Plan p = search(g, h100(), "tvm");
  EXPECT_EQ(p.totals.kernels, 1);
}

TEST(Tvm, InjectiveJoinsInjectiveConsumer) {
  Graph g = graph(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, C] x) => (float[N, 16] y) {
  st = Constant<value = int64[1] {0}>()
  en = Constant<value = int64[1] {32}>()
  ax = Constant<value = int64[1] {1}>()
  s = Slice(x, st, en, ax)
  en2 = Constant<value = int64[1] {16}>()
  y = Slice(s, st, en2, ax)
})",
                  {{"N", 4096}, {"C", 1024}});
  Plan p = search(g, h100(), "tvm");
  EXPECT_TRUE(same_group(g, p, {"s", "y"}));
}

const char* kSharedCheap = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, C] x) => (float[N, 1] r1, float[1, C] r2) {
  p = Mul(x, x)
  a1 = Constant<value = int64[1] {1}>()
  a0 = Constant<value = int64[1] {0}>()
  r1 = ReduceSum<keepdims = 1>(p, a1)
  r2 = ReduceSum<keepdims = 1>(p, a0)
})";

TEST(Xla, DuplicatesCheapProducerIntoAllConsumers) {
  Graph g = graph(kSharedCheap, {{"N", 4096}, {"C", 1024}});
  Plan p = search(g, h100(), "xla");
  EXPECT_EQ(groups_holding(g, p, "p").size(), 2u);
  EXPECT_EQ(p.totals.kernels, 2);
}

TEST(Xla, RefusesProducerThatCannotFuseIntoEveryConsumer) {
  Graph g = graph(R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, C] x) => (float[N, C] y1, float[C, N] y2) {
  p = Exp(x)
  y1 = Relu(p)
  y2 = Transpose<perm = [1, 0]>(p)
})",
                  {{"N", 4096}, {"C", 1024}});
  Plan p = search(g, h100(), "xla");
  ASSERT_EQ(groups_holding(g, p, "p").size(), 1u);
  EXPECT_FALSE(same_group(g, p, {"p", "y1"}));  // all consumers or none: the transpose cannot take it
}

const char* kFiveReads = R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[N, C] a1, float[N, C] a2, float[N, C] a3, float[N, C] a4, float[N, C] a5) => (float[N, 1] y1, float[1, C] y2) {
  t1 = Add(a1, a2)
  t2 = Add(t1, a3)
  t3 = Add(t2, a4)
  p = Add(t3, a5)
  ax1 = Constant<value = int64[1] {1}>()
  ax0 = Constant<value = int64[1] {0}>()
  y1 = ReduceSum<keepdims = 1>(p, ax1)
  y2 = ReduceSum<keepdims = 1>(p, ax0)
})";

TEST(Inductor, MaterialisesMultiUserProducerWithMoreThanFourReads) {
  Graph g = graph(kFiveReads, {{"N", 4096}, {"C", 1024}});
  const auto realized = strategies::inductor_realized(g);
  EXPECT_TRUE(realized[g.at("p")]);   // 5 reads > realize_reads_threshold
  EXPECT_FALSE(realized[g.at("t3")]);  // one user: inlined
  Plan p = search(g, h100(), "inductor");
  EXPECT_EQ(groups_holding(g, p, "p").size(), 1u);  // computed once, never duplicated
}

TEST(Inductor, InlinesMultiUserProducerWithFewReads) {
  Graph g = graph(kSharedCheap, {{"N", 4096}, {"C", 1024}});
  EXPECT_FALSE(strategies::inductor_realized(g)[g.at("p")]);  // 1 read, 1 op: inlined into both users
}

TEST(Inductor, RespectsSizeCap) {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[N, C] x) => (float[N, C] y) {\n";
  std::string prev = "x";
  for (int i = 0; i < 150; ++i) {
    const std::string cur = i == 149 ? "y" : "t" + std::to_string(i);
    text += "  " + cur + " = " + (i % 2 ? "Relu" : "Neg") + "(" + prev + ")\n";
    prev = cur;
  }
  text += "}\n";
  Graph g = graph(text, {{"N", 64}, {"C", 64}});
  SearchOptions o;
  o.max_group_size = 1 << 20;  // Inductor's own limit, not --max-group-size
  Plan p = search(g, h100(), "inductor", o);
  for (const auto& grp : p.groups) EXPECT_LE(grp.nodes.size(), 64u);
  EXPECT_GE(p.totals.kernels, 3);
}

TEST(Tvm, RespectsMaxFuseDepth) {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[N, C] x) => (float[N, C] y) {\n";
  std::string prev = "x";
  for (int i = 0; i < 600; ++i) {
    const std::string cur = i == 599 ? "y" : "t" + std::to_string(i);
    text += "  " + cur + " = Neg(" + prev + ")\n";
    prev = cur;
  }
  text += "}\n";
  Graph g = graph(text, {{"N", 64}, {"C", 64}});
  SearchOptions o;
  o.max_group_size = 1 << 20;  // TVM's own limit, not --max-group-size
  Plan p = search(g, h100(), "tvm", o);
  for (const auto& grp : p.groups) EXPECT_LE(grp.nodes.size(), 256u);
}

TEST(Strategies, AreDeterministic) {
  Graph g = graph(kFiveReads, {{"N", 4096}, {"C", 1024}});
  for (const auto& s : strategy_names()) {
    Plan a = search(g, h100(), s), b = search(g, h100(), s);
    ASSERT_EQ(a.groups.size(), b.groups.size()) << s;
    for (std::size_t i = 0; i < a.groups.size(); ++i) EXPECT_EQ(a.groups[i].nodes, b.groups[i].nodes) << s;
  }
}

}  // namespace
}  // namespace fuseplan
