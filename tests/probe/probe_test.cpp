// Host probe: the triad gives a positive bandwidth at a DRAM-sized working
// set, and two independent implementations agree. Kept under ~5 s when the
// machine is quiet (more rounds only while the two disagree).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "probe/probe.h"
#include "probe/contraction.h"
#include "probe/first_touch.h"
#include "probe/pool_window.h"
#include "probe/reduction_chain.h"
#include "probe/transcendental.h"
#include "emit/cpu/cpu_backend.h"
#include "tests/builder.h"
#include "tests/costmodel/cost_test_util.h"

TEST(Probe, HostInfoHasCoresAndCaches) {
  const fuseplan::HostInfo h = fuseplan::host_info();
  EXPECT_GE(h.cores, 1);
  ASSERT_FALSE(h.caches.empty());
  EXPECT_GT(h.caches.front().bytes, 0u);
  const std::size_t ws = fuseplan::dram_working_set_bytes(h);
  EXPECT_GE(ws, std::size_t(256) << 20);
  EXPECT_LE(ws, std::size_t(2) << 30);
}

TEST(Probe, TriadAtDramSizeAgreesWithIndependentMeasurement) {
  const fuseplan::HostInfo h = fuseplan::host_info();
  // DRAM-sized (beyond the last-level cache the VM really gets), capped at
  // 512 MiB so allocation and first touch stay fast (~2 s on an idle 2-core host).
  const std::size_t ws = std::min<std::size_t>(fuseplan::dram_working_set_bytes(h), std::size_t(512) << 20);
  // One thread: other processes on a small shared machine disturb one thread
  // far less than a thread per core. Interleave the two so background load
  // hits both alike; best of each, with more rounds only while they disagree
  // (under ctest -j2 a neighbouring test once halved one of two rounds:
  // 9.4 against 4.3 GB/s).
  const int threads = 1;
  double triad = 0, indep = 0;
  for (int round = 0; round < 6; ++round) {
    triad = std::max(triad, fuseplan::stream_triad_GBps(ws, threads, 2));
    indep = std::max(indep, fuseplan::independent_triad_GBps(ws, threads, 2));
    if (round >= 1 && std::abs(triad / indep - 1.0) <= 0.3) break;
  }
  EXPECT_GT(triad, 0.1);
  EXPECT_GT(indep, 0.1);
  EXPECT_LT(triad, 1e5);
  EXPECT_NEAR(triad / indep, 1.0, 0.3) << "triad " << triad << " GB/s vs independent " << indep << " GB/s";
}

TEST(Probe, ComputeAndDispatchArePlausible) {
  const double gflops = fuseplan::fp32_GFLOPs(1);
  EXPECT_GT(gflops, 0.5);      // any x86-64 core: > 0.5 GFLOP/s of SSE mul+add
  EXPECT_LT(gflops, 1000.0);   // one core cannot exceed a TFLOP/s
  const double us = fuseplan::pool_dispatch_us(2);
  EXPECT_GT(us, 0.0);
  EXPECT_LT(us, 5000.0);
}

// A one-thread group's floor: two steady-clock reads and a call. Above 0
// (two vDSO clock reads take over 5 ns anywhere), below 5 µs (a 1 ms-step
// clock would read 0 or 1000 µs, and a timer this coarse would make every
// per-group record meaningless).
TEST(Probe, TimedEmptyCallIsTheTimersFloor) {
  const double us = fuseplan::timed_call_us(2000);
  EXPECT_GT(us, 0.0);
  EXPECT_LT(us, 5.0);
}

// Stores into flushed lines wait for each line's fill (write-allocate):
// slower than a triad whose three arrays stay in L1 (16 KiB on one thread).
TEST(Probe, WriteAllocateIsSlowerThanAnL1ResidentTriad) {
  const double wa = fuseplan::write_allocate_GBps(std::size_t(1) << 20, 1, 5);
  const double l1 = fuseplan::stream_triad_GBps(std::size_t(16) << 10, 1, 3);
  EXPECT_GT(wa, 0.1);
  EXPECT_LT(wa, l1) << "write-allocate " << wa << " GB/s vs L1 triad " << l1 << " GB/s";
}

