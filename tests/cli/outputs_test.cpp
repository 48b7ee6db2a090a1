// One rule for every output (support/outputs.h): checked before any work,
// never an input, folders written whole, a broken compiler setting named as
// the environment's fault. Regression tests of the adversarial trial's rows
// 8 (partial folders), 9 (input destroyed), 10 (stale files mixed in),
// 12 (wrong exit code / empty reason) and 13 (inconsistent paths).
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/cli/cli_util.h"

namespace fuseplan::test {
namespace {

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// Row 9: an output naming an input (any spelling, or a hard link) is refused
// and the input is left as it was.
TEST(CliOutputs, AnOutputThatIsAnInputIsRefusedAndTheInputKept) {
  const std::string dir = fresh_dir("out-is-in");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string before = slurp(model);
  expect_refused(fuseplan({"search", model, "--batch", "2", "-o", model}),
                 "cannot write '" + model + "': it is the input '" + model + "'");
  expect_refused(fuseplan({"search", "tiny.onnxtxt", "--batch", "2", "-o", "./tiny.onnxtxt"}, dir),
                 "it is the input 'tiny.onnxtxt'");
  fs::create_hard_link(model, dir + "/link.onnxtxt");
  expect_refused(fuseplan({"search", model, "--batch", "2", "-o", dir + "/link.onnxtxt"}), "it is the input");
  expect_refused(fuseplan({"compare", model, "--batch", "2", "--csv", model}), "it is the input");
  expect_refused(fuseplan({"measure", model, "--batch", "2", "--device", "host-cpu-reference", "-o", model}),
                 "it is the input");
  EXPECT_EQ(slurp(model), before);
  const std::string records = write(dir, "m.jsonl", "");
  expect_refused(fuseplan({"calibrate", "--device", "host-cpu-reference", records, "-o", records}), "it is the input '" + records + "'");
  expect_refused(fuseplan({"accuracy", "--device", "host-cpu-reference", records, "-o", records}), "it is the input '" + records + "'");
  const std::string device = dir + "/dev.json";
  fs::copy_file(std::string(FUSEPLAN_SOURCE_DIR) + "/configs/devices/host-cpu-reference.json", device);
  const std::string device_before = slurp(device);
  expect_refused(fuseplan({"calibrate", records, "--device", device, "-o", device}), "it is the input '" + device + "'");
  EXPECT_EQ(slurp(device), device_before);
  EXPECT_EQ(slurp(records), "");
}

// Row 10: a second tune into the same folder is refused unless --force, and
// with --force the folder holds only the second tune's files.
TEST(CliOutputs, TuneReplacesItsFolderWholeOnlyWithForce) {
  const std::string dir = fresh_dir("tune-twice");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  const std::string out = dir + "/t";
  Result a = fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "1,8", "--no-peers", "--no-svg", "-o", out});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_TRUE(fs::exists(out + "/plan-b8.json"));
  expect_refused(fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "2", "--no-peers", "--no-svg", "-o", out}),
                 "cannot write '" + out + "': the directory is not empty (give --force to replace it whole)");
  EXPECT_TRUE(fs::exists(out + "/plan-b8.json"));
  Result b = fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "2", "--no-peers", "--no-svg", "--force", "-o", out});
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_TRUE(fs::exists(out + "/plan-b2.json"));
  EXPECT_FALSE(fs::exists(out + "/plan-b8.json"));  // the first tune's plans are gone with its folder
  EXPECT_FALSE(fs::exists(out + "/plan-b1.json"));
  // No staging folder stays beside it.
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"t", "tiny.onnxtxt"}));
  // A folder that holds an input is never replaced, even with --force.
  expect_refused(fuseplan({"tune", "--device", "host-cpu-reference", model, "--batch", "2", "--no-peers", "--force", "-o", dir}),
                 "it holds the input '" + model + "'");
}

// Row 8: emit writes its folder whole: the files appear together, and a
// failure leaves neither the folder nor a staging folder.
TEST(CliOutputs, EmitWritesItsFolderWhole) {
  const std::string dir = fresh_dir("emit-whole");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  Result s = fuseplan({"search", model, "--batch", "2", "--device", "h100-sxm", "-o", dir + "/plan.json"});
  ASSERT_EQ(s.code, 0) << s.err;
  Result e = fuseplan({"emit", dir + "/plan.json", model, "--batch", "2", "--no-compile", "-o", dir + "/k"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_FALSE(names_in(dir + "/k").empty());
  expect_refused(fuseplan({"emit", dir + "/plan.json", model, "--batch", "2", "--no-compile", "-o", dir + "/k"}),
                 "the directory is not empty");
  // A plan that does not load fails: nothing is left, no staging folder either.
  const std::string broken = write(dir, "broken.json", "{");
  Result bad = fuseplan({"emit", broken, model, "--batch", "2", "--no-compile", "-o", dir + "/k2"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  fs::remove(broken);
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"k", "plan.json", "tiny.onnxtxt"}));
}

// Row 13: every command checks its outputs before working, by one rule: the
// directory of a file output must exist (probe created it, others refused),
// and a directory or special file is refused before the measurement.
TEST(CliOutputs, EveryCommandChecksItsOutputFirstByOneRule) {
  const std::string dir = fresh_dir("out-rule");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  expect_refused(fuseplan({"probe", "-o", dir + "/a/b/c.json"}),
                 "cannot write '" + dir + "/a/b/c.json': no directory '" + dir + "/a/b'");
  EXPECT_FALSE(fs::exists(dir + "/a"));
  expect_refused(fuseplan({"probe", "-o", dir}), "cannot write '" + dir + "': it is a directory");
  expect_refused(fuseplan({"measure", model, "--batch", "2", "--device", "host-cpu-reference", "-o", "/proc/x"}),
                 "cannot write '/proc/x'");
  expect_refused(fuseplan({"search", model, "--batch", "2", "-o", dir + "/no/plan.json"}), "no directory");
  expect_refused(fuseplan({"gen", "--primitives", "10", "-o", dir + "/no/m.onnx"}), "no directory");
}

// Row 12: a compiler setting that is not a working compiler is the
// environment's fault: exit 3 and a reason, never an empty one.
TEST(CliOutputs, ABrokenCompilerSettingIsAnEnvironmentError) {
  const std::string dir = fresh_dir("bad-cxx");
  const std::string model = write(dir, "tiny.onnxtxt", kTiny);
  for (const std::string cxx : {"/bin/true", "/bin/false"}) {
    SCOPED_TRACE(cxx);
    const std::string cache = dir + "/cache" + std::to_string(cxx.size());  // no cached kernels
    Result r = fuseplan({"run", model, "--batch", "2", "--device", "host-cpu-reference"}, ".",
                        "FUSEPLAN_CXX=" + cxx + " FUSEPLAN_CACHE_DIR=" + quote(cache));
    EXPECT_EQ(r.code, 3) << r.err;
    const auto lines = r.err_lines();
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_NE(lines[0].find("fuseplan: error: the C++ compiler '" + cxx + "' (FUSEPLAN_CXX)"), std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find(cxx == "/bin/true" ? "exited with status 0 but wrote no" : "it printed nothing"),
              std::string::npos)
        << lines[0];
  }
}

}  // namespace
}  // namespace fuseplan::test
