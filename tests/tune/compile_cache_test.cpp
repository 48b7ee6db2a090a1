// The CPU backend's kernel-level compile cache, which tune's rounds and peer
// plans lean on: each group kernel is compiled once (keyed by its text, not
// its position in the plan), and a plan sharing kernels with one already
// compiled compiles only its new kernels. The library built from cached
// kernels computes exactly what the reference executor does.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/files.h"
#include "graph/import.h"
#include "exec/cpu_run.h"
#include "search/plan.h"
#include "search/strategy.h"
#include "tune_util.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;

const char* kChain = R"(<ir_version: 8, opset_import: ["" : 17]>
chain (float[N, 256] x) => (float[N, 256] y) {
  a = Exp(x)
  b = Neg(a)
  c = Sigmoid(b)
  d = Tanh(c)
  e = Relu(d)
  y = Abs(e)
})";

int count_ext(const std::string& dir, const std::string& ext) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ext;
  return n;
}

TEST(TuneCompileCache, APlanSharingKernelsCompilesOnlyItsNewKernels) {
  const std::string dir = test::fresh_dir("compile-cache");
  const std::string model = test::write_model(dir, "chain.onnxtxt", kChain);
  test::ScopedEnv cache("FUSEPLAN_CACHE_DIR", dir + "/cache");
  test::ScopedEnv parts("FUSEPLAN_CPU_PART_BYTES", "1");  // one kernel per object: counts are kernels
  ImportOptions io;
  io.batch = 3;
  const Graph g = import_model(model, io);
  const DeviceSpec d = load_device("host-cpu-reference");
  const Plan unfused = search(g, d, "unfused", {});
  ASSERT_EQ(unfused.groups.size(), 6u);
  // The same partition with the last two kernels merged: kernels 0..3 are
  // unchanged, kernel 4 is new.
  std::vector<std::vector<NodeId>> partition;
  for (const auto& grp : unfused.groups) partition.push_back(grp.nodes);
  partition[4].insert(partition[4].end(), partition[5].begin(), partition[5].end());
  partition.pop_back();
  const Plan merged = make_plan(g, d, partition, "manual");
  ASSERT_EQ(merged.groups.size(), 5u);

  RunOptions ro;
  ro.verify = true;
  ro.repeat = 1;
  const RunResult a = run_plan(g, unfused, ro);
  EXPECT_TRUE(a.verified);
  EXPECT_TRUE(a.ok) << verify_message(a);
  EXPECT_FALSE(a.cache_hit);
  EXPECT_EQ(count_ext(dir + "/cache", ".o"), 6);
  const RunResult b = run_plan(g, merged, ro);
  EXPECT_TRUE(b.ok) << verify_message(b);
  EXPECT_FALSE(b.cache_hit);  // a new library...
  EXPECT_EQ(count_ext(dir + "/cache", ".o"), 7);  // ...from one new kernel
  EXPECT_EQ(count_ext(dir + "/cache", ".so"), 2);
  // Same plan again: the whole library is cached.
  EXPECT_TRUE(run_plan(g, merged, ro).cache_hit);
  for (const auto& e : fs::directory_iterator(dir + "/cache"))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

}  // namespace
}  // namespace fuseplan