TEST(Probe, DeviceJsonRoundTrips) {
  fuseplan::DeviceSpec d = fuseplan::make_cpu_device();
  d.name = "probe-test";
  d.arch = "x86-64-avx2";
  d.dram_bw_GBps = 12.5;
  d.cpu->cores = 2;
  d.fp32_TFLOPs = 0.15;
  d.launch_us = 1.25;
  d.cpu->caches = {{"L1", 49152, 400.0}, {"L2", 2097152, 200.0}, {"DRAM", 0, 12.5}};
  d.cpu->vector_lanes = 8;
  d.cpu->libm_cold_us = 0.75;
  d.sources["dram_bw_GBps"] = "measured by fuseplan probe on 2026-01-01";
  const std::string path = ::testing::TempDir() + "probe-test.json";
  fuseplan::write_device_file(d, path);
  const fuseplan::DeviceSpec back = fuseplan::load_device(path);
  EXPECT_EQ(back.dram_bw_GBps, 12.5);
  ASSERT_TRUE(back.cpu.has_value());
  EXPECT_FALSE(back.gpu.has_value());
  EXPECT_EQ(back.cpu->cores, 2);
  EXPECT_EQ(back.cpu->caches.size(), 3u);
  EXPECT_EQ(back.cpu->caches[1].bytes, 2097152);
  EXPECT_EQ(back.cpu->vector_lanes, 8);
  EXPECT_EQ(back.cpu->libm_cold_us, 0.75);
  EXPECT_EQ(back.sources, d.sources);
}

// Each probe shape is of the class it measures, as the cost model
// classifies the node (costmodel/contraction.h: one place decides it).
TEST(Probe, EachContractionShapeIsOfItsClass) {
  using namespace fuseplan;
  std::array<int, kContractionClassCount> shapes_per_class{};
  for (const ProbeShape& s : probe_shapes()) {
    SCOPED_TRACE(s.origin);
    fuseplan::testing::GraphBuilder b;
    const NodeId a = b.input("a", s.a), w = b.weight("w", s.b);
    std::map<std::string, AttrValue> attrs;
    if (s.conv) {
      attrs = {{"group", AttrValue{s.group}}, {"strides", AttrValue{std::vector<int64_t>{s.stride, s.stride}}},
               {"pads", AttrValue{std::vector<int64_t>(4, s.pad)}}};
    }
    const NodeId y = b.op("y", s.conv ? "Conv" : "MatMul", OpClass::contraction, probe_shape_output(s), {a, w}, attrs);
    const Graph g = b.finish({y});
    EXPECT_EQ(contraction_class(g, y), s.cls);
    EXPECT_DOUBLE_EQ(probe_shape_flops(s), primitive_flops(g, y));
    ++shapes_per_class[static_cast<int>(s.cls)];
  }
  for (int n : shapes_per_class) {
    EXPECT_GE(n, 1);
    EXPECT_LE(n, 3);
  }
}

// The contraction probe times oneDNN (exec/onednn.h) in this process on one
// thread: every class gets a throughput between 0.1 and 500 GFLOP/s (one
// Zen 3 core peaks at 2 FMA x 8 lanes x ~3 GHz = 96), the fixed cost of a
// call is under 100 us, and the note says how they were taken.
TEST(Probe, ContractionThroughputPerClassIsMeasured) {
  const fuseplan::ContractionProbe p = fuseplan::probe_contractions(1);
  for (fuseplan::ContractionClass k : fuseplan::contraction_classes()) {
    SCOPED_TRACE(std::string(fuseplan::contraction_class_name(k)));
    EXPECT_GT(p.GFLOPs[static_cast<int>(k)], 0.1);
    EXPECT_LT(p.GFLOPs[static_cast<int>(k)], 500);
  }
  EXPECT_EQ(p.shapes.size(), fuseplan::probe_shapes().size());
  for (const fuseplan::ShapeTiming& t : p.shapes) EXPECT_LE(t.primitive_us, t.call_us);
  EXPECT_GE(p.call_us, 0);
  EXPECT_LT(p.call_us, 100);
  EXPECT_NE(p.note.find("oneDNN "), std::string::npos) << p.note;
  EXPECT_NE(p.note.find("conv_depthwise "), std::string::npos) << p.note;
}

// The transcendental-op probe compiles each op's emitted scalar call in the
// backend's loop and times it: all ten ops costmodel/flops.cpp calls
// transcendental get a time per element between 0.1 and 1000 ns (2-15 ns on
// the development VM: Exp 2.3, Tanh 10.9), and the note gives them.
TEST(Probe, TranscendentalOpsAreTimedPerElement) {
  std::string note;
  const auto ns = fuseplan::transcendental_ns(note);
  ASSERT_EQ(ns.size(), 10u);
  for (const char* op : {"Exp", "Log", "Sin", "Cos", "Tanh", "Erf", "Sigmoid", "Softplus", "Elu", "Pow"}) {
    ASSERT_TRUE(ns.count(op)) << op;
    EXPECT_GT(ns.at(op), 0.1) << op;
    EXPECT_LT(ns.at(op), 1000) << op;
  }
  EXPECT_NE(note.find("ns per element"), std::string::npos) << note;
}

