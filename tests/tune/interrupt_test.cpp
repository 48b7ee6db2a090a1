// An interrupt stops a long phase promptly: a compile in flight is killed
// (its process group), a measurement stops between kernel calls, and the
// batch sizes already finished stay complete.
//
// The compile is made long without load or timing luck: FUSEPLAN_CXX points
// at a wrapper that runs the real compiler for batch 1 and, once batch 1 is
// written, execs `sleep 120` instead (writing its pid first). The stop
// request arrives while batch 2's "compiler" runs; tune must return in far
// less than 120 s and the sleeping process must be gone.
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "emit/cpu/compiler.h"
#include "support/files.h"
#include "graph/import.h"
#include "exec/cpu_run.h"
#include "tune/tune.h"
#include "search/strategy.h"
#include "tune_util.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using test::ScopedEnv;

TEST(TuneInterrupt, StopDuringCompileKillsTheCompilerAndKeepsFinishedBatchSizes) {
  const std::string dir = test::fresh_dir("stop-compile");
  const std::string model = test::write_model(dir, "tiny.onnxtxt", test::kTinyModel);
  const std::string wrapper = dir + "/slow-cxx.sh";
  write_file_atomic(wrapper, "#!/bin/sh\nif [ -e '" + dir + "/slow' ]; then echo $$ > '" + dir +
                                 "/cxx.pid'; exec sleep 120; fi\nexec c++ \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  ScopedEnv cxx("FUSEPLAN_CXX", wrapper);
  ScopedEnv cache("FUSEPLAN_CACHE_DIR", dir + "/cache");  // nothing cached: batch 2 must compile

  TuneOptions o;
  o.batches = {1, 2};
  o.measure = true;
  o.rounds = 1;
  o.run.repeat = 1;
  o.run.warmup = 0;
  o.peers = false;
  o.render_svg = false;
  std::optional<Clock::time_point> measuring_b2;
  auto progress = [&](const TuneEvent& e) {
    if (e.phase == "write") write_file_atomic(dir + "/slow", "");  // batch 1 is done: the next compile sleeps
    if (e.phase == "measure" && e.batch == 2) measuring_b2 = Clock::now();
  };
  // ^C half a second into batch 2's compile; a phase-boundary check alone
  // would see it only after the 120 s "compile".
  auto stop = [&] { return measuring_b2 && Clock::now() - *measuring_b2 > std::chrono::milliseconds(500); };
  TuneResult r = tune({model, {}, ""}, load_device("host-cpu-reference"), o, dir + "/out", progress, stop);
  ASSERT_TRUE(measuring_b2.has_value());
  const double stopped_after_s = std::chrono::duration<double>(Clock::now() - *measuring_b2).count();

  EXPECT_TRUE(r.interrupted);
  EXPECT_LT(stopped_after_s, 30.0) << "the compile in flight was waited for instead of killed";
  ASSERT_EQ(r.batches.size(), 1u);
  EXPECT_EQ(r.batches[0].batch, 1);
  EXPECT_TRUE(r.batches[0].measured);
  EXPECT_TRUE(fs::exists(dir + "/out/plan-b1.json"));
  EXPECT_TRUE(fs::exists(dir + "/out/trace-b1.json"));
  EXPECT_FALSE(fs::exists(dir + "/out/plan-b2.json"));
  EXPECT_NE(read_file(dir + "/out/summary.md").find("## batch 1"), std::string::npos);
  for (const auto& e : fs::directory_iterator(dir + "/out"))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left a temp file";
  for (const auto& e : fs::directory_iterator(dir + "/cache"))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left a half-written object";

  // The "compiler" was killed, not orphaned.
  ASSERT_TRUE(fs::exists(dir + "/cxx.pid"));
  const int pid = std::stoi(read_file(dir + "/cxx.pid"));
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

TEST(TuneInterrupt, RunStopsBetweenKernelCalls) {
  // Unfused: one kernel per primitive (4), so there is a "between" to stop at.
  const std::string dir = test::fresh_dir("stop-run");
  const std::string model = test::write_model(dir, "tiny.onnxtxt", test::kTinyModel);
  ImportOptions io;
  io.batch = 2;
  const Graph g = import_model(model, io);
  const Plan plan = search(g, load_device("host-cpu-reference"), "unfused", {});
  ASSERT_EQ(plan.groups.size(), 4u);
  RunOptions ro;
  ro.repeat = 3;
  ro.warmup = 1;
  bool stop = false;
  int calls = 0;
  ro.around_group = [&](std::size_t, bool after) {
    if (after && ++calls == 2) stop = true;  // second timed kernel of the first repetition returned
  };
  ro.cancelled = [&] { return stop; };
  EXPECT_THROW(run_plan(g, plan, ro), cpu::Cancelled);
  EXPECT_EQ(calls, 2) << "the run went on past the stop request";
}

}  // namespace
}  // namespace fuseplan
