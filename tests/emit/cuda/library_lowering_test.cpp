// The contraction rule of emit/cuda/lowering.h, checked without a GPU: the
// default options pick "library GEMM / cuDNN conv + one emitted epilogue
// kernel", shapes the libraries refuse are the labelled emitted fallback,
// which groups go to cuBLASLt with a fused epilogue (opt-in); the
// epilogue kernels compile through NVRTC; fused and unfused plans issue the
// same library calls; cuDNN's descriptors reproduce the graph's Conv shapes.
// The GPU runs of these paths are in gpu_run_test.cpp (skip without a device).
#ifdef FUSEPLAN_HAVE_CUDA
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "emit/cuda/cuda_backend.h"
#include "emit/cuda/lowering.h"
#include "support/files.h"
#include "exec/cudnn_conv.h"
#include "search/strategy.h"
#include "tests/cuda_util.h"

namespace fuseplan {
namespace {

using cudatest::model;
using cudatest::one_group;
using cudatest::opts;
using Route = cuda::GroupLowering::Route;

DeviceSpec h200() { return load_device("h200"); }

// The default: cuBLASLt (DEFAULT epilogue) and cuDNN.
cuda::LibraryOptions gemm_only() { return {}; }
cuda::LibraryOptions fused_epi() {
  cuda::LibraryOptions o = gemm_only();
  o.fused_epilogue = true;
  return o;
}

const char* kGemmBiasRelu = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[M, 256] x, float[256, 128] w, float[128] b) => (float[M, 128] y) {
  mm = MatMul(x, w)
  t = Add(mm, b)
  y = Relu(t)
})";
// Sigmoid has no cuBLASLt epilogue: bias in the call (fused mode), sigmoid in the kernel.
const char* kGemmBiasSigmoid = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[M, 256] x, float[256, 128] w, float[128] b) => (float[M, 128] y) {
  mm = MatMul(x, w)
  t = Add(mm, b)
  y = Sigmoid(t)
})";
const char* kGemmTransB = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[M, 64] x, float[96, 64] w, float[96] b) => (float[M, 96] y) {
  y = Gemm<transB = 1>(x, w, b)
})";
const char* kPrologue = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[M, 64] x, float[64, 32] w) => (float[M, 32] y) {
  r = Relu(x)
  mm = MatMul(r, w)
  y = Sigmoid(mm)
})";
const char* kBatched = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[4, M, 64] x, float[4, 64, 32] w) => (float[4, M, 32] y) {
  mm = MatMul(x, w)
  y = Relu(mm)
})";
const char* kConvBiasRelu = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[2, 16, 14, 14] x, float[32, 4, 3, 3] w, float[32] b) => (float[2, 32, 7, 7] y) {
  c = Conv<pads = [1, 1, 1, 1], strides = [2, 2], group = 4>(x, w, b)
  y = Relu(c)
})";
const char* kConvAsym = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[1, 8, 16, 16] x, float[8, 8, 3, 3] w) => (float[1, 8, 8, 8] y) {
  c = Conv<pads = [0, 0, 1, 1], strides = [2, 2]>(x, w)
  y = Relu(c)
})";
const char* kGemmTransA = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[64, M] x, float[64, 32] w) => (float[M, 32] y) {
  mm = Gemm<transA = 1>(x, w)
  y = Relu(mm)
})";
const char* kConv1d = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[2, 8, 50] x, float[16, 8, 5] w) => (float[2, 16, 25] y) {
  c = Conv<pads = [2, 2], strides = [2], dilations = [1]>(x, w)
  y = Sigmoid(c)
})";
const char* kConv3d = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[1, 4, 8, 10, 12] x, float[6, 4, 3, 3, 3] w) => (float[1, 6, 4, 8, 10] y) {
  c = Conv<pads = [1, 0, 0, 1, 0, 0], strides = [2, 1, 1], dilations = [1, 1, 1]>(x, w)
  y = Relu(c)
})";
const char* kConvDilated = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[1, 8, 20, 20] x, float[8, 1, 3, 3] w) => (float[1, 8, 20, 20] y) {
  c = Conv<pads = [2, 2, 2, 2], dilations = [2, 2], group = 8>(x, w)
  y = Relu(c)
})";

