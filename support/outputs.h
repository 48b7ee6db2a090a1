// What a command writes, checked before it does any work, by one rule for
// every command (README "Outputs"):
//  - a file output's folder must exist and be writable, and the output must
//    not be a folder, a device or a FIFO;
//  - a folder output's parent must exist and be writable; the folder itself
//    must be absent or empty unless the command was given --force, and it is
//    written whole (StagedDir): staged in a hidden sibling and renamed into
//    place when complete, so an interrupted command leaves no partial folder
//    and never mixes a previous run's files with its own;
//  - no output may be one of the command's inputs (the same file by device
//    and inode, whatever the spelling of its path, hard links included).
// Each check throws Error("cannot write '<path>': <reason>") (exit 2).
#pragma once

#include <string>
#include <vector>

namespace fuseplan {

/// Throws Error unless `out` can be written as a file (see above) and names
/// none of `inputs` (paths that do not exist are skipped).
void check_output_file(const std::string& out, const std::vector<std::string>& inputs = {});

/// Throws Error unless `dir` can be written as a folder (see above): its
/// parent exists and is writable, it is not a file, it is absent or empty (or
/// `force`), and it neither is nor holds any of `inputs`.
void check_output_dir(const std::string& dir, const std::vector<std::string>& inputs = {}, bool force = false);

/// An output folder written whole. The constructor makes an empty staging
/// folder `.<name>.tmp.<pid>` beside `dir` (removing stale ones of processes
/// that no longer run); files are written under path(); commit() renames the
/// staging folder to `dir`, replacing an existing `dir` (checked beforehand
/// by check_output_dir). Destroyed uncommitted, it removes the staging
/// folder. Throws Error when the file system refuses.
class StagedDir {
 public:
  explicit StagedDir(std::string dir);
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;
  ~StagedDir();

  /// Where to write now (the staging folder until commit(), then `dir`).
  const std::string& path() const { return committed_ ? dir_ : staging_; }
  /// `name` inside the final folder, for messages ("wrote DIR/plan.json").
  std::string final_path(const std::string& name) const;
  void commit();

 private:
  std::string dir_, staging_;
  bool committed_ = false;
};

}  // namespace fuseplan
