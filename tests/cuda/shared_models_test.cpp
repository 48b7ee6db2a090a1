// Every group of the unfused and cost plans of every shared case and every
// example model compiles through NVRTC for sm_90 with registers reported.
// Groups holding graph breaks (opaque primitives) are skipped with
// cuda::kOpaqueNote; every other group of such a model compiles.
#ifdef FUSEPLAN_HAVE_CUDA
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "emit/cuda/cuda_backend.h"
#include "search/strategy.h"
#include "tests/cuda/cuda_util.h"

namespace fuseplan {
namespace {

void compile_all_plans(const Graph& g, const std::string& label) {
  DeviceSpec d = load_device("h100-sxm");
  for (const char* s : {"unfused", "cost"}) {
    Plan plan = search(g, d, s);
    auto t = cuda::measure_plan(g, plan, d, cudatest::opts());
    ASSERT_EQ(t.size(), plan.groups.size()) << label << " " << s;
    for (const auto& r : t) {
      EXPECT_EQ(r.skipped(), cuda::opaque_member(g, plan.groups[r.group_id]) != kNoNode) << label << " " << s;
      if (!r.skipped()) EXPECT_FALSE(r.measured.empty()) << label << " " << s << " group " << r.group_id;
      for (const auto& k : r.measured) EXPECT_GT(k.regs_per_thread, 0) << label << " " << s << " " << k.kernel;
    }
  }
}

TEST(SharedCases, EveryGroupOfEveryPlanCompiles) {
  std::string dir = std::string(FUSEPLAN_SHARED_DIR) + "/cases/";
  std::ifstream in(dir + "expected.json");
  if (!in) GTEST_SKIP() << "no shared cases at " << dir;
  auto j = nlohmann::json::parse(in);
  int compiled = 0;
  for (const auto& c : j.at("cases")) {
    std::string file = c.at("file");
    ImportOptions o;
    for (auto& [k, v] : c["dims"].items()) o.dims[k] = v.get<int64_t>();
    Graph g = import_model(dir + file, o);
    SCOPED_TRACE(file);
    compile_all_plans(g, file);
    ++compiled;
  }
  EXPECT_GE(compiled, 10);
}

TEST(Examples, EveryGroupOfEveryPlanCompiles) {
  for (const char* f : {"bert_base_layer", "gpt2_block", "resnet50_bottleneck", "mobilenetv2_inverted_residual",
                        "vit_block"}) {
    ImportOptions o;
    o.batch = 1;
    o.dims["S"] = 128;
    Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/" + f + ".onnxtxt", o);
    SCOPED_TRACE(f);
    compile_all_plans(g, f);
  }
}

}  // namespace
}  // namespace fuseplan
#endif
