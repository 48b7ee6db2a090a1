// Emitted CPU kernels give bit-identical outputs to the reference executor,
// fused or not; the kernel cache hits; model names cannot inject code.
#include <gtest/gtest.h>

#include <set>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "tests/builder.h"
#include "emit/cpu/compiler.h"
#include "emit/cpu/cpp_printer.h"
#include "emit/cpu/cpu_backend.h"
#include "emit/cpu/runtime.h"
#include "emit/kernel_plan.h"
#include "exec/cpu_run.h"
#include "graph/layout.h"

namespace fuseplan {
namespace {

using test::Builder;
using test::hand_plan;
using test::unfused_plan;
using V = std::vector<int64_t>;
const std::map<std::string, AttrValue> kRow = {{"axes", V{1}}, {"keepdims", int64_t{1}}};

void expect_identical(const Graph& g, const Plan& plan) {
  RunOptions o;
  o.verify = true;
  o.repeat = 1;
  RunResult r = run_plan(g, plan, o);
  EXPECT_TRUE(r.verified);
  EXPECT_TRUE(r.ok) << verify_message(r);
  EXPECT_EQ(r.groups.size(), plan.groups.size());
}

struct Softmax {
  NodeId x, mx, sub, ex, sum, y;
};
Softmax softmax(Builder& b, NodeId x, int64_t n, int64_t c, const std::string& name = "y") {
  Softmax s{};
  s.x = x;
  s.mx = b.op(name + "/max", "ReduceMax", OpClass::reduction, {x}, {n, 1}, kRow);
  s.sub = b.op(name + "/sub", "Sub", OpClass::broadcast, {x, s.mx}, {n, c});
  s.ex = b.op(name + "/exp", "Exp", OpClass::elementwise, {s.sub}, {n, c});
  s.sum = b.op(name + "/sum", "ReduceSum", OpClass::reduction, {s.ex}, {n, 1}, kRow);
  s.y = b.op(name, "Div", OpClass::broadcast, {s.ex, s.sum}, {n, c});
  return s;
}

TEST(CpuEmit, BiasReluFusedLoopIsBitIdentical) {
  Builder b;
  auto x = b.input("x", {64, 1000});
  auto bias = b.weight("bias", {1000});
  auto t = b.op("t", "Add", OpClass::broadcast, {x, bias}, {64, 1000});
  auto y = b.op("y", "Relu", OpClass::elementwise, {t}, {64, 1000});
  auto& g = b.done({y});
  expect_identical(g, unfused_plan(g));
  expect_identical(g, hand_plan(g, {{t, y}}));
}

// Every buffer of a run starts on its own 4 KiB page (exec/page_arena.h
// PageArena), followed by 1 to 4 unused gap pages: a tensor's cold state
// after a flush must not depend on its neighbours. Regressions: 64-byte-aligned
// heap tensors shared prefetch pairs (distilbert_tiny's bias adds of one shape
// measured 0.03 or 0.2 us); without the gap the next-page prefetcher warmed
// zoo_candy's bias scalars after a streamed weight; with one gap page each,
// tensors read in turn lay at a constant stride the prefetchers learned
// (64 one-line sources read in turn: 2 of 64 cold after a flush).
TEST(CpuEmit, RunBuffersStartOnTheirOwnPagesAtNoConstantStrideAndOutputsStayIdentical) {
  Builder b;
  auto x = b.input("x", {3, 5});
  auto bias = b.weight("bias", {5});  // 20 bytes: shared a line pair with its neighbours before
  auto t = b.op("t", "Add", OpClass::broadcast, {x, bias}, {3, 5});
  auto y = b.op("y", "Relu", OpClass::elementwise, {t}, {3, 5});
  auto& g = b.done({y});
  RunOptions o;
  o.verify = true;
  o.repeat = 2;
  std::vector<std::uintptr_t> starts;
  o.before_repetition = [&](int r, std::span<const std::span<const std::byte>> buffers) {
    if (r > 0) return;
    for (auto buf : buffers) starts.push_back(reinterpret_cast<std::uintptr_t>(buf.data()));
  };
  RunResult r = run_plan(g, unfused_plan(g), o);
  EXPECT_TRUE(r.ok) << verify_message(r);
  ASSERT_EQ(starts.size(), 4u);  // x, bias, t, y
  std::sort(starts.begin(), starts.end());
  std::set<std::uintptr_t> strides;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    EXPECT_EQ(starts[i] % 4096, 0u) << i;
    // Each tensor (60 bytes or less here) has its page and 1 to 4 unused
    // pages after it, where the next-page prefetcher lands.
    if (i > 0) {
      EXPECT_GE(starts[i] - starts[i - 1], 2 * 4096u) << i;
      EXPECT_LE(starts[i] - starts[i - 1], 5 * 4096u) << i;
      strides.insert(starts[i] - starts[i - 1]);
    }
  }
  EXPECT_GT(strides.size(), 1u);  // no constant stride
}

// A row-resident kernel plan that evaluates a float transcendental runs
// stage by stage on the CPU (emit/cpu/cpp_printer.cpp runs_stage_by_stage:
// softmax's max .. exp over distilbert_tiny's rows of 128 took 18.1 us row by
// row, 14.7 stage by stage), rows of 515 (one lane) and of 128 (16 lanes),
// whole and split as the cost plans split it; the bits do not change.
TEST(CpuEmit, MultipassSoftmaxRunsStageByStageAndIsBitIdentical) {
  for (const int64_t c : {515, 128}) {
    SCOPED_TRACE(c);
    Builder b;
    auto x = b.input("x", {37, c});
    auto s = softmax(b, x, 37, c);
    auto& g = b.done({s.y});
    for (const Plan& p : {hand_plan(g, {{s.mx, s.sub, s.ex, s.sum, s.y}}), hand_plan(g, {{s.mx, s.sub, s.ex}, {s.sum, s.y}})}) {
      EXPECT_GT(plan_kernel(g, p.groups[0]).row_dims, 0);  // a row-resident kernel plan ...
      expect_identical(g, p);
      const std::string src = cpu::plan_source(g, p);
      EXPECT_EQ(src.find("// kernel of group 0 (row-resident"), std::string::npos) << src;  // ... run stage by stage
      // sum .. div, split off, evaluates no transcendental: row by row
      if (p.groups.size() == 2) EXPECT_NE(src.find("// kernel of group 1 (row-resident"), std::string::npos) << src;
    }
    expect_identical(g, unfused_plan(g));
  }
}

TEST(CpuEmit, LayerNormMultipassAndReductionPrologueAreBitIdentical) {
  Builder b;
  auto x = b.input("x", {8, 3, 129});
  auto eps = b.weight("eps", {}, {1e-5f});
  auto scale = b.weight("scale", {129});
  std::map<std::string, AttrValue> last = {{"axes", V{2}}, {"keepdims", int64_t{1}}};
  auto mean = b.op("m", "ReduceMean", OpClass::reduction, {x}, {8, 3, 1}, last);
  auto d = b.op("d", "Sub", OpClass::broadcast, {x, mean}, {8, 3, 129});
  auto sq = b.op("sq", "Mul", OpClass::elementwise, {d, d}, {8, 3, 129});
  auto var = b.op("var", "ReduceMean", OpClass::reduction, {sq}, {8, 3, 1}, last);
  auto ve = b.op("ve", "Add", OpClass::broadcast, {var, eps}, {8, 3, 1});
  auto sd = b.op("sd", "Sqrt", OpClass::elementwise, {ve}, {8, 3, 1});
  auto nm = b.op("nm", "Div", OpClass::broadcast, {d, sd}, {8, 3, 129});
  auto y = b.op("y", "Mul", OpClass::broadcast, {nm, scale}, {8, 3, 129});
  // sum of squares over all but the batch axis: a reduction with a prologue
  auto x2 = b.op("x2", "Mul", OpClass::elementwise, {x, x}, {8, 3, 129});
  auto ss = b.op("ss", "ReduceSum", OpClass::reduction, {x2}, {8}, {{"axes", V{1, 2}}, {"keepdims", int64_t{0}}});
  auto& g = b.done({y, ss});
  expect_identical(g, unfused_plan(g));
  const Plan p = hand_plan(g, {{mean, d, sq, var, ve, sd, nm, y}, {x2, ss}});
  expect_identical(g, p);
  // No transcendental: the LayerNorm runs row by row, each row in L1 for its
  // next pass (bert_base_layer's: 35-40 us so, 48-52 stage by stage).
  const std::string src = cpu::plan_source(g, p);
  EXPECT_NE(src.find("// kernel of group 0 (row-resident, 2 row dims)"), std::string::npos) << src;
}

TEST(CpuEmit, DuplicatedProducerIntoTwoReductionsIsBitIdentical) {
  Builder b;
  auto x = b.input("x", {33, 70});
  auto p = b.op("p", "Exp", OpClass::elementwise, {x}, {33, 70});
  auto r0 = b.op("r0", "ReduceSum", OpClass::reduction, {p}, {1, 70}, {{"axes", V{0}}, {"keepdims", int64_t{1}}});
  auto r1 = b.op("r1", "ReduceMax", OpClass::reduction, {p}, {33, 1}, kRow);
  auto& g = b.done({r0, r1});
  Plan plan = hand_plan(g, {{p, r0}, {p, r1}});
  EXPECT_TRUE(plan.groups[0].materialised.size() == 1 && plan.groups[1].duplicated.size() == 1);
  expect_identical(g, plan);
}

TEST(CpuEmit, ContractionWithReluEpilogueIsBitIdentical) {
  Builder b;
  auto x = b.input("x", {2, 5, 9, 11});
  auto w = b.weight("w", {6, 5, 3, 3});
  auto bias = b.weight("bias", {6, 1, 1});
  auto c = b.op("c", "Conv", OpClass::contraction, {x, w}, {2, 6, 9, 11},
                {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}});
  auto cb = b.op("cb", "Add", OpClass::broadcast, {c, bias}, {2, 6, 9, 11});
  auto r = b.op("r", "Relu", OpClass::elementwise, {cb}, {2, 6, 9, 11});
  auto mp = b.op("mp", "MaxPool", OpClass::reduction, {r}, {2, 6, 4, 5}, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}});
  auto a = b.input("a", {3, 40, 70});
  auto m = b.weight("m", {70, 90});
  auto mm = b.op("mm", "MatMul", OpClass::contraction, {a, m}, {3, 40, 90});
  auto mr = b.op("mr", "Relu", OpClass::elementwise, {mm}, {3, 40, 90});
  auto& g = b.done({mp, mr});
  expect_identical(g, unfused_plan(g));
  expect_identical(g, hand_plan(g, {{c, cb, r}, {mp}, {mm, mr}}));
  expect_identical(g, hand_plan(g, {{c, cb, r, mp}, {mm, mr}}));
}

