// For every shared model at batch 1, the plans of every registered strategy
// give outputs bit-identical to the reference executor. One test per model
// (ctest runs them in parallel and names the slow ones); a model with an
// opaque primitive is skipped with the primitive named, never silently.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "costmodel/device.h"
#include "graph/import.h"
#include "exec/cpu_run.h"
#include "search/strategy.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;

/// test::model_dims with the sequence/image dims that the models leave
/// symbolic reduced, so the whole suite stays within minutes on a small
/// host: bit-identity does not depend on the size of a symbolic dim (the
/// same loops and routines run, only shorter). Fixed dims are untouched.
std::map<std::string, int64_t> small_dims(const std::string& file) {
  auto d = test::model_dims(file);
  for (auto& [k, v] : d) {
    if (k == "height" || k == "width") v = 64;          // fcn-resnet50: 224 -> 64
    if (k == "input_1:2" || k == "input_1:3") v = 128;  // tiny-yolov3: 416 -> 128 (multiple of 32)
    if (k == "seq_len" && v > 32) v = 32;               // roberta: 128 -> 32
    if (k == "sequence") v = 32;                        // t5-encoder, distilbert: 128 -> 32
    if (k == "input1_dynamic_axes_3") v = 32;           // gpt2: 128 -> 32
  }
  return d;
}

std::string first_opaque(const Graph& g) {
  for (NodeId n = 0; n < g.size(); ++n)
    if (g.node(n).op_class == OpClass::opaque) return g.node(n).op + " (" + g.node(n).name + ")";
  return "";
}

class SharedModel : public ::testing::TestWithParam<std::string> {};

// Compiling every strategy's kernels for every model takes tens of minutes on
// a 2-core machine; by default the two smallest models run (CI), all of them
// with FUSEPLAN_SLOW_TESTS=1.
bool runs_by_default(const std::string& file) {
  return file == "mnist_wonnx.onnx" || file == "trt_residual_block.onnx";
}

TEST_P(SharedModel, EveryStrategyIsBitIdenticalAtBatch1) {
  const std::string file = GetParam();
  if (!runs_by_default(file) && !std::getenv("FUSEPLAN_SLOW_TESTS"))
    GTEST_SKIP() << file << ": slow (compiles every strategy's kernels); set FUSEPLAN_SLOW_TESTS=1 to run";
  ImportOptions io;
  io.batch = 1;
  io.dims = small_dims(file);
  Graph g = import_model((fs::path(test::shared_models_dir()) / file).string(), io);
  std::string opaque = first_opaque(g);
  if (!opaque.empty()) GTEST_SKIP() << file << ": opaque primitive " << opaque << " has no executable semantics";
  const DeviceSpec dev = load_device("host-cpu-reference");
  for (const auto& s : strategy_names()) {
    auto t0 = std::chrono::steady_clock::now();
    SearchOptions so;
    so.time_limit_s = 5;
    Plan plan = search(g, dev, s, so);
    RunOptions o;
    o.verify = true;
    o.repeat = 1;
    o.warmup = 0;
    RunResult r = run_plan(g, plan, o);
    EXPECT_TRUE(r.ok) << file << " / " << s << ": " << verify_message(r);
    EXPECT_FALSE(r.outputs.empty()) << file << " / " << s;
    double s_el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "  " << file << " / " << s << ": " << plan.groups.size() << " kernels, "
              << (r.cache_hit ? "cached" : "compiled") << ", " << s_el << " s" << std::endl;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& i) { return test::model_test_name(i.param); }

INSTANTIATE_TEST_SUITE_P(CpuSharedModels, SharedModel, ::testing::ValuesIn(test::shared_model_files()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SharedModel);  // no ../shared

}  // namespace
}  // namespace fuseplan