cuda::GroupLowering lower(const Graph& g, const cuda::LibraryOptions& o) {
  Plan p = one_group(g, h200());
  EXPECT_EQ(p.groups.size(), 1u);
  return cuda::lower_group(g, p.groups[0], o);
}

std::vector<std::string> names(const Graph& g, const std::vector<NodeId>& ns) {
  std::vector<std::string> v;
  for (NodeId n : ns) v.push_back(g.node(n).name);
  return v;
}

// Regression (issue 31): the default options take the library route, for
// the lowering, the sources and the resource table alike.
TEST(LibraryLowering, DefaultOptionsPickTheLibraryRoute) {
  {
    Graph g = model(kGemmBiasRelu, {{"M", 64}});
    Plan p = one_group(g, h200());
    auto l = cuda::lower_group(g, p.groups[0], {});
    EXPECT_EQ(l.route, Route::cublaslt) << l.why;
    EXPECT_EQ(l.gemm.epilogue, "DEFAULT");  // cuBLASLt's fused epilogues stay opt-in
    auto a = cuda::plan_sources(g, p, h200());
    ASSERT_EQ(a[0].launches.size(), 1u);
    EXPECT_EQ(a[0].launches[0].shape, "elem");  // the epilogue kernel, no GEMM loop
    EXPECT_NE(a[0].source.find("// library: cublasLtMatmul DEFAULT 64x128x256"), std::string::npos);
    auto t = cuda::measure_plan(g, p, h200(), opts());
    EXPECT_EQ(t[0].lowering.route, Route::cublaslt);
  }
  {
    Graph g = model(kConvBiasRelu);
    EXPECT_EQ(lower(g, {}).route, Route::cudnn);
  }
}

// `--library none`: every group emitted, GEMM per output element; not a fallback.
TEST(LibraryLowering, NoneEmitsEveryGroup) {
  Graph g = model(kGemmBiasRelu, {{"M", 64}});
  Plan p = one_group(g, h200());
  auto l = cuda::lower_group(g, p.groups[0], cuda::LibraryOptions::none());
  EXPECT_EQ(l.route, Route::emitted);
  EXPECT_EQ(l.why, "emitted: no library enabled");
  auto a = cuda::plan_sources(g, p, h200(), false, cuda::LibraryOptions::none());
  ASSERT_EQ(a[0].launches.size(), 1u);
  EXPECT_EQ(a[0].launches[0].shape, "elem/MatMul");
  EXPECT_EQ(a[0].source.find("// library:"), std::string::npos);
}

// Regression (issue 31): shapes the libraries refuse under the default
// options run the emitted kernels, labelled as the fallback with the reason,
// in the lowering, resources.json and resources.md.
TEST(LibraryLowering, RefusedShapesFallBackToEmittedKernelsWithTheirLabel) {
  struct Case {
    const char* text;
    std::map<std::string, int64_t> dims;
    std::string why;
  };
  for (const Case& c : {Case{kConvAsym, {}, "emitted fallback: Conv with asymmetric padding (cuDNN pads symmetrically)"},
                        Case{kGemmTransA, {{"M", 48}}, "emitted fallback: MatMul with transposed A"},
                        Case{kBatched, {{"M", 32}}, "emitted fallback: MatMul is not f32 with a 2-D B"}}) {
    Graph g = model(c.text, c.dims);
    SCOPED_TRACE(c.why);
    Plan p = one_group(g, h200());
    ASSERT_EQ(p.groups[0].kind, GroupKind::contraction);
    auto l = cuda::lower_group(g, p.groups[0], {});
    EXPECT_EQ(l.route, Route::fallback);
    EXPECT_FALSE(l.library());
    EXPECT_EQ(l.why, c.why);
    EXPECT_STREQ(cuda::to_string(l.route), "emitted-fallback");
    // The emitted kernels, exactly as under --library none.
    EXPECT_EQ(cuda::plan_sources(g, p, h200())[0].source,
              cuda::plan_sources(g, p, h200(), false, cuda::LibraryOptions::none())[0].source);
    auto t = cuda::measure_plan(g, p, h200(), opts());
    ASSERT_EQ(t.size(), 1u);
    EXPECT_FALSE(t[0].launches.empty());
    auto j = nlohmann::json::parse(cuda::resources_json(t, h200(), opts()));
    EXPECT_EQ(j["groups"][0]["fallback"], c.why);
    EXPECT_FALSE(j["groups"][0].contains("library"));
    EXPECT_NE(cuda::resources_markdown(t, h200(), opts()).find(c.why), std::string::npos);
  }
}