// The epilogue of a contraction runs per finished GEMM tile (in cache),
// written in place over the contraction's output when that is not
// materialised; a member reading the contraction at other coordinates keeps
// the whole-output epilogue. Shapes straddle the tile sizes (6 x 32 micro,
// 96 rows, K blocks of 256) so partial tiles and several K blocks occur.
TEST(CpuEmit, ContractionEpiloguePerTileIsBitIdentical) {
  Builder b;
  auto x = b.input("x", {2, 8, 13, 17});
  auto w = b.weight("w", {100, 8, 3, 3});
  auto bias = b.weight("bias", {100, 1, 1});
  auto c = b.op("c", "Conv", OpClass::contraction, {x, w}, {2, 100, 13, 17},
                {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}});
  auto cb = b.op("cb", "Add", OpClass::broadcast, {c, bias}, {2, 100, 13, 17});
  auto r = b.op("r", "Relu", OpClass::elementwise, {cb}, {2, 100, 13, 17});
  auto a = b.input("a", {3, 101, 300});
  auto m = b.weight("m", {300, 70});
  auto mb = b.weight("mb", {70});
  auto mm = b.op("mm", "MatMul", OpClass::contraction, {a, m}, {3, 101, 70});
  auto ma = b.op("ma", "Add", OpClass::broadcast, {mm, mb}, {3, 101, 70});
  auto sg = b.op("sg", "Sigmoid", OpClass::elementwise, {ma}, {3, 101, 70});
  auto mu = b.op("mu", "Mul", OpClass::elementwise, {ma, sg}, {3, 101, 70});
  auto a2 = b.input("a2", {40, 33});
  auto m2 = b.weight("m2", {33, 50});
  auto mm2 = b.op("mm2", "MatMul", OpClass::contraction, {a2, m2}, {40, 50});
  auto tr = b.op("tr", "Transpose", OpClass::layout, {mm2}, {50, 40}, {{"perm", V{1, 0}}});
  auto ex = b.op("ex", "Exp", OpClass::elementwise, {tr}, {50, 40});
  auto& g = b.done({r, mu, ma, ex});
  // conv+bias+relu: c, cb not materialised (relu's buffer is updated in place);
  // matmul+bias+silu with the bias add materialised too (two epilogue stages);
  // matmul then transpose: not per tile.
  Plan plan = hand_plan(g, {{c, cb, r}, {mm, ma, sg, mu}, {mm2, tr, ex}});
  std::string src = cpu::plan_source(g, plan);
  EXPECT_NE(src.find("fprt::conv_epilogue("), std::string::npos);
  EXPECT_NE(src.find("fprt::matmul_epilogue("), std::string::npos);
  EXPECT_EQ(src.find("fprt::matmul_epilogue(", src.find("fp_group_2")), std::string::npos);
  expect_identical(g, plan);
  cpu::set_tile_epilogue(false);
  std::string off = cpu::plan_source(g, plan);
  EXPECT_EQ(off.find("fprt::conv_epilogue("), std::string::npos);
  EXPECT_EQ(off.find("fprt::matmul_epilogue("), std::string::npos);
  expect_identical(g, plan);
  cpu::set_tile_epilogue(true);
}

