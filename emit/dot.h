// Graphviz DOT of a plan: one cluster per fusion group (kernel), primitives
// as nodes (a duplicated producer once per group that recomputes it), graph
// inputs outside every cluster, and one edge per producer->consumer use styled
// by its decision (fused/duplicated inside a kernel, kept across kernels,
// blocked in red labelled with its blocker code). Rendering to SVG runs the
// `dot` program by argument vector (fork/exec, no shell).
#pragma once

#include <string>
#include <vector>

#include "search/plan.h"

namespace fuseplan {

/// The plan as a DOT digraph (deterministic text).
std::string plan_to_dot(const Graph& g, const Plan& plan);

/// Runs argv[0] (looked up in PATH) with the given arguments, no shell, and
/// waits. Returns the exit status (127 when it cannot be started); the first
/// lines of its stderr go to `err` when given.
int run_program(const std::vector<std::string>& argv, std::string* err = nullptr);

/// Whether an executable named `name` is on PATH.
bool have_program(const std::string& name);

/// Renders `dot_path` to `svg_path` with `dot -Tsvg` (written to a temp file
/// and renamed). Throws Error with dot's message when dot is missing or fails.
void render_dot_svg(const std::string& dot_path, const std::string& svg_path);

}  // namespace fuseplan
