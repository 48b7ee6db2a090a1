#include "support/outputs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "support/error.h"

namespace fuseplan {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw Error("cannot write '" + path + "': " + why);
}

// The parent folder of `path` ("." for a bare name).
fs::path parent_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

void check_parent(const std::string& path) {
  const fs::path dir = parent_of(path);
  std::error_code ec;
  if (!fs::exists(dir, ec)) refuse(path, "no directory '" + dir.string() + "'");
  if (!fs::is_directory(dir, ec)) refuse(path, "'" + dir.string() + "' is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) refuse(path, "'" + dir.string() + "': " + std::strerror(errno));
  // access() says yes to root everywhere, and /proc takes no new files:
  // make (and drop) a file beside the output, as writing it will.
  const fs::path probe = dir / (".fuseplan-check." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    if (errno != EEXIST) refuse(path, "'" + dir.string() + "' takes no new file: " + std::strerror(errno));
    return;
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Throws when `out` (existing) is one of `inputs`, or (a folder) holds one.
void check_not_input(const std::string& out, const std::vector<std::string>& inputs, bool folder) {
  struct stat so {};
  if (::stat(out.c_str(), &so) != 0) return;
  for (const std::string& in : inputs) {
    struct stat si {};
    if (in.empty() || ::stat(in.c_str(), &si) != 0) continue;
    if (same_file(so, si)) refuse(out, "it is the input '" + in + "'; write the output elsewhere");
    if (!folder) continue;
    // A folder output is replaced whole: refuse one that holds an input.
    std::error_code ec;
    for (fs::path p = fs::absolute(in, ec).parent_path(); !ec && p.has_relative_path(); p = p.parent_path()) {
      struct stat sp {};
      if (::stat(p.c_str(), &sp) == 0 && same_file(so, sp))
        refuse(out, "it holds the input '" + in + "', which replacing it would delete");
    }
  }
}

}  // namespace

void check_output_file(const std::string& out, const std::vector<std::string>& inputs) {
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (fs::is_directory(st)) refuse(out, "it is a directory");
  if (fs::exists(st) && !fs::is_regular_file(st)) refuse(out, "not a regular file");
  check_parent(out);
  check_not_input(out, inputs, false);
}

void check_output_dir(const std::string& dir, const std::vector<std::string>& inputs, bool force) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st)) refuse(dir, "it exists and is not a directory");
  check_parent(dir);
  check_not_input(dir, inputs, true);
  if (fs::is_directory(st) && !force && !fs::is_empty(dir, ec))
    refuse(dir, "the directory is not empty (give --force to replace it whole)");
}

StagedDir::StagedDir(std::string dir) : dir_(std::move(dir)) {
  fs::path target(dir_);
  if (target.filename().empty()) target = target.parent_path();  // "out/" names "out"
  dir_ = target.string();
  const fs::path parent = parent_of(dir_);
  const std::string prefix = "." + target.filename().string() + ".tmp.";
  std::error_code ec;
  // Staging folders of runs that were killed (SIGINT, SIGKILL) before commit.
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      fs::remove_all(it->path(), rm);
    }
  }
  staging_ = (parent / (prefix + std::to_string(::getpid()))).string();
  fs::remove_all(staging_, ec);
  if (!fs::create_directory(staging_, ec) || ec)
    refuse(dir_, "cannot make the staging folder '" + staging_ + "': " + (ec ? ec.message() : "it exists"));
}

StagedDir::~StagedDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

std::string StagedDir::final_path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

void StagedDir::commit() {
  std::error_code ec;
  // rename(2) replaces only an empty folder: move the old one aside first,
  // then drop it once the new one is in place.
  std::string old;
  if (fs::exists(dir_, ec)) {
    old = staging_ + ".old";
    fs::rename(dir_, old, ec);
    if (ec) refuse(dir_, "cannot replace it: " + ec.message());
  }
  fs::rename(staging_, dir_, ec);
  if (ec) {
    std::error_code back;
    if (!old.empty()) fs::rename(old, dir_, back);
    refuse(dir_, ec.message());
  }
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace fuseplan
