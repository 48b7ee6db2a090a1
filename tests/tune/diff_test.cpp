// A decision that flips with batch size, and the diff that reports it.
//
// Mechanism: y = x[N,4096] + erf(tanh(s[4096])). The producer chain on s is
// a broadcast: fused into y's kernel it is recomputed for every one of the
// N rows, so its FLOPs grow with N while the unfused chain computes it once.
// At N = 1 the recomputation is free against the 36 µs kernel launch that
// fusing saves: t2 -> y is fused. At N = 64 the fused kernel is
// compute-bound (x, a graph input, is priced at DRAM 40 GB/s: 26 µs;
// the chain's 64 recomputations are priced at 143 µs), so they cost more than the
// launch plus the 16 KiB round trip of t2: t2 -> y is kept (unprofitable,
// negative delta_us). The device is pinned here (the host-cpu-reference figures of
// 2026-11-29, DRAM raised from 4 to 40 GB/s so that reading x does not hide
// the recomputation) so a re-probe cannot move it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/files.h"
#include "emit/plan_json.h"
#include "emit/report_md.h"
#include "graph/import.h"
#include "tune/tune.h"
#include "tune/diff.h"
#include "tune/dispatch.h"
#include "search/strategy.h"
#include "tune_util.h"

namespace fuseplan {
namespace {

const char* kBroadcastChain = R"(<ir_version: 8, opset_import: ["" : 17]>
flip (float[N, 4096] x, float[4096] s) => (float[N, 4096] y) {
  t1 = Tanh(s)
  t2 = Erf(t1)
  y = Add(x, t2)
})";

// A CPU device with fixed figures: 2 cores, 84 GFLOP/s FP32, L1/L2/L3/DRAM
// triad bandwidths 220/94/7.4 GB/s (host-cpu-reference, measured by fuseplan probe on
// 2026-11-29), DRAM 40 GB/s (see above), 36 µs dispatch.
DeviceSpec pinned_cpu(const std::string& dir, double launch_us = 36.0, const std::string& name = "pinned-cpu") {
  auto j = nlohmann::json::parse(device_to_json(load_device("host-cpu-reference")));
  j["name"] = name;
  j["dram_bw_GBps"] = 40.0;
  j["caches"] = nlohmann::json::array({{{"name", "L1"}, {"bytes", 49152.0}, {"bw_GBps", 220.0}},
                                       {{"name", "L2"}, {"bytes", 2097152.0}, {"bw_GBps", 94.0}},
                                       {{"name", "L3"}, {"bytes", 16777216.0}, {"bw_GBps", 7.4}},
                                       {{"name", "DRAM"}, {"bytes", 0.0}, {"bw_GBps", 40.0}}});
  j["cores"] = 2;
  j["fp32_TFLOPs"] = 0.084;
  j["launch_us"] = launch_us;
  j["e_mem"] = 1.0;
  j["e_cmp"] = 0.7;
  write_file_atomic(dir + "/" + name + ".json", j.dump(2));
  return load_device(dir + "/" + name + ".json");
}

// The same device with a 10 ms dispatch: saving a launch outweighs 64
// recomputations of the chain, so t2 -> y is fused at every batch size. It
// stands in for a device recalibrated between two batch sizes.
DeviceSpec launch_heavy_cpu(const std::string& dir) { return pinned_cpu(dir, 10000.0, "launch-heavy-cpu"); }

// The broadcast chain with the batch dim fixed in the file (as in mnist,
// squeezenet, vgg19...): every --batch imports the same graph.
const char* kFixedBatchChain = R"(<ir_version: 8, opset_import: ["" : 17]>
flip (float[64, 4096] x, float[4096] s) => (float[64, 4096] y) {
  t1 = Tanh(s)
  t2 = Erf(t1)
  y = Add(x, t2)
})";

Graph import_at(const std::string& path, int64_t batch) {
  ImportOptions io;
  io.batch = batch;
  return import_model(path, io);
}

