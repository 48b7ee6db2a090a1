// The table of cost terms (costmodel/terms.h): its rows are consistent, each
// row's calibration column (coefficient × x) prices what its formula does,
// price() sums the regimes in table order, and the breakdown names every
// fixed term that prices, in table order.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "cost_test_util.h"
#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"
#include "costmodel/terms.h"

namespace fuseplan {
namespace {

using testing::GraphBuilder;
using testing::make_group;

// host-cpu-reference's figures with every CPU term priced (values of the order the
// development VM's calibrations gave).
DeviceSpec priced_cpu() {
  DeviceSpec d = testing::cpu_spec();
  d.cpu->vector_lanes = 8;
  d.cpu->write_allocate_bw_GBps = 25;
  d.cpu->store_buffer_bytes = 2048;
  d.cpu->store_stall_us = 0.125;
  d.cpu->e_transcendental = 0.5;
  d.cpu->reduce_step_ns = 0.5;
  d.cpu->select_step_ns = 1.25;
  d.cpu->pool_step_ns = 2;
  d.cpu->contraction_call_us = 0.75;
  // GFLOP/s per class in ContractionClass order: 1x1, spatial, depthwise,
  // grouped, skinny, square, tall, batched.
  d.cpu->contraction_GFLOPs = {50, 60, 10, 20, 5, 40, 45, 30};
  d.e_contraction = 0.8;
  d.cpu->source_read_us = 0.2;
  d.cpu->libm_cold_us = 0.875;
  d.spill_penalty = 1.5;
  return d;
}

// Features exercising every term, in a graph beyond a 32 MiB LLC.
CostFeatures every_feature() {
  return {.bytes_read = 3e6,
          .bytes_read_sources = 1e6,
          .bytes_written = 1.5e6,
          .spill_bytes_raw = 2e5,
          .occupancy = 0.125,
          .graph_bytes = 1e9,
          .flops_contraction = 4e8,
          .contraction_class_flops = {0, 3e8, 0, 0, 0, 1e8, 0, 0},  // conv_spatial, gemm_square
          .flops_other = 6e6,
          .flops_transcendental = 2e6,
          .transcendental_elems = {{"Exp", 1.5e5}, {"Tanh", 5e4}},
          .flops_scalar = 3e5,
          .reduction_steps = 7e5,
          .select_steps = 1e5,
          .pool_steps = 9e4,
          .contraction_calls = 13,
          .sources_read = 3,
          .libm_routines = 0};
}

TEST(Terms, TheTableIsConsistent) {
  const auto terms = cost_terms();
  ASSERT_EQ(static_cast<int>(terms.size()), kTermCount);
  std::set<std::string_view> params;
  for (int i = 0; i < kTermCount; ++i) {
    const CostTerm& t = terms[i];
    SCOPED_TRACE(std::string(t.name));
    EXPECT_EQ(static_cast<int>(t.id), i);
    EXPECT_FALSE(t.name.empty() || t.feature.empty() || t.parameter.empty() || t.unit.empty() || t.formula.empty());
    EXPECT_TRUE(t.amount && t.raw && t.explain);
    if (t.column >= 0) EXPECT_TRUE(t.x_of && t.value_of_x);
    if (t.part == ParamPart::levels) EXPECT_TRUE(t.level_of && !t.field);
    else EXPECT_TRUE(t.field);
    if (t.field) EXPECT_TRUE(params.insert(t.parameter).second) << "parameter listed twice";
    if (t.joins_previous) {
      ASSERT_GT(i, 0);
      EXPECT_EQ(terms[i - 1].regime, t.regime);
      EXPECT_EQ(terms[i - 1].in_ns, t.in_ns);  // one partial sum, one unit
    }
    if (i > 0) EXPECT_LE(static_cast<int>(terms[i - 1].regime), static_cast<int>(t.regime)) << "regimes in order";
  }
}

// Calibration solves for x with each term's time = coefficient × x: on a
// CPU with every term priced and on a GPU, that product is the term's own
// formula (to rounding), and value_of_x inverts x_of.
TEST(Terms, EachCalibrationColumnPricesAsItsFormula) {
  for (const DeviceSpec& d : {priced_cpu(), testing::h100()}) {
    SCOPED_TRACE(d.name);
    const CostFeatures f = every_feature();
    const TermPrices p = price(f, d);
    int priced = 0;
    for (const CostTerm& t : cost_terms()) {
      if (!term_applies(t, d)) continue;
      SCOPED_TRACE(std::string(t.name));
      const int level = t.level_of ? t.level_of(f, d) : -1;
      const double coef = t.coefficient ? t.coefficient(f, d) : t.amount(f, d);
      const double us = p.raw[static_cast<int>(t.id)] * (t.in_ns ? 1e-3 : 1);
      const bool own_column = t.part == ParamPart::levels || t.field(const_cast<DeviceSpec&>(d)) != nullptr;
      // Without a parameter of its own (transcendental on a GPU) the row
      // prices in its fold_into column.
      const CostTerm& column_term = own_column ? t : cost_term(t.fold_into);
      const double x = column_term.x_of(d, level);
      EXPECT_GT(us, 0);
      EXPECT_NEAR(coef * x, us, 1e-12 * us);
      if (own_column && t.part != ParamPart::levels) {
        const double v = t.effective ? t.effective(d) : term_parameter(t, d);
        EXPECT_NEAR(t.value_of_x(x, d, level), v, 1e-12 * v);
      }
      ++priced;
    }
    EXPECT_EQ(priced, d.is_gpu() ? 5 : 15);  // GPU: memory, contraction, other, transcendental, launch
  }
}

// price(): each regime is the sum of its rows in table order, joined rows
// first; the prediction is max(t_mem, t_compute) + (1 - overlap)·min +
// fixed, exactly (overlap 1 unless calibrated).
TEST(Terms, PriceSumsEachRegimeInTableOrder) {
  const DeviceSpec d = priced_cpu();
  const CostFeatures f = every_feature();
  const TermPrices p = price(f, d);
  auto raw = [&](TermId id) { return p.raw[static_cast<int>(id)]; };
  const double t_mem = raw(TermId::level) + raw(TermId::source_bytes) + raw(TermId::write_allocate) + raw(TermId::spill);
  const double t_compute = raw(TermId::contraction) + (raw(TermId::other) + raw(TermId::transcendental)) +
                           (raw(TermId::reduce_steps) + raw(TermId::select_steps) + raw(TermId::pool_steps)) * 1e-3;
  const double fixed = raw(TermId::launch) + raw(TermId::contraction_calls) + raw(TermId::sources_read) +
                       raw(TermId::store_stall) + raw(TermId::libm_cold);
  EXPECT_EQ(p.t_mem_us, t_mem);
  EXPECT_EQ(p.t_compute_us, t_compute);
  EXPECT_EQ(p.fixed_us, fixed);
  // The shipped overlap 1 (the ideal roofline) does not apply: the group
  // calls the contraction library, whose passes run in turn (group_overlap).
  EXPECT_EQ(d.overlap, 1);
  EXPECT_EQ(p.predicted_us, t_mem + t_compute + fixed);
  EXPECT_EQ(predict_us(f, d), p.predicted_us);
  // Hand-checked terms: 13 calls × 0.75 us; the libm routines of Exp and
  // Tanh (expf, tanhf) cold once each beyond the LLC; one store stall.
  EXPECT_DOUBLE_EQ(raw(TermId::contraction_calls), 9.75);
  // Contractions at their classes' throughput: 3e8 FLOPs of conv_spatial at
  // 60 GFLOP/s (5000 us) and 1e8 of gemm_square at 40 (2500 us), / 0.8.
  EXPECT_DOUBLE_EQ(raw(TermId::contraction), 7500 / 0.8);
  EXPECT_DOUBLE_EQ(p.amount[static_cast<int>(TermId::libm_cold)], 2);
  EXPECT_DOUBLE_EQ(raw(TermId::libm_cold), 1.75);
  EXPECT_DOUBLE_EQ(raw(TermId::store_stall), 0.125);
  // Beyond the LLC every written byte is write-allocated: the level prices
  // the reads but the sources.
  EXPECT_DOUBLE_EQ(p.amount[static_cast<int>(TermId::write_allocate)], 1.5e6);
  EXPECT_DOUBLE_EQ(p.amount[static_cast<int>(TermId::level)], 2e6);
  // A GPU prices none of the CPU rows.
  const TermPrices g = price(f, testing::h100());
  for (const CostTerm& t : cost_terms())
    if (t.applies == Applies::cpu) EXPECT_EQ(g.raw[static_cast<int>(t.id)], 0) << t.name;
  EXPECT_EQ(g.fixed_us, testing::h100().launch_us);
}

// The overlap of memory and compute time: 1 is the ideal roofline, 0 their
// sum; XLA's 0.95 leaves 5% of the shorter time unhidden.
TEST(Terms, TheOverlapHidesItsShareOfTheShorterTime) {
  DeviceSpec d = priced_cpu();
  CostFeatures f = every_feature();
  f.contraction_calls = 0;  // a group that calls no library (below: one that does)
  const TermPrices p = price(f, d);
  const double hi = std::max(p.t_mem_us, p.t_compute_us), lo = std::min(p.t_mem_us, p.t_compute_us);
  ASSERT_GT(lo, 0);
  for (const double overlap : {1.0, 0.95, 0.5, 0.0}) {
    d.overlap = overlap;
    EXPECT_DOUBLE_EQ(predict_us(f, d), hi + (1 - overlap) * lo + p.fixed_us) << overlap;
  }
  d.overlap = 0;
  EXPECT_DOUBLE_EQ(predict_us(f, d), p.t_mem_us + p.t_compute_us + p.fixed_us);
  EXPECT_DOUBLE_EQ(overlapped_us(10, 4, 0.0), 14);
  // A CPU group calling the contraction library runs its passes in turn:
  // no overlap whatever the device's; on a GPU the device's.
  d.overlap = 1;
  const CostFeatures call = every_feature();
  const TermPrices q = price(call, d);
  EXPECT_DOUBLE_EQ(group_overlap(call, d, 0.9), 0.0);
  EXPECT_DOUBLE_EQ(group_overlap(f, d, 0.9), 0.9);
  EXPECT_DOUBLE_EQ(group_overlap(call, testing::h100(), 0.9), 0.9);
  EXPECT_DOUBLE_EQ(q.predicted_us, q.t_mem_us + q.t_compute_us + q.fixed_us);
  EXPECT_DOUBLE_EQ(overlapped_us(10, 4, 0.95), 10.2);
  EXPECT_DOUBLE_EQ(overlapped_us(4, 10, 0.95), 10.2);
}

// A conv with a Tanh epilogue in a graph beyond the 32 MiB LLC, on a CPU
// pricing every term: the breakdown has one line per priced fixed term, in
// table order, each with the µs cost() reports.
TEST(Terms, TheBreakdownNamesEveryPricedFixedTermInTableOrder) {
  GraphBuilder b;
  NodeId x = b.input("x", {1, 8, 64, 64});
  NodeId w = b.weight("w", {16, 8, 3, 3});
  NodeId c = b.op("c", "Conv", OpClass::contraction, {1, 16, 64, 64}, {x, w},
                  {{"pads", AttrValue{std::vector<int64_t>{1, 1, 1, 1}}}});
  NodeId t = b.op("t", "Tanh", OpClass::elementwise, {1, 16, 64, 64}, {c});
  NodeId big = b.input("big", {16 * 1024 * 1024});
  NodeId r = b.op("r", "Relu", OpClass::elementwise, {16 * 1024 * 1024}, {big});
  Graph g = b.finish({t, r});
  const DeviceSpec d = priced_cpu();
  const GroupCost gc = cost(g, make_group(g, {"c", "t"}), d, true);
  const std::string& text = gc.breakdown;
  std::size_t at = 0;
  for (const auto& [line, us] :
       {std::pair<const char*, double>{"launch = ", gc.launch_us}, {"contraction_calls = ", gc.t_calls_us},
        {"sources_read = ", gc.t_sources_us}, {"store_stall = ", gc.t_store_stall_us},
        {"libm_cold = ", gc.t_libm_cold_us}}) {
    SCOPED_TRACE(line);
    EXPECT_GT(us, 0);
    const std::size_t found = text.find(line, at);
    ASSERT_NE(found, std::string::npos) << text;
    at = found;
  }
  EXPECT_NE(text.find("libm_cold = 1 routine(s) × 0.875 us = 0.875 us"), std::string::npos) << text;
  EXPECT_NE(text.find("store_stall = 0.125 us"), std::string::npos) << text;
  EXPECT_NE(text.find(", of which transcendental "), std::string::npos) << text;
  // The 3x3 conv's 2·16·64·64·8·9 FLOPs at conv_spatial's 60 GFLOP/s / 0.8.
  EXPECT_NE(text.find("contraction (conv_spatial 9437184 / 60.0 GFLOP/s) / e_contraction 0.80"), std::string::npos)
      << text;
  // A conv group: its passes run in turn, t_mem + t_compute.
  EXPECT_DOUBLE_EQ(gc.predicted_us, gc.t_mem_us + gc.t_compute_us + gc.launch_us + gc.t_calls_us +
                                        gc.t_sources_us + gc.t_store_stall_us + gc.t_libm_cold_us);
  EXPECT_NE(text.find("t_mem + t_compute + fixed: the library call and its passes run in turn"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace fuseplan
