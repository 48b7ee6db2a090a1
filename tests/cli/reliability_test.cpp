// Regression tests of the adversarial trial's rows (issue 33) that a whole
// run reproduces: integer INT_MIN / -1 (row 1), negative pads (row 7),
// --inputs of a weight placeholder (row 15), a negative median in a later
// measurement file (row 16), subgraphs nested thousands deep (row 2),
// model names with invalid UTF-8 and control bytes (rows 6 and 11), the
// search's limits on long chains (--time-limit, row 3; --max-group-size,
// row 5).
#include <gtest/gtest.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "support/format.h"
#include "tests/cli/cli_util.h"
#include "tests/onnx_bytes.h"

namespace fuseplan::test {
namespace {

// A v1 .npy file of `descr` ('<i8', '<f4') and 1-D or 2-D `shape` holding `bytes`.
std::string npy(const std::string& descr, const std::string& shape, const std::string& bytes) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  return std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xff) + char(h.size() >> 8) + h + bytes;
}

// Row 1: INT64_MIN / -1 and INT64_MIN % -1 crashed the reference executor
// and the emitted kernels with SIGFPE. Integer division is total
// (docs/numerics.md): the quotient wraps to INT64_MIN, the remainder is 0.
TEST(CliReliability, IntMinDividedByMinusOneWrapsInsteadOfCrashing) {
  const std::string dir = fresh_dir("intmin");
  // a is an input (not folded): the kernels compute it; c is folded from constants.
  const std::string model = write(dir, "m.onnxtxt", R"(<ir_version: 8, opset_import: ["" : 17]>
m (int64[2] a) => (int64[2] q, int64[2] r, int64[1] c) {
  b = Constant<value = int64[1] {-1}>()
  m = Constant<value = int64[1] {-9223372036854775808}>()
  q = Div(a, b)
  r = Mod(a, b)
  c = Div(m, b)
})");
  const int64_t v[2] = {INT64_MIN, 7};
  const std::string a = write(dir, "a.npy", npy("<i8", "(2,)", std::string(reinterpret_cast<const char*>(v), sizeof v)));
  for (const std::string strategy : {"unfused", "cost"}) {
    SCOPED_TRACE(strategy);
    Result r = fuseplan({"run", model, "--device", "host-cpu-reference", "--strategy", strategy, "--verify", "--inputs",
                         "a=" + a, "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("\"verified\": true"), std::string::npos) << r.out;
  }
}

// Row 7: Pad with negative pads (a crop) emitted "(i0)--1", which the C++
// compiler refused, reported as the user's error.
TEST(CliReliability, NegativePadsRunAndVerify) {
  const std::string dir = fresh_dir("negpad");
  const std::string model = write(dir, "m.onnxtxt", R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[4, 6] x) => (float[4, 3] y) {
  p = Constant<value = int64[4] {0, -1, 0, -2}>()
  y = Pad(x, p)
})");
  Result r = fuseplan({"run", model, "--device", "host-cpu-reference", "--verify", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"verified\": true"), std::string::npos) << r.out;
}

// Row 15: --inputs naming a weight placeholder (a graph input the importer
// treats as a weight) said "not a graph input". Its values can be given
// like a data input's; naming a computed tensor says what it is.
TEST(CliReliability, InputsFeedWeightPlaceholdersAndNameWhatTheyCannotFeed) {
  const std::string dir = fresh_dir("feed-weight");
  const std::string model = write(dir, "m.onnxtxt", R"(<ir_version: 8, opset_import: ["" : 17]>
m (float[2, 4] x, float[4, 3] w) => (float[2, 3] y) {
  t = MatMul(x, w)
  y = Relu(t)
})");
  const std::string ones(4 * 3 * sizeof(float), '\0');
  const std::string w = write(dir, "w.npy", npy("<f4", "(4, 3)", ones));
  Result r = fuseplan({"run", model, "--device", "host-cpu-reference", "--verify", "--json", "--inputs", "w=" + w});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string t = write(dir, "t.npy", npy("<f4", "(2, 3)", std::string(2 * 3 * sizeof(float), '\0')));
  expect_refused(fuseplan({"run", model, "--device", "host-cpu-reference", "--inputs", "t=" + t}),
                 "--inputs names 't', a tensor the model computes (op MatMul), not a graph input");
  expect_refused(fuseplan({"run", model, "--device", "host-cpu-reference", "--inputs", "nope=" + t}),
                 "--inputs names 'nope', which is no tensor of the model");
}