// The cublaslt route (cuBLASLt without fused epilogues): DEFAULT GEMM writes the MatMul's
// output, one emitted kernel computes bias + ReLU from it.
TEST(LibraryLowering, GemmOnlyIsDefaultGemmPlusOneEpilogueKernel) {
  Graph g = model(kGemmBiasRelu, {{"M", 64}});
  auto l = lower(g, gemm_only());
  ASSERT_EQ(l.route, Route::cublaslt) << l.why;
  EXPECT_EQ(l.gemm.epilogue, "DEFAULT");
  EXPECT_EQ(l.gemm.bias, kNoNode);
  EXPECT_EQ(l.library_out, g.find("mm"));
  EXPECT_EQ(l.gemm.out, g.find("mm"));
  EXPECT_EQ(std::tuple(l.gemm.M, l.gemm.N, l.gemm.K), std::tuple(int64_t{64}, int64_t{128}, int64_t{256}));
  EXPECT_FALSE(l.gemm.trans_b);
  EXPECT_EQ(names(g, l.epilogue.nodes), (std::vector<std::string>{"t", "y"}));
  EXPECT_EQ(l.epilogue.kind, GroupKind::loop);
  EXPECT_EQ(l.why, "cublasLtMatmul DEFAULT 64x128x256 + epilogue kernel of 2 primitives");
  Plan p = one_group(g, h200());
  auto src = cuda::print_lowered_group(g, p.groups[0], l);
  ASSERT_EQ(src.launches.size(), 1u) << src.source;
  EXPECT_EQ(src.launches[0].shape, "elem");  // bias + ReLU over the GEMM's output (broadcast bias: no float4)
  EXPECT_EQ(src.library_slot, 0);
  std::set<NodeId> params(src.launches[0].params.begin(), src.launches[0].params.end());
  EXPECT_EQ(params, (std::set<NodeId>{g.find("b"), g.find("mm"), g.find("y")}));
  EXPECT_EQ(src.source.find("for (int64_t k = 0;"), std::string::npos) << "no GEMM loop in the epilogue kernel";
  EXPECT_NE(src.source.find("// library: cublasLtMatmul DEFAULT 64x128x256"), std::string::npos);
  auto r = cuda::compile_cuda(src.source, "epilogue", opts());
  ASSERT_NE(r.find(src.launches[0].kernel), nullptr);
  EXPECT_GT(r.find(src.launches[0].kernel)->regs_per_thread, 0);
}

// The fused-epilogue route: RELU_BIAS covers the whole group: one call, no kernel at all.
TEST(LibraryLowering, FusedEpilogueCoversBiasReluEntirely) {
  Graph g = model(kGemmBiasRelu, {{"M", 64}});
  auto l = lower(g, fused_epi());
  ASSERT_EQ(l.route, Route::cublaslt);
  EXPECT_EQ(l.gemm.epilogue, "RELU_BIAS");
  EXPECT_TRUE(l.gemm.callable());
  EXPECT_EQ(l.gemm.bias, g.find("b"));
  EXPECT_EQ(l.library_out, g.find("y"));
  EXPECT_TRUE(l.epilogue.nodes.empty());
  Plan p = one_group(g, h200());
  auto t = cuda::measure_plan(g, p, h200(), opts(), nullptr, nullptr, false, fused_epi());
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(t[0].launches.empty());
  EXPECT_TRUE(t[0].skipped());
  EXPECT_EQ(t[0].note, "cublasLtMatmul RELU_BIAS 64x128x256 + no epilogue kernel");
}

