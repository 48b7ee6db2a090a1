// Whole models through the CPU backend: every shared case, every example and
// the shared models with real weights, fused by the search and unfused, give
// outputs bit-identical to the reference executor.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "costmodel/features.h"
#include "costmodel/device.h"
#include "graph/import.h"
#include "graph/layout.h"
#include "emit/cpu/cpu_backend.h"
#include "exec/cpu_run.h"
#include "search/strategy.h"
#include "tests/layout_graphs.h"
#include "tests/shared_models.h"

namespace fuseplan {
namespace {

namespace fs = std::filesystem;

bool has_opaque(const Graph& g) {
  for (NodeId n = 0; n < g.size(); ++n)
    if (g.node(n).op_class == OpClass::opaque) return true;
  return false;
}

void expect_bit_identical(const Graph& g, const std::string& strategy, const std::string& what) {
  SearchOptions so;
  so.time_limit_s = 5;
  Plan plan = search(g, load_device("host-cpu-reference"), strategy, so);
  RunOptions o;
  o.verify = true;
  o.repeat = 1;
  RunResult r = run_plan(g, plan, o);
  EXPECT_TRUE(r.ok) << what << " / " << strategy << ": " << verify_message(r);
  EXPECT_FALSE(r.outputs.empty()) << what;
}

// Small dims for every symbolic dim a case names (the decisions in
// expected.json need the large ones; bit-identity does not).
std::map<std::string, int64_t> case_dims(const std::string& file) {
  std::ifstream f(std::string(FUSEPLAN_SHARED_DIR) + "/cases/expected.json");
  auto j = nlohmann::json::parse(f);
  std::map<std::string, int64_t> dims;
  for (const auto& c : j["cases"])
    if (c["file"] == file && c.contains("dims"))
      for (auto& [k, v] : c["dims"].items()) dims[k] = std::min<int64_t>(v.get<int64_t>(), 96);
  return dims;
}

TEST(CpuModels, EverySharedCaseEveryStrategyIsBitIdentical) {
  fs::path dir = fs::path(FUSEPLAN_SHARED_DIR) / "cases";
  int ran = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".onnxtxt") continue;
    std::string file = e.path().filename().string();
    ImportOptions io;
    io.batch = 1;
    io.dims = case_dims(file);
    Graph g = import_model(e.path().string(), io);
    if (has_opaque(g)) continue;
    for (const auto& s : strategy_names()) expect_bit_identical(g, s, file);
    ++ran;
  }
  EXPECT_GE(ran, 10);
}

// Tensors stored blocked between convolutions (graph/layout.h), with 8- and
// 16-channel blocks whatever the host's ISA (oneDNN reorders to its own
// block where they differ): blocked loop nests, blocked epilogues, plain
// readers and writers of blocked tensors, a Cast after a blocked conv.
TEST(CpuModels, BlockedLayoutGraphsAreBitIdentical) {
  using namespace layout_graphs;
  for (const int block : {8, 16}) {
    set_host_channel_block(block);
    // residual(24) has whole blocks of 8 only (no tensor blocked with 16).
    const std::vector<std::string> graphs = {residual(16),          residual(16, "sp"),  residual(24),
                                             residual(32),          library_reader(block), graph_outputs(block),
                                             cast_output(block)};
    for (std::size_t i = 0; i < graphs.size(); ++i) {
      Graph g = import_onnx_text(graphs[i], {}, "layout");
      EXPECT_EQ(layouts_of(g).count() > 0, block == 8 || i != 2) << block << " " << i;
      for (const char* s : {"unfused", "cost", "xla"})
        expect_bit_identical(g, s, "layout graph " + std::to_string(i) + " block " + std::to_string(block));
    }
  }
  set_host_channel_block(0);
}

