#include "tune/chart.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "emit/dot.h"
#include "support/files.h"
#include "graph/graph.h"

namespace fuseplan {

namespace {
// gnuplot string literal in single quotes ('' escapes a quote).
std::string sq(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}
// Data-file field in double quotes.
std::string dq(const std::string& s) {
  std::string q = "\"";
  for (char c : s)
    if (c != '"' && c != '\n') q += c;
  return q + "\"";
}
}  // namespace

void write_bar_chart_svg(const std::string& svg_path, const std::string& title, const std::vector<std::string>& series,
                         const std::vector<ChartCluster>& clusters) {
  namespace fs = std::filesystem;
  if (!have_program("gnuplot")) throw Error("cannot draw " + svg_path + ": gnuplot is not installed (apt: gnuplot-nox)");
  if (series.empty() || clusters.empty()) throw Error("cannot draw " + svg_path + ": nothing measured");
  const fs::path target(svg_path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::path work = fs::temp_directory_path() / ("fuseplan-chart-" + std::to_string(::getpid()));
  fs::create_directories(work);
  const std::string data = (work / "data.dat").string(), script = (work / "chart.gp").string();
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  std::ostringstream d;
  d << dq("case");
  for (const auto& s : series) d << " " << dq(s);
  d << "\n";
  for (const auto& c : clusters) {
    d << dq(c.label);
    for (const auto& s : series) {
      auto it = c.values_us.find(s);
      d << " " << (it == c.values_us.end() ? std::string("-") : std::to_string(it->second));
    }
    d << "\n";
  }
  write_file_atomic(data, d.str());
  std::ostringstream g;
  g << "set terminal svg size " << std::max<std::size_t>(640, 120 + clusters.size() * (series.size() * 22 + 30))
    << ",480 dynamic enhanced font 'sans,10'\n"
    << "set output " << sq(tmp) << "\n"
    << "set title " << sq(title) << " noenhanced\n"
    << "set datafile missing '-'\n"
    << "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.85 border -1\n"
    << "set ylabel 'measured time (µs, median)'\nset yrange [0:*]\nset grid ytics\n"
    << "set xtics rotate by -25 noenhanced\nset key outside right top noenhanced\n"
    << "plot ";
  for (std::size_t i = 0; i < series.size(); ++i)
    g << (i ? ", '' " : sq(data) + " ") << "using " << i + 2 << (i == 0 ? ":xtic(1)" : "") << " title columnheader("
      << i + 2 << ")";
  g << "\n";
  write_file_atomic(script, g.str());
  std::string err;
  const int rc = run_program({"gnuplot", script}, &err);
  std::error_code ec;
  fs::remove_all(work, ec);
  if (rc != 0) {
    fs::remove(tmp, ec);
    throw Error("gnuplot failed drawing " + svg_path + " (exit " + std::to_string(rc) + ")" + (err.empty() ? "" : ": " + err));
  }
  fs::rename(tmp, target, ec);
  if (ec) throw Error("cannot write '" + svg_path + "': " + ec.message());
}

}  // namespace fuseplan