// The fused-epilogue route where the epilogue only partly matches: BIAS in the call, the
// sigmoid in one kernel reading the call's output (the Add).
TEST(LibraryLowering, FusedEpilogueLeavesTheUnmatchedRestToOneKernel) {
  Graph g = model(kGemmBiasSigmoid, {{"M", 64}});
  auto l = lower(g, fused_epi());
  ASSERT_EQ(l.route, Route::cublaslt);
  EXPECT_EQ(l.gemm.epilogue, "BIAS");
  EXPECT_EQ(l.library_out, g.find("t"));
  EXPECT_EQ(names(g, l.epilogue.nodes), (std::vector<std::string>{"y"}));
  Plan p = one_group(g, h200());
  auto src = cuda::print_lowered_group(g, p.groups[0], l);
  ASSERT_EQ(src.launches.size(), 1u);
  EXPECT_EQ(src.launches[0].params, (std::vector<NodeId>{g.find("t"), g.find("y")}));
  // Without fused epilogues the same group is DEFAULT + a kernel of bias and sigmoid.
  auto d = lower(g, gemm_only());
  EXPECT_EQ(d.gemm.epilogue, "DEFAULT");
  EXPECT_EQ(names(g, d.epilogue.nodes), (std::vector<std::string>{"t", "y"}));
}

// A producer fused before the MatMul runs as a prologue kernel that writes
// the GEMM's operand, then the call, then the epilogue kernel: the same
// values reach cuBLASLt as in the unfused plan.
TEST(LibraryLowering, FusedPrologueRunsAsAKernelBeforeTheCall) {
  Graph g = model(kPrologue, {{"M", 32}});
  auto l = lower(g, fused_epi());
  ASSERT_EQ(l.route, Route::cublaslt) << l.why;
  EXPECT_EQ(names(g, l.prologue.nodes), (std::vector<std::string>{"r"}));
  EXPECT_EQ(names(g, l.prologue.materialised), (std::vector<std::string>{"r"}));
  EXPECT_EQ(names(g, l.epilogue.nodes), (std::vector<std::string>{"y"}));
  EXPECT_EQ(l.gemm.a, g.find("r"));
  EXPECT_EQ(l.why, "cublasLtMatmul DEFAULT 32x32x64 after a prologue kernel of 1 primitives + epilogue kernel of 1 "
                   "primitives");
  Plan p = one_group(g, h200());
  auto t = cuda::measure_plan(g, p, h200(), opts(), nullptr, nullptr, false, fused_epi());
  auto src = cuda::plan_sources(g, p, h200(), false, fused_epi());
  ASSERT_EQ(src[0].launches.size(), 2u) << src[0].source;
  EXPECT_EQ(src[0].library_slot, 1);
  EXPECT_EQ(src[0].launches[0].kernel, "fp_g0_pro_k0");
  EXPECT_EQ(src[0].launches[0].params, (std::vector<NodeId>{g.find("x"), g.find("r")}));
  EXPECT_EQ(src[0].launches[1].kernel, "fp_g0_k0");
  ASSERT_EQ(t[0].measured.size(), 2u);
  EXPECT_GT(t[0].measured[0].regs_per_thread, 0);
  EXPECT_GT(t[0].measured[1].regs_per_thread, 0);
}

TEST(LibraryLowering, GemmWithTransposedBGoesToCublasLt) {
  Graph g = model(kGemmTransB, {{"M", 32}});
  auto l = lower(g, gemm_only());
  ASSERT_EQ(l.route, Route::cublaslt) << l.why;
  EXPECT_TRUE(l.gemm.trans_b);
  EXPECT_EQ(std::tuple(l.gemm.M, l.gemm.N, l.gemm.K), std::tuple(int64_t{32}, int64_t{96}, int64_t{64}));
  EXPECT_EQ(l.gemm.b, g.find("w"));
  EXPECT_EQ(l.epilogue.nodes.size(), 1u);  // the bias Add
}

TEST(LibraryLowering, WhatStaysEmittedSaysWhy) {
  {
    Graph g = model(kBatched, {{"M", 32}});
    EXPECT_EQ(lower(g, fused_epi()).why, "emitted fallback: MatMul is not f32 with a 2-D B");
  }
  {
    Graph g = model(kConvAsym);
    EXPECT_EQ(lower(g, fused_epi()).why, "emitted fallback: Conv with asymmetric padding (cuDNN pads symmetrically)");
  }
  {
    Graph g = model(kGemmBiasRelu, {{"M", 64}});
    cuda::LibraryOptions dnn_only = cuda::LibraryOptions::none();
    dnn_only.cudnn = true;
    auto l = lower(g, dnn_only);
    EXPECT_EQ(l.route, Route::emitted);  // not enabled: a choice, not a fallback
    EXPECT_EQ(l.why, "emitted: cuBLASLt not enabled");
  }
  {
    Graph g = model(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x) => (float[N, C] y) {
  y = Softmax<axis = -1>(x)
})", {{"N", 8}, {"C", 64}});
    auto l = lower(g, fused_epi());
    EXPECT_EQ(l.route, Route::emitted);
    EXPECT_EQ(l.why, "emitted: not a contraction group");
  }
}

