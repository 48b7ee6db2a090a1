// Runs plans on a GPU and compares with the CPU reference executor; skips
// with one line where no CUDA device is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "emit/cuda/cuda_backend.h"
#include "support/files.h"
#include "graph/import.h"
#include "exec/cuda_run.h"
#include "exec/cudnn_conv.h"
#include "search/strategy.h"
#include "exec/tensor_data.h"
#include "tests/builder.h"
#include "tests/cuda_util.h"

namespace fuseplan {
namespace {

#define REQUIRE_GPU()                                                      \
  do {                                                                     \
    CudaDeviceStatus st = cuda_device_status();                            \
    if (!st.available) GTEST_SKIP() << "no CUDA device: " << st.reason;    \
  } while (0)

// Opaque groups get no kernel (measure_plan skips them): the GPU runner
// refuses the plan with the CPU runner's message, with or without a device.
TEST(GpuRun, RefusesOpaquePrimitivesBeforeTouchingTheDevice) {
  ImportOptions io;
  io.batch = 1;
  io.dims = {{"seq_len", 16}, {"past_seq_len", 16}, {"total_seq_len", 32}};
  Graph g = import_model(std::string(FUSEPLAN_SHARED_DIR) + "/models/onnx/gpt2_tiny_ortfused_genai.onnx", io);
  DeviceSpec d = load_device("h200");
  Plan p = search(g, d, "unfused");
  try {
    run_plan_cuda(g, p, d, {});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot execute opaque primitive '", 0), 0u) << e.what();
  }
}

TEST(GpuRun, FusedAndUnfusedSoftmaxAreBitIdenticalAndCloseToReference) {
  REQUIRE_GPU();
  Graph g = cudatest::model(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x) => (float[N, C] y) {
  y = Softmax<axis = -1>(x)
})", {{"N", 256}, {"C", 1024}});
  DeviceSpec d = load_device("h200");
  auto src = make_source_data(g);
  Plan fused = cudatest::one_group(g, d);
  std::vector<std::vector<NodeId>> parts;
  for (NodeId n : cudatest::computed(g)) parts.push_back({n});
  Plan unfused = make_plan(g, d, parts, "unfused");
  auto a = run_plan_cuda(g, fused, d, src);
  auto b = run_plan_cuda(g, unfused, d, src);
  for (auto& [name, t] : a.outputs) EXPECT_EQ(t.data, b.outputs.at(name).data) << name;
  // Block-reduction order vs the CPU's sequential sum: a few float32 ulps per
  // element over a 1024-long row (bound justified in docs/cuda.md).
  EXPECT_LT(a.max_rel_error, 1e-5);
}

// A nested reduction (search/nested_reduction.h) as one kernel: each level
// folds in the block order of its unfused kernel, so the bits match the
// unfused plan; the intermediate, a graph output, is written from the nest.
// The outer mean over 600 sums folds 2-3 of them per thread of 256: its
// order is exercised, not only the inner one's.
TEST(GpuRun, NestedReductionIsBitIdenticalToTheUnfusedReductions) {
  REQUIRE_GPU();
  Graph g = cudatest::model(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C, K] x) => (float[N, C] s, float[N] y) {
  ax = Constant<value = int64[1] {-1}>()
  s = ReduceSum<keepdims = 0>(x, ax)
  y = ReduceMean<axes = [-1], keepdims = 0>(s)
})", {{"N", 64}, {"C", 600}, {"K", 1000}});
  DeviceSpec d = load_device("h200");
  auto src = make_source_data(g);
  Plan fused = cudatest::one_group(g, d);
  ASSERT_EQ(fused.groups.size(), 1u);
  std::vector<std::vector<NodeId>> parts;
  for (NodeId n : cudatest::computed(g)) parts.push_back({n});
  Plan unfused = make_plan(g, d, parts, "unfused");
  auto a = run_plan_cuda(g, fused, d, src);
  auto b = run_plan_cuda(g, unfused, d, src);
  EXPECT_EQ(a.launches, 1);
  for (auto& [name, t] : a.outputs) EXPECT_EQ(t.data, b.outputs.at(name).data) << name;
  // Block order vs the CPU's sequential sum over 1000-long rows.
  EXPECT_LT(a.max_rel_error, 1e-5);
}

// Linear Resize (2x of H, W; half_pixel and align_corners) against the CPU
// reference: the emitted kernel runs fprt::resize_linear's exact operations
// (corner order, weights), so only the last bits may differ (division is
// IEEE on both sides with -fmad=false).
TEST(GpuRun, LinearResizeMatchesTheCpuReference) {
  REQUIRE_GPU();
  for (const char* mode : {"half_pixel", "align_corners"}) {
    test::Builder b;
    auto x = b.input("x", {1, 3, 17, 23});
    auto y = b.op("y", "Resize", OpClass::injective, {x}, {1, 3, 34, 46},
                  {{"mode", std::string("linear")}, {"scales", std::vector<double>{1, 1, 2, 2}},
                   {"coordinate_transformation_mode", std::string(mode)}});
    Graph& g = b.done({y});
    DeviceSpec d = load_device("h200");
    auto src = make_source_data(g);
    auto r = run_plan_cuda(g, cudatest::one_group(g, d), d, src);
    EXPECT_LT(r.max_rel_error, 1e-6) << mode;
  }
}