// Kernel scratch (fprt::scratch_alloc): a block of 1 MiB or more comes back
// to the next request of its size instead of a fresh mmap whose pages fault
// in again on every call (BERT's 96 MiB attention scratch at batch 8 x
// sequence 512: 106 ms per call, 46 with the block kept); the kept bytes
// stay within kScratchKeepBytes, the oldest evicted first; a conv epilogue's
// scratch in an emitted kernel goes through it.
TEST(CpuEmit, LargeKernelScratchIsKeptForTheNextCallWithinItsBound) {
  const std::size_t mib = std::size_t(1) << 20;
  void* a = fprt::scratch_alloc(3 * mib + 1);
  fprt::scratch_free(a, 3 * mib + 1);
  EXPECT_EQ(fprt::scratch_alloc(3 * mib + 1), a);  // the kept block
  void* b = fprt::scratch_alloc(5 * mib);           // another size: not that block
  EXPECT_NE(b, a);
  fprt::scratch_free(b, 5 * mib);
  fprt::scratch_free(a, 3 * mib + 1);
  // Blocks never touched: 3 x 400 MiB of address space, kept bytes <= 1 GiB.
  const std::size_t big = 400 * mib;
  void* blocks[3] = {fprt::scratch_alloc(big), fprt::scratch_alloc(big), fprt::scratch_alloc(big)};
  for (void* p : blocks) fprt::scratch_free(p, big);
  EXPECT_LE(fprt::scratch_cache().bytes, fprt::kScratchKeepBytes);
  EXPECT_EQ(fprt::scratch_alloc(big), blocks[1]);  // the two newest stayed, oldest first
  EXPECT_EQ(fprt::scratch_alloc(big), blocks[2]);
  void* fresh = fprt::scratch_alloc(big);  // blocks[0] was evicted (freed): a new block
  fprt::scratch_free(fresh, big);
  fprt::scratch_free(blocks[1], big);
  fprt::scratch_free(blocks[2], big);

  Builder g0;
  auto x = g0.input("x", {1, 16, 64, 64});
  auto w = g0.weight("w", {64, 16, 1, 1});
  auto c = g0.op("c", "Conv", OpClass::contraction, {x, w}, {1, 64, 64, 64}, {{"kernel_shape", V{1, 1}}});
  auto r = g0.op("r", "Sigmoid", OpClass::elementwise, {c}, {1, 64, 64, 64});
  auto t = g0.op("t", "Transpose", OpClass::layout, {r}, {1, 64, 64, 64}, {{"perm", V{0, 1, 3, 2}}});
  auto& g = g0.done({t});
  const Plan plan = test::hand_plan(g, {{c, r, t}});
  EXPECT_NE(cpu::plan_source(g, plan).find("fprt::scratch_alloc("), std::string::npos);
  expect_identical(g, plan);
}

TEST(CpuEmit, HorizontalGroupAndInjectiveChainsAreBitIdentical) {
  Builder b;
  auto x = b.input("x", {4, 6, 10});
  auto z = b.input("z", {4, 6, 10});
  auto s = b.op("s", "Slice", OpClass::injective, {x}, {4, 6, 4}, {{"starts", V{1}}, {"axes", V{2}}, {"steps", V{2}}});
  auto e = b.op("e", "Sigmoid", OpClass::elementwise, {z}, {4, 6, 10});
  auto c = b.op("c", "Concat", OpClass::injective, {s, e}, {4, 6, 14}, {{"axis", int64_t{2}}});
  auto p = b.op("p", "Pad", OpClass::injective, {c}, {4, 8, 16}, {{"pads", V{0, 1, 1, 0, 1, 1}}, {"value", -2.0}});
  auto t = b.op("t", "Transpose", OpClass::layout, {p}, {16, 4, 8}, {{"perm", V{2, 0, 1}}});
  auto rs = b.op("rs", "Reshape", OpClass::reshape, {t}, {64, 8});
  auto th = b.op("th", "Tanh", OpClass::elementwise, {rs}, {64, 8});
  auto h1 = b.op("h1", "Neg", OpClass::elementwise, {x}, {4, 6, 10});
  auto h2 = b.op("h2", "Abs", OpClass::elementwise, {z}, {4, 6, 10});
  auto idx = b.ints("idx", {3}, {5, -1, 0});
  auto gth = b.op("gth", "Gather", OpClass::gather, {h2, idx}, {4, 3, 10}, {{"axis", int64_t{1}}});
  auto& g = b.done({th, h1, gth});
  expect_identical(g, unfused_plan(g));
  Plan plan = hand_plan(g, {{s, e, c, p, t, rs, th}, {h1, h2, gth}});
  plan.groups[1].kind = GroupKind::horizontal;
  plan.groups[1].branches = {{h1}, {h2, gth}};
  expect_identical(g, plan);
}

// Negative pads crop (ONNX allows them): the emitted index was "(i0)--1",
// which the C++ compiler refused (reported as the user's error).
TEST(CpuEmit, NegativePadsCropAndAreBitIdentical) {
  Builder b;
  auto x = b.input("x", {4, 6, 10});
  auto p = b.op("p", "Pad", OpClass::injective, {x}, {4, 4, 9}, {{"pads", V{0, -1, 1, 0, -1, -2}}, {"value", 3.0}});
  auto e = b.op("e", "Exp", OpClass::elementwise, {p}, {4, 4, 9});
  auto& g = b.done({e});
  expect_identical(g, unfused_plan(g));
  expect_identical(g, hand_plan(g, {{p, e}}));
}

// Reshape reads per block of common factors: dims inserted or dropped map
// straight through, a split dim is a linear offset, only merged dims divide.
TEST(CpuEmit, ReshapeCoordinatesDivideOnlyWhereDimsMerge) {
  using C = std::vector<std::string>;
  EXPECT_EQ(reshape_coords({1, 128, 2}, {1, 128, 2, 1}, C{"i0", "i1", "i2", "i3"}), (C{"0", "(i1)", "(i2)"}));
  EXPECT_EQ(reshape_coords({128, 768}, {128, 12, 64}, C{"i0", "i1", "i2"}), (C{"(i0)", "((i1)*64+(i2))"}));
  EXPECT_EQ(reshape_coords({128, 12, 64}, {128, 768}, C{"i0", "i1"}), (C{"(i0)", "((i1)/64)", "((i1)%64)"}));
  EXPECT_EQ(reshape_coords({6, 4}, {4, 6}, C{"i0", "i1"}),
            (C{"(((i0)*6+(i1))/4)", "(((i0)*6+(i1))%4)"}));  // no common factor: one block
}

