// Calibration: fit a device's effective cost-model parameters to measured
// group times by (non-negative, relative-error weighted) least squares.
// Formulas, regime assignment and the refusal rules: docs/calibration.md.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "costmodel/device.h"
#include "costmodel/group.h"
#include "graph/graph.h"

namespace fuseplan {

/// The device-independent terms of one group's cost (what cost() multiplies
/// by the device's parameters). Recorded with each measurement, so a fit
/// needs no model files.
struct CostFeatures {
  double bytes_read = 0;         // external inputs (× passes), spill excluded
  double bytes_written = 0;      // materialised outputs, spill excluded
  double spill_bytes_raw = 0;    // register-spill traffic before spill_penalty
  double flops_contraction = 0;  // FLOP-equivalents at the contraction peak
  double flops_other = 0;        // FLOP-equivalents at the FP32 peak
  double occupancy = 1;          // GPU: resident fraction (1 on CPU)
  double gemm_calls = 0;         // library GEMM calls (GroupCost::gemm_calls)
  double flops_transcendental = 0;  // the part of flops_other from transcendental ops
  double reduction_steps = 0;    // serial accumulation steps of emitted reductions (× DeviceSpec::reduce_step_ns)
  double select_steps = 0;       // steps of emitted ReduceMax/ReduceMin chains (× DeviceSpec::select_step_ns)
  double pool_steps = 0;         // window elements of MaxPool/AveragePool (× DeviceSpec::pool_step_ns)
  double sources_read = 0;       // source tensors the group reads: weights, constants, graph inputs (× DeviceSpec::source_read_us)
  double im2col_elems = 0;       // im2col matrix elements its Convs write (× DeviceSpec::im2col_elem_ns)
  double gemm_pack_elems = 0;    // elements its gemm() calls pack (× DeviceSpec::gemm_pack_elem_ns)
  double gemm_microkernels = 0;  // micro-kernel runs of its gemm() calls (× DeviceSpec::gemm_microkernel_ns)
  double graph_bytes = -1;       // graph_footprint_bytes of its graph (the store stall's regime); -1: unknown (older record)
  double bytes_read_sources = 0; // the part of bytes_read from sources (CPU: at the DRAM rate); 0 in older records
  double flops_scalar = 0;       // the part of flops_other in loops calling libm (CPU: × elems_per_thread); 0 in older records
  // Elements each transcendental op evaluates (op name → output elements ×
  // times computed): priced at the device's transcendental_weight. Empty
  // (older record): flops_transcendental at the estimates.
  std::map<std::string, double, std::less<>> transcendental_elems;

  bool operator==(const CostFeatures&) const = default;
};

/// The features of `grp` as cost(g, grp, d) sees them (spill and occupancy
/// depend on d's register limits, which calibration does not fit).
CostFeatures cost_features(const Graph& g, const Group& grp, const DeviceSpec& d);

/// cost(g, grp, d).predicted_us recomputed from the features alone (equal to
/// it up to rounding; tests pin that).
double predict_us(const CostFeatures& f, const DeviceSpec& d);

/// Name of the memory level (cache level or "DRAM") a working set of `bytes`
/// is priced at on a CPU device; "DRAM" on a GPU.
std::string memory_level(double bytes, const DeviceSpec& d);

/// One measured group.
struct CalibrationSample {
  CostFeatures features;
  double measured_us = 0;  // median of repetitions
  std::string tag;         // e.g. "model#plan#group" (error messages)
};

/// One fitted (or held) parameter in the device's own units.
struct FittedParameter {
  std::string name;        // "launch_us", "caches[L2].bw_GBps", "e_contraction", ...
  double prior = 0;        // value in the input device
  double value = 0;        // fitted value (= prior when held)
  double std_error = 0;    // from the residual variance and (JᵀJ)⁻¹ (delta method); 0 when held
  int support = 0;         // measurements whose regime exercises it
  bool held = false;       // not fitted: too little support, or asked to hold
  std::string note;        // why held, or "at bound"
};

struct CalibrationOptions {
  int min_support = 3;       // measurements a parameter needs to be fitted (else held at its prior)
  int max_iterations = 30;   // regime re-assignment rounds
  double max_condition = 1e10;  // of the column-scaled normal matrix; above = rank-deficient
  double max_relative_se = 0.5;  // a fitted parameter less certain than this is unidentifiable
  std::vector<std::string> hold; // parameter names kept at their prior (e.g. "caches[L1].bw_GBps")
};

struct CalibrationResult {
  DeviceSpec device;                      // the calibrated device (calibrated = true, sources updated)
  std::vector<FittedParameter> parameters;
  int measurements = 0;
  int iterations = 0;
  bool converged = true;                  // false: regimes still alternated after max_iterations (best round kept)
  int memory_bound = 0, compute_bound = 0;  // regimes at convergence
  double rms_relative_residual = 0;       // sqrt(RSS / n) of (pred - meas) / meas
};

/// A fit refused because of one parameter the measurements do not identify
/// (rank-deficient column, estimate at its bound 0, or standard error above
/// max_relative_se); `parameter` names it as CalibrationOptions::hold does.
class DegenerateParameter : public Error {
 public:
  DegenerateParameter(const std::string& what, std::string parameter) : Error(what), parameter(std::move(parameter)) {}
  std::string parameter;
};

/// The names of the parameters calibrate() fits on `d` (what
/// CalibrationOptions::hold may name): "launch_us", "caches[L1].bw_GBps", ...
/// calibrate() ignores other hold names (a list may span CPU and GPU
/// devices); the CLI's --hold refuses them against this list.
std::vector<std::string> calibration_parameter_names(const DeviceSpec& d);

/// The name of the device calibrate() fits from a prior named `name`:
/// "<name>-calibrated" (a calibrated prior keeps its name).
std::string calibrated_name(const std::string& name);
/// `name` without a trailing "-calibrated": the device it was fitted from.
std::string uncalibrated_name(const std::string& name);

/// Fits `prior`'s effective parameters to the samples. Parameters no
/// measurement exercises (support < min_support) or named in `hold` keep
/// their prior. Throws Error (one line naming the cause or the parameter)
/// when the fit is degenerate: too few measurements, a rank-deficient
/// design, a parameter estimated at its physical bound 0 (infinite bandwidth
/// or throughput) or with a standard error above max_relative_se of its value
/// (those three throw DegenerateParameter).
CalibrationResult calibrate(const DeviceSpec& prior, const std::vector<CalibrationSample>& samples,
                            const CalibrationOptions& o = {});

}  // namespace fuseplan
