// Measurement records round-trip; the CPU profiler measures every group of a
// plan; the CUPTI profiler compiles and skips cleanly without a device.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <span>
#include <tuple>
#include <vector>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "graph/import.h"
#include "tune/accuracy.h"
#include "profiling/cpu_profiler.h"
#include "exec/cpu_run.h"
#include "profiling/cupti_profiler.h"
#include "profiling/measurement.h"
#include "search/strategy.h"

namespace fuseplan {
namespace {

Graph bias_relu() {
  ImportOptions o;
  o.dims = {{"N", 64}, {"C", 256}};
  return import_onnx_text(R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[N, C] x, float[C] b) => (float[N, C] y) {
  t = Add(x, b)
  y = Relu(t)
})", o, "bias_relu");
}

// The same line under the fuseplan.measurement/1 schema.
std::string as_v1(std::string line) {
  const std::string v2 = std::string("\"") + kMeasurementSchema + "\"";
  const auto at = line.find(v2);
  EXPECT_NE(at, std::string::npos) << line;
  if (at != std::string::npos) line.replace(at, v2.size(), std::string("\"") + kMeasurementSchemaV1 + "\"");
  return line;
}

void expect_refused_line(const std::string& line, const std::string& needle) {
  try {
    record_from_json(line);
    ADD_FAILURE() << "accepted " << line;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

MeasurementRecord sample_record() {
  MeasurementRecord r;
  r.model = "m.onnx";
  r.model_sha256 = "abc";
  r.plan_id = "0123456789abcdef";
  r.strategy = "cost";
  r.group = 3;
  r.group_key = "fedcba9876543210";
  r.kind = "loop";
  r.label = "a .. b";
  r.op_classes = {"broadcast", "elementwise"};
  r.device = "host-cpu-reference";
  r.dims = {{"batch", 4}, {"seq", 128}};
  r.threads = 1;
  r.features = {.bytes_read = 1024,
                .bytes_read_sources = 256,
                .bytes_written = 512,
                .spill_bytes_raw = 64,
                .occupancy = 0.75,
                .graph_bytes = 1791496,
                .flops_contraction = 1e6,
                .contraction_class_flops = {0, 0, 0, 0, 0, 7.5e5, 0, 2.5e5},  // gemm_square, matmul_batched
                .flops_other = 2048,
                .flops_transcendental = 512,
                .transcendental_elems = {{"Erf", 32}},  // 512 = 32 × 16 at the estimate
                .flops_scalar = 96,
                .reduction_steps = 2048,
                .select_steps = 256,
                .pool_steps = 1024,
                .contraction_calls = 2,
                .sources_read = 3,
                .libm_routines = 1};  // erff: what reading derives from transcendental_elems
  r.t_mem_us = 1.5;
  r.t_compute_us = 2.5;
  r.launch_us = 3;
  r.predicted_us = 5.5;
  r.bound = "compute";
  r.level = "L2";
  r.median_us = 7.25;
  r.min_us = 6;
  r.max_us = 9;
  r.repetitions = 11;
  r.flushed = true;
  r.llc_misses = 100;
  r.measured_bytes_read = 6400;
  return r;
}

TEST(Records, RoundTripThroughJsonLines) {
  const MeasurementRecord a = sample_record();
  const std::string line = record_to_json(a);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const MeasurementRecord b = record_from_json(line);
  EXPECT_EQ(record_to_json(b), line);
  EXPECT_EQ(b.dims, a.dims);
  EXPECT_EQ(b.op_classes, a.op_classes);
  EXPECT_EQ(b.features.spill_bytes_raw, 64);
  EXPECT_EQ(b.features.flops_contraction, 1e6);
  EXPECT_EQ(b.features.contraction_calls, 2);
  EXPECT_EQ(b.features.contraction_class_flops[static_cast<int>(ContractionClass::gemm_square)], 7.5e5);
  EXPECT_NE(line.find("\"contraction_class_flops\":{\"gemm_square\":750000.0,\"matmul_batched\":250000.0}"),
            std::string::npos)
      << line;
  EXPECT_EQ(b.features.flops_transcendental, 512);
  EXPECT_EQ(b.features.reduction_steps, 2048);
  EXPECT_EQ(b.features.select_steps, 256);
  EXPECT_EQ(b.features.pool_steps, 1024);
  EXPECT_EQ(b.features.sources_read, 3);
  EXPECT_EQ(b.features.graph_bytes, 1791496);
  // An unknown footprint (-1, from a converted /1 record) is written as null and reads -1.
  MeasurementRecord old = a;
  old.features.graph_bytes = -1;
  EXPECT_NE(record_to_json(old).find("\"graph_bytes\":null"), std::string::npos);
  EXPECT_EQ(record_from_json(record_to_json(old)).features.graph_bytes, -1);
  EXPECT_EQ(b.features.transcendental_elems.at("Erf"), 32);
  EXPECT_EQ(b.features.bytes_read_sources, 256);
  EXPECT_EQ(b.features.flops_scalar, 96);
  // A /1 record without scalar FLOPs (every op vectorised) reads 0; a /2 one is refused.
  {
    std::string old_line = line;
    const auto at = old_line.find("\"flops_scalar\":96.0,");
    ASSERT_NE(at, std::string::npos) << old_line;
    old_line.erase(at, std::string("\"flops_scalar\":96.0,").size());
    expect_refused_line(old_line, "measurement.predicted: missing field 'flops_scalar'");
    EXPECT_EQ(record_from_json(as_v1(old_line)).features.flops_scalar, 0);
  }
  {  // Source bytes beyond the bytes read are refused (an edited record).
    std::string bad = line;
    const auto at = bad.find("\"bytes_read_sources\":256");
    ASSERT_NE(at, std::string::npos) << bad;
    bad.replace(at, std::string("\"bytes_read_sources\":256").size(), "\"bytes_read_sources\":4096");
    try {
      record_from_json(bad);
      ADD_FAILURE() << "accepted bytes_read_sources 4096 > bytes_read 1024";
    } catch (const fuseplan::Error& e) {
      EXPECT_NE(std::string(e.what()).find("'bytes_read_sources' (4096.0) exceeds bytes_read (1024.0)"), std::string::npos)
          << e.what();
    }
  }
  // No elements per op (the estimates price flops_transcendental): an empty object, read back empty.
  MeasurementRecord before = a;
  before.features.transcendental_elems.clear();
  before.features.libm_routines = 0;
  EXPECT_NE(record_to_json(before).find("\"transcendental_elems\":{}"), std::string::npos);
  EXPECT_TRUE(record_from_json(record_to_json(before)).features.transcendental_elems.empty());
  // An op that is not transcendental, or a negative count, is refused by name.
  for (const auto& [from, to, needle] :
       {std::tuple<const char*, const char*, const char*>{"{\"Erf\":32", "{\"Relu\":32", "transcendental_elems['Relu']: not a transcendental op"},
        {"{\"Erf\":32", "{\"Erf\":-1", "transcendental_elems['Erf'] must be a number >= 0"}}) {
    std::string bad = line;
    const auto at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << bad;
    bad.replace(at, std::string(from).size(), to);
    try {
      record_from_json(bad);
      ADD_FAILURE() << "accepted " << to;
    } catch (const fuseplan::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(b.features, a.features);
  EXPECT_EQ(b.cycles, -1);  // not measured stays absent
  EXPECT_EQ(b.llc_misses, 100);
  EXPECT_TRUE(b.flushed);
}

TEST(Records, OlderRecordsReadWithoutTheirLaterFeatures) {
  // A /2 record written before the contraction classes: no
  // contraction_calls (0) nor contraction_class_flops (none: its
  // contractions price at the peak); the retired GEMM features it carries
  // (gemm_calls, im2col_elems, ...) are ignored.
  std::string line = record_to_json(sample_record());
  std::string old = line;
  for (const char* k : {",\"contraction_calls\":", ",\"contraction_class_flops\":"}) {
    const auto pk = old.find(k);
    ASSERT_NE(pk, std::string::npos) << old;
    const auto end = old[pk + std::string(k).size()] == '{' ? old.find('}', pk) + 1 : old.find(',', pk + 1);
    old.erase(pk, end - pk);
  }
  old.insert(old.find("\"sources_read\":"), "\"gemm_calls\":13.0,\"im2col_elems\":19600.0,");
  {
    const MeasurementRecord r = record_from_json(old);
    EXPECT_EQ(r.features.contraction_calls, 0);
    EXPECT_EQ(r.features.contraction_class_flops, (std::array<double, kContractionClassCount>{}));
    EXPECT_EQ(r.features.flops_contraction, 1e6);
  }
  // A /1 record written before the per-op features: 0.
  old = as_v1(old);
  const auto pt = old.find(",\"flops_transcendental\":");
  ASSERT_NE(pt, std::string::npos) << old;
  old.erase(pt, old.find(',', pt + 1) - pt);
  EXPECT_EQ(record_from_json(old).features.flops_transcendental, 0);
  // And before reduction_steps / select_steps / pool_steps / sources_read: 0 (no such terms).
  for (const char* k : {",\"reduction_steps\":", ",\"select_steps\":", ",\"pool_steps\":", ",\"sources_read\":"}) {
    const auto pk = old.find(k);
    ASSERT_NE(pk, std::string::npos) << old;
    old.erase(pk, old.find(',', pk + 1) - pk);
  }
  EXPECT_EQ(record_from_json(old).features.reduction_steps, 0);
  EXPECT_EQ(record_from_json(old).features.select_steps, 0);
  EXPECT_EQ(record_from_json(old).features.pool_steps, 0);
  EXPECT_EQ(record_from_json(old).features.sources_read, 0);
  // Regression: a number beyond double was an internal error (exit 3).
  std::string huge = line;
  const auto pf = huge.find("\"flops_other\":");
  ASSERT_NE(pf, std::string::npos);
  huge.insert(pf + 14, "1e400");
  huge.erase(pf + 19, huge.find(',', pf + 19) - (pf + 19));
  try {
    record_from_json(huge);
    ADD_FAILURE() << "accepted " << huge;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("malformed JSON (a number too large for a double)"), std::string::npos)
        << e.what();
  }
}

// fuseplan.measurement/2 has every feature; a /1 record is converted on
// reading with each absent field filled as /1 read it (measurement.h
// upgrade_measurement_v1), and any other schema is refused naming it.
TEST(Records, SchemaOneIsConvertedWithItsAbsentFieldsFilled) {
  const std::string v1 = R"({"schema": "fuseplan.measurement/1", "model": "m.onnx", "group": 2, "device": "host-cpu-reference", )"
                         R"("predicted": {"bytes_read": 512, "bytes_written": 256, "flops_contraction": 0, )"
                         R"("flops_other": 64, "predicted_us": 1.5}, "measured": {"median_us": 4}})";
  const nlohmann::json up = nlohmann::json::parse(upgrade_measurement_v1(v1));
  EXPECT_EQ(up.at("schema"), kMeasurementSchema);
  const nlohmann::json& p = up.at("predicted");
  for (const FeatureField& f : recorded_features()) EXPECT_TRUE(p.contains(std::string(f.name))) << f.name;
  EXPECT_EQ(p.at("occupancy"), 1.0);
  EXPECT_EQ(p.at("contraction_calls"), 0.0);
  EXPECT_TRUE(p.at("graph_bytes").is_null());
  EXPECT_EQ(p.at("transcendental_elems"), nlohmann::json::object());
  EXPECT_EQ(up.at("measured").at("min_us"), 4);
  EXPECT_EQ(up.at("measured").at("repetitions"), 1);
  const MeasurementRecord r = record_from_json(v1);
  EXPECT_EQ(record_from_json(upgrade_measurement_v1(v1)).features, r.features);
  EXPECT_EQ(r.features.bytes_read, 512);
  EXPECT_EQ(r.features.flops_other, 64);
  EXPECT_EQ(r.features.bytes_read_sources, 0);
  EXPECT_EQ(r.features.occupancy, 1);
  EXPECT_EQ(r.features.graph_bytes, -1);
  EXPECT_EQ(r.min_us, 4);
  EXPECT_EQ(r.max_us, 4);
  EXPECT_EQ(r.repetitions, 1);
  EXPECT_EQ(r.threads, 0);
  // Written back, it is a /2 record that reads the same.
  const std::string v2 = record_to_json(r);
  EXPECT_NE(v2.find(kMeasurementSchema), std::string::npos);
  EXPECT_EQ(record_from_json(v2).features, r.features);
  // /2 has no defaults: a feature left out is refused by name.
  std::string no_occupancy = v2;
  const auto at = no_occupancy.find("\"occupancy\":1.0,");
  ASSERT_NE(at, std::string::npos) << v2;
  no_occupancy.erase(at, std::string("\"occupancy\":1.0,").size());
  expect_refused_line(no_occupancy, "measurement.predicted: missing field 'occupancy'");
  std::string v3 = v2;
  v3.replace(v3.find(kMeasurementSchema), std::string(kMeasurementSchema).size(), "fuseplan.measurement/3");
  expect_refused_line(v3, "unknown measurement schema 'fuseplan.measurement/3' (expected fuseplan.measurement/2, or "
                          "fuseplan.measurement/1, which is converted on reading)");
}

TEST(Records, StatisticPicksMedianOrMin) {
  MeasurementRecord r = sample_record();
  EXPECT_EQ(measured_us(r, TimeStatistic::median), 7.25);
  EXPECT_EQ(measured_us(r, TimeStatistic::min), 6);
  EXPECT_EQ(to_sample(r, TimeStatistic::min).measured_us, 6);
  EXPECT_EQ(time_statistic_from_string("min"), TimeStatistic::min);
  EXPECT_THROW(time_statistic_from_string("mean"), Error);
}

TEST(Records, BadLinesNameFileLineAndField) {
  auto path = std::filesystem::temp_directory_path() / ("fuseplan-rec-" + std::to_string(::getpid()) + ".jsonl");
  std::string line = record_to_json(sample_record());
  std::string broken = line;
  broken.replace(broken.find("\"median_us\""), 11, "\"med_us\"");
  {
    std::ofstream f(path);
    f << line << "\n\n" << broken << "\n";
  }
  try {
    read_records(path.string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(":3:"), std::string::npos) << m;
    EXPECT_NE(m.find("median_us"), std::string::npos) << m;
  }
  std::filesystem::remove(path);
}

// Issue 33 row 16: a negative median was refused only by the fit, so a
// second file's record merged into a positive median of runs and was taken.
// Every record's measured times are checked where it is read.
TEST(Records, ANegativeOrZeroMeasuredTimeIsRefusedOnReading) {
  const std::string line = record_to_json(sample_record());
  auto with = [&](const std::string& key, const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(line);
    j["measured"][key] = nlohmann::json::parse(value);
    return j.dump();
  };
  expect_refused_line(with("median_us", "-5"), "measurement.measured: field 'median_us' must be a time > 0, got -5.0");
  expect_refused_line(with("median_us", "0"), "field 'median_us' must be a time > 0, got 0.0");
  expect_refused_line(with("min_us", "-1"), "measurement.measured: field 'min_us' must be a time >= 0, got -1.0");
  expect_refused_line(with("max_us", "-0.5"), "field 'max_us' must be a time >= 0, got -0.5");
  expect_refused_line(as_v1(with("median_us", "-5")), "field 'median_us' must be a time > 0");
  EXPECT_NO_THROW(record_from_json(with("min_us", "0")));
}

TEST(Records, SameGroupInTwoPlansIsOneSample) {
  MeasurementRecord a = sample_record(), b = sample_record(), c = sample_record();
  b.strategy = "unfused";
  b.median_us = 9.25;
  c.group_key = "other";
  auto d = dedupe_records({a, b, c});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(d[0].median_us, 8.25);  // median of 7.25 and 9.25
  b.min_us = 5;
  EXPECT_DOUBLE_EQ(dedupe_records({a, b, c})[0].min_us, 5);  // minimum of the minima
}

// Regression: a group key names a group at every size, so
// the same group measured at two dims (the shared cases at C = 64 and 1024)
// had been merged into one sample.
TEST(Records, TheSameGroupAtOtherDimsIsAnotherSample) {
  MeasurementRecord a = sample_record(), b = sample_record();
  b.dims["seq"] = 512;
  b.median_us = b.min_us = 30;
  auto d = dedupe_records({a, b});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(d[0].median_us, 7.25);
  EXPECT_DOUBLE_EQ(d[1].median_us, 30);
  EXPECT_EQ(merge_runs({{a, b}, {b}}).size(), 2u);
}

TEST(Records, RunsMergeByTheMedianOfTheirPerRunValues) {
  // Run 1: the group in two plans (min 6 and 5, medians 7.25 and 9.25), so
  // its run-1 values are min 5 and median 8.25; runs 2 and 3 measure it once.
  MeasurementRecord a = sample_record(), b = sample_record(), other = sample_record();
  b.strategy = "unfused";
  b.min_us = 5;
  b.median_us = 9.25;
  other.group_key = "other";
  other.min_us = 3;
  MeasurementRecord run2 = sample_record(), run3 = sample_record();
  run2.min_us = 10;
  run2.median_us = 12;
  run3.min_us = 4;
  run3.median_us = 7;
  auto m = merge_runs({{a, b, other}, {run2}, {run3}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_DOUBLE_EQ(m[0].min_us, 5);        // median of 5, 10, 4: the low run 3 moves nothing
  EXPECT_DOUBLE_EQ(m[0].median_us, 8.25);  // median of 8.25, 12, 7
  EXPECT_DOUBLE_EQ(m[1].min_us, 3);        // measured in one run only
  auto two = merge_runs({{a, b}, {run2}});
  EXPECT_DOUBLE_EQ(two[0].min_us, 7.5);    // two runs: their mean
  // One run is dedupe_records.
  EXPECT_DOUBLE_EQ(merge_runs({{a, b, other}})[0].min_us, 5);
}

TEST(Accuracy, ReportScoresTheHeldOutModelAndListsEveryGroup) {
  // Memory-bound groups at the L1 level, measured on a "true" device whose
  // L1 is half as fast as the prior's: fitting a.onnx recovers it, so b.onnx
  // is predicted exactly after calibration and 2x off in its memory term before.
  DeviceSpec prior = load_device("host-cpu-reference");
  DeviceSpec truth = prior;
  truth.cpu->caches[0].bw_GBps /= 2;
  AccuracyInputs in;
  in.prior = prior;
  in.calibration.hold = {"launch_us"};
  for (int i = 0; i < 24; ++i) {
    MeasurementRecord r = sample_record();
    r.model = i < 20 ? "a.onnx" : "b.onnx";
    r.group_key = "g" + std::to_string(i);
    r.features = {};
    r.features.bytes_read = 4096.0 * (1 + i % 10);
    r.features.bytes_written = 1024.0 * (1 + i % 3);
    r.median_us = r.min_us = predict_us(r.features, truth);
    in.records.push_back(r);
  }
  in.holdout = {"b.onnx"};
  AccuracyResult res = accuracy_report(in);
  EXPECT_EQ(res.after_holdout.n, 4);
  EXPECT_NEAR(res.after_holdout.mape_pct, 0, 1e-6);
  EXPECT_GT(res.before_holdout.mape_pct, 0.1);
  // The per-model table holds b.onnx's four groups, exact after calibration.
  char by_model[128];
  std::snprintf(by_model, sizeof by_model, "| b.onnx batch=4 seq=128 | 4 | %.1f%% | 0.0%% |", res.before_holdout.mape_pct);
  EXPECT_NE(res.markdown.find("## Held-out error by model"), std::string::npos);
  EXPECT_NE(res.markdown.find(by_model), std::string::npos) << res.markdown;
  // And by measured time: all four between 10 and 100 us (host-cpu-reference's launch dominates).
  std::snprintf(by_model, sizeof by_model, "| [10, 100) | 4 | %.1f%% | 0.0%% |", res.before_holdout.mape_pct);
  EXPECT_NE(res.markdown.find("## Held-out error by measured time"), std::string::npos);
  EXPECT_NE(res.markdown.find(by_model), std::string::npos) << res.markdown;
  // Header + one row per group; the last held-out row: 4096 x 4 read, 1024 x 3 written.
  std::istringstream csv(res.groups_csv);
  std::vector<std::string> lines;
  for (std::string l; std::getline(csv, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 25u);
  EXPECT_EQ(lines[0], "split,model,group_key,kind,label,measured_us,predicted_before_us,predicted_after_us");
  EXPECT_EQ(lines[1].rfind("training,\"a.onnx\",g0,loop,\"a .. b\",", 0), 0u) << lines[1];
  const MeasurementRecord& last = in.records.back();
  char row[256];
  std::snprintf(row, sizeof row, "held-out,\"b.onnx\",g23,loop,\"a .. b\",%.4g,%.4g,%.4g", last.min_us,
                predict_us(last.features, prior), last.min_us);
  EXPECT_EQ(lines[24], row);
}

TEST(CpuProfiler, EvictingLinesKeepsTheData) {
  // Dirty lines are written back before they are invalidated: the values
  // survive, unaligned ends included.
  std::vector<float> a(1000), b(17);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = -static_cast<float>(i);
  const std::span<const std::byte> bufs[] = {std::as_bytes(std::span(a)), std::as_bytes(std::span(b).subspan(3)),
                                            std::span<const std::byte>()};
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_TRUE(evict_lines(bufs));
#else
  EXPECT_FALSE(evict_lines(bufs));
#endif
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], static_cast<float>(i) * 0.5f);
  for (std::size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], -static_cast<float>(i));
}

// Three timed repetitions after one warm-up.
ProfileOptions three_repetitions(FlushPolicy flush) {
  ProfileOptions o;
  o.repeat = 3;
  o.warmup = 1;
  o.flush = flush;
  return o;
}

TEST(CpuProfiler, MeasuresEveryGroupWithStatisticsAndRecords) {
  Graph g = bias_relu();
  DeviceSpec d = load_device("host-cpu-reference");
  Plan plan = search(g, d, "unfused");
  ProfileOptions o = three_repetitions(FlushPolicy::always);
  ProfileResult r = CpuProfiler().profile(g, plan, d, o);
  ASSERT_EQ(r.groups.size(), plan.groups.size());
  for (const auto& m : r.groups) {
    EXPECT_EQ(m.repetitions, 3);
    EXPECT_GT(m.median_us, 0);
    EXPECT_LE(m.min_us, m.median_us);
    EXPECT_LE(m.median_us, m.max_us);
    EXPECT_TRUE(m.flushed);
  }
  auto recs = make_records(g, plan, d, r, "bias_relu.onnxtxt", 0);
  ASSERT_EQ(recs.size(), plan.groups.size());
  for (std::size_t i = 0; i < recs.size(); ++i) {
    EXPECT_DOUBLE_EQ(recs[i].predicted_us, plan.costs[i].predicted_us);
    EXPECT_NEAR(predict_us(recs[i].features, d), recs[i].predicted_us, 1e-9 * recs[i].predicted_us);
    EXPECT_EQ(recs[i].plan_id, plan_id(g, plan));
  }
  for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
}

TEST(CpuProfiler, MinTimeRepeatsPastRepeatUntilTheTimeIsSpentAndNoFurtherThanTheCap) {
  Graph g = bias_relu();
  DeviceSpec d = load_device("host-cpu-reference");
  Plan plan = search(g, d, "unfused");
  ProfileOptions o = three_repetitions(FlushPolicy::never);
  o.min_time_s = 0.05;
  const auto t0 = std::chrono::steady_clock::now();
  ProfileResult r = CpuProfiler().profile(g, plan, d, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.groups.size(), plan.groups.size());
  const int reps = r.groups.front().repetitions;
  EXPECT_GT(reps, 3);
  EXPECT_LE(reps, RunOptions::kMaxRepeat);
  if (reps < RunOptions::kMaxRepeat) {
    EXPECT_GE(s, 0.05);  // stopped by the time, not by the cap
  }
  for (const auto& m : r.groups) EXPECT_EQ(m.repetitions, reps);  // every group once per repetition

  o.min_time_s = 3600;  // the cap ends it: 20000 repetitions of two ~µs kernels
  r = CpuProfiler().profile(g, plan, d, o);
  for (const auto& m : r.groups) EXPECT_EQ(m.repetitions, RunOptions::kMaxRepeat);

  o.min_time_s = 0;  // exactly --repeat
  r = CpuProfiler().profile(g, plan, d, o);
  for (const auto& m : r.groups) EXPECT_EQ(m.repetitions, 3);
}

TEST(CuptiProfiler, CorrelatesKernelNamesToGroups) {
  EXPECT_EQ(group_of_kernel("fp_g12_k0"), 12);
  EXPECT_EQ(group_of_kernel("fp_g0_k3"), 0);
  EXPECT_FALSE(group_of_kernel("sgemm_128x128").has_value());
}

TEST(CuptiProfiler, ProfilesOnAGpuOrSkips) {
  CuptiStatus st = cupti_status();
  if (!st.available) GTEST_SKIP() << "CUPTI profiler: " << st.reason;
  Graph g = bias_relu();
  DeviceSpec d = load_device("h200");
  Plan plan = search(g, d, "unfused");
  ProfileOptions o;
  o.repeat = 5;
  ProfileResult r = CuptiProfiler().profile(g, plan, d, o);
  ASSERT_EQ(r.groups.size(), plan.groups.size());
  for (const auto& m : r.groups) {
    EXPECT_GT(m.median_us, 0);
    EXPECT_GT(m.registers_per_thread, 0);
  }
  for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
}

}  // namespace
}  // namespace fuseplan