TEST(CpuEmit, ReshapeChainsAreBitIdentical) {
  Builder b;
  auto x = b.input("x", {2, 3, 4});
  auto r1 = b.op("r1", "Reshape", OpClass::reshape, {x}, {6, 4});
  auto e1 = b.op("e1", "Neg", OpClass::elementwise, {r1}, {6, 4});
  auto r2 = b.op("r2", "Reshape", OpClass::reshape, {e1}, {2, 12});
  auto r3 = b.op("r3", "Reshape", OpClass::reshape, {r2}, {1, 2, 12, 1});
  auto r4 = b.op("r4", "Reshape", OpClass::reshape, {r3}, {4, 6});
  auto y = b.op("y", "Abs", OpClass::elementwise, {r4}, {4, 6});
  auto& g = b.done({y});
  expect_identical(g, unfused_plan(g));
  expect_identical(g, hand_plan(g, {{r1, e1, r2, r3, r4, y}}));
  // The unfused r3 ([2,12] -> [1,2,12,1]) only inserts unit dims: no division.
  std::string src = cpu::plan_source(g, unfused_plan(g));
  std::size_t at = src.find("// Reshape 'r3'");
  ASSERT_NE(at, std::string::npos);
  std::string body = src.substr(at, src.find('}', at) - at);
  EXPECT_EQ(body.find('%'), std::string::npos) << body;
  EXPECT_EQ(body.find('/', 3), std::string::npos) << body;
}

// Where picks with fprt::select (branch-free: a data-dependent mask made the
// ternary mispredict; gpt2_block's masked Where 604 us -> 90 us): bit-identical
// for floats (broadcast operands), 64-bit integers and bools.
TEST(CpuEmit, WhereIsBranchFreeAndBitIdentical) {
  Builder b;
  auto c = b.input("c", {8, 33}, DType::boolean);
  auto x = b.input("x", {8, 33});
  auto y = b.input("y", {33});
  auto w = b.op("w", "Where", OpClass::broadcast, {c, x, y}, {8, 33});
  auto xi = b.ints("xi", {33}, std::vector<int64_t>(33, -7));
  auto yi = b.ints("yi", {1}, {int64_t{1} << 40});
  auto wi = b.op("wi", "Where", OpClass::broadcast, {c, xi, yi}, {8, 33}, {}, DType::i64);
  auto cb = b.input("cb", {8, 33}, DType::boolean);
  auto wb = b.op("wb", "Where", OpClass::broadcast, {c, cb, c}, {8, 33}, {}, DType::boolean);
  auto& g = b.done({w, wi, wb});
  expect_identical(g, unfused_plan(g));
  std::string src = cpu::plan_source(g, unfused_plan(g));
  EXPECT_NE(src.find("fprt::select<float>("), std::string::npos);
  EXPECT_NE(src.find("fprt::select<int64_t>("), std::string::npos);
  EXPECT_NE(src.find("fprt::select<bool>("), std::string::npos);
  std::size_t at = src.find("// Where 'w'");
  ASSERT_NE(at, std::string::npos);
  std::string body = src.substr(at, src.find('}', at) - at);
  EXPECT_EQ(body.find(" ? "), std::string::npos) << body;
}

// Whether GCC vectorized a loop of the op whose emitted comment is `marker`
// ("// Where 'w'"), compiling `src` as the backend does with
// -fopt-info-vec-optimized; nullopt when the compiler rejects that flag.
std::optional<bool> loop_vectorized(const std::string& src, const std::string& marker, const std::string& dir,
                                    std::string* report) {
  std::filesystem::remove_all(dir);  // GCC appends to an -fopt-info file
  std::filesystem::create_directories(dir);
  { std::ofstream(dir + "/k.cpp") << src; }
  std::string shell;
  for (const auto& a : cpu::compiler_command(dir + "/k.cpp", dir + "/k.so")) shell += "'" + a + "' ";
  if (std::system((shell + "-fopt-info-vec-optimized=" + dir + "/vec.txt 2>" + dir + "/err.txt").c_str()) != 0)
    return std::nullopt;
  const std::size_t op_at = src.find(marker);
  EXPECT_NE(op_at, std::string::npos) << marker;
  const std::size_t op_line = 1 + static_cast<std::size_t>(std::count(src.begin(), src.begin() + op_at, '\n'));
  std::ifstream f(dir + "/vec.txt");
  std::string l;
  bool vectorized = false;  // "k.cpp:LINE:COL: optimized: loop vectorized ..." for a loop of the op
  while (std::getline(f, l)) {
    *report += l + "\n";
    const std::size_t at = l.find("k.cpp:");
    if (at == std::string::npos || l.find("optimized: loop vectorized") == std::string::npos) continue;
    const std::size_t line = std::stoul(l.substr(at + 6));
    vectorized = vectorized || (line > op_line && line < op_line + 12);
  }
  return vectorized;
}

// Expects GCC to vectorize a loop of the op marked `marker` in plan source
// `src` (skips where the compiler has no -fopt-info-vec-optimized).
void expect_vectorized(const std::string& src, const std::string& marker, const std::string& tag) {
  std::string report;
  const auto vectorized = loop_vectorized(src, marker, testing::TempDir() + "/" + tag, &report);
  if (!vectorized) GTEST_SKIP() << "compiler rejected -fopt-info-vec-optimized (not GCC?)";
  EXPECT_TRUE(*vectorized) << marker << ": GCC reported:\n" << report;
}

// A Where on a bool mask vectorizes: bool buffers are read through uint8_t
// (GCC 12 left the OpenMP-collapsed loop nest that loads `bool` scalar, "no
// vectype"; a plain 2-D loop it did vectorize, hence the 4-D shape). Regression:
// distilbert_tiny's attention-mask Where [1,2,128,128] measured 46 us scalar
// against 10 us vectorized, one thread on the development VM.
TEST(CpuEmit, WhereOnABoolMaskVectorizes) {
  Builder b;
  auto c = b.input("c", {1, 2, 128, 128}, DType::boolean);
  auto x = b.input("x", {1, 2, 128, 128});
  auto y = b.input("y", {1});
  auto w = b.op("w", "Where", OpClass::broadcast, {c, y, x}, {1, 2, 128, 128});
  auto& g = b.done({w});
  expect_identical(g, unfused_plan(g));
  const std::string src = cpu::plan_source(g, unfused_plan(g));
  EXPECT_NE(src.find("const uint8_t* __restrict t"), std::string::npos) << src;
  expect_vectorized(src, "// Where 'w'", "where-vec");
}

// A Sqrt loop vectorizes (-fno-math-errno: with errno, GCC emits vsqrtss and
// a call to sqrtf per element for negative inputs) and stays bit-identical,
// NaNs of negative inputs included. Regression: distilbert_tiny's five
// 128-element Sqrt groups measured 0.19-0.20 us scalar, 0.04 us vectorized
// (min of repetitions, one thread on the development VM, 2026-12-01).
TEST(CpuEmit, SqrtVectorizesAndIsBitIdentical) {
  Builder b;
  auto x = b.input("x", {4, 256});  // uniform in [-1, 1]: half the roots are NaN
  auto r = b.op("r", "Sqrt", OpClass::elementwise, {x}, {4, 256});
  auto& g = b.done({r});
  expect_identical(g, unfused_plan(g));
  expect_vectorized(cpu::plan_source(g, unfused_plan(g)), "// Sqrt 'r'", "sqrt-vec");
}

