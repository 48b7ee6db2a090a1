// The CPU backend's entry points: kernel plans and C++ source of a Plan.
#pragma once

#include <string>
#include <vector>

#include "emit/kernel_plan.h"
#include "search/plan.h"

namespace fuseplan::cpu {

/// Checks that `plan` fits `g` (node ids in range, every non-source node in
/// some group, every tensor a group reads from outside either a source or
/// materialised by an earlier group, graph outputs materialised). Throws
/// Error "plan does not match the model: ..." (one line) otherwise.
void check_plan_matches(const Graph& g, const Plan& plan);

/// One kernel plan per group, in plan order.
std::vector<KernelPlan> kernel_plans(const Graph& g, const Plan& plan);

/// The translation unit of the whole plan (emit/cpu/cpp_printer.h).
std::string plan_source(const Graph& g, const Plan& plan);

}  // namespace fuseplan::cpu