// Scalar constants are immediates (graph/op_attrs.h): the kernels compute
// with the literal the CPU reference reads from its buffer, so exact IEEE
// ops give the reference's bits, fused and unfused.
TEST(GpuRun, ScalarConstantImmediatesMatchTheCpuReferenceExactly) {
  REQUIRE_GPU();
  test::Builder b;
  auto x = b.input("x", {64, 256});
  auto k = b.weight("k", {}, {0.1f});
  auto ninf = b.weight("ninf", {1}, {-std::numeric_limits<float>::infinity()});
  auto m = b.op("m", "Mul", OpClass::broadcast, {x, k}, {64, 256});
  auto y = b.op("y", "Max", OpClass::broadcast, {m, ninf}, {64, 256});
  auto i = b.ints("i", {1}, {-7});
  auto xi = b.op("xi", "Cast", OpClass::elementwise, {x}, {64, 256}, {{"to", int64_t{7}}}, DType::i64);
  auto yi = b.op("yi", "Add", OpClass::broadcast, {xi, i}, {64, 256}, {}, DType::i64);
  Graph& g = b.done({y, yi});
  DeviceSpec d = load_device("h200");
  auto src = make_source_data(g);
  auto a = run_plan_cuda(g, cudatest::one_group(g, d), d, src);
  auto u = run_plan_cuda(g, make_plan(g, d, {{m}, {y}, {xi}, {yi}}, "unfused"), d, src);
  for (auto& [name, t] : a.outputs) EXPECT_EQ(t.data, u.outputs.at(name).data) << name;
  EXPECT_EQ(a.max_rel_error, 0);
  EXPECT_EQ(u.max_rel_error, 0);
}

// Times the unfused and cost plans of every example at batch 1 and 64 and
// writes a Markdown table to $FUSEPLAN_GPU_RESULTS (tests/gpu/run.sh).
TEST(GpuRun, TimesFusedAndUnfusedPlansOfEveryExample) {
  REQUIRE_GPU();
  const char* out = std::getenv("FUSEPLAN_GPU_RESULTS");
  std::string md = "| model | batch | strategy | kernels | launches | median us | max rel err vs CPU |\n|---|---|---|---|---|---|---|\n";
  DeviceSpec d = load_device("h200");
  for (const char* f : {"bert_base_layer", "gpt2_block", "resnet50_bottleneck", "mobilenetv2_inverted_residual",
                        "vit_block"})
    for (int64_t batch : {1, 64}) {
      ImportOptions o;
      o.batch = batch;
      o.dims["S"] = 128;
      Graph g = import_model(std::string(FUSEPLAN_SOURCE_DIR) + "/examples/" + f + ".onnxtxt", o);
      auto src = make_source_data(g);
      std::map<std::string, Tensor> first;
      for (const char* s : {"unfused", "cost"}) {
        Plan plan = search(g, d, s);
        CudaRunOptions ro;
        ro.verify = batch == 1;  // the CPU reference at batch 64 would take most of the GPU run's budget
        auto r = run_plan_cuda(g, plan, d, src, ro);
        if (first.empty()) first = r.outputs;
        else
          for (auto& [name, t] : r.outputs) EXPECT_EQ(t.data, first.at(name).data) << f << " " << s << " " << name;
        md += std::string("| ") + f + " | " + std::to_string(batch) + " | " + s + " | " +
              std::to_string(plan.groups.size()) + " | " + std::to_string(r.launches) + " | " +
              std::to_string(r.median_us) + " | " + (ro.verify ? std::to_string(r.max_rel_error) : "-") + " |\n";
      }
    }
  if (out) write_file_atomic(out, "# GPU timings (" + cuda_device_status().name + ")\n\n" + md);
}

const char* kGemmBiasRelu = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[M, K] x, float[K, N] w, float[N] b) => (float[M, N] y) {
  t = MatMul(x, w)
  u = Add(t, b)
  y = Relu(u)
})";