// A loop over short rows vectorizes a transcendental: the innermost loop of
// a loop stage is `omp simd` (emit/cpu/cpp_printer.cpp open_loops), so GCC
// calls SLEEF's vector exp instead of unrolling 16 scalar calls.
// Regression: distilbert_tiny's fused sub-exp-sum over rows of 16 took
// 3.2 us against 0.5 us for the unfused Exp (one Zen 4 thread).
TEST(CpuEmit, ExpOverShortRowsVectorizes) {
  Builder b;
  auto x = b.input("x", {64, 16});
  Softmax s = softmax(b, x, 64, 16);
  auto& g = b.done({s.y});
  const Plan plan = hand_plan(g, {{s.mx}, {s.sub, s.ex, s.sum}, {s.y}});  // row-resident: a loop per stage inside the row loop
  expect_identical(g, plan);
  expect_vectorized(cpu::plan_source(g, plan), "// Exp 'y/exp'", "exp-rows-vec");
}

// Rows shorter than a vector (emit/cpu/cpp_printer.cpp runs_stage_by_stage): a
// multipass group runs each stage over all rows, its reductions vectorised
// across the outputs (each lane one row's chain, in order), not one row at
// a time. Regression: distilbert_tiny's LayerNorm and softmax over rows of
// 2 ran 128 row iterations of scalar loops of 2 (its ReduceMean alone
// 0.05 us warm, 0.12 us measured, priced 0.03).
TEST(CpuEmit, ShortRowsRunStageByStageVectorisedAcrossRows) {
  Builder b;
  auto x = b.input("x", {128, 2});
  auto s = softmax(b, x, 128, 2);
  auto& g = b.done({s.y});
  const Plan p = hand_plan(g, {{s.mx, s.sub, s.ex, s.sum, s.y}});
  EXPECT_GT(plan_kernel(g, p.groups[0]).row_dims, 0);  // the kernel plan is row-resident ...
  expect_identical(g, unfused_plan(g));
  expect_identical(g, p);
  const std::string src = cpu::plan_source(g, p);
  EXPECT_EQ(src.find("(row-resident"), std::string::npos) << src;  // ... the CPU kernel is not
  EXPECT_NE(src.find("#pragma omp simd\n  for (int64_t i0 = 0; i0 < 128; ++i0)"), std::string::npos) << src;
  expect_vectorized(src, "// ReduceMax 'y/max'", "short-row-max-vec");
  expect_vectorized(src, "// ReduceSum 'y/sum'", "short-row-sum-vec");
}

// A reduction in 16 lanes over the channels of an nChw16c tensor reads
// each lane's channel at its place in the block, one contiguous vector per
// step, not at a division of the channel per element: regression,
// shared_conv_two_consumers' channel sum of a [1,64,56,56] Relu read
// t[((c/16)*56+h)*56+w)*16+c%16] with c = r0*16+rl0 (93 us measured, 12.6
// priced). With 8-channel blocks the lanes span two blocks and keep the
// division. Bit-identical either way.
TEST(CpuEmit, ALaneReductionOverBlockedChannelsReadsTheBlockInPlace) {
  for (const int block : {16, 8}) {
    SCOPED_TRACE(block);
    set_host_channel_block(block);
    Builder b;
    auto x = b.input("x", {1, 16, 12, 12});
    auto w = b.weight("w", {32, 16, 3, 3});
    auto c = b.op("c", "Conv", OpClass::contraction, {x, w}, {1, 32, 12, 12},
                  {{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}});
    auto r = b.op("r", "Relu", OpClass::elementwise, {c}, {1, 32, 12, 12});
    auto cs = b.op("cs", "ReduceSum", OpClass::reduction, {r}, {1, 1, 12, 12}, {{"axes", V{1}}, {"keepdims", int64_t{1}}});
    auto& g = b.done({cs});
    ASSERT_TRUE(layouts_of(g).is_blocked(r));
    expect_identical(g, unfused_plan(g));
    expect_identical(g, hand_plan(g, {{c, r}, {cs}}));
    const std::string src = cpu::plan_source(g, unfused_plan(g));
    const std::string sum = src.substr(src.find("// ReduceSum 'cs'"));
    EXPECT_NE(sum.find("acc_l[16]"), std::string::npos) << sum;
    EXPECT_EQ(sum.find("((r0*16+rl0))/" + std::to_string(block)) == std::string::npos, block == 16) << sum;
    if (block == 16) EXPECT_NE(sum.find("*12+(i3))*16+(rl0))]"), std::string::npos) << sum;
  }
  set_host_channel_block(0);
}

// A contraction's epilogue over rows shorter than a vector runs as one flat
// run of whole rows (emit/cpu/cpp_printer.cpp print_epilogue_lambda), its
// coordinates computed from the flat index, and vectorizes. Regression:
// distilbert_tiny's FFN GEMM, rows of 2, ran its bias + Erf GELU epilogue
// in runs of 2, scalar SLEEF calls, 11.8 us; as one run 2.8 us (one Zen 4
// thread).
TEST(CpuEmit, EpilogueOverShortRowsRunsFlatAndVectorizes) {
  Builder b;
  auto a = b.input("a", {1, 128, 4});
  auto m = b.weight("m", {4, 2});
  auto mb = b.weight("mb", {2});
  auto mm = b.op("mm", "MatMul", OpClass::contraction, {a, m}, {1, 128, 2});
  auto ma = b.op("ma", "Add", OpClass::broadcast, {mm, mb}, {1, 128, 2});
  auto er = b.op("er", "Erf", OpClass::elementwise, {ma}, {1, 128, 2});
  auto& g = b.done({er});
  const Plan plan = hand_plan(g, {{mm, ma, er}});
  expect_identical(g, plan);
  const std::string src = cpu::plan_source(g, plan);
  EXPECT_NE(src.find("fprt::matmul_epilogue("), std::string::npos) << src;
  EXPECT_NE(src.find("for (int64_t f = w0; f < w0 + run; ++f)"), std::string::npos) << src;
  expect_vectorized(src, "auto epi = [&]", "epilogue-flat-vec");
}