TEST(TuneDiff, BroadcastProducerIsFusedAtBatch1AndKeptAtBatch64) {
  const std::string dir = test::fresh_dir("diff");
  const std::string model = test::write_model(dir, "flip.onnxtxt", kBroadcastChain);
  const DeviceSpec d = pinned_cpu(dir);
  TuneOptions o;
  o.batches = {1, 64};
  o.peers = false;
  o.render_svg = false;
  TuneResult r = tune({model, {}, ""}, d, o, dir + "/out");
  ASSERT_EQ(r.batches.size(), 2u);
  std::vector<PlanAt> plans;
  for (const auto& b : r.batches) plans.push_back({b.batch, b.graph.get(), &b.plan});
  auto flips = decision_flips(plans);
  ASSERT_EQ(flips.size(), 1u);
  const DecisionFlip& f = flips[0];
  EXPECT_EQ(f.producer, "t2");
  EXPECT_EQ(f.consumer, "y");
  ASSERT_EQ(f.at.size(), 2u);
  EXPECT_EQ(f.at[0].action, Action::fused);
  EXPECT_GT(f.at[0].delta_us, 0);
  EXPECT_EQ(f.at[0].producer_group, f.at[0].consumer_group);
  EXPECT_EQ(f.at[1].action, Action::kept);
  EXPECT_EQ(f.at[1].blocker, Blocker::unprofitable);
  EXPECT_LT(f.at[1].delta_us, 0);
  EXPECT_NE(f.at[1].producer_group, f.at[1].consumer_group);
  EXPECT_GT(f.at[1].consumer_cost.predicted_us, 0);
  // t1 -> t2 stays fused at both sizes: not a flip.
  const std::string md = read_file(dir + "/out/diff.md");
  EXPECT_NE(md.find("## t2 → y"), std::string::npos) << md;
  EXPECT_EQ(md.find("## t1 → t2"), std::string::npos) << md;
  EXPECT_NE(md.find("unprofitable"), std::string::npos);
  // Not measured: one device throughout, so the batch size is the cause.
  EXPECT_NE(md.find("Cause: batch size (1→64: searched on one device, pinned-cpu, it flips the same way)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Cause: 1 of 1 flip with the batch size"), std::string::npos) << md;
  EXPECT_NE(md.find("0 with recalibration or the measured choice only"), std::string::npos) << md;
  EXPECT_EQ(md.find("recalibration ("), std::string::npos) << md;
}

// A fixed-batch model recalibrated between two batch sizes: the kept plans
// flip (fused on the launch-heavy device at "batch 1", kept on the pinned one
// at "batch 8") although the graph is the same; the flip is recalibration's.
TEST(TuneDiff, FlipBetweenIdenticalGraphsIsLabelledRecalibration) {
  const std::string dir = test::fresh_dir("diff-fixed");
  const std::string model = test::write_model(dir, "fixed.onnxtxt", kFixedBatchChain);
  const DeviceSpec pinned = pinned_cpu(dir), heavy = launch_heavy_cpu(dir);
  const Graph g1 = import_at(model, 1), g8 = import_at(model, 8);
  ASSERT_TRUE(same_graph_shapes(g1, g8));
  const Plan k1 = search(g1, heavy, "cost"), k8 = search(g8, pinned, "cost");
  const std::vector<PlanAt> kept = {{1, &g1, &k1}, {8, &g8, &k8}};
  auto flips = decision_flips(kept);
  ASSERT_EQ(flips.size(), 1u);
  ASSERT_EQ(flips[0].producer, "t2");
  EXPECT_EQ(flips[0].at[0].action, Action::fused);
  EXPECT_EQ(flips[0].at[1].action, Action::kept);
  const Plan s1 = search(g1, pinned, "cost"), s8 = search(g8, pinned, "cost");
  label_flip_causes(flips, kept, {{1, &g1, &s1}, {8, &g8, &s8}}, "pinned-cpu");
  EXPECT_EQ(flips[0].cause,
            "recalibration (1→8: the graph is identical at both sizes; only the calibrated device changed)");
  const std::string md = diff_markdown(model, "pinned-cpu", {1, 8}, flips);
  EXPECT_NE(md.find("Cause: 0 of 1 flip with the batch size"), std::string::npos) << md;
  EXPECT_NE(md.find("1 with recalibration or the measured choice only"), std::string::npos) << md;
  // Where the kept plan at 8 is not the search's on its device (tune kept
  // another round's or a peer's because it measured faster), that is the cause.
  label_flip_causes(flips, kept, {{1, &g1, &s1}, {8, &g8, &s8}}, "pinned-cpu", {true, false});
  EXPECT_EQ(flips[0].cause, "measured choice (1→8: tune kept a plan it measured faster, another round's or a peer "
                            "strategy's, at 8; the graph is identical at both sizes)");
}

