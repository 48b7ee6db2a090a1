// Every strategy on every shared model at batch 1: the plan is accepted by
// make_plan (each primitive covered, no kernel cycle) and never predicted
// slower than unfused... except by the horizontal-free baselines' own choices.
// One test per model, so a parallel ctest spreads them over the cores.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/shared_models.h"
#include "tests/strategies/strategy_test_util.h"

namespace fuseplan {
namespace {

using test::model_dims;

class SharedModels : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedModels, EveryStrategyGivesAValidPlanAtBatch1) {
  const std::string f = test::shared_models_dir() + "/" + GetParam();
  const DeviceSpec d = testing::h100();
  SearchOptions o;
  o.time_limit_s = 3;  // optimal's whole-strategy limit: a valid plan, proven or not
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

INSTANTIATE_TEST_SUITE_P(Shared, SharedModels, ::testing::ValuesIn(test::shared_model_files()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return test::model_test_name(i.param); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SharedModels);

}  // namespace
}  // namespace fuseplan