// The cudnn route: cuDNN writes the Conv's output; bias + ReLU are one kernel.
TEST(LibraryLowering, ConvIsCudnnPlusOneEpilogueKernel) {
  Graph g = model(kConvBiasRelu);
  auto l = lower(g, gemm_only());
  ASSERT_EQ(l.route, Route::cudnn) << l.why;
  EXPECT_EQ(l.conv.x_dims, (std::vector<int>{2, 16, 14, 14}));
  EXPECT_EQ(l.conv.w_dims, (std::vector<int>{32, 4, 3, 3}));
  EXPECT_EQ(l.conv.y_dims, (std::vector<int>{2, 32, 7, 7}));
  EXPECT_EQ(l.conv.pads, (std::vector<int>{1, 1}));
  EXPECT_EQ(l.conv.strides, (std::vector<int>{2, 2}));
  EXPECT_EQ(l.conv.groups, 4);
  EXPECT_EQ(l.epilogue.nodes.size(), 2u);  // bias Add + Relu
  Plan p = one_group(g, h200());
  auto t = cuda::measure_plan(g, p, h200(), opts(), nullptr, nullptr, false, gemm_only());
  ASSERT_EQ(t[0].launches.size(), 1u);
  EXPECT_EQ(t[0].launches[0].params.size(), 3u);  // conv output, bias, y
  EXPECT_GT(t[0].regs_measured(), 0);
  EXPECT_EQ(t[0].lowering.why, "cudnnConvolutionForward IMPLICIT_GEMM x 2x16x14x14 w 32x4x3x3 groups 4 + epilogue "
                               "kernel of 2 primitives");
  EXPECT_TRUE(t[0].lowering.prologue.nodes.empty());
}

TEST(LibraryLowering, Conv1dIsATwoDimensionalCudnnConvWithUnitHeight) {
  Graph g = model(kConv1d);
  auto l = lower(g, gemm_only());
  ASSERT_EQ(l.route, Route::cudnn) << l.why;
  EXPECT_EQ(l.conv.x_dims, (std::vector<int>{2, 8, 1, 50}));
  EXPECT_EQ(l.conv.w_dims, (std::vector<int>{16, 8, 1, 5}));
  EXPECT_EQ(l.conv.y_dims, (std::vector<int>{2, 16, 1, 25}));
  EXPECT_EQ(l.conv.pads, (std::vector<int>{0, 2}));
  EXPECT_EQ(l.conv.strides, (std::vector<int>{1, 2}));
}