// Runs here: the contraction group MatMul + bias + ReLU is covered entirely
// by cuBLASLt's RELU_BIAS epilogue, with the operands the runtime passes.
TEST(Cublaslt, MatchNamesTheOperandsOfAFullyCoveredGroup) {
  Graph g = cudatest::model(kGemmBiasRelu, {{"M", 96}, {"K", 64}, {"N", 48}});
  Plan p = cudatest::one_group(g, load_device("h200"));
  auto m = cuda::match_cublaslt(g, p.groups[0]);
  EXPECT_EQ(m.epilogue, "RELU_BIAS");
  EXPECT_EQ(m.remaining, 0);
  ASSERT_TRUE(m.callable());
  EXPECT_EQ(m.a, g.find("x"));
  EXPECT_EQ(m.b, g.find("w"));
  EXPECT_EQ(m.bias, g.find("b"));
  EXPECT_EQ(m.out, g.find("y"));
  EXPECT_EQ(m.M, 96);
  EXPECT_EQ(m.N, 48);
  EXPECT_EQ(m.K, 64);
}

// The same group as the emitted per-element GEMM (--library none) and through
// cublasLtMatmul with its RELU_BIAS epilogue (opt-in). Another summation
// order, so the check is the float32 error bound of a K-term dot product
// (each order within gamma_K * sum|a*b| of the exact value, gamma_K ~ K * 2^-24):
// |lib - emitted| <= 2 * K * 2^-24 * (sum_k |x_ik * w_kj| + |b_j|).
TEST(GpuRun, CublasltReluBiasEpilogueMatchesTheEmittedGemmWithinTheDotProductBound) {
  REQUIRE_GPU();
  std::string why;
  if (!cublaslt_available(&why)) GTEST_SKIP() << "no cuBLASLt: " << why;
  const int64_t M = 256, K = 512, N = 384;
  Graph g = cudatest::model(kGemmBiasRelu, {{"M", M}, {"K", K}, {"N", N}});
  DeviceSpec d = load_device("h200");
  auto src = make_source_data(g);
  Plan plan = cudatest::one_group(g, d);
  CudaRunOptions emitted, lib;
  emitted.library = cuda::LibraryOptions::none();
  lib.library.fused_epilogue = true;
  auto a = run_plan_cuda(g, plan, d, src, emitted);
  auto b = run_plan_cuda(g, plan, d, src, lib);
  EXPECT_EQ(b.library_calls, 1);
  const Tensor& x = src.at(g.find("x"));
  const Tensor& w = src.at(g.find("w"));
  const Tensor& bias = src.at(g.find("b"));
  const Tensor& ya = a.outputs.at("y");
  const Tensor& yb = b.outputs.at("y");
  int64_t bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double mag = std::fabs(bias.get(j));
      for (int64_t k = 0; k < K; ++k) mag += std::fabs(x.get(i * K + k) * w.get(k * N + j));
      const double tol = 2.0 * K * std::ldexp(1.0, -24) * mag + 1e-30;
      bad += std::fabs(ya.get(i * N + j) - yb.get(i * N + j)) > tol;
    }
  EXPECT_EQ(bad, 0);
  std::printf("emitted %.1f us, cuBLASLt %.1f us\n", a.median_us, b.median_us);
}

// The library route (emit/cuda/lowering.h, the default): a prologue (ReLU) fused before the
// first GEMM, bias + sigmoid epilogues after both. Fused: 2 groups; unfused:
// one primitive per group.
const char* kMlp = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[M, K] x, float[K, H] w1, float[H] b1, float[H, N] w2, float[N] b2) => (float[M, N] y) {
  r = Relu(x)
  mm1 = MatMul(r, w1)
  a1 = Add(mm1, b1)
  s1 = Sigmoid(a1)
  mm2 = MatMul(s1, w2)
  a2 = Add(mm2, b2)
  y = Sigmoid(a2)
})";

std::pair<Plan, Plan> mlp_plans(const Graph& g, const DeviceSpec& d) {
  auto f = [&](const char* n) { return g.find(n); };
  Plan fused = make_plan(g, d, {{f("r"), f("mm1"), f("a1"), f("s1")}, {f("mm2"), f("a2"), f("y")}}, "fused");
  std::vector<std::vector<NodeId>> parts;
  for (NodeId n : cudatest::computed(g)) parts.push_back({n});
  return {fused, make_plan(g, d, parts, "unfused")};
}

// Runs here: both fused groups go to cuBLASLt (the first with a prologue
// kernel), so the GPU test below exercises prologue + GEMM + epilogue.
TEST(LibraryMode, MlpGroupsLowerToPrologueGemmEpilogue) {
  Graph g = cudatest::model(kMlp, {{"M", 128}, {"K", 256}, {"H", 192}, {"N", 64}});
  DeviceSpec d = load_device("h200");
  auto [fused, unfused] = mlp_plans(g, d);
  const cuda::LibraryOptions lib;  // the default
  auto src = cuda::plan_sources(g, fused, d, true, lib);
  ASSERT_EQ(src.size(), 2u);
  EXPECT_EQ(src[0].launches.size(), 2u);  // prologue (ReLU), epilogue (bias + sigmoid)
  EXPECT_EQ(src[0].library_slot, 1);
  EXPECT_EQ(src[1].launches.size(), 1u);
  EXPECT_EQ(src[1].library_slot, 0);
  auto l0 = cuda::lower_group(g, fused.groups[0], lib);
  EXPECT_EQ(l0.why, "cublasLtMatmul DEFAULT 128x192x256 after a prologue kernel of 1 primitives + epilogue kernel of "
                    "2 primitives");
}

