// tune's PlanMeasurer: runs a plan once per scope and partition (cached), with
// the caller's run options, so --repeat and --min-time reach every measurement.
#include <gtest/gtest.h>

#include "graph/import.h"
#include "tune/measure.h"
#include "search/strategy.h"
#include "tune_util.h"

namespace fuseplan {
namespace {

TEST(TunePlanMeasurer, MinTimeReachesTheRunAndTheRunIsCachedPerPartition) {
  ImportOptions io;
  io.dims = {{"N", 4}};
  Graph g = import_onnx_text(test::kTinyModel, io, "tiny");
  Plan plan = search(g, load_device("host-cpu"), "unfused");
  RunOptions o;
  o.repeat = 2;
  o.min_time_s = 0.05;
  PlanMeasurer m(o);
  const RunResult& r = m.measure(g, plan, "tiny@b4");
  ASSERT_FALSE(r.groups.empty());
  EXPECT_GT(r.groups.front().samples_us.size(), 2u);  // repeated past --repeat until 0.05 s
  m.measure(g, plan, "tiny@b4");
  EXPECT_EQ(m.runs(), 1);
  o.min_time_s = 0;
  PlanMeasurer exact(o);
  EXPECT_EQ(exact.measure(g, plan, "tiny@b4").groups.front().samples_us.size(), 2u);
}

}  // namespace
}  // namespace fuseplan
