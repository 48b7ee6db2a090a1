// Measurement records: one JSON object per line (JSONL), one per measured
// fusion group. They carry the group's cost features and the prediction
// (so `fuseplan calibrate` needs no model files) and the measured times.
// Schema fuseplan.measurement/2: every feature present (no defaults) but
// those written since the contraction classes (contraction_calls 0 and
// contraction_class_flops {} when absent: such a record's contractions price
// at the peak until `fuseplan refeature` re-derives it) and prologue_passes
// (0 when absent); a
// fuseplan.measurement/1 record is converted on reading, its absent fields
// filled as upgrade_measurement_v1 lists. Field list: docs/calibration.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "costmodel/calibrate.h"
#include "profiling/profiler.h"
#include "search/plan.h"

namespace fuseplan {

inline constexpr const char* kMeasurementSchema = "fuseplan.measurement/2";
/// The schema before: the same fields, any of them but model, group,
/// device, predicted.{bytes_read, bytes_written, flops_contraction,
/// flops_other, predicted_us} and measured.median_us possibly absent.
inline constexpr const char* kMeasurementSchemaV1 = "fuseplan.measurement/1";

struct MeasurementRecord {
  // --- what was measured ---
  std::string model;            // file name (held-out splits group by it)
  std::string model_sha256;
  std::string plan_id;          // plan_id(): hash of the plan's groups
  std::string strategy;
  int group = 0;                // index in the plan
  std::string group_key;        // group_key(): the same group in several plans shares it
  std::string kind;             // GroupKind word
  std::string label;            // first .. last primitive
  std::vector<std::string> op_classes;  // classes present, sorted
  std::string device;
  std::map<std::string, int64_t> dims;
  int threads = 0;
  // --- predicted (by the device the plan was priced on) ---
  CostFeatures features;
  double t_mem_us = 0, t_compute_us = 0, launch_us = 0, predicted_us = 0;
  std::string bound;            // memory | compute | launch
  std::string level;            // memory level of the working set
  // --- measured ---
  double median_us = 0, min_us = 0, max_us = 0;
  int repetitions = 0;
  bool flushed = false;
  double cycles = -1, instructions = -1, llc_misses = -1;      // < 0 = not measured
  double measured_bytes_read = -1, measured_bytes_written = -1;
};

/// Hash (first 16 hex digits of SHA-256) of the plan's groups: node names and
/// materialised tensors of each group, in order.
std::string plan_id(const Graph& g, const Plan& plan);
/// Hash of one group's node names and materialised tensors.
std::string group_key(const Graph& g, const Group& grp);

/// Records of a profiled plan: prediction from plan.costs and `d`, measured
/// fields from `m` (m.groups[i] measures plan.groups[i]).
std::vector<MeasurementRecord> make_records(const Graph& g, const Plan& plan, const DeviceSpec& d,
                                            const ProfileResult& m, const std::string& model_file, int threads);

/// One line of JSON (no newline), schema fuseplan.measurement/2.
std::string record_to_json(const MeasurementRecord& r);
/// Parses one line of schema /2, or of /1 converted by
/// upgrade_measurement_v1; throws Error naming the missing/mistyped field,
/// or an unknown schema.
MeasurementRecord record_from_json(const std::string& line);
/// A fuseplan.measurement/1 record as /2: each field a /1 writer could
/// leave out, when absent or null, is filled with what the /1 reader took it
/// for (docs/calibration.md, "Measurement records"): the features
/// bytes_read_sources, spill_bytes_raw, contraction_calls, prologue_passes, flops_transcendental,
/// flops_scalar, reduction_steps, select_steps, pool_steps, sources_read
/// 0 (no such term);
/// occupancy 1; graph_bytes null (unknown: beyond the LLC);
/// transcendental_elems {} (flops_transcendental at the estimates); the
/// descriptive fields empty ("", [], {}, threads 0, predicted times 0);
/// measured min_us and max_us the median, repetitions 1, flushed false.
/// Fields present keep their values (the /2 reader checks them). Takes and
/// returns one JSON line; throws Error on malformed JSON or a schema other
/// than /1.
std::string upgrade_measurement_v1(const std::string& line);
/// Whether a record measured on `record_device` may calibrate or score the
/// device named `device_name`: both named alike once a trailing
/// "-calibrated" and then a trailing "-reference" are removed (a reference
/// device stands in for the one it is named after: "host-cpu-reference"
/// for "host-cpu"), or `device_name` a variant config of the measured
/// device ("host-cpu-1thread" of "host-cpu" or "host-cpu-reference").
bool is_measured_on(const std::string& record_device, const std::string& device_name);
/// Reads a JSONL file (blank lines skipped); errors name file and line. With
/// `device_name`, a record measured on another device (is_measured_on) is an
/// error too.
std::vector<MeasurementRecord> read_records(const std::string& path, const std::string& device_name = "");

/// Which of a record's measured times calibration and scoring use: the
/// median of the repetitions, or the minimum (interference from other
/// processes on a shared machine only adds time; the minimum is its least
/// disturbed repetition). docs/calibration.md, "Noise".
enum class TimeStatistic { median, min };
/// "median" or "min"; throws Error otherwise.
TimeStatistic time_statistic_from_string(const std::string& s);
const char* to_string(TimeStatistic s);
/// r.median_us or r.min_us.
double measured_us(const MeasurementRecord& r, TimeStatistic s);

/// The calibration sample of a record (tag "model#strategy#group").
CalibrationSample to_sample(const MeasurementRecord& r, TimeStatistic s = TimeStatistic::median);

}  // namespace fuseplan
