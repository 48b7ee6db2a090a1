#include "emit/dot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "costmodel/group.h"

namespace fuseplan {

namespace {

std::string quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    q += c;
  }
  return q + "\"";
}

std::string fmt_us(double v) {
  std::ostringstream os;
  os.precision(v < 10 ? 3 : 4);
  os << v;
  return os.str();
}

// Colour per decision action (Graphviz X11 names).
const char* edge_style(Action a) {
  switch (a) {
    case Action::fused: return "color=black";
    case Action::duplicated: return "color=blue, style=dashed";
    case Action::kept: return "color=gray40";
    case Action::blocked: return "color=red, fontcolor=red";
  }
  return "";
}

}  // namespace

std::string plan_to_dot(const Graph& g, const Plan& plan) {
  std::ostringstream os;
  os << "digraph plan {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n  edge [fontsize=9];\n";
  os << "  label=" << quote(plan.strategy + " on " + plan.device + ": " + std::to_string(plan.totals.kernels) +
                           " kernels, predicted " + fmt_us(plan.totals.predicted_us) + " us")
     << ";\n  labelloc=t;\n";
  // Node id of primitive n as computed in group gi: "g<gi>_n<n>".
  auto id_in = [](std::size_t gi, NodeId n) { return "g" + std::to_string(gi) + "_n" + std::to_string(n); };
  std::map<NodeId, std::size_t> home;  // group that materialises (or first computes) n
  for (std::size_t gi = 0; gi < plan.groups.size(); ++gi)
    for (NodeId n : plan.groups[gi].nodes) home.emplace(n, gi);
  for (NodeId n : g.graph_inputs())
    os << "  in_" << n << " [label=" << quote(g.node(n).name + "\n" + g.node(n).out.str())
       << ", shape=ellipse];\n";
  for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const Group& grp = plan.groups[gi];
    std::string label = "g" + std::to_string(gi) + " " + std::string(to_string(grp.kind));
    if (gi < plan.costs.size())
      label += " " + fmt_us(plan.costs[gi].predicted_us) + " us (" + plan.costs[gi].bound + ")";
    os << "  subgraph cluster_g" << gi << " {\n    label=" << quote(label) << ";\n    style=rounded;\n";
    std::set<NodeId> dup(grp.duplicated.begin(), grp.duplicated.end());
    std::set<NodeId> mat(grp.materialised.begin(), grp.materialised.end());
    for (NodeId n : grp.nodes) {
      const Primitive& p = g.node(n);
      os << "    " << id_in(gi, n) << " [label=" << quote(p.name + "\n" + p.op) << (mat.count(n) ? ", penwidth=2" : "")
         << (dup.count(n) ? ", style=dashed" : "") << "];\n";
    }
    os << "  }\n";
  }
  std::map<std::pair<std::string, std::string>, const DecisionRecord*> decision;
  for (const auto& r : plan.decisions) decision[{r.producer, r.consumer}] = &r;
  for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const Group& grp = plan.groups[gi];
    std::set<NodeId> mine(grp.nodes.begin(), grp.nodes.end());
    for (NodeId c : grp.nodes) {
      std::set<NodeId> seen;
      for (NodeId p : g.operands(c)) {
        if (!seen.insert(p).second) continue;
        const Primitive& pp = g.node(p);
        std::string from;
        if (pp.source == SourceKind::graph_input) from = "in_" + std::to_string(p);
        else if (pp.source != SourceKind::none) continue;  // weights and constants are not drawn
        else from = mine.count(p) ? id_in(gi, p) : id_in(home.at(p), p);
        os << "  " << from << " -> " << id_in(gi, c);
        auto it = decision.find({pp.name, g.node(c).name});
        if (it != decision.end()) {
          const DecisionRecord& r = *it->second;
          os << " [" << edge_style(r.action);
          if (r.action == Action::blocked) os << ", label=" << quote(std::string(to_string(r.blocker)));
          os << "]";
        }
        os << ";\n";
      }
    }
  }
  os << "}\n";
  return os.str();
}

int run_program(const std::vector<std::string>& argv, std::string* err) {
  if (argv.empty()) return 127;
  int pipefd[2];
  if (::pipe(pipefd) != 0) return 127;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return 127;
  }
  if (pid == 0) {
    ::dup2(pipefd[1], 2);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    const int devnull = ::open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    const std::string msg = argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  std::string text;
  char buf[4096];
  for (ssize_t k; (k = ::read(pipefd[0], buf, sizeof buf)) != 0;) {
    if (k < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (text.size() < 4096) text.append(buf, static_cast<std::size_t>(k));
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (err) *err = text.substr(0, text.find('\n'));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

bool have_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
  return false;
}

void render_dot_svg(const std::string& dot_path, const std::string& svg_path) {
  namespace fs = std::filesystem;
  const fs::path target(svg_path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  std::string err;
  const int rc = run_program({"dot", "-Tsvg", "-o", tmp, dot_path}, &err);
  std::error_code ec;
  if (rc != 0) {
    fs::remove(tmp, ec);
    throw Error("dot -Tsvg " + dot_path + " failed (exit " + std::to_string(rc) + ")" + (err.empty() ? "" : ": " + err));
  }
  fs::rename(tmp, target, ec);
  if (ec) throw Error("cannot write '" + svg_path + "': " + ec.message());
}

}  // namespace fuseplan