// Different graphs, but searched on one device both sizes agree: the kept
// plans' flip (t2 -> y fused at N=1, kept at N=64 on the pinned device) is
// recalibration's when the final device (launch-heavy) fuses it at both.
// And on the pinned device at both sizes it is the batch size's.
TEST(TuneDiff, FlipIsLabelledByTheSameDeviceSearch) {
  const std::string dir = test::fresh_dir("diff-same-device");
  const std::string model = test::write_model(dir, "flip.onnxtxt", kBroadcastChain);
  const DeviceSpec pinned = pinned_cpu(dir), heavy = launch_heavy_cpu(dir);
  const Graph g1 = import_at(model, 1), g64 = import_at(model, 64);
  ASSERT_FALSE(same_graph_shapes(g1, g64));
  const Plan k1 = search(g1, pinned, "cost"), k64 = search(g64, pinned, "cost");
  const std::vector<PlanAt> kept = {{1, &g1, &k1}, {64, &g64, &k64}};
  auto flips = decision_flips(kept);
  ASSERT_EQ(flips.size(), 1u);
  const Plan h1 = search(g1, heavy, "cost"), h64 = search(g64, heavy, "cost");
  label_flip_causes(flips, kept, {{1, &g1, &h1}, {64, &g64, &h64}}, "launch-heavy-cpu");
  EXPECT_EQ(flips[0].cause,
            "recalibration (1→64: searched on one device, launch-heavy-cpu, both sizes agree: fused)");
  label_flip_causes(flips, kept, {{1, &g1, &h1}, {64, &g64, &h64}}, "launch-heavy-cpu", {false, false});
  EXPECT_EQ(flips[0].cause,
            "measured choice (1→64: tune kept a plan it measured faster, another round's or a peer strategy's, at "
            "both sizes; searched on one device, launch-heavy-cpu, both sizes agree: fused)");
  label_flip_causes(flips, kept, kept, "pinned-cpu");
  EXPECT_EQ(flips[0].cause, "batch size (1→64: searched on one device, pinned-cpu, it flips the same way)");
  // Kept plans that flip it the other way (kept at 1, fused at 64) while on
  // the pinned device it goes fused -> kept: both causes at work.
  std::vector<DecisionFlip> other = {flips[0]};
  other[0].at[0].action = Action::kept;
  other[0].at[1].action = Action::fused;
  label_flip_causes(other, kept, kept, "pinned-cpu");
  EXPECT_EQ(other[0].cause,
            "batch size and recalibration (1→64: on one device, pinned-cpu, it flips the other way: fused → kept)");
  label_flip_causes(other, kept, kept, "pinned-cpu", {false, true});  // the kept plan at 1 was a peer's
  EXPECT_EQ(other[0].cause,
            "batch size and measured choice (1→64: on one device, pinned-cpu, it flips the other way: fused → kept)");
  const std::string md = diff_markdown(model, "pinned-cpu", {1, 64}, other);
  EXPECT_NE(md.find("Cause: 1 of 1 flip with the batch size"), std::string::npos) << md;
}

TEST(TuneDiff, DispatchBoundaryIsThePredictedCrossoverOfTheTwoPlans) {
  const std::string dir = test::fresh_dir("crossover");
  const std::string model = test::write_model(dir, "flip.onnxtxt", kBroadcastChain);
  const DeviceSpec d = pinned_cpu(dir);
  TuneOptions o;
  o.batches = {1, 64};
  o.peers = false;
  o.render_svg = false;
  tune({model, {}, ""}, d, o, dir + "/out");
  Dispatch dis = dispatch_from_json(read_file(dir + "/out/dispatch.json"));
  ASSERT_EQ(dis.ranges.size(), 2u);  // the plans differ
  const int64_t start = dis.ranges[1].min_batch;
  ASSERT_GT(start, 1);
  ASSERT_LE(start, 64);
  EXPECT_EQ(dis.ranges[0].max_batch, start - 1);
  auto predicted = predict_by_import(model, {}, d);
  const std::string p1 = read_file(dir + "/out/plan-b1.json"), p64 = read_file(dir + "/out/plan-b64.json");
  EXPECT_LT(predicted(p1, start - 1), predicted(p64, start - 1));
  EXPECT_LE(predicted(p64, start), predicted(p1, start));
  EXPECT_EQ(dispatch_pick(dis, start - 1).plan, "plan-b1.json");
  EXPECT_EQ(dispatch_pick(dis, start).plan, "plan-b64.json");
  EXPECT_EQ(dispatch_pick(dis, 4096).plan, "plan-b64.json");
}

}  // namespace
}  // namespace fuseplan
