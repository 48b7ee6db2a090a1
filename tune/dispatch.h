// Shape-specialised dispatch: which tuned plan serves which batch sizes.
// Identical plans of neighbouring tuned sizes merge into one range; between
// two different plans the boundary is the predicted crossover, found by
// bisecting the batch size at which the larger size's plan becomes predicted
// no slower than the smaller size's (both re-priced on the model imported at
// that size). Below the smallest tuned size the first plan serves; beyond
// the largest, the last.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "search/plan.h"

namespace fuseplan {

inline constexpr const char* kDispatchSchema = "fuseplan.dispatch/1";

struct DispatchRange {
  int64_t min_batch = 1;
  int64_t max_batch = -1;        // -1 = unbounded
  std::string plan;              // plan file name (relative to dispatch.json)
  std::vector<int64_t> tuned_at; // tuned batch sizes this plan won
  std::string boundary;          // how max_batch was found: "predicted crossover", "tuned size", ""
};

struct Dispatch {
  std::string model_path, model_sha256, device, strategy;
  std::vector<int64_t> tuned_batches;
  std::vector<DispatchRange> ranges;  // ascending, contiguous from 1
};

/// A tuned size's plan for dispatch: its file and its JSON text.
struct DispatchInput {
  int64_t batch = 0;
  std::string plan_file;
  std::string plan_key;   // partition_key: equal = identical plans
  std::string plan_json;
};

/// Predicted µs of a plan (JSON text) at a batch size.
using PredictAt = std::function<double(const std::string& plan_json, int64_t batch)>;

/// Builds the ranges from the tuned sizes (ascending) and a pricing function.
Dispatch build_dispatch(const std::vector<DispatchInput>& tuned, const PredictAt& predict);

/// PredictAt that imports `model_path` at each batch (with `dims`, cached per
/// size) and prices plans with load_plan on `d`.
PredictAt predict_by_import(const std::string& model_path, const std::map<std::string, int64_t>& dims,
                            const DeviceSpec& d);

std::string dispatch_to_json(const Dispatch& d);
/// Throws Error on a malformed file or another schema.
Dispatch dispatch_from_json(const std::string& text);

/// The range serving `batch` (>= 1). Throws Error when there are no ranges.
const DispatchRange& dispatch_pick(const Dispatch& d, int64_t batch);

}  // namespace fuseplan
