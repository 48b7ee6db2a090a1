// Compile time of an emitted kernel: the resource that caps how many
// primitives one fusion group may hold (search/legality.h
// check_group_size, blocker `compile_time`). A kernel's run time does not
// grow with its primitive count the way a GPU kernel's registers do (a
// chain of elementwise ops keeps one value live), but the compiler's time
// does, faster than linearly: GCC's and NVRTC's passes over one long loop
// body. Measured, not guessed: docs/cost-model.md "Compile time".
#pragma once

#include <cstddef>

#include "costmodel/device.h"

namespace fuseplan {

/// Seconds the compiler spends on one kernel of `primitives` primitives
/// (duplicated copies included) beyond the fixed cost of its translation
/// unit: `per_primitive_s · k + per_primitive_sq_s · k²`.
struct CompileTimeModel {
  const char* compiler;       // the backend's compiler, as measured
  double per_primitive_s;     // linear term, seconds per primitive
  double per_primitive_sq_s;  // quadratic term, seconds per primitive²
};

/// The backend's model for d: GCC 12 with the CPU backend's flags on a CPU
/// device, NVRTC (CUDA 12) for a GPU device.
const CompileTimeModel& compile_time_model(const DeviceSpec& d);

/// Estimated compile seconds of one kernel of `primitives` primitives on d's backend.
double kernel_compile_s(std::size_t primitives, const DeviceSpec& d);

/// Seconds of compile time one kernel may take: a policy, about the fixed
/// cost of the translation unit every part of the CPU backend compiles anyway
/// (the embedded runtime: 0.48 s measured), so no kernel more than doubles
/// the compile time of the part it lands in.
inline constexpr double kKernelCompileBudgetS = 0.5;

/// The most primitives one kernel may hold on d: the largest k whose
/// kernel_compile_s stays within kKernelCompileBudgetS (780 on a CPU
/// device, 2896 on a GPU device).
std::size_t compile_time_max_primitives(const DeviceSpec& d);

}  // namespace fuseplan
