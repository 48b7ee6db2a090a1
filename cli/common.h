// Shared CLI plumbing: model options, loading, table printing. Only cli/
// prints to stdout.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "costmodel/device.h"
#include "graph/import.h"
#include "search/plan.h"
#include "support/files.h"
#include "support/format.h"
#include "support/outputs.h"

namespace fuseplan::cli {

/// Upper bound of --threads: OpenMP allocates per-thread state up front, and
/// a count far beyond any machine (100000) crashed the runtime.
constexpr int kMaxThreads = 4096;

/// What --batch binds, for help texts (README "Binding rule", graph/README.md).
inline constexpr const char* kBatchHelp =
    "bind the batch dim to B (>= 1): the leading dim of the first data input whose leading dim is symbolic, "
    "by name wherever it appears; other dims need --dim (README: binding rule)";

/// CLI11 check of a --batch value (also each item of a --batch list): an
/// integer >= 1; else "--batch: must be an integer >= 1, got '0'".
CLI::Validator batch_value();
/// A --batch list (compare): the comma-separated items of every `args`
/// entry, each an integer >= 1; throws Error for an empty item ('1,,8'), a bad
/// value or a size given twice.
std::vector<int64_t> parse_batch_list(const std::vector<std::string>& args);
/// CLI11 check of one --batch list entry (parse_batch_list on it).
CLI::Validator batch_list();
/// --strategies: 'all' (every strategy), or names comma separated, each
/// once; throws Error for an empty entry ('', 'cost,,tvm'), a name given
/// twice or an unknown strategy.
std::vector<std::string> parse_strategy_list(const std::string& list);
/// CLI11 check of a --dim item: NAME=VALUE with VALUE an integer >= 1.
CLI::Validator dim_value();

/// --dim NAME=VALUE items parsed; throws Error for a malformed item or a NAME
/// given twice ("--dim S given twice (1 and 2)").
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dim_args);

/// A --device argument: "host" or "host-cpu" is this machine, probed
/// (probe/host_device.h: the per-machine cache, else a quick probe now with
/// one progress line on stderr; FUSEPLAN_NO_HOST_PROBE refuses to probe);
/// anything else a configs/devices name or a device JSON path (load_device).
/// Throws Error for an unknown or malformed device, EnvironmentError when
/// the probe's cache directory cannot be written.
DeviceSpec load_device_arg(const std::string& name_or_path);
/// Help text of --device.
inline constexpr const char* kDeviceHelp =
    "device: host-cpu (this machine, probed on first use and cached), a configs/devices name (h100-sxm, "
    "host-cpu-reference, ...) or a device JSON path";

/// MODEL --batch --dim options shared by every command that reads a model.
struct ModelArgs {
  std::string path;
  std::optional<int64_t> batch;  // --batch B (>= 1)
  std::vector<std::string> dim_args;  // "NAME=VALUE"
  /// A --dim NAME the model does not have is an error (ImportOptions); set by
  /// add_to. Commands that give one --dim set to several models leave it off
  /// and call check_dims_known.
  bool known_dims_only = false;

  /// One of `models` files given the same --batch/--dim: a --dim NAME the
  /// file lacks is refused only when it is the only model (several: the
  /// caller runs check_dims_known over them all).
  static ModelArgs one_of(const std::string& path, std::optional<int64_t> batch,
                          const std::vector<std::string>& dim_args, std::size_t models);

  void add_to(CLI::App* app, bool positional = true);
  /// Throws Error for --batch < 1, a malformed --dim or a NAME given twice.
  ImportOptions import_options() const;
  /// Bound dims recorded in plans: --dim values plus "batch" when given.
  std::map<std::string, int64_t> dims() const;
};

struct LoadedModel {
  Graph graph;
  std::string sha256;
};
/// Imports the model; prints its warnings to stderr (one line each) unless
/// `quiet` (a model loaded again at another batch size).
LoadedModel load_model(const ModelArgs& a, bool quiet = false);

/// One --dim set for several models (compare, measure, accuracy): each model
/// ignores the names it lacks, but a NAME none of `models` has is an error
/// listing their symbolic dims. Imports each model (at `batch`) when there
/// are several and --dim is given; one model checks itself (ModelArgs).
void check_dims_known(const std::vector<std::string>& models, std::optional<int64_t> batch,
                      const std::vector<std::string>& dim_args);

/// `s` with control and other non-printable bytes as \xNN (error and warning
/// lines name files, dims and devices as the user typed them).
std::string printable(const std::string& s);
/// Prints "fuseplan: warning: <line>" (printable) to stderr.
void warn(const std::string& line);

/// CLI11 check: an integer in [lo, hi]; else "must be an integer from lo to
/// hi, got 'abc'".
CLI::Validator integer_in(int64_t lo, int64_t hi);
/// CLI11 check: a number in [lo, hi]; else "must be a number from lo to hi,
/// got '-1'".
CLI::Validator number_in(double lo, double hi);
/// CLI11 check of a file or folder name given as an option: not empty.
CLI::Validator file_name();

/// Left-aligned text table with a header row, columns padded to width.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
inline std::string fmt(double v, int precision = 2) { return fixed_text(v, precision); }
/// 1536 -> "1.5 KiB" style byte counts.
inline std::string fmt_bytes(double b) { return bytes_text(b); }

/// Registration of each sub-command (one file each).
void add_inspect(CLI::App& app);
void add_probe(CLI::App& app);
void add_cost(CLI::App& app);
void add_search(CLI::App& app);
void add_explain(CLI::App& app);
void add_compare(CLI::App& app);
void add_emit(CLI::App& app);
void add_run(CLI::App& app);
void add_measure(CLI::App& app);

/// `--measure` of tune and compare runs plans on the CPU backend: refuses a
/// GPU device (its timings would calibrate a GPU with CPU times). Throws Error.
void require_cpu_for_measure(const DeviceSpec& d, const std::string& command);
/// --hold of calibrate and accuracy: throws Error naming the first name that
/// is no calibration parameter of `d`, with the valid names.
void check_hold(const DeviceSpec& d, const std::vector<std::string>& hold);
void add_calibrate(CLI::App& app);
void add_accuracy(CLI::App& app);
void add_tune(CLI::App& app);

}  // namespace fuseplan::cli
