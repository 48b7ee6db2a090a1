// The synthetic generator (graph/synthetic.h, `fuseplan gen`): exact primitive
// counts through both importers, conv and transformer blocks present, errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <sys/wait.h>

#include "graph/import.h"
#include "graph/synthetic.h"
#include "test_util.h"

namespace fuseplan {
namespace {

using test::count_class;
using test::num_prims;

TEST(Synthetic, ExactPrimitiveCountThroughTextAndBinaryImport) {
  for (SyntheticKind k : {SyntheticKind::transformer, SyntheticKind::conv, SyntheticKind::mixed}) {
    for (int64_t n : {min_synthetic_primitives(k), int64_t{1000}, int64_t{2345}}) {
      SCOPED_TRACE(std::string(to_string(k)) + " " + std::to_string(n));
      EXPECT_EQ(num_prims(import_onnx_text(synthetic_onnx_text(k, n), {})), n);
      EXPECT_EQ(num_prims(import_onnx_binary(synthetic_onnx_binary(k, n), {})), n);
      EXPECT_EQ(num_prims(synthetic_graph(k, n)), n);
    }
  }
}

TEST(Synthetic, KindsHoldTheirBlocks) {
  const Graph t = synthetic_graph(SyntheticKind::transformer, 1000);
  const Graph c = synthetic_graph(SyntheticKind::conv, 1000);
  const Graph m = synthetic_graph(SyntheticKind::mixed, 1000);
  EXPECT_GT(count_class(t, OpClass::reduction), 0);    // layer norms, softmax
  EXPECT_GT(count_class(t, OpClass::contraction), 0);  // projections
  EXPECT_GT(count_class(c, OpClass::contraction), 0);  // convolutions
  EXPECT_EQ(count_class(c, OpClass::reduction), 0);
  EXPECT_EQ(m.graph_outputs().size(), 2u);             // one per trunk
  EXPECT_GT(count_class(m, OpClass::reduction), 0);
}

TEST(Synthetic, Errors) {
  EXPECT_THROW(synthetic_kind_from_string("rnn"), Error);
  EXPECT_THROW(synthetic_onnx_text(SyntheticKind::transformer, 0), Error);
  EXPECT_THROW(synthetic_onnx_text(SyntheticKind::conv, min_synthetic_primitives(SyntheticKind::conv) - 1), Error);
  EXPECT_THROW(synthetic_onnx_text(SyntheticKind::mixed, kMaxSyntheticPrimitives + 1), Error);
}

TEST(Synthetic, CliWritesAReadableModelAndFailsInOneLine) {
  const auto dir = std::filesystem::temp_directory_path() / ("fuseplan_gen_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string bin = FUSEPLAN_BINARY;
  // The sanitizer build in .ci/run builds the test targets only.
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << "fuseplan binary not built (" << bin << "): CLI not checked";
  for (const char* ext : {".onnx", ".onnxtxt"}) {
    const std::string f = (dir / (std::string("m") + ext)).string();
    ASSERT_EQ(std::system((bin + " gen --kind mixed --primitives 777 -o " + f + " > /dev/null").c_str()), 0);
    EXPECT_EQ(num_prims(import_model(f, {})), 777);
  }
  auto rc = [&](const std::string& args) {
    const int s = std::system((bin + " gen " + args + " 2> " + (dir / "err").string() + " > /dev/null").c_str());
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  };
  EXPECT_EQ(rc("--primitives 0 -o " + (dir / "a.onnx").string()), 2);
  EXPECT_EQ(rc("--primitives 99999999999 -o " + (dir / "a.onnx").string()), 2);
  EXPECT_EQ(rc("--primitives 1000 -o /nonexistent-dir/a.onnx"), 2);
  EXPECT_EQ(rc("--kind rnn --primitives 1000 -o " + (dir / "a.onnx").string()), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "a.onnx"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fuseplan