// No GPU needed: cuDNN's own shape rule on the descriptors built from each
// ConvMatch gives the graph's output dims (pads, strides, dilations, groups
// and the 1-D/3-D mappings are what cuDNN will run).
TEST(CudnnDescriptors, ReproduceTheGraphsConvOutputDims) {
  std::string why;
  if (!cudnn_available(&why)) GTEST_SKIP() << "no cuDNN: " << why;
  int checked = 0;
  for (const char* text : {kConvBiasRelu, kConv1d, kConv3d, kConvDilated}) {
    Graph g = model(text);
    auto l = lower(g, gemm_only());
    ASSERT_EQ(l.route, Route::cudnn) << l.why;
    EXPECT_EQ(cudnn_output_dims(l.conv), l.conv.y_dims) << l.why;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
  EXPECT_EQ(cudnn_version().rfind("9.", 0), 0u) << cudnn_version();
}

// Bit identity across plans needs the same library call in the fused and the
// unfused plan: every (M, N, K, operands, output) GEMM and every conv of the
// cost plan is issued identically by the unfused plan.
TEST(LibraryLowering, FusedAndUnfusedPlansIssueTheSameLibraryCalls) {
  for (const char* f : {"bert_base_layer", "resnet50_bottleneck"}) {
    ImportOptions io;
    io.batch = 1;
    io.dims["S"] = 64;
    Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/" + f + ".onnxtxt", io);
    using Call = std::tuple<std::string, NodeId, NodeId, NodeId, int64_t, int64_t, int64_t>;
    auto calls = [&](const Plan& p, int* epilogue_kernels) {
      std::set<Call> s;
      for (const Group& grp : p.groups) {
        auto l = cuda::lower_group(g, grp, gemm_only());
        if (l.route == Route::cublaslt)
          s.insert({l.gemm.epilogue, l.gemm.a, l.gemm.b, l.gemm.out, l.gemm.M, l.gemm.N, l.gemm.K});
        if (l.route == Route::cudnn) s.insert({"conv", l.conv.x, l.conv.w, l.conv.out, 0, 0, 0});
        *epilogue_kernels += l.library() && !l.epilogue.nodes.empty();
      }
      return s;
    };
    int ek_unfused = 0, ek_cost = 0;
    auto u = calls(search(g, h200(), "unfused"), &ek_unfused);
    auto c = calls(search(g, h200(), "cost"), &ek_cost);
    SCOPED_TRACE(f);
    EXPECT_FALSE(u.empty());
    EXPECT_EQ(u, c);
    EXPECT_EQ(ek_unfused, 0);  // unfused: the contraction is alone in its group
    EXPECT_GT(ek_cost, 0);     // cost fuses epilogues: GEMM/conv + one epilogue kernel
  }
}

// Every group of every strategy's plan of the examples under library mode:
// the epilogue kernels compile with registers; library-only groups have none.
TEST(LibraryLowering, EveryExamplePlanCompilesInLibraryMode) {
  int library_groups = 0, epilogue_kernels = 0;
  for (const char* f : {"bert_base_layer", "resnet50_bottleneck", "mobilenetv2_inverted_residual"}) {
    ImportOptions io;
    io.batch = 1;
    io.dims["S"] = 64;
    Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/" + f + ".onnxtxt", io);
    for (const char* s : {"unfused", "xla", "cost"})
      for (const auto& lib : {gemm_only(), fused_epi()}) {
        Plan plan = search(g, h200(), s);
        auto t = cuda::measure_plan(g, plan, h200(), opts(), nullptr, nullptr, true, lib);
        ASSERT_EQ(t.size(), plan.groups.size());
        for (const auto& r : t) {
          library_groups += r.lowering.library();
          epilogue_kernels += r.lowering.library() && !r.launches.empty();
          EXPECT_EQ(r.launches.empty(), r.skipped()) << f << " " << s << " group " << r.group_id;
          for (const auto& k : r.measured) EXPECT_GT(k.regs_per_thread, 0) << f << " " << s << " " << k.kernel;
        }
      }
  }
  EXPECT_GT(library_groups, 20);
  EXPECT_GT(epilogue_kernels, 5);
}

int run_cli(const std::string& args) {
  std::string cmd = "FUSEPLAN_CACHE_DIR='" + cudatest::test_cache_dir() + "' '" + std::string(FUSEPLAN_BINARY) +
                    "' " + args + " > /dev/null 2>&1";
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/// Writes the GEMM + bias + sigmoid model with M = 64 into `dir` and searches
/// its plan on h200; returns {model, plan} paths.
std::pair<std::string, std::string> write_gemm_model_and_plan(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "gemm.onnxtxt").string(), plan = (dir / "plan.json").string();
  std::string text = kGemmBiasSigmoid;
  text.replace(text.find("float[M, 256] x"), 15, "float[64, 256] x");
  text.replace(text.find("float[M, 128] y"), 15, "float[64, 128] y");
  write_file_atomic(model, text);
  EXPECT_EQ(run_cli("search '" + model + "' --device h200 -o '" + plan + "'"), 0);
  return {model, plan};
}

// fuseplan emit (default --library all): the contraction group's .cu holds
// only its epilogue kernel, the resource table names the call; --library none
// emits the GEMM; a bad value is exit 2.
TEST(LibraryLowering, CliEmitLibraryWritesEpilogueKernelsAndNamesTheCall) {
  if (!std::filesystem::exists(FUSEPLAN_BINARY)) GTEST_SKIP() << "no fuseplan binary at " << FUSEPLAN_BINARY;
  auto dir = std::filesystem::path(cudatest::test_cache_dir()) / "cli-library";
  const auto [model, plan] = write_gemm_model_and_plan(dir);
  ASSERT_TRUE(std::filesystem::exists(plan));
  for (const std::string flag : {"", " --library all"}) {
    const auto out = dir / (flag.empty() ? "default" : "all");
    std::filesystem::remove_all(out);
    ASSERT_EQ(run_cli("emit '" + plan + "' '" + model + "' --backend cuda" + flag + " -o '" + out.string() + "'"), 0);
    auto j = nlohmann::json::parse(read_file((out / "resources.json").string()));
    int library = 0;
    for (const auto& grp : j["groups"])
      if (grp.contains("library")) {
        ++library;
        EXPECT_EQ(grp["library"]["route"], "cublaslt");
        EXPECT_EQ(grp["library"]["call"].get<std::string>().rfind("cublasLtMatmul DEFAULT 64x128x256", 0), 0u);
        EXPECT_EQ(grp["kernels"].size(), 1u);  // the epilogue kernel
      }
    EXPECT_EQ(library, 1) << flag;
    EXPECT_NE(read_file((out / "group_0.cu").string()).find("// library: cublasLtMatmul DEFAULT"), std::string::npos);
  }
  const auto none = dir / "none";
  std::filesystem::remove_all(none);
  ASSERT_EQ(run_cli("emit '" + plan + "' '" + model + "' --backend cuda --library none -o '" + none.string() + "'"), 0);
  auto j = nlohmann::json::parse(read_file((none / "resources.json").string()));
  for (const auto& grp : j["groups"]) EXPECT_FALSE(grp.contains("library") || grp.contains("fallback"));
  EXPECT_EQ(read_file((none / "group_0.cu").string()).find("// library:"), std::string::npos);
  EXPECT_EQ(run_cli("emit '" + plan + "' '" + model + "' --backend cuda --library bogus -o '" + (dir / "x").string() +
                    "'"),
            2);
}

// Regression: emit with a CPU device wrote the .cu files, then failed; a
// second plan emitted into the same folder left the first plan's extra groups.
TEST(LibraryLowering, CliEmitChecksTheDeviceFirstAndReplacesAnEarlierEmission) {
  if (!std::filesystem::exists(FUSEPLAN_BINARY)) GTEST_SKIP() << "no fuseplan binary at " << FUSEPLAN_BINARY;
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(cudatest::test_cache_dir()) / "cli-emit-device";
  fs::remove_all(dir);
  const auto [model, plan] = write_gemm_model_and_plan(dir);
  ASSERT_TRUE(fs::exists(plan));
  const fs::path out = dir / "out";
  EXPECT_EQ(run_cli("emit '" + plan + "' '" + model + "' --device host-cpu-reference -o '" + out.string() + "'"), 2);
  EXPECT_FALSE(fs::exists(out));  // refused before the folder is created
  fs::create_directories(out);
  write_file_atomic((out / "group_99.cu").string(), "// an earlier plan's group\n");
  write_file_atomic((out / "notes.txt").string(), "mine\n");
  // A non-empty folder is refused and left as it is; --force replaces it
  // whole, so no earlier plan's file stays beside this plan's kernels
  // (support/outputs.h).
  EXPECT_EQ(run_cli("emit '" + plan + "' '" + model + "' --no-compile -o '" + out.string() + "'"), 2);
  EXPECT_TRUE(fs::exists(out / "notes.txt"));
  ASSERT_EQ(run_cli("emit '" + plan + "' '" + model + "' --no-compile --force -o '" + out.string() + "'"), 0);
  EXPECT_TRUE(fs::exists(out / "group_0.cu"));
  EXPECT_FALSE(fs::exists(out / "group_99.cu"));
  EXPECT_FALSE(fs::exists(out / "notes.txt"));
}

TEST(LibraryLowering, LoweredSourcesAreDeterministic) {
  Graph g = model(kConvBiasRelu);
  Plan p = one_group(g, h200());
  auto a = cuda::plan_sources(g, p, h200(), false, fused_epi());
  auto b = cuda::plan_sources(g, p, h200(), false, fused_epi());
  EXPECT_EQ(a[0].source, b[0].source);
  EXPECT_EQ(cuda::LibraryOptions{}.str(), "cublaslt+cudnn");
  EXPECT_EQ(fused_epi().str(), "cublaslt+fused-epilogue+cudnn");
  EXPECT_EQ(cuda::LibraryOptions::none().str(), "emitted");
}

}  // namespace
}  // namespace fuseplan
#endif