// Dimension coalescing (emit/cpu/cpp_printer.cpp coalesced_loops): a loop
// stage whose reads span adjacent dims in full or broadcast both loops over
// them as one. An Erf over [1, 128, 2] is one loop of 256 and vectorizes
// (regression: distilbert_tiny's took 7.9 us as 128 loops of 2 scalar SLEEF
// calls, 0.7 us coalesced); a per-channel bias over [2, 8, 3, 3] keeps N and
// C apart and merges H and W; trailing dims of size 1 take no loop variable
// (regression: the merged index on a dim of size 1 gave every element
// offset 0, and distilbert_tiny's unfused plan NaN logits).
TEST(CpuEmit, CoalescedLoopsVectorizeAndStayBitIdentical) {
  Builder b;
  auto x = b.input("x", {1, 128, 2});
  auto e = b.op("e", "Erf", OpClass::elementwise, {x}, {1, 128, 2});
  auto& g = b.done({e});
  expect_identical(g, unfused_plan(g));
  const std::string src = cpu::plan_source(g, unfused_plan(g));
  EXPECT_NE(src.find("f0 < 256;"), std::string::npos) << src;
  expect_vectorized(src, "// Erf 'e'", "erf-coalesced-vec");

  Builder c;
  auto y = c.input("y", {2, 8, 4, 4});
  auto bias = c.weight("bias", {8, 1, 1});
  auto a = c.op("a", "Add", OpClass::broadcast, {y, bias}, {2, 8, 4, 4});
  auto z = c.input("z", {3, 5, 1});
  auto w = c.input("w", {3, 5, 1});
  auto m = c.op("m", "Mul", OpClass::elementwise, {z, w}, {3, 5, 1});
  auto& g2 = c.done({a, m});
  expect_identical(g2, unfused_plan(g2));
  const std::string src2 = cpu::plan_source(g2, unfused_plan(g2));
  const std::string add = src2.substr(src2.find("// Add 'a'"), 400), mul = src2.substr(src2.find("// Mul 'm'"), 400);
  EXPECT_NE(add.find("f0 < 2;"), std::string::npos) << add;
  EXPECT_NE(add.find("f1 < 8;"), std::string::npos) << add;
  EXPECT_NE(add.find("f2 < 16;"), std::string::npos) << add;
  EXPECT_NE(mul.find("f0 < 15;"), std::string::npos) << mul;
  EXPECT_NE(mul.find("[((0)*5+(f0))]"), std::string::npos) << mul;  // f0 at the dim of 5, stride 1

  // A bias over rows of 2 breaks the merge, and the rows are shorter than a
  // vector: the vector loop is the one over the 128 rows, the loop of 2
  // inside it unrolled. Regressions: distilbert_tiny's bias Adds over
  // [1, 128, 2] took 0.18 us as 128 vector loops of 2 (predicted 0.03), its
  // row-mean Subs 0.13 us as one flat loop of 256 dividing the index per
  // element, 0.04 us so (one Zen 4 thread).
  Builder d;
  auto h = d.input("h", {1, 128, 2});
  auto hb = d.weight("hb", {2});
  auto ha = d.op("ha", "Add", OpClass::broadcast, {h, hb}, {1, 128, 2});
  auto he = d.op("he", "Erf", OpClass::elementwise, {ha}, {1, 128, 2});
  auto& g3 = d.done({he});
  const Plan p3 = hand_plan(g3, {{ha, he}});
  expect_identical(g3, p3);
  const std::string src3 = cpu::plan_source(g3, p3);
  EXPECT_NE(src3.find("#pragma omp simd\n  for (int64_t f0 = 0; f0 < 128; ++f0)\n  for (int64_t f1 = 0; f1 < 2; ++f1)"),
            std::string::npos)
      << src3;
  EXPECT_NE(src3.find("[(f1)]"), std::string::npos) << src3;  // the bias at the row's coordinate
  expect_vectorized(src3, "// Erf 'he'", "erf-rows-outer-vec");

  // Rows of 2 under too few of them for a vector: one flat loop,
  // coordinates from the flat index.
  Builder e2;
  auto k = e2.input("k", {1, 6, 2});
  auto kb = e2.weight("kb", {2});
  auto ka = e2.op("ka", "Add", OpClass::broadcast, {k, kb}, {1, 6, 2});
  auto& g4 = e2.done({ka});
  expect_identical(g4, unfused_plan(g4));
  const std::string src4 = cpu::plan_source(g4, unfused_plan(g4));
  EXPECT_NE(src4.find("f0 < 12;"), std::string::npos) << src4;
  EXPECT_NE(src4.find("[(((f0)%2))]"), std::string::npos) << src4;  // the bias at the flat index's last coordinate

  // A row mean subtracted from rows of 2 ([128, 2] - [128, 1]): the same
  // row loop, the mean read once per row.
  Builder f;
  auto u = f.input("u", {128, 2});
  auto um = f.input("um", {128, 1});
  auto us = f.op("us", "Sub", OpClass::broadcast, {u, um}, {128, 2});
  auto& g5 = f.done({us});
  expect_identical(g5, unfused_plan(g5));
  const std::string src5 = cpu::plan_source(g5, unfused_plan(g5));
  EXPECT_NE(src5.find("f1 < 2;"), std::string::npos) << src5;
  EXPECT_NE(src5.find("[(f0)]"), std::string::npos) << src5;
  expect_vectorized(src5, "// Sub 'us'", "sub-rows-outer-vec");
}

// DequantizeLinear of an int32 tensor (a QDQ model's quantized bias) runs and
// matches the reference; regression: the reference executor refused it
// ("needs int8/uint8"), so zoo_mobilenetv2-12-qdq failed its bit-identity test.
TEST(CpuEmit, DequantizeLinearOfInt32AndPerAxisInt8IsBitIdentical) {
  Builder b;
  auto xi = b.input("xi", {4, 6}, DType::i32);
  auto sc = b.weight("sc", {}, {0.5f});
  auto dq = b.op("dq", "DequantizeLinear", OpClass::elementwise, {xi, sc}, {4, 6});
  auto x8 = b.input("x8", {4, 6}, DType::i8);
  auto sc6 = b.weight("sc6", {6}, {0.5f, 0.25f, 2.0f, 1.0f, 0.125f, 4.0f});
  auto dq8 = b.op("dq8", "DequantizeLinear", OpClass::elementwise, {x8, sc6}, {4, 6}, {{"axis", int64_t{1}}});
  auto y = b.op("y", "Add", OpClass::elementwise, {dq, dq8}, {4, 6});
  auto& g = b.done({y});
  expect_identical(g, unfused_plan(g));
  expect_identical(g, hand_plan(g, {{dq, dq8, y}}));
}

// GPT-2's key path: K = qkv[..., 16:32] as [b, s, h, d], read as Kᵀ
// [b, h, d, s]; and the context's way back, [b, h, s, d] -> [b, s, h*d].
struct ViewChains {
  NodeId qkv, k, kr, kt, ctx, ct, cr;
};
ViewChains view_chains(Builder& b, int64_t s) {
  ViewChains v{};
  v.qkv = b.input("qkv", {2, s, 48});
  v.k = b.op("k", "Slice", OpClass::injective, {v.qkv}, {2, s, 16},
             {{"starts", V{16}}, {"ends", V{32}}, {"axes", V{2}}, {"steps", V{1}}});
  v.kr = b.op("k_r", "Reshape", OpClass::reshape, {v.k}, {2, s, 4, 4});
  v.kt = b.op("k_t", "Transpose", OpClass::layout, {v.kr}, {2, 4, 4, s}, {{"perm", V{0, 2, 3, 1}}});
  v.ctx = b.input("ctx_h", {2, 4, s, 4});
  v.ct = b.op("ctx_t", "Transpose", OpClass::layout, {v.ctx}, {2, s, 4, 4}, {{"perm", V{0, 2, 1, 3}}});
  v.cr = b.op("ctx", "Reshape", OpClass::reshape, {v.ct}, {2, s, 16});
  return v;
}