TEST(GpuRun, LibraryGemmWithPrologueAndEpilogueKernelsIsBitIdenticalAcrossPlans) {
  REQUIRE_GPU();
  std::string why;
  if (!cublaslt_available(&why)) GTEST_SKIP() << "no cuBLASLt: " << why;
  Graph g = cudatest::model(kMlp, {{"M", 512}, {"K", 256}, {"H", 384}, {"N", 128}});
  DeviceSpec d = load_device("h200");
  auto src = make_source_data(g);
  auto [fused, unfused] = mlp_plans(g, d);
  CudaRunOptions lib;  // the default: cuBLASLt, DEFAULT epilogue
  auto a = run_plan_cuda(g, fused, d, src, lib);
  auto b = run_plan_cuda(g, unfused, d, src, lib);
  EXPECT_EQ(a.library_calls, 2);
  EXPECT_EQ(b.library_calls, 2);
  EXPECT_EQ(a.launches, 5);  // prologue, GEMM, epilogue, GEMM, epilogue
  EXPECT_EQ(b.launches, 7);
  for (auto& [name, t] : a.outputs) EXPECT_EQ(t.data, b.outputs.at(name).data) << name;
  // vs the CPU reference (sequential k order): sigmoid outputs in (0, 1) of
  // K-term f32 dot products: 1e-4 relative is ~40x the dot-product bound.
  EXPECT_LT(a.max_rel_error, 1e-4);
  CudaRunOptions fe = lib;
  fe.library.fused_epilogue = true;  // BIAS in cuBLASLt, sigmoid in the kernel: tolerance, not identity
  auto c = run_plan_cuda(g, fused, d, src, fe);
  EXPECT_EQ(c.library_calls, 2);
  EXPECT_LT(c.max_rel_error, 1e-4);
  std::printf("library GEMM + epilogue: fused %.1f us (%lld launches), unfused %.1f us, fused epilogue %.1f us; "
              "max rel err %.2e / %.2e\n",
              a.median_us, static_cast<long long>(a.launches), b.median_us, c.median_us, a.max_rel_error,
              c.max_rel_error);
}

const char* kConvBiasSigmoid = R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[2, 16, 28, 28] x, float[32, 16, 3, 3] w, float[32] b) => (float[2, 32, 28, 28] y) {
  c = Conv<pads = [1, 1, 1, 1]>(x, w, b)
  y = Sigmoid(c)
})";

TEST(GpuRun, CudnnConvPlusEpilogueKernelIsBitIdenticalAcrossPlans) {
  REQUIRE_GPU();
  std::string why;
  if (!cudnn_available(&why)) GTEST_SKIP() << "no cuDNN: " << why;
  Graph g = cudatest::model(kConvBiasSigmoid);
  DeviceSpec d = load_device("h200");
  auto src = make_source_data(g);
  Plan fused = cudatest::one_group(g, d);
  std::vector<std::vector<NodeId>> parts;
  for (NodeId n : cudatest::computed(g)) parts.push_back({n});
  Plan unfused = make_plan(g, d, parts, "unfused");
  CudaRunOptions lib, emitted;  // the default: cuDNN
  emitted.library = cuda::LibraryOptions::none();
  auto a = run_plan_cuda(g, fused, d, src, lib);
  auto b = run_plan_cuda(g, unfused, d, src, lib);
  auto e = run_plan_cuda(g, fused, d, src, emitted);  // emitted direct convolution
  EXPECT_EQ(a.library_calls, 1);
  EXPECT_EQ(b.library_calls, 1);
  EXPECT_EQ(a.launches, 2);  // cuDNN conv + one epilogue kernel (bias + sigmoid)
  for (auto& [name, t] : a.outputs) EXPECT_EQ(t.data, b.outputs.at(name).data) << name;
  EXPECT_LT(a.max_rel_error, 1e-4);  // 144-term dot products under a sigmoid
  std::printf("cuDNN conv + epilogue %.1f us (unfused %.1f us, emitted %.1f us), max rel err %.2e\n", a.median_us,
              b.median_us, e.median_us, a.max_rel_error);
}

TEST(GpuRun, DeviceStatusNeverThrows) {
  CudaDeviceStatus st = cuda_device_status();
  if (!st.available) {
    EXPECT_FALSE(st.reason.empty());
  }
}

}  // namespace
}  // namespace fuseplan
