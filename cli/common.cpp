#include "cli/common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "costmodel/calibrate.h"
#include "probe/host_device.h"
#include "support/files.h"
#include "search/strategy.h"

namespace fuseplan::cli {

namespace {
// `s` as a whole decimal integer, or nothing.
std::optional<long long> whole_integer(const std::string& s) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (s.empty() || used != s.size()) return std::nullopt;
  return v;
}

// "" when `s` is an integer >= 1, else why not.
std::string positive_integer_error(const std::string& s) {
  std::optional<long long> v = whole_integer(s);
  if (!v || *v < 1) return "must be an integer >= 1, got '" + s + "'";
  return "";
}
}  // namespace

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  const std::string range = "from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        std::optional<long long> v = whole_integer(s);
        if (!v) return "must be an integer " + range + ", got '" + s + "'";
        if (*v < lo || *v > hi) return "must be " + range + ", got " + s;
        return "";
      },
      "INT " + range, "integer range");
}

CLI::Validator number_in(double lo, double hi) {
  const std::string range = "from " + fmt(lo, lo < 1 ? 3 : 0) + " to " + fmt(hi, 0);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        std::size_t used = 0;
        double v = 0;
        try {
          v = std::stod(s, &used);
        } catch (...) {
          used = 0;
        }
        if (s.empty() || used != s.size() || !std::isfinite(v)) return "must be a number " + range + ", got '" + s + "'";
        if (v < lo || v > hi) return "must be " + range + ", got " + s;
        return "";
      },
      "NUM " + range, "number range");
}

CLI::Validator file_name() {
  return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "must not be empty" : ""; }, "PATH",
                        "file name");
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  }
  return out;
}

DeviceSpec load_device_arg(const std::string& name_or_path) { return resolve_device(name_or_path, &std::cerr); }

void warn(const std::string& line) { std::cerr << "fuseplan: warning: " << printable(line) << "\n"; }

CLI::Validator batch_value() { return CLI::Validator(positive_integer_error, "B>=1", "batch size"); }

std::vector<int64_t> parse_batch_list(const std::vector<std::string>& args) {
  std::vector<int64_t> out;
  for (const auto& arg : args) {
    std::stringstream ss(arg + ",");  // a trailing comma leaves no empty item, a doubled one does
    for (std::string item; std::getline(ss, item, ',');) {
      if (item.empty()) throw Error("--batch: empty entry in '" + arg + "' (give sizes >= 1, comma separated)");
      if (const std::string err = positive_integer_error(item); !err.empty()) throw Error("--batch: " + err);
      const int64_t b = std::stoll(item);
      if (std::find(out.begin(), out.end(), b) != out.end()) throw Error("--batch: " + item + " given twice");
      out.push_back(b);
    }
  }
  return out;
}

CLI::Validator batch_list() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          parse_batch_list({s});
        } catch (const Error& e) {
          return std::string(e.what()).substr(std::string("--batch: ").size());
        }
        return "";
      },
      "B,B,...", "batch sizes");
}

std::vector<std::string> parse_strategy_list(const std::string& list) {
  if (list == "all") return strategy_names();
  std::vector<std::string> names;
  std::stringstream ss(list + ",");
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty())
      throw Error("--strategies: empty entry in '" + list + "' (give strategy names, comma separated, or 'all')");
    if (std::find(names.begin(), names.end(), item) != names.end())
      throw Error("--strategies: " + item + " given twice");
    make_strategy(item);  // throws naming the known strategies
    names.push_back(item);
  }
  return names;
}

CLI::Validator dim_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const auto eq = s.find('=');
        if (eq == std::string::npos || eq == 0) return "expects NAME=VALUE, got '" + s + "'";
        const std::string err = positive_integer_error(s.substr(eq + 1));
        return err.empty() ? "" : s.substr(0, eq) + ": value " + err;
      },
      "NAME=V", "dim binding");
}

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dim_args) {
  std::map<std::string, int64_t> out;
  for (const auto& d : dim_args) {
    const auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--dim expects NAME=VALUE, got '" + d + "'");
    const std::string name = d.substr(0, eq), val = d.substr(eq + 1);
    if (!positive_integer_error(val).empty())
      throw Error("--dim " + name + ": expected a positive integer, got '" + val + "'");
    const int64_t v = std::stoll(val);
    auto [it, fresh] = out.emplace(name, v);
    if (!fresh)
      throw Error("--dim " + name + " given twice (" + std::to_string(it->second) + " and " + std::to_string(v) + ")");
  }
  return out;
}

