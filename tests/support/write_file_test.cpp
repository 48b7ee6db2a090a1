// write_file_atomic (support/files.h), which every output of fuseplan goes
// through: whole files or nothing, and never a special file replaced.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/files.h"
#include "graph/graph.h"

namespace fs = std::filesystem;

namespace fuseplan {
namespace {

fs::path scratch_dir() {
  const fs::path d = fs::temp_directory_path() / ("fuseplan_write_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string error_of(const std::string& path) {
  try {
    write_file_atomic(path, "x");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(WriteFile, RefusesDirectoriesAndFifosAndWritesThroughSymlinks) {
  const fs::path d = scratch_dir();
  // Regression: `-o DIR` said "cannot write 'DIR': Success"; `-o FIFO` replaced the FIFO.
  EXPECT_NE(error_of(d.string()).find("it is a directory"), std::string::npos) << error_of(d.string());
  const fs::path fifo = d / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of(fifo.string()).find("not a regular file"), std::string::npos);
  EXPECT_TRUE(fs::is_fifo(fifo));
  // A symlink keeps pointing at the file, which gets the new content.
  const fs::path file = d / "plan.json", link = d / "link.json";
  write_file_atomic(file.string(), "old");
  fs::create_symlink(file, link);
  write_file_atomic(link.string(), "new");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(read_file(file.string()), "new");
  fs::remove_all(d);
}

}  // namespace
}  // namespace fuseplan
