// What a fusion group does, as the cost model counts it: bytes per source,
// FLOPs per class, library calls, serial steps, spill traffic. A plain
// struct computed from the graph, the group and the device's geometry
// (register limits); the cost terms (costmodel/terms.h)
// multiply it by the device's parameters. Measurement records carry it, so a
// calibration needs no model files (docs/cost-model.md, "Features").
#pragma once

#include <array>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "costmodel/contraction.h"
#include "costmodel/device.h"
#include "costmodel/group.h"
#include "graph/graph.h"

namespace fuseplan {

struct CostFeatures {
  // --- memory (bytes) ---
  double bytes_read = 0;          // external inputs, each once (× passes of a multipass group whose row is not
                                  // resident), spill excluded
  double bytes_read_sources = 0;  // the part of bytes_read from source tensors (weights, constants, graph inputs)
  double bytes_written = 0;       // materialised outputs, each once, spill excluded
  double spill_bytes_raw = 0;     // register-spill traffic (stores + loads) before DeviceSpec::spill_penalty
  double occupancy = 1;           // GPU: resident threads / max per SM (1 on CPU)
  double graph_bytes = -1;        // graph_footprint_bytes of the group's graph (the write-allocate regime);
                                  // -1: unknown (a measurement record converted from fuseplan.measurement/1)
  // --- compute (FLOP-equivalents, steps) ---
  double flops_contraction = 0;     // contraction nodes (MatMul 2·M·N·K, Conv 2·N·K·(C/group)·R·S·P·Q, ...)
  // flops_contraction by contraction_class() (costmodel/contraction.h),
  // indexed by ContractionClass, as the library's vectors issue them: a
  // MatMul's FLOPs over contraction_lane_fill (CpuSpec::contraction_lanes),
  // so a class can exceed its share of flops_contraction. All 0 while
  // flops_contraction > 0: classes unknown (a record written before them),
  // priced at the peak.
  std::array<double, kContractionClassCount> contraction_class_flops{};
  double flops_other = 0;           // everything else, transcendental ops included
  double flops_transcendental = 0;  // the part of flops_other from transcendental ops (see transcendental_elems)
  // Elements each transcendental op evaluates (op name → output elements ×
  // times computed). When present, the terms price the transcendental FLOPs
  // from it at the pricing device's weights (its probe-measured times), and
  // flops_transcendental is at flops.cpp's estimates; when empty,
  // flops_transcendental (and libm_routines) are taken as they are.
  std::map<std::string, double, std::less<>> transcendental_elems;
  double flops_scalar = 0;      // the elementwise FLOPs of reduction or double loops calling a transcendental (CPU: one lane)
  double reduction_steps = 0;   // serial steps of emitted adding reductions and CumSum chains
  double select_steps = 0;      // steps of emitted ReduceMax/ReduceMin chains
  double pool_steps = 0;        // window elements of MaxPool/AveragePool
  // --- fixed (counts) ---
  double contraction_calls = 0;  // contraction library calls (exec/onednn.h): one per contraction node
  // CPU: in-group operands of a library routine (for_each_library_operand)
  // computed whole into a buffer, each a pass that ends before the call.
  double prologue_passes = 0;
  double sources_read = 0;       // source tensors the group reads, each once
  double libm_routines = 0;      // distinct libm routines the group calls (expf, tanhf, ...)

  bool operator==(const CostFeatures&) const = default;
};

/// A numeric field of CostFeatures as measurement records name it (the
/// JSON key is the C++ name).
struct FeatureField {
  std::string_view name;
  double CostFeatures::*member;
};
/// The numeric features a measurement record carries, in record order:
/// every field but graph_bytes (-1, unknown, is written as null),
/// transcendental_elems and contraction_class_flops (objects) and
/// libm_routines (derived from transcendental_elems on reading).
std::span<const FeatureField> recorded_features();

/// The features of `grp` as cost(g, grp, d) prices them, with the
/// transcendental FLOPs at flops.cpp's estimates and their elements per op
/// (so a record prices on any device). Spill and occupancy depend on d's
/// register limits, which calibration does not fit. Throws as cost().
CostFeatures cost_features(const Graph& g, const Group& grp, const DeviceSpec& d);

}  // namespace fuseplan