// Regression (light_inception_v2: a 4-way channel concat of BN+ReLU
// branches computed every branch per element and kept one, reading the
// blocked branches 16 floats apart: 0.67 ms for 1 MB, one Zen 4 thread): a
// Concat stage writes each operand's slice in its own loop, a blocked
// operand in blocked order and then reordered into its channel slice per
// image; bit-identical either way.
TEST(CpuModels, AConcatWritesEachOperandsSliceInItsOwnLoop) {
  for (const int block : {8, 16}) {
    set_host_channel_block(block);
    Graph g = import_onnx_text(layout_graphs::concat_branches(16), {}, "layout");
    ASSERT_TRUE(layouts_of(g).is_blocked(g.at("r")));
    ASSERT_FALSE(layouts_of(g).is_blocked(g.at("cat")));
    for (const char* s : {"unfused", "elementwise", "cost", "xla"}) {
      const Plan plan = search(g, load_device("host-cpu-reference"), s);
      const std::string src = cpu::plan_source(g, plan);
      const std::size_t at = src.find("// Concat 'cat'");
      ASSERT_NE(at, std::string::npos) << s;
      const std::string body = src.substr(at, src.find("\n}\n", at) - at);
      EXPECT_EQ(body.find("clamp_index"), std::string::npos) << s << body;
      // r and d: each image's 16 channels at channel 0 and 16 of 40.
      EXPECT_NE(body.find("+im*1440+0,us," + std::to_string(block) + ");"), std::string::npos) << s << body;
      EXPECT_NE(body.find("+im*1440+576,us," + std::to_string(block) + ");"), std::string::npos) << s << body;
      expect_bit_identical(g, s, std::string("concat_branches block ") + std::to_string(block));
    }
    // The cost model counts the blocked scratch of r, computed in the
    // concat's kernel (2*16*36 floats, 4608 bytes), once written and once
    // read back; c and d are read as they are. Bytes by hand: c, d 4608
    // each, x 2304, cat 2*40*36*4 = 11520.
    Group grp;
    grp.nodes = {g.at("r"), g.at("cat")};
    grp.materialised = {g.at("cat")};
    grp.kind = GroupKind::loop;
    const CostFeatures f = cost_features(g, grp, load_device("host-cpu-reference"));
    EXPECT_DOUBLE_EQ(f.bytes_read, 4608 + 4608 + 2304 + 4608);
    EXPECT_DOUBLE_EQ(f.bytes_written, 11520 + 4608);
    // r as a buffer of its own: the concat reorders it straight from there.
    grp.materialised = {g.at("r"), g.at("cat")};
    const CostFeatures stored = cost_features(g, grp, load_device("host-cpu-reference"));
    EXPECT_DOUBLE_EQ(stored.bytes_read, 4608 + 4608 + 2304);
    EXPECT_DOUBLE_EQ(stored.bytes_written, 11520 + 4608);
  }
  set_host_channel_block(0);
}

// Regression (resnet50_bottleneck's last kernel stored its NCHW output lane
// by lane from the blocked epilogue loops: 0.6 ms of 2.1; its unfused final
// ReLU read the blocked sum 16 floats apart: 0.73 ms): a tensor stored NCHW
// from a blocked one is computed in blocked order and reordered once;
// bit-identical either way.
TEST(CpuModels, AnNchwEpilogueAfterABlockedConvIsReorderedOnce) {
  for (const int block : {8, 16}) {
    set_host_channel_block(block);
    Graph g = import_onnx_text(layout_graphs::graph_outputs(block), {}, "layout");
    ASSERT_TRUE(layouts_of(g).is_blocked(g.at("c")));
    ASSERT_FALSE(layouts_of(g).is_blocked(g.at("y")));
    const Plan plan = search(g, load_device("host-cpu-reference"), "cost");
    const std::string src = cpu::plan_source(g, plan);
    const std::size_t call = src.find("fprt::unblock(");
    ASSERT_NE(call, std::string::npos) << src;
    EXPECT_NE(src.find("," + std::to_string(block) + ");", call), std::string::npos);
    expect_bit_identical(g, "cost", "graph_outputs block " + std::to_string(block));
    // Unfused, y = Relu(c) is a loop kernel reading blocked c: it loops in
    // blocked order and reorders once too.
    const Plan unfused = search(g, load_device("host-cpu-reference"), "unfused");
    EXPECT_NE(cpu::plan_source(g, unfused).find("fprt::unblock(u,"), std::string::npos);
    expect_bit_identical(g, "unfused", "graph_outputs unfused block " + std::to_string(block));
  }
  set_host_channel_block(0);
}

TEST(CpuModels, ExamplesFusedAndUnfusedAreBitIdentical) {
  fs::path dir = fs::path(FUSEPLAN_SOURCE_DIR) / "examples";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".onnxtxt") continue;
    ImportOptions io;
    io.batch = 1;
    io.dims = {{"S", 32}};
    Graph g = import_model(e.path().string(), io);
    expect_bit_identical(g, "cost", e.path().filename().string());
    expect_bit_identical(g, "unfused", e.path().filename().string());
  }
}

TEST(CpuModels, SharedModelsWithRealWeightsAreBitIdentical) {
  for (const char* file : {"mnist_wonnx.onnx", "trt_residual_block.onnx", "trt_attention_head.onnx"}) {
    fs::path p = fs::path(test::shared_models_dir()) / file;
    if (!fs::exists(p)) GTEST_SKIP() << "missing shared model " << p;
    ImportOptions io;
    io.batch = 1;
    io.dims = test::model_dims(file);
    Graph g = import_model(p.string(), io);
    expect_bit_identical(g, "cost", file);
  }
}

}  // namespace
}  // namespace fuseplan