// Row 16: a record with median -5 us was refused inside one file, by the
// fit, but accepted from a later file, where the median over runs hid it.
// Either way it is refused naming its file and line.
TEST(CliReliability, ANegativeMedianIsRefusedInAnyFile) {
  const std::string dir = fresh_dir("negative-median");
  auto record = [](int group, const std::string& median) {
    return R"({"schema": "fuseplan.measurement/1", "model": "m.onnxtxt", "group": )" + std::to_string(group) +
           R"(, "group_key": "k)" + std::to_string(group) + R"(", "device": "host-cpu-reference", "predicted": {"bytes_read": )" +
           std::to_string(1024 * (group + 1)) + R"(, "bytes_written": 256, "flops_contraction": 0, )" +
           R"("flops_other": 64, "predicted_us": 1}, "measured": {"median_us": )" + median + "}}\n";
  };
  std::string good;
  for (int g = 0; g < 12; ++g) good += record(g, std::to_string(2 + g));
  // Two good runs and the bad one: the median over the three runs was 2.
  const std::string first = write(dir, "first.jsonl", good), again = write(dir, "again.jsonl", good);
  const std::string second = write(dir, "second.jsonl", record(0, "-5"));
  const std::string alone = write(dir, "alone.jsonl", record(0, "-5") + good);
  const std::string msg = "1: measurement.measured: field 'median_us' must be a time > 0, got -5.0";
  for (const char* cmd : {"calibrate", "accuracy"}) {
    SCOPED_TRACE(cmd);
    const std::string out = dir + "/" + cmd + ".out";
    expect_refused(fuseplan({cmd, "--device", "host-cpu-reference", alone, "-o", out}), alone + ":" + msg);
    expect_refused(fuseplan({cmd, "--device", "host-cpu-reference", first, again, second, "-o", out}), second + ":" + msg);
    EXPECT_FALSE(fs::exists(out));
  }
}

// Row 2: ONNX text nesting If branches 5000 deep crashed inspect (SIGSEGV
// in the text parser). It is refused with one line, as deep as it goes.
TEST(CliReliability, SubgraphsNestedThousandsDeepAreRefusedNotACrash) {
  const std::string dir = fresh_dir("deep-if");
  for (const int depth : {65, 5000, 50000}) {
    SCOPED_TRACE(depth);
    const std::string model = write(dir, "deep.onnxtxt", nested_if_text(depth));
    expect_refused(fuseplan({"inspect", model}), "deep.onnxtxt: model nests subgraphs deeper than 64");
  }
}

// Rows 6 and 11: a binary model (text syntax cannot spell these names)
// x[4] -> Relu -> Exp -> y whose names hold byte 0xFF, ESC sequences (colour,
// window title) and a newline. search -o, cost --json and run --json failed
// with "internal error: [json.exception.type_error.316] invalid UTF-8"; the
// tables passed the control bytes to the terminal. Names are escaped at
// import, so every output is valid UTF-8 free of control bytes.
TEST(CliReliability, ModelNamesWithInvalidUtf8AndControlBytesAreEscapedOnEveryOutput) {
  const std::string dir = fresh_dir("odd-names");
  const std::string x = "x\xFF", e = "e\x1B[31m\x1B]0;title\x07", y = "y\nnew";
  auto value_info = [](const std::string& name) {
    const std::string dim4 = field(1, varint(1 << 3) + varint(4));
    return field(1, name) + field(2, field(1, varint(1 << 3) + varint(1) + field(2, dim4)));
  };
  auto node = [](const std::string& op, const std::string& in, const std::string& out, const std::string& name) {
    return field(1, field(1, in) + field(2, out) + field(3, name) + field(4, op));
  };
  const std::string graph = node("Relu", x, e, "relu\x1B[2J") + node("Exp", e, y, "exp\xC0") +
                            field(11, value_info(x)) + field(12, value_info(y));
  const std::string model = write(dir, "odd.onnx", varint(1 << 3) + varint(8) +
                                                       field(8, field(1, "") + varint(2 << 3) + varint(17)) +
                                                       field(7, graph));
  // No byte a terminal acts on: each line is printable ASCII or UTF-8
  // (fuseplan's own "×", "µs"), with no control byte, DEL or invalid UTF-8.
  auto expect_clean = [](const std::string& what, const std::string& text) {
    std::stringstream ss(text);
    for (std::string line; std::getline(ss, line);) EXPECT_EQ(escape_name(line), line) << what;
  };
  const std::string plan = dir + "/plan.json";
  Result r = fuseplan({"search", model, "--device", "host-cpu-reference", "-o", plan});
  ASSERT_EQ(r.code, 0) << r.err;
  expect_clean("search stdout", r.out + r.err);
  const std::string text = slurp(plan);
  expect_clean("plan.json", text);
  EXPECT_NE(text.find(R"("x\\xFF")"), std::string::npos) << text;  // JSON spells the backslash "\\"
  EXPECT_NE(text.find(R"("y\\x0Anew")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(e\\x1B[31m\\x1B]0;title\\x07)"), std::string::npos) << text;
  EXPECT_NO_THROW((void)nlohmann::json::parse(text));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"inspect", model}, {"inspect", model, "--json"},
        {"cost", model, "--device", "host-cpu-reference"}, {"cost", model, "--device", "host-cpu-reference", "--json"},
        {"explain", plan}, {"run", "--device", "host-cpu-reference", model, "--plan", plan, "--verify", "--json"}}) {
    SCOPED_TRACE(args[0] + " " + args.back());
    r = fuseplan(args);
    ASSERT_EQ(r.code, 0) << r.err;
    expect_clean("stdout", r.out);
    expect_clean("stderr", r.err);
    if (args.back() == "--json") EXPECT_NO_THROW((void)nlohmann::json::parse(r.out)) << r.out;
  }
  EXPECT_NE(fuseplan({"inspect", model}).out.find("x\\xFF"), std::string::npos);
}

