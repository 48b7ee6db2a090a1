// Prints the C++ translation unit of a plan for the CPU backend: the fprt
// runtime (emit/cpu/runtime.h) followed by one `extern "C" void
// fp_group_<id>(void** buffers)` per kernel plan. `buffers` is indexed by
// NodeId: the buffers of every tensor the kernel loads or stores. Every
// identifier is generated; model names appear only in escaped comments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "emit/kernel_plan.h"
#include "graph/graph.h"

namespace fuseplan::cpu {

/// The text of emit/cpu/runtime.h (embedded at build time).
extern const char* const kRuntimeText;

/// `title` goes into the file's first comment (escaped).
std::string print_cpp(const Graph& g, const std::vector<KernelPlan>& kernels, std::string_view title = "");

/// Contraction epilogues inside the contraction's call (default on): the
/// elementwise stages after a float Conv/MatMul run as a lambda over the
/// output rows right after the library call (fprt::conv_epilogue /
/// matmul_epilogue). Off: they run as the group's ordinary loop stages
/// (kept for before/after measurements).
void set_tile_epilogue(bool on);

/// Comment-safe rendering of a model-provided string: characters outside
/// [A-Za-z0-9 _.:,=+#@()[]<>-] become %XX, so no newline, backslash or
/// comment delimiter survives; at most 160 characters.
std::string comment_escape(std::string_view s);

}  // namespace fuseplan::cpu