// The reduction-chain probe times the emitted ReduceSum and ReduceMax loops:
// each step waits for the last, so between 0.05 and 50 ns per element
// (0.74 and 0.58 on a Zen 4 thread: a float add's and a max's latency), and
// the note gives both.
// The probe's loops are the printer's (emit/cpu/cpp_printer.cpp reduce_loop):
// the accumulator's start and step of a float ReduceSum and ReduceMax,
// emitted and in the probe's source, are the same text; a change of the
// canonical order shows here first.
TEST(Probe, ReductionChainLoopsAreTheEmittedOnes) {
  fuseplan::test::Builder b;
  auto x = b.input("x", {8, 255});  // rows the backend folds one by one, as the probe's
  const std::map<std::string, fuseplan::AttrValue> row = {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  auto s = b.op("s", "ReduceSum", fuseplan::OpClass::reduction, {x}, {8}, row);
  auto m = b.op("m", "ReduceMax", fuseplan::OpClass::reduction, {x}, {8}, row);
  auto& g = b.done({s, m});
  const std::string emitted = fuseplan::cpu::plan_source(g, fuseplan::test::unfused_plan(g));
  const std::string probe = fuseplan::reduction_chain_source();
  for (const std::string& text :
       {std::string("float acc = (float)0;"), std::string("acc = (float)(acc + v"),
        std::string("float acc = (std::numeric_limits<float>::has_infinity ? -std::numeric_limits<float>::infinity() : "
                    "std::numeric_limits<float>::lowest());"),
        std::string("acc = fprt::max_(acc, v")}) {
    EXPECT_NE(emitted.find(text), std::string::npos) << text << "\n" << emitted;
    EXPECT_NE(probe.find(text), std::string::npos) << text << "\n" << probe;
  }
}

// The pooling routine's price per window element (regression: the prior
// held pool_step_ns at 0, and ShuffleNet v2's stem MaxPool was predicted at
// its bytes, 20 us, where it measured 373 us).
TEST(Probe, PoolingIsTimedPerWindowElement) {
  const fuseplan::PoolWindowTiming p = fuseplan::pool_window_ns();
  EXPECT_GT(p.ns, 0.01);
  EXPECT_LT(p.ns, 50);
  EXPECT_NE(p.note.find("ns per window element"), std::string::npos) << p.note;
}

// A cold 64-byte source costs one miss to memory more than a warm one: 0.1-0.2 us on
// the development VM (a DRAM latency; the L3 alone is ~0.01-0.03 us), so above
// 0.02 us (an L2 hit would be less) and far below the 5 us a page fault or a
// timer step would read.
TEST(Probe, ColdSourceFirstTouchIsAMissToMemory) {
  const fuseplan::FirstTouchTiming f = fuseplan::first_touch_us();
  EXPECT_GT(f.us, 0.02);
  EXPECT_LT(f.us, 5);
  EXPECT_NE(f.note.find("us per cold source"), std::string::npos) << f.note;
}

TEST(Probe, ReductionChainsAreTimedPerStep) {
  const fuseplan::ReductionChainTiming r = fuseplan::reduction_chain_ns();
  EXPECT_GT(r.sum_ns, 0.05);
  EXPECT_LT(r.sum_ns, 50);
  EXPECT_GT(r.max_ns, 0.05);
  EXPECT_LT(r.max_ns, 50);
  EXPECT_NE(r.note.find("ns per element"), std::string::npos) << r.note;
}

// The cold-libm probe (docs/calibration.md, "The fit"): the median over six libm routines of how
// much longer a 1024-element loop takes right after streaming 64 MiB than
// hot; at least 0 and far below the loop itself (0.3-1 us on the
// development VM, where the hot loops take 2-11 us), and the note names
// every routine.
TEST(Probe, ColdLibmRoutineCostIsMeasuredPerRoutine) {
  std::string note;
  const double us = fuseplan::libm_cold_us(std::size_t(64) << 20, note);
  EXPECT_GE(us, 0);
  EXPECT_LT(us, 100);
  for (const char* op : {"Exp", "Log", "Sin", "Tanh", "Erf", "Pow"}) EXPECT_NE(note.find(op), std::string::npos) << note;
  EXPECT_NE(note.find("after streaming 64 MiB"), std::string::npos) << note;
}