ModelArgs ModelArgs::one_of(const std::string& path, std::optional<int64_t> batch,
                            const std::vector<std::string>& dim_args, std::size_t models) {
  ModelArgs m;
  m.path = path;
  m.batch = batch;
  m.dim_args = dim_args;
  m.known_dims_only = models == 1;
  return m;
}

void ModelArgs::add_to(CLI::App* app, bool positional) {
  if (positional) app->add_option("model", path, "model file: .onnx (binary) or .onnxtxt (ONNX text syntax)")->required();
  app->add_option("--batch", batch, kBatchHelp)->check(batch_value());
  app->add_option("--dim", dim_args, "bind a named symbolic dim, NAME=VALUE (repeatable; each NAME once)")
      ->check(dim_value());
  known_dims_only = true;
}

ImportOptions ModelArgs::import_options() const {
  ImportOptions o;
  if (batch) {
    if (*batch < 1) throw Error("--batch must be an integer >= 1, got " + std::to_string(*batch));
    o.batch = *batch;
  }
  o.dims = parse_dims(dim_args);
  o.known_dims_only = known_dims_only;
  return o;
}

std::map<std::string, int64_t> ModelArgs::dims() const {
  ImportOptions o = import_options();
  std::map<std::string, int64_t> out(o.dims.begin(), o.dims.end());
  if (o.batch) out["batch"] = *o.batch;
  return out;
}

LoadedModel load_model(const ModelArgs& a, bool quiet) {
  LoadedModel m{import_model(a.path, a.import_options()), ""};
  m.sha256 = sha256_hex(read_file(a.path));
  if (!quiet)
    for (const auto& w : m.graph.warnings) warn(w);
  return m;
}

void check_dims_known(const std::vector<std::string>& models, std::optional<int64_t> batch,
                      const std::vector<std::string>& dim_args) {
  if (models.size() < 2 || dim_args.empty()) return;
  std::vector<std::string> known;
  for (const auto& path : models) {
    ModelArgs m;
    m.path = path;
    m.batch = batch;
    m.dim_args = dim_args;
    for (const auto& d : import_model(path, m.import_options()).symbolic_dims)
      if (std::find(known.begin(), known.end(), d) == known.end()) known.push_back(d);
  }
  for (const auto& [name, v] : parse_dims(dim_args)) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw Error("--dim " + name + ": none of the models has a symbolic dim '" + name + "' (" +
                (known.empty() ? std::string("their shapes are all static") : "their symbolic dims: " + list) + ")");
  }
}

std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> w(header.size(), 0);
  for (std::size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  std::ostringstream os;
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      os << cell << std::string(w[i] - cell.size() + (i + 1 < w.size() ? 2 : 0), ' ');
    }
    os << "\n";
  };
  line(header);
  std::vector<std::string> sep;
  for (auto x : w) sep.push_back(std::string(x, '-'));
  line(sep);
  for (const auto& r : rows) line(r);
  return os.str();
}


void require_cpu_for_measure(const DeviceSpec& d, const std::string& command) {
  if (d.is_gpu())
    throw Error(command + " --measure runs plans on the CPU backend, and device '" + d.name +
                "' is a GPU; use a CPU device, or `fuseplan measure` (CUPTI) on a machine with a GPU");
}

void check_hold(const DeviceSpec& d, const std::vector<std::string>& hold) {
  const std::vector<std::string> names = calibration_parameter_names(d);
  for (const auto& h : hold) {
    if (std::find(names.begin(), names.end(), h) != names.end()) continue;
    std::string valid;
    for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
    throw Error("--hold: unknown parameter '" + h + "'; the parameters of " + d.name + " are " + valid);
  }
}

}  // namespace fuseplan::cli
