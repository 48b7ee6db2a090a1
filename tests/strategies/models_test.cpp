// Every strategy on every shared model at batch 1: the plan is accepted by
// make_plan (each primitive covered, no kernel cycle) and never predicted
// slower than unfused... except by the horizontal-free baselines' own choices.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/shared_models.h"
#include "tests/strategies/strategy_test_util.h"

namespace fuseplan {
namespace {

using test::model_dims;

TEST(SharedModels, EveryStrategyGivesAValidPlanAtBatch1) {
  const std::string dir = std::string(FUSEPLAN_SHARED_DIR) + "/models/onnx";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no shared models";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".onnx") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  const DeviceSpec d = testing::h100();
  SearchOptions o;
  o.time_limit_s = 10;
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    ImportOptions io;
    io.batch = 1;
    io.dims = model_dims(f);
    Graph g = import_model(f, io);
    const Plan base = search(g, d, "unfused", o);
    for (const auto& s : strategy_names()) {
      Plan p;
      ASSERT_NO_THROW(p = search(g, d, s, o)) << s;
      EXPECT_LE(p.totals.kernels, base.totals.kernels) << s;
      EXPECT_LE(p.totals.predicted_us, base.totals.predicted_us * (1 + 1e-9)) << s;
    }
  }
}

}  // namespace
}  // namespace fuseplan
