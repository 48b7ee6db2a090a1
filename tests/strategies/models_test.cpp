// Every strategy on every shared model at batch 1: the plan is accepted by
// make_plan (each primitive covered, no kernel cycle) and never predicted
// slower than unfused... except by the horizontal-free baselines' own choices.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/strategies/strategy_test_util.h"

namespace fuseplan {
namespace {

std::map<std::string, int64_t> model_dims(const std::string& file) {
  if (file.find("roberta") != std::string::npos) return {{"seq_len", 128}};
  if (file.find("t5-encoder") != std::string::npos || file.find("distilbert") != std::string::npos)
    return {{"sequence", 128}};
  if (file.find("gpt2-") != std::string::npos) return {{"input1_dynamic_axes_2", 1}, {"input1_dynamic_axes_3", 128}};
  if (file.find("fcn-resnet") != std::string::npos) return {{"height", 224}, {"width", 224}};
  if (file.find("tiny-yolov3") != std::string::npos) return {{"input_1:2", 416}, {"input_1:3", 416}};
  if (file.find("gpt2_tiny") != std::string::npos) return {{"seq_len", 16}, {"past_seq_len", 16}, {"total_seq_len", 32}};
  if (file.find("attention_head") != std::string::npos) return {{"sequence_len", 100}, {"batch", 100}};
  return {};
}

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
