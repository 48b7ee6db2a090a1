// Factories of the strategies, one per file under search/strategies/. The
// table in search/strategy.cpp lists them in presentation order.
#pragma once

#include <memory>

#include "search/strategy.h"

namespace fuseplan {

std::unique_ptr<Strategy> make_unfused_strategy();
std::unique_ptr<Strategy> make_elementwise_strategy();
std::unique_ptr<Strategy> make_tvm_strategy();
std::unique_ptr<Strategy> make_xla_strategy();
std::unique_ptr<Strategy> make_inductor_strategy();
std::unique_ptr<Strategy> make_optimal_strategy();
std::unique_ptr<Strategy> make_cost_strategy();

}  // namespace fuseplan
