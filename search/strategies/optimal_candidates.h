// Candidate groups and regions for the `optimal` strategy (internal).
#pragma once

#include <chrono>
#include <cstddef>
#include <utility>
#include <vector>

#include "costmodel/device.h"
#include "graph/graph.h"

namespace fuseplan::strategies {

/// One ILP column: a convex, connected, legal node set priced as one kernel.
/// `needs` lists (n, c): n is not written by this kernel, so a chosen kernel
/// must hold both n and its consumer c (c recomputes n: duplication).
struct Candidate {
  std::vector<NodeId> nodes;  // topological order
  double cost_us = 0;
  std::vector<std::pair<NodeId, NodeId>> needs;
  /// (p, c): p is held but not written by this kernel and c is a consumer of
  /// p (inside the set, or in `needs`). No chosen kernel may hold c without
  /// p, since it would read p from memory and nobody pays for writing it
  /// (make_plan would then make the home of p write it: a price the column
  /// did not include).
  std::vector<std::pair<NodeId, NodeId>> unwritten;
};

/// Independent regions: components of the non-source primitives joined by
/// fusable edges (can_fuse_edge). A component above `max_region` primitives is
/// cut further at materialisation points (edges into a contraction, out of a
/// node with more than 8 consumers) and then into topological chunks;
/// `*heuristic_cuts` counts edges cut that way (those may lose optimality).
std::vector<std::vector<NodeId>> optimal_regions(const Graph& g, std::size_t max_region, int* heuristic_cuts);

/// Candidates inside one region: every set reachable from a single primitive
/// by adding one neighbour at a time through legal merges (can_merge_vertical:
/// legal and convex), up to `max_size` primitives, at most `max_candidates`
/// (larger sizes are dropped first; *truncated says so). Singletons always
/// come first. Each set gives a column writing every output read outside it
/// and, when its outside-read outputs are cheap, a second column writing none
/// of those (duplication), with the matching `needs`.
/// The enumeration and the pricing stop at `deadline`: then *timed_out is
/// set and the result is empty (the caller keeps the region unfused).
std::vector<Candidate> optimal_candidates(const Graph& g, const DeviceSpec& d, const std::vector<NodeId>& region,
                                          int max_size, std::size_t max_candidates, bool* truncated,
                                          std::chrono::steady_clock::time_point deadline =
                                              std::chrono::steady_clock::time_point::max(),
                                          bool* timed_out = nullptr);

}  // namespace fuseplan::strategies