// Row 11, plan files: a hand-edited plan whose names hold "\u001b[31m" (valid
// JSON) printed the ESC raw in explain's table. Plan strings are escaped as
// model names are; a plan fuseplan wrote reads unchanged.
TEST(CliReliability, ControlBytesInAPlanFileAreEscapedToo) {
  const std::string dir = fresh_dir("odd-plan");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string plan = dir + "/plan.json";
  ASSERT_EQ(fuseplan({"search", model, "--device", "host-cpu-reference", "--batch", "2", "--strategy", "unfused", "-o", plan}).code, 0);
  std::string text = slurp(plan);
  std::string::size_type at = 0;
  int renamed = 0;
  for (; (at = text.find("\"t\"", at)) != std::string::npos; ++renamed) text.replace(at, 3, R"("t\u001b[31m\n")");
  ASSERT_GT(renamed, 0) << text;
  const std::string edited = write(dir, "edited.json", text);
  Result r = fuseplan({"explain", edited});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1B'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("t\\x1B[31m\\x0A"), std::string::npos) << r.out;
  // cost --plan looks the escaped name up in the model and names it, escaped.
  expect_refused(fuseplan({"cost", model, "--device", "host-cpu-reference", "--batch", "2", "--plan", edited}),
                 "no primitive named 't\\x1B[31m\\x0A' in the model");
  Result same = fuseplan({"explain", plan});
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.out.find("\\x"), std::string::npos) << same.out;
}

// A chain of n elementwise primitives (Relu and Neg alternating) on [8, 256].
std::string chain_model(const std::string& dir, int n) {
  std::string t = "<ir_version: 8, opset_import: [\"\" : 17]>\nchain (float[8, 256] x) => (float[8, 256] y) {\n";
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    const std::string out = i == n - 1 ? "y" : "t" + std::to_string(i);
    t += "  " + out + " = " + (i % 2 ? "Neg" : "Relu") + "(" + prev + ")\n";
    prev = out;
  }
  return write(dir, "chain" + std::to_string(n) + ".onnxtxt", t + "}\n");
}

// Row 3: `search` of a long chain with `--strategy optimal --time-limit 1`
// ran for minutes (10^4 and 10^5 primitives never finished in 60 s): the
// limit bounded only CBC, not the candidate enumeration and model building
// before it. It covers the whole strategy now, and the stdout line says
// what the limit left: the gap, or that no bound is proven.
TEST(CliReliability, OptimalTimeLimitHoldsOnALongChainAndTheLineStatesTheGap) {
  const std::string dir = fresh_dir("timelimit");
  const std::string model = chain_model(dir, 100000);
  const auto t0 = std::chrono::steady_clock::now();
  Result r = fuseplan({"search", model, "--device", "host-cpu-reference", "--strategy", "optimal", "--time-limit", "1"});
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(wall_s, 60.0);  // about 10 s: import, the 1 s search, the unfused baseline, printing
  std::vector<std::string> lines;
  std::stringstream ss(r.out);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0].rfind("strategy optimal on host-cpu-reference: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(", status: time limit 1 s reached"), std::string::npos) << lines[0];
  EXPECT_TRUE(lines[0].find("no proven bound") != std::string::npos || lines[0].find("gap ") != std::string::npos)
      << lines[0];
}

