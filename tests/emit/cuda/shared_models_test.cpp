// Every group of every strategy's plan (unfused, elementwise, tvm, xla,
// inductor, cost; `optimal` on the cases, whose ILPs are small) of every
// shared case, every example model and a few small shared models compiles
// through NVRTC for sm_90 with registers reported, as `--library none` emits
// it (GEMM/conv kernels included: the fallback must compile for any group;
// the library route: library_lowering_test.cpp). Sources are canonical
// (cuda::plan_sources), so a group that several strategies form alike
// compiles once (NVRTC cache). Groups holding graph breaks (opaque
// primitives) are skipped with cuda::kOpaqueNote; every other group of such
// a model compiles. Every shared model for every strategy:
// shared_model_registers_test.cpp (opt-in, slow).
#ifdef FUSEPLAN_HAVE_CUDA
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "emit/cuda/cuda_backend.h"
#include "search/strategy.h"
#include "tests/cuda_util.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {

const std::vector<std::string> kStrategies = {"unfused", "elementwise", "tvm", "xla", "inductor", "cost"};

struct Counts {
  int groups = 0, kernels = 0, opaque = 0, max_regs = 0, spills = 0;
};

// Compiles every group of each strategy's plan; returns what it compiled.
Counts compile_all_plans(const Graph& g, const std::string& label, const std::vector<std::string>& strategies) {
  DeviceSpec d = load_device("h100-sxm");
  Counts c;
  for (const std::string& s : strategies) {
    SearchOptions so;
    so.time_limit_s = 5;  // optimal: the ILP's budget
    Plan plan = search(g, d, s, so);
    auto t = cuda::measure_plan(g, plan, d, cudatest::opts(), nullptr, nullptr, /*canonical=*/true,
                                cuda::LibraryOptions::none());
    EXPECT_EQ(t.size(), plan.groups.size()) << label << " " << s;
    for (const auto& r : t) {
      EXPECT_EQ(r.skipped(), cuda::opaque_member(g, plan.groups[r.group_id]) != kNoNode) << label << " " << s;
      if (!r.skipped()) {
        EXPECT_FALSE(r.measured.empty()) << label << " " << s << " group " << r.group_id;
      }
      for (const auto& k : r.measured) EXPECT_GT(k.regs_per_thread, 0) << label << " " << s << " " << k.kernel;
      ++c.groups;
      c.opaque += r.skipped();
      c.kernels += static_cast<int>(r.measured.size());
      c.max_regs = std::max(c.max_regs, r.regs_measured());
      c.spills += r.spill_bytes_measured() > 0;
    }
  }
  return c;
}

TEST(SharedCases, EveryGroupOfEveryPlanCompiles) {
  std::string dir = std::string(FUSEPLAN_SHARED_DIR) + "/cases/";
  std::ifstream in(dir + "expected.json");
  if (!in) GTEST_SKIP() << "no shared cases at " << dir;
  auto j = nlohmann::json::parse(in);
  int compiled = 0, groups = 0;
  for (const auto& c : j.at("cases")) {
    std::string file = c.at("file");
    ImportOptions o;
    for (auto& [k, v] : c["dims"].items()) o.dims[k] = v.get<int64_t>();
    Graph g = import_model(dir + file, o);
    SCOPED_TRACE(file);
    std::vector<std::string> strategies = kStrategies;
    strategies.push_back("optimal");
    Counts n = compile_all_plans(g, file, strategies);
    groups += n.groups - n.opaque;
    ++compiled;
  }
  EXPECT_GE(compiled, 10);
  EXPECT_GE(groups, 7 * compiled);  // at least one group per strategy and case
  std::printf("%d shared cases x %zu strategies: %d groups compiled\n", compiled, kStrategies.size() + 1, groups);
}

TEST(Examples, EveryGroupOfEveryPlanCompiles) {
  for (const char* f : {"bert_base_layer", "gpt2_block", "resnet50_bottleneck", "mobilenetv2_inverted_residual",
                        "vit_block"}) {
    ImportOptions o;
    o.batch = 1;
    o.dims["S"] = 128;
    Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/" + f + ".onnxtxt", o);
    SCOPED_TRACE(f);
    compile_all_plans(g, f, kStrategies);
  }
}

// A few small shared models (classic CNN, transformer attention, residual
// block, a tiny BERT), every strategy: the default ctest's share of the
// shared models (all 25: shared_model_registers_test.cpp, opt-in).
TEST(SharedModels, SmallModelsEveryStrategyEveryGroupCompiles) {
  if (!std::filesystem::exists(test::shared_models_dir())) GTEST_SKIP() << "no shared models";
  int groups = 0, max_regs = 0, spills = 0;
  for (const char* f : {"mnist_wonnx.onnx", "light_squeezenet.onnx", "trt_attention_head.onnx",
                        "trt_residual_block.onnx", "distilbert_tiny_optimum.onnx"}) {
    Graph g = test::import_shared_model(f, 1);
    SCOPED_TRACE(f);
    Counts n = compile_all_plans(g, f, kStrategies);
    EXPECT_EQ(n.opaque, 0);
    groups += n.groups;
    max_regs = std::max(max_regs, n.max_regs);
    spills += n.spills;
  }
  EXPECT_GT(groups, 200);
  EXPECT_EQ(spills, 0);  // the emitted kernels stay far below 255 registers
  EXPECT_LE(max_regs, 64);
  std::printf("5 shared models x %zu strategies: %d groups compiled, max %d registers, %d spilling\n",
              kStrategies.size(), groups, max_regs, spills);
}

}  // namespace
}  // namespace fuseplan
#endif