// Element strides and dims hand-derived: qkv is [2, s, 48] row-major.
TEST(CpuEmit, StridedViewFollowsSliceReshapeAndTranspose) {
  Builder b;
  ViewChains v = view_chains(b, 8);
  auto neg = b.op("neg", "Neg", OpClass::elementwise, {v.kt}, {2, 4, 4, 8});
  auto& g = b.done({neg, v.cr});
  const Plan plan = hand_plan(g, {{v.k, v.kr, v.kt}, {v.ct, v.cr}, {neg}});
  const KernelPlan kk = plan_kernel(g, plan.groups[0]);
  // k_t[b,h,d,t] = qkv[b, t, 16 + h*4 + d]: offset 16; h and d merge into
  // one dim of 16 at stride 1; t steps 48.
  std::optional<StridedView> kt = strided_view(g, kk, v.kt);
  ASSERT_TRUE(kt);
  EXPECT_EQ(kt->source, v.qkv);
  EXPECT_EQ(kt->offset, 16);
  EXPECT_EQ(kt->dims, (V{2, 16, 8}));
  EXPECT_EQ(kt->strides, (V{384, 1, 48}));
  // ctx[b,t,h*4+d] = ctx_h[b,h,t,d]: the merged last dim splits again.
  const KernelPlan kc = plan_kernel(g, plan.groups[1]);
  std::optional<StridedView> ctx = strided_view(g, kc, v.cr);
  ASSERT_TRUE(ctx);
  EXPECT_EQ(ctx->offset, 0);
  EXPECT_EQ(ctx->dims, (V{2, 8, 4, 4}));
  EXPECT_EQ(ctx->strides, (V{128, 4, 32, 1}));
  // Not a view: a computed member on the way, or not a member.
  EXPECT_FALSE(strided_view(g, plan_kernel(g, plan.groups[2]), neg));
  EXPECT_FALSE(strided_view(g, kk, v.qkv));
}

TEST(CpuEmit, AReshapeAcrossAStrideJumpItCannotSplitIsNoView) {
  Builder b;
  auto x = b.input("x", {4, 6});
  auto t = b.op("t", "Transpose", OpClass::layout, {x}, {6, 4}, {{"perm", V{1, 0}}});
  auto r = b.op("r", "Reshape", OpClass::reshape, {t}, {4, 6});
  auto& g = b.done({r});
  // r's first dim takes 4 of t's 6 rows (stride 1): 4 neither divides nor
  // is divided by 6.
  EXPECT_FALSE(strided_view(g, plan_kernel(g, hand_plan(g, {{t, r}}).groups[0]), r));
}

// From 16 KiB a view whose reads would gather runs as one library copy; the
// bits are the loop's for 4-, 8- and 1-byte elements.
TEST(CpuEmit, TransposingViewsRunAsOneLibraryCopyAndStayBitIdentical) {
  Builder b;
  ViewChains v = view_chains(b, 256);  // Kᵀ: 2*16*256 floats = 32 KiB
  auto i = b.input("i", {64, 64}, DType::i64);
  auto it = b.op("i_t", "Transpose", OpClass::layout, {i}, {64, 64}, {{"perm", V{1, 0}}}, DType::i64);
  auto m = b.input("m", {128, 128}, DType::boolean);
  auto mt = b.op("m_t", "Transpose", OpClass::layout, {m}, {128, 128}, {{"perm", V{1, 0}}}, DType::boolean);
  // The context as a MatMul's output in scratch, copied by the same group.
  auto w = b.weight("w", {4, 4}, std::vector<float>(16, 0.25f));
  auto mm = b.op("mm", "MatMul", OpClass::contraction, {v.ctx, w}, {2, 4, 256, 4});
  auto mt2 = b.op("mm_t", "Transpose", OpClass::layout, {mm}, {2, 256, 4, 4}, {{"perm", V{0, 2, 1, 3}}});
  auto mr = b.op("mm_r", "Reshape", OpClass::reshape, {mt2}, {2, 256, 16});
  auto& g = b.done({v.kt, v.cr, it, mt, mr});
  const Plan fused = hand_plan(g, {{v.k, v.kr, v.kt}, {v.ct, v.cr}, {it}, {mt}, {mm, mt2, mr}});
  const std::string src = cpu::plan_source(g, fused);
  for (const std::string& call : std::vector<std::string>{"fprt::copy_view(t0+16,t3,3,vd,vs,4);", "fprt::copy_view(t4,t6,4,vd,vs,4);",
                                 ",2,vd,vs,8);", ",2,vd,vs,1);",
                                 "fprt::copy_view(s" + std::to_string(mm) + ",t" + std::to_string(mr) + ",4,vd,vs,4);"})
    EXPECT_NE(src.find(call), std::string::npos) << call;
  expect_identical(g, fused);
  expect_identical(g, unfused_plan(g));
  // A view whose rows are read in order stays a loop: k alone is [2,256,16]
  // of rows of 16 at stride 1.
  EXPECT_EQ(cpu::plan_source(g, unfused_plan(g)).find("fprt::copy_view(t0+16,t1,"), std::string::npos);
}

