// The compile-time model of an emitted kernel (costmodel/compile_time.h):
// hand-computed estimates and the primitive count the budget allows.
#include <gtest/gtest.h>

#include "costmodel/compile_time.h"
#include "tests/costmodel/cost_test_util.h"

namespace fuseplan {
namespace {

TEST(CompileTime, EstimatesAndBudgetPerBackend) {
  const DeviceSpec cpu = load_device("host-cpu-reference"), gpu = testing::h100();
  // GCC: 5.2e-4 s·k + 1.54e-7 s·k²; 250 primitives (a chain the old fixed cap
  // of 128 cut) 0.13 + 0.009625 s.
  EXPECT_NEAR(kernel_compile_s(250, cpu), 0.139625, 1e-12);
  EXPECT_NEAR(kernel_compile_s(1000, cpu), 0.674, 1e-12);
  // NVRTC: 1.35e-4 s·k + 1.3e-8 s·k².
  EXPECT_NEAR(kernel_compile_s(1000, gpu), 0.148, 1e-12);
  // Within the 0.5 s budget: 780 on the CPU (0.4993 s; 781: 0.50005 s), 2896 on the GPU.
  EXPECT_EQ(compile_time_max_primitives(cpu), 780u);
  EXPECT_LE(kernel_compile_s(780, cpu), kKernelCompileBudgetS);
  EXPECT_GT(kernel_compile_s(781, cpu), kKernelCompileBudgetS);
  EXPECT_EQ(compile_time_max_primitives(gpu), 2896u);
  EXPECT_GT(kernel_compile_s(2897, gpu), kKernelCompileBudgetS);
}

}  // namespace
}  // namespace fuseplan
