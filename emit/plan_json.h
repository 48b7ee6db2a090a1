// Plan JSON: the versioned, documented exchange format (docs/plan-schema.md).
// Identical plans serialise to byte-identical text (search_ms aside).
#pragma once

#include <string>

#include "search/plan.h"

namespace fuseplan {

inline constexpr const char* kPlanSchema = "fuseplan.plan/1";

/// Serialises a plan (2-space indented JSON, keys in schema order).
std::string plan_to_json(const Graph& g, const Plan& plan);

/// Parses plan JSON and validates it against the model: schema version,
/// every node name exists (once per group), every non-source primitive is
/// covered, kinds and actions are known words, each group's kind is the one
/// its primitives make, every group computes a primitive no other group does
/// (none is extra), the model hash and dims match when the plan records them
/// — except "batch": a partition holds at any batch size (tune's
/// dispatch.json serves a range of sizes with one plan). Returns the plan
/// re-derived for `d` by make_plan (costs re-priced at the model's dims,
/// decisions re-logged, `dims` updated to them) with the file's
/// strategy/status kept.
/// Throws Error (one line, naming the field) on malformed or mismatched input.
Plan load_plan(const std::string& json_text, const Graph& g, const DeviceSpec& d,
               const std::string& model_sha256 = "", const std::map<std::string, int64_t>& dims = {});

/// A plan file's decision log, read without the model (`explain`).
struct PlanLog {
  std::string strategy, device;
  int64_t kernels = 0;
  double predicted_us = 0;                     // totals
  std::vector<std::vector<std::string>> groups;  // node names per group
  std::vector<DecisionRecord> decisions;
  /// cpu_layouts (optional): its blocked format ("nChw8c", "nChw16c"), the
  /// number of tensors stored blocked, and "CONV (x|y|x,y)" per convolution
  /// whose kernels reorder an activation around the call.
  std::string blocked_format;
  int64_t blocked_tensors = 0;
  std::vector<std::string> conv_reorders;
};
/// Parses plan JSON with every check of load_plan that needs no model
/// (schema, group kinds and names, no extra group), and requires `totals` and
/// complete decisions whose primitives are in groups. Throws Error (one line,
/// "malformed plan: ...") like load_plan.
PlanLog read_plan_log(const std::string& json_text);

}  // namespace fuseplan