// GPT-2's scores: Q [2,4,s,4] x Kᵀ, Kᵀ = qkv[..., 16:32] as [2,s,4,4]
// transposed to [2,4,4,s], qkv written by another kernel. The scores
// kernel passes oneDNN the view (kernel_plan.h strided_matmul_b_view):
// Kᵀ[b,h,d,t] = qkv[b, t, 16 + h*4 + d], strides {s*48, 4, 1, 48} from
// offset 16; no Kᵀ is computed. The bits are the unfused plan's, whose
// MatMul reads a row-major Kᵀ: batch 2 x 4 heads do not merge into one
// batch dim of the view, so oneDNN sees a 4-D problem there and a 3-D one
// in the reference.
TEST(CpuEmit, ATransposedMatMulBIsReadAsAStridedViewBitIdentically) {
  for (int64_t s : {8, 64}) {
    Builder b;
    auto x = b.input("x", {2, s, 48});
    auto qkv = b.op("qkv", "Relu", OpClass::elementwise, {x}, {2, s, 48});
    auto k = b.op("k", "Slice", OpClass::injective, {qkv}, {2, s, 16},
                  {{"starts", V{16}}, {"ends", V{32}}, {"axes", V{2}}, {"steps", V{1}}});
    auto kr = b.op("k_r", "Reshape", OpClass::reshape, {k}, {2, s, 4, 4});
    auto kt = b.op("k_t", "Transpose", OpClass::layout, {kr}, {2, 4, 4, s}, {{"perm", V{0, 2, 3, 1}}});
    auto q = b.input("q", {2, 4, s, 4});
    auto sc = b.op("scores", "MatMul", OpClass::contraction, {q, kt}, {2, 4, s, s});
    auto half = b.weight("half", {}, {0.5f});
    auto y = b.op("y", "Mul", OpClass::elementwise, {sc, half}, {2, 4, s, s});
    auto& g = b.done({y});
    const Plan fused = hand_plan(g, {{qkv}, {k, kr, kt, sc, y}});
    const KernelPlan kp = plan_kernel(g, fused.groups[1], true);
    const std::optional<MatMulBView> view = strided_matmul_b_view(g, kp, sc);
    ASSERT_TRUE(view);
    EXPECT_EQ(view->source, qkv);
    EXPECT_EQ(view->offset, 16);
    EXPECT_EQ(view->strides, (V{s * 48, 4, 1, 48}));
    EXPECT_FALSE(kp.is_stage(kt));
    EXPECT_TRUE(plan_kernel(g, fused.groups[1]).is_stage(kt));  // without the CPU's option (CUDA): computed
    const std::string src = cpu::plan_source(g, fused);
    const std::string call = "fprt::matmul_view_epilogue(t" + std::to_string(q) + ",xs0,4,t" + std::to_string(qkv) + "+16,xs1,4,bst,";
    EXPECT_NE(src.find(call), std::string::npos) << src;
    EXPECT_NE(src.find("static const int64_t bst[] = {" + std::to_string(s * 48) + ",4,1,48};"), std::string::npos) << src;
    expect_identical(g, fused);
    expect_identical(g, unfused_plan(g));
  }
}

// The same view read in the other shapes oneDNN's matmul setup handles
// (exec/onednn.cpp): a 2-D B under a batch of A's rows folded into M, a B
// broadcast over A's leading batch dim, and a B whose batch dim is 1. Each
// fused plan reads Kᵀ as a view and matches the unfused plan bit for bit.
TEST(CpuEmit, TransposedBViewsUnderEveryBatchLayoutAreBitIdentical) {
  struct Case {
    std::vector<int64_t> a, src, perm, bt, y;
  };
  const std::vector<Case> cases = {
      {{4, 5, 7}, {3, 7}, {1, 0}, {7, 3}, {4, 5, 3}},                  // B shared: A's batch folds into M
      {{2, 3, 5, 7}, {3, 4, 7}, {0, 2, 1}, {3, 7, 4}, {2, 3, 5, 4}},    // B broadcast over A's first batch dim
      {{1, 5, 33}, {1, 17, 33}, {0, 2, 1}, {1, 33, 17}, {1, 5, 17}},    // a batch of 1
  };
  for (const Case& c : cases) {
    Builder b;
    auto x = b.input("x", c.src);
    auto r = b.op("r", "Relu", OpClass::elementwise, {x}, c.src);
    auto t = b.op("t", "Transpose", OpClass::layout, {r}, c.bt, {{"perm", c.perm}});
    auto a = b.input("a", c.a);
    auto mm = b.op("mm", "MatMul", OpClass::contraction, {a, t}, c.y);
    auto& g = b.done({mm});
    const Plan fused = hand_plan(g, {{r}, {t, mm}});
    ASSERT_TRUE(strided_matmul_b_view(g, plan_kernel(g, fused.groups[1], true), mm).has_value());
    EXPECT_NE(cpu::plan_source(g, fused).find("fprt::matmul_view_epilogue("), std::string::npos);
    expect_identical(g, fused);
    expect_identical(g, unfused_plan(g));
  }
}

TEST(CpuEmit, CodeInjectionNamesGiveSafeCompilingCode) {
  Builder b;
  const std::string evil = "x\"); system(\"rm -rf /\"); //";
  const std::string evil2 = "a*/ int bad; /* \\\nint worse;\r\n?" "?/";
  auto x = b.input(evil, {16});
  auto t = b.op(evil2, "Relu", OpClass::elementwise, {x}, {16});
  auto y = b.op("y\\", "Exp", OpClass::elementwise, {t}, {16});
  auto& g = b.done({y});
  Plan plan = hand_plan(g, {{t, y}});
  std::string src = cpu::plan_source(g, plan);
  EXPECT_EQ(src.find("system(\""), std::string::npos);
  EXPECT_EQ(src.find("int bad"), std::string::npos);
  EXPECT_EQ(src.find("int worse"), std::string::npos);
  expect_identical(g, plan);
}

TEST(CpuEmit, SecondCompileHitsTheCache) {
  auto dir = std::filesystem::temp_directory_path() / ("fuseplan-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("FUSEPLAN_CACHE_DIR", dir.c_str(), 1);
  std::string src = std::string(cpu::kRuntimeText) + "\nextern \"C\" void fp_group_0(void** b) { ((float*)b[0])[0] = 42.0f; }\n";
  auto first = cpu::compile_and_load(src);
  auto second = cpu::compile_and_load(src);
  ::unsetenv("FUSEPLAN_CACHE_DIR");
  EXPECT_FALSE(first->cache_hit());
  EXPECT_GT(first->compile_ms(), 0);
  EXPECT_TRUE(second->cache_hit());
  float v = 0;
  void* bufs[1] = {&v};
  second->kernel("fp_group_0")(bufs);
  EXPECT_EQ(v, 42.0f);
  std::filesystem::remove_all(dir);
}

TEST(CpuEmit, CompilerErrorIsOneLineWithLogPath) {
  try {
    cpu::compile_and_load("this is not C++ " + std::to_string(::getpid()));
    FAIL();
  } catch (const EnvironmentError& e) {  // the compiler's failure: exit 3 (support/error.h)
    std::string m = e.what();
    EXPECT_NE(m.find("the C++ compiler 'c++' failed on the generated kernels (exit 1): "), std::string::npos) << m;
    EXPECT_NE(m.find("(log: "), std::string::npos);
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
}

TEST(CpuEmit, PlanThatDoesNotMatchTheModelIsRefused) {
  Builder b;
  auto x = b.input("x", {4});
  auto t = b.op("t", "Relu", OpClass::elementwise, {x}, {4});
  auto y = b.op("y", "Exp", OpClass::elementwise, {t}, {4});
  auto& g = b.done({y});
  Plan missing = hand_plan(g, {{y}});
  EXPECT_THROW(run_plan(g, missing, {}), Error);
  Plan bad = hand_plan(g, {{t, y}});
  bad.groups[0].nodes.push_back(99);
  try {
    run_plan(g, bad, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("plan does not match the model: ", 0), 0u);
  }
}

}  // namespace
}  // namespace fuseplan