// Row 5: `search CHAIN --device host-cpu-reference --max-group-size 2` returned one
// group of 1000 primitives: the XLA start of `cost` and `xla` ignored the cap.
TEST(CliReliability, MaxGroupSizeHoldsForEveryStrategy) {
  const std::string dir = fresh_dir("groupcap");
  const std::string model = chain_model(dir, 1000);
  for (const std::string strategy : {"cost", "xla", "tvm", "inductor", "elementwise", "optimal"}) {
    SCOPED_TRACE(strategy);
    const std::string plan = dir + "/" + strategy + ".json";
    Result r = fuseplan({"search", model, "--device", "host-cpu-reference", "--strategy", strategy, "--max-group-size", "2",
                         "--time-limit", "10", "-o", plan});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(slurp(plan));
    ASSERT_FALSE(j.at("groups").empty());
    for (const auto& grp : j.at("groups")) EXPECT_LE(grp.at("nodes").size(), 2u);
  }
}

// No arbitrary group-size split (issue 32): a chain of 250 elementwise ops,
// cut at 128 primitives by a fixed default before, is one kernel; the
// user's --max-group-size still cuts, and `explain` shows each cut as a
// `group_size` blocker naming the cap. A run of the one-kernel plan is
// bit-identical to the reference.
TEST(CliReliability, A250ChainIsOneKernelAndAUserCapCutIsExplained) {
  const std::string dir = fresh_dir("chain250");
  const std::string model = chain_model(dir, 250);
  Result r = fuseplan({"search", model, "--device", "host-cpu-reference", "-o", dir + "/one.json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(": 1 kernels (unfused 250)"), std::string::npos) << r.out;
  Result run = fuseplan(
      {"run", model, "--plan", dir + "/one.json", "--device", "host-cpu-reference", "--verify", "--repeat", "1"});
  ASSERT_EQ(run.code, 0) << run.err;
  r = fuseplan({"search", model, "--device", "host-cpu-reference", "--max-group-size", "100", "-o", dir + "/capped.json"});
  ASSERT_EQ(r.code, 0) << r.err;
  Result e = fuseplan({"explain", dir + "/capped.json"});
  ASSERT_EQ(e.code, 0) << e.err;
  int cuts = 0;
  std::stringstream ss(e.out);
  for (std::string l; std::getline(ss, l);) {
    if (l.find(": blocked (kernels ") == std::string::npos) continue;
    ++cuts;
    EXPECT_NE(l.find(" [group_size] "), std::string::npos) << l;
    EXPECT_NE(l.find("primitives, over the user's --max-group-size 100"), std::string::npos) << l;
  }
  EXPECT_GE(cuts, 2) << e.out;  // 250 primitives in kernels of at most 100
}

// A plan edited to hold one group past the compile-time budget (781+
// primitives on a CPU device) is refused by name; the emitters recurse once
// per chained primitive, and an 8000-primitive group overflowed their stack.
TEST(CliReliability, AGroupPastTheCompileTimeBudgetIsRefused) {
  const std::string dir = fresh_dir("chain-budget");
  const std::string model = chain_model(dir, 1000);
  const std::string plan = dir + "/p.json";
  Result r = fuseplan({"search", model, "--device", "host-cpu-reference", "-o", plan});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(slurp(plan));
  ASSERT_EQ(j["groups"].size(), 2u);
  for (const auto& n : j["groups"][1]["nodes"]) j["groups"][0]["nodes"].push_back(n);
  j["groups"].erase(1);
  std::ofstream(dir + "/merged.json") << j.dump();
  expect_refused(fuseplan({"run", model, "--plan", dir + "/merged.json", "--device", "host-cpu-reference"}),
                 "malformed plan: group 0 holds 1000 primitives, over the compile-time budget of 780 per kernel on "
                 "host-cpu-reference");
}

}  // namespace
}  // namespace fuseplan::test
