// Least-squares calibration of a device's effective parameters. Every term
// of the cost model (costmodel/terms.h) is linear in an inverse throughput x
// (µs per byte, per FLOP, per call), so within one regime (memory- or
// compute-bound) a group's time t = max(t_mem, t_compute) + (1 − p)·min +
// fixed is linear in x at a given overlap p: the design matrix has one
// column per fitted parameter, in the table's column order, and a group's
// row holds each term's coefficient (the shorter regime's times 1 − p). We
// assign each group to its regime under the current x, solve the relative-
// error weighted non-negative least squares (Lawson–Hanson), re-assign, and
// repeat until the regimes stop changing; p is the grid value whose fit has
// the smallest residual. docs/calibration.md explains why.
#include "costmodel/calibrate.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <numeric>
#include <string_view>

#include <Eigen/Dense>

#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"

namespace fuseplan {

namespace {

constexpr std::string_view kOverlapName = "overlap";
// The overlaps calibrate() tries: 0.5 (half the shorter time hidden) to 1
// (the ideal roofline), around XLA's 0.95.
constexpr double kOverlapGrid[] = {0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.975, 1.0};

using costmodel_detail::level_bw;

// ---- the linear parameterisation: the table's columns on one device ----
struct Column {
  std::string name;  // the parameter, as CalibrationOptions::hold names it
  TermId term;       // the row that owns it
  int level = -1;    // `levels` rows: cache index, -1 dram_bw_GBps
};

struct Layout {
  std::vector<Column> cols;
  std::array<int, kTermCount> of_term;  // column of a scalar row, -1: none
  std::vector<int> of_level;            // column of cache level i at [i + 1], of dram_bw_GBps at [0]

  explicit Layout(const DeviceSpec& d) {
    of_term.fill(-1);
    std::vector<const CostTerm*> rows;
    for (const CostTerm& t : cost_terms()) {
      const bool has_param = t.part == ParamPart::levels ? d.cpu.has_value() : term_parameter_exists(t, d);
      const bool wa_ok = !t.write_allocate_only || (d.cpu && d.cpu->write_allocate_bw_GBps > 0);
      if (t.column >= 0 && term_applies(t, d) && has_param && wa_ok) rows.push_back(&t);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const CostTerm* a, const CostTerm* b) { return a->column < b->column; });
    for (const CostTerm* t : rows) {
      if (t->part != ParamPart::levels) {
        of_term[static_cast<int>(t->id)] = size();
        cols.push_back({std::string(t->parameter), t->id, -1});
        continue;
      }
      if (!of_level.empty()) continue;  // the family's columns, once
      // One column per cache level with a bandwidth; dram_bw_GBps when no
      // level is unbounded.
      const std::vector<CacheLevel>& caches = d.cpu->caches;
      of_level.assign(caches.size() + 1, -1);
      bool has_dram = false;
      for (std::size_t i = 0; i < caches.size(); ++i) {
        if (caches[i].bw_GBps <= 0) continue;
        of_level[i + 1] = size();
        cols.push_back({"caches[" + caches[i].name + "].bw_GBps", t->id, static_cast<int>(i)});
        has_dram = has_dram || caches[i].bytes <= 0;
      }
      if (!has_dram) {
        of_level[0] = size();
        cols.push_back({"dram_bw_GBps", t->id, -1});
      }
    }
  }
  static bool term_parameter_exists(const CostTerm& t, const DeviceSpec& d) {
    return t.field && t.field(const_cast<DeviceSpec&>(d)) != nullptr;
  }
  int size() const { return static_cast<int>(cols.size()); }
  const CostTerm& term(int j) const { return cost_term(cols[j].term); }
  // Columns calibrate() always holds at the prior (measured, not fitted).
  bool measured_only(int j) const { return term(j).probe_measured; }
  int level_column(int level) const { return of_level.empty() ? -1 : of_level[level + 1]; }
  // The column that takes row t's coefficient for features f.
  int column_of(const CostTerm& t, const CostFeatures& f, const DeviceSpec& d) const {
    if (t.part == ParamPart::levels) return level_column(t.level_of(f, d));
    const int j = of_term[static_cast<int>(t.id)];
    return j >= 0 ? j : of_term[static_cast<int>(t.fold_into)];
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Column& c : cols) out.push_back(c.name);
    return out;
  }
};

// x (inverse throughputs, µs per unit of coefficient) of a device.
Eigen::VectorXd params_of(const DeviceSpec& d, const Layout& L) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(L.size());
  for (int j = 0; j < L.size(); ++j) x[j] = L.term(j).x_of(d, L.cols[j].level);
  return x;
}

// Design rows of one sample at overlap p: the memory-regime and
// compute-regime rows. Each term adds its coefficient to its column: memory
// terms to the memory row and (1 − p) of it to the compute row, compute
// terms the other way round, fixed terms to both.
void rows_of(const CostFeatures& f, const DeviceSpec& d, const Layout& L, double p, Eigen::RowVectorXd& mem,
             Eigen::RowVectorXd& cmp) {
  p = group_overlap(f, d, p);
  mem = Eigen::RowVectorXd::Zero(L.size());
  cmp = Eigen::RowVectorXd::Zero(L.size());
  for (const CostTerm& t : cost_terms()) {
    if (!term_applies(t, d)) continue;
    const int j = L.column_of(t, f, d);
    if (j < 0) continue;  // a write-allocate term on a prior without the bandwidth: 0
    const double coef = t.coefficient ? t.coefficient(f, d) : t.amount(f, d);
    mem[j] += t.regime == Regime::compute ? (1 - p) * coef : coef;
    cmp[j] += t.regime == Regime::memory ? (1 - p) * coef : coef;
  }
}

// Lawson–Hanson non-negative least squares: min |A x - b|, x >= 0.
Eigen::VectorXd nnls(const Eigen::MatrixXd& A, const Eigen::VectorXd& b) {
  const int n = static_cast<int>(A.cols());
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(n, false);
  auto solve_passive = [&](Eigen::VectorXd& z) {
    std::vector<int> idx;
    for (int j = 0; j < n; ++j)
      if (passive[j]) idx.push_back(j);
    z = Eigen::VectorXd::Zero(n);
    if (idx.empty()) return;
    Eigen::MatrixXd Ap(A.rows(), idx.size());
    for (std::size_t k = 0; k < idx.size(); ++k) Ap.col(k) = A.col(idx[k]);
    Eigen::VectorXd zp = Ap.colPivHouseholderQr().solve(b);
    for (std::size_t k = 0; k < idx.size(); ++k) z[idx[k]] = zp[k];
  };
  for (int outer = 0; outer < 3 * n + 10; ++outer) {
    Eigen::VectorXd w = A.transpose() * (b - A * x);
    int best = -1;
    for (int j = 0; j < n; ++j)
      if (!passive[j] && w[j] > 1e-12 * (1 + w.cwiseAbs().maxCoeff()) && (best < 0 || w[j] > w[best])) best = j;
    if (best < 0) break;
    passive[best] = true;
    for (int inner = 0; inner < 3 * n + 10; ++inner) {
      Eigen::VectorXd z;
      solve_passive(z);
      bool feasible = true;
      for (int j = 0; j < n; ++j)
        if (passive[j] && z[j] <= 0) feasible = false;
      if (feasible) {
        x = z;
        break;
      }
      double alpha = 1;
      for (int j = 0; j < n; ++j)
        if (passive[j] && z[j] <= 0) alpha = std::min(alpha, x[j] / (x[j] - z[j]));
      x += alpha * (z - x);
      for (int j = 0; j < n; ++j)
        if (passive[j] && x[j] <= 1e-15) passive[j] = false, x[j] = 0;
    }
  }
  return x;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

std::string num(double v, int sig = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", sig, v);
  return buf;
}


bool held_by_option(const CalibrationOptions& o, const std::string& name) {
  return std::find(o.hold.begin(), o.hold.end(), name) != o.hold.end();
}

// The weighted least-squares problem of one regime assignment and its solution.
struct Fit {
  Fit(const Layout& layout, const std::vector<CalibrationSample>& s, const CalibrationOptions& opt)
      : L(layout), samples(s), o(opt), n(static_cast<int>(s.size())), p(layout.size()) {}
  const Layout& L;
  const std::vector<CalibrationSample>& samples;
  const CalibrationOptions& o;
  int n = 0, p = 0;
  std::vector<Eigen::RowVectorXd> mem, cmp;    // design rows per sample
  std::vector<Eigen::RowVectorXd> mem1, cmp1;  // the same without the shorter regime's share (overlap 1)
  Eigen::VectorXd x_prior, x;
  std::vector<int> regime;    // 0 memory, 1 compute
  std::vector<int> support;   // measurements whose regime row uses each column
  std::vector<bool> free;     // fitted columns
  std::vector<int> cols;      // indices of the fitted columns
  Eigen::MatrixXd A;          // weighted design of the fitted columns
  Eigen::VectorXd b;          // weighted measured time less the held columns' part
  int iterations = 0;
  bool converged = true;

  const Eigen::RowVectorXd& row(int i) const { return regime[i] == 0 ? mem[i] : cmp[i]; }

  // A column is exercised by the rows of its own regime: the shorter
  // regime's unhidden share (1 - overlap) alone identifies nothing, and is
  // priced at the prior where no row of its own regime supports it.
  void count_support() {
    std::fill(support.begin(), support.end(), 0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < p; ++j) support[j] += (regime[i] == 0 ? mem1[i] : cmp1[i])[j] != 0;
  }

  // A = the fitted columns of each regime row, b = the time less the held
  // columns, both weighted by 1 / measured (relative error).
  void weigh(bool check_range) {
    A.resize(n, static_cast<Eigen::Index>(cols.size()));
    b.resize(n);
    for (int i = 0; i < n; ++i) {
      double w = 1 / samples[i].measured_us, held = 0;
      for (int j = 0; j < p; ++j)
        if (!free[j]) held += row(i)[j] * x_prior[j];
      for (std::size_t k = 0; k < cols.size(); ++k) A(i, k) = row(i)[cols[k]] * w;
      b[i] = (samples[i].measured_us - held) * w;
      if (!check_range) continue;
      // A feature (or time) so large or small that its weighted row, or its
      // square in the residual and the normal matrix, overflows would make
      // every round's residual inf or NaN and leave no round to keep.
      auto in_range = [](double v) { return std::isfinite(v) && std::fabs(v) < 1e150; };
      bool ok = in_range(b[i]);
      for (std::size_t k = 0; k < cols.size(); ++k) ok = ok && in_range(A(i, k));
      if (!ok)
        throw Error("measurement " + samples[i].tag +
                    " is out of range for the fit: its features or time overflow a double (re-measure it)");
    }
  }

  // Chooses the fitted columns for the current regimes and refuses too few
  // measurements for them.
  void choose_columns() {
    count_support();
    cols.clear();
    for (int j = 0; j < p; ++j) {
      free[j] = support[j] >= o.min_support && !L.measured_only(j) && !held_by_option(o, L.cols[j].name);
      if (free[j]) cols.push_back(j);
    }
    const int pf = static_cast<int>(cols.size());
    if (pf == 0)
      throw Error("nothing to fit: every parameter is held or exercised by fewer than " +
                  std::to_string(o.min_support) + " measurements");
    if (n < pf + 2) {
      // Name the least exercised parameter (the last such column on a tie:
      // the backend-specific terms), the one to keep at its prior first.
      int least = cols.front();
      for (int j : cols)
        if (support[j] <= support[least]) least = j;
      throw DegenerateParameter("too few measurements: " + std::to_string(n) + " for " + std::to_string(pf) +
                                    " fitted parameters (need at least " + std::to_string(pf + 2) +
                                    "); measure more groups, or keep the least exercised at its prior with --hold " +
                                    L.cols[least].name,
                                L.cols[least].name);
    }
  }

  // One round: solve for the fitted columns (refusing a rank-deficient
  // design); returns the weighted residual sum of squares.
  double solve() {
    const int pf = static_cast<int>(cols.size());
    // Column scaling keeps the normal matrix well conditioned for the check.
    Eigen::VectorXd scale(pf);
    for (int k = 0; k < pf; ++k) scale[k] = A.col(k).norm() > 0 ? 1 / A.col(k).norm() : 1;
    Eigen::MatrixXd As = A * scale.asDiagonal();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(As.transpose() * As);
    double lmax = es.eigenvalues().maxCoeff(), lmin = es.eigenvalues().minCoeff();
    if (!(lmin > 0) || lmax / lmin > o.max_condition) {
      Eigen::Index worst = 0;
      es.eigenvectors().col(0).cwiseAbs().maxCoeff(&worst);
      throw DegenerateParameter("rank-deficient measurements: " + L.cols[cols[worst]].name +
                                    " cannot be told apart from the other parameters (condition number " +
                                    (lmin > 0 ? num(lmax / lmin, 3) : std::string("inf")) +
                                    "); measure more varied groups",
                                L.cols[cols[worst]].name);
    }
    Eigen::VectorXd xs = nnls(As, b);
    for (int j = 0; j < p; ++j) x[j] = x_prior[j];
    for (int k = 0; k < pf; ++k) x[cols[k]] = xs[k] * scale[k];
    double rss = (As * xs - b).squaredNorm();
    if (!std::isfinite(rss) || !xs.allFinite())
      throw Error("the fit overflowed: the measurements' features span more than a double holds (re-measure them)");
    return rss;
  }

  // Re-assigns each group to the regime its current x makes larger; returns
  // whether any changed. In the first assignment a compute column whose
  // prior is 0 (the CPU per-step terms) is no knowledge that the term is
  // small: a group that carries such a fitted feature starts in the compute
  // regime, so the first solve can estimate it (with 0 it could never pull
  // a group out of the memory regime); later rounds re-assign with the
  // estimate.
  bool assign(bool first) {
    std::vector<char> unknown(p, 0);
    if (first)
      for (int j = 0; j < p; ++j)
        unknown[j] = L.term(j).regime == Regime::compute && x_prior[j] == 0 && !held_by_option(o, L.cols[j].name);
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      bool carries_unknown = false;
      for (int j = 0; j < p && first; ++j) carries_unknown = carries_unknown || (unknown[j] && cmp[i][j] != 0);
      int r = carries_unknown ? 1 : mem[i].dot(x) >= cmp[i].dot(x) ? 0 : 1;
      changed = changed || r != regime[i];
      regime[i] = r;
    }
    return changed;
  }

  // Rounds of solve and re-assign until the regimes stop changing; when they
  // still alternate after max_iterations (groups near t_mem = t_compute),
  // the round with the smallest residual, rebuilt with its own regimes.
  void run() {
    struct Round {
      double rss = std::numeric_limits<double>::infinity();
      Eigen::VectorXd x;
      std::vector<int> regime;
    } best;
    assign(true);
    for (iterations = 1; iterations <= o.max_iterations; ++iterations) {
      choose_columns();
      weigh(true);
      const double rss = solve();
      if (rss < best.rss) best = {rss, x, regime};
      if (!assign(false)) break;
    }
    if (iterations <= o.max_iterations) return;
    converged = false;
    iterations = o.max_iterations;
    x = best.x;
    regime = best.regime;
    count_support();
    cols.clear();
    for (int j = 0; j < p; ++j)
      if (free[j]) cols.push_back(j);
    weigh(false);
  }
};

// Standard errors of the fitted columns (x units), the residual and the
// regime counts, after refusing a parameter at its bound 0 or too uncertain
// to be identified.
struct FitStats {
  Eigen::MatrixXd cov;     // of the fitted columns, in `cols` order
  Eigen::VectorXd se_x;    // per column, 0 when held
};

FitStats statistics(const Fit& fit, CalibrationResult& res) {
  const Layout& L = fit.L;
  const int pf = static_cast<int>(fit.cols.size());
  for (int k = 0; k < pf; ++k) {
    const int j = fit.cols[k];
    if (!(fit.x[j] > 0))
      throw DegenerateParameter("degenerate fit: " + L.cols[j].name + " was estimated at its bound 0 (" +
                                    std::string(L.term(j).at_zero) +
                                    "); the measurements do not identify it: keep its prior with --hold " +
                                    L.cols[j].name,
                                L.cols[j].name);
  }
  Eigen::VectorXd xf(pf);
  for (int k = 0; k < pf; ++k) xf[k] = fit.x[fit.cols[k]];
  Eigen::VectorXd r = fit.A * xf - fit.b;
  double rss = r.squaredNorm();
  res.rms_relative_residual = std::sqrt(rss / fit.n);
  double sigma2 = rss / std::max(1, fit.n - pf);
  FitStats st;
  st.cov = sigma2 * (fit.A.transpose() * fit.A).inverse();
  st.se_x = Eigen::VectorXd::Zero(fit.p);
  for (int k = 0; k < pf; ++k) st.se_x[fit.cols[k]] = std::sqrt(std::max(0.0, st.cov(k, k)));
  for (int i = 0; i < fit.n; ++i) (fit.regime[i] == 0 ? res.memory_bound : res.compute_bound)++;
  for (int k = 0; k < pf; ++k) {
    const int j = fit.cols[k];
    if (st.se_x[j] > fit.o.max_relative_se * fit.x[j])
      throw DegenerateParameter("unidentifiable: " + L.cols[j].name + " has a relative standard error of " +
                                    num(100 * st.se_x[j] / fit.x[j], 3) +
                                    "% (its term is small next to the others in every measurement); keep its prior "
                                    "with --hold " + L.cols[j].name + " or measure groups it dominates",
                                L.cols[j].name);
  }
  return st;
}

// Back to device units: each column's parameter, its standard error and
// support, written into the calibrated device with its provenance.
class WriteBack {
 public:
  WriteBack(const DeviceSpec& prior, const Fit& fit, const FitStats& st, CalibrationResult& res)
      : prior_(prior), fit_(fit), st_(st), res_(res), d_(prior) {
    d_.name = calibrated_name(prior.name);
    d_.calibrated = true;
    provenance_ = "fitted by fuseplan calibrate on " + today() + " from " + std::to_string(fit.n) +
                  " measured groups (relative least squares, docs/calibration.md)";
  }

  DeviceSpec run() {
    const Layout& L = fit_.L;
    for (int j = 0; j < L.size(); ++j) {
      const CostTerm& t = L.term(j);
      if (t.part == ParamPart::levels) {
        level(j);
        continue;
      }
      const double v = t.value_of_x(fit_.x[j], d_, -1);
      FittedParameter fp = add(j, t.effective ? t.effective(prior_) : term_parameter(t, prior_), v,
                               t.id == TermId::spill ? spill_rel_se(j) : rel(j));
      if (!fp.held) *t.field(d_) = fp.value;  // held: the prior's setting (e_transcendental 0 = follow e_cmp)
      note_source(std::string(t.parameter), fp);
      if (t.id == TermId::other) move_excess_efficiency_into_peak();
    }
    return d_;
  }

 private:
  double rel(int j) const { return fit_.x[j] > 0 ? st_.se_x[j] / fit_.x[j] : 0; }

  FittedParameter add(int j, double prior_v, double v, double rel_se) {
    FittedParameter fp;
    fp.name = fit_.L.cols[j].name;
    fp.prior = prior_v;
    fp.held = !fit_.free[j];
    fp.value = fp.held ? prior_v : v;
    fp.std_error = fp.held ? 0 : std::fabs(fp.value) * rel_se;
    fp.support = fit_.support[j];
    if (fp.held && fit_.L.measured_only(j))
      fp.note = "held at prior: measured by fuseplan probe, not fitted";
    else if (fp.held)
      fp.note = fit_.support[j] < fit_.o.min_support
                    ? "held at prior: " + std::to_string(fit_.support[j]) + " measurement(s) exercise it (need " +
                          std::to_string(fit_.o.min_support) + ")"
                    : std::string("held at prior (--hold)");
    res_.parameters.push_back(fp);
    return fp;
  }

  void note_source(const std::string& key, const FittedParameter& fp) {
    if (!fp.held) d_.sources[key] = num(fp.value) + " ± " + num(fp.std_error, 2) + " " + provenance_;
  }

  // A cache level's bandwidth (or dram_bw_GBps): written held or not, the
  // unbounded level into dram_bw_GBps too.
  void level(int j) {
    const int li = fit_.L.cols[j].level;
    const double bw = fit_.L.term(j).value_of_x(fit_.x[j], d_, li);
    FittedParameter fp = add(j, level_bw(li, prior_), bw, rel(j));
    if (li >= 0) d_.cpu->caches[li].bw_GBps = fp.value;
    if (li < 0 || prior_.cpu->caches[li].bytes <= 0) d_.dram_bw_GBps = fp.value;
    note_source(li >= 0 ? "caches" : "dram_bw_GBps", fp);
    if (li >= 0 && !fp.held)
      d_.sources["caches"] = "bw_GBps fitted by fuseplan calibrate on " + today() + " (see " + d_.name +
                             " parameters); capacities from the probe";
    if (li >= 0 && prior_.cpu->caches[li].bytes <= 0 && !fp.held) note_source("dram_bw_GBps", fp);
  }

  // spill_penalty = x_spill / x_L1: relative variance by the delta method
  // with the covariance of the two estimates (when both are fitted).
  double spill_rel_se(int j) const {
    const Layout& L = fit_.L;
    int l1 = -1;
    for (std::size_t i = 0; i < d_.cpu->caches.size() && l1 < 0; ++i)
      if (d_.cpu->caches[i].bw_GBps > 0) l1 = static_cast<int>(i);
    const int c1 = L.level_column(l1);
    int ks = -1, k1 = -1;
    for (std::size_t k = 0; k < fit_.cols.size(); ++k) {
      if (fit_.cols[k] == j) ks = static_cast<int>(k);
      if (fit_.cols[k] == c1) k1 = static_cast<int>(k);
    }
    const Eigen::VectorXd& x = fit_.x;
    if (ks < 0 || k1 < 0 || !(x[j] > 0) || !(x[c1] > 0)) return rel(j);
    const Eigen::MatrixXd& cov = st_.cov;
    double v = cov(ks, ks) / (x[j] * x[j]) + cov(k1, k1) / (x[c1] * x[c1]) - 2 * cov(ks, k1) / (x[j] * x[c1]);
    return std::sqrt(std::max(0.0, v));
  }

  // The loader caps efficiencies at 1.5: an efficiency above 1 means the
  // peak was understated; move the excess into the peak (same product).
  void move_excess_efficiency_into_peak() {
    const bool tensor = d_.gpu && d_.gpu->tensor_TFLOPs > 0;
    double s = std::max(d_.e_cmp, tensor ? 0.0 : d_.e_contraction);
    if (s > 1) {
      d_.fp32_TFLOPs *= s;
      d_.e_cmp /= s;
      if (!tensor) d_.e_contraction /= s;
      d_.sources["fp32_TFLOPs"] = "raised ×" + num(s, 3) + " by fuseplan calibrate on " + today() +
                                  " (fitted efficiency above 1: the probe understated the peak)";
    }
    if (tensor && d_.e_contraction > 1) {
      d_.gpu->tensor_TFLOPs *= d_.e_contraction;
      d_.e_contraction = 1;
    }
  }

  const DeviceSpec& prior_;
  const Fit& fit_;
  const FitStats& st_;
  CalibrationResult& res_;
  DeviceSpec d_;
  std::string provenance_;
};

}  // namespace

std::vector<std::string> calibration_parameter_names(const DeviceSpec& d) {
  std::vector<std::string> names = Layout(d).names();
  names.push_back(std::string(kOverlapName));
  return names;
}

namespace {
constexpr std::string_view kCalibratedSuffix = "-calibrated";
}

std::string calibrated_name(const std::string& name) {
  return name.ends_with(kCalibratedSuffix) ? name : name + std::string(kCalibratedSuffix);
}

std::string uncalibrated_name(const std::string& name) {
  return name.ends_with(kCalibratedSuffix) ? name.substr(0, name.size() - kCalibratedSuffix.size()) : name;
}

CalibrationResult calibrate(const DeviceSpec& prior, const std::vector<CalibrationSample>& samples,
                            const CalibrationOptions& o) {
  const Layout L(prior);
  const int n = static_cast<int>(samples.size());
  if (n == 0) throw Error("no measurements to calibrate " + prior.name + " with");
  for (const auto& s : samples)
    if (!(s.measured_us > 0) || !std::isfinite(s.measured_us))
      throw Error("measurement " + s.tag + " has a non-positive time " + num(s.measured_us));

  // One fit per overlap of the grid (the prior's alone when held): the one
  // with the smallest relative residual. A p whose fit is degenerate is
  // skipped; when every p is, the prior's error stands.
  auto fit_at = [&](double p) {
    Fit fit(L, samples, o);
    fit.x_prior = fit.x = params_of(prior, L);
    fit.mem.resize(n);
    fit.cmp.resize(n);
    fit.mem1.resize(n);
    fit.cmp1.resize(n);
    for (int i = 0; i < n; ++i) {
      rows_of(samples[i].features, prior, L, p, fit.mem[i], fit.cmp[i]);
      rows_of(samples[i].features, prior, L, 1, fit.mem1[i], fit.cmp1[i]);
    }
    fit.regime.assign(n, -1);
    fit.support.assign(fit.p, 0);
    fit.free.assign(fit.p, false);
    fit.run();
    return fit;
  };
  auto rss_of = [&](const Fit& fit) {
    double rss = 0;
    for (int i = 0; i < n; ++i) rss += std::pow(fit.row(i).dot(fit.x) / samples[i].measured_us - 1, 2);
    return rss;
  };
  double best_p = prior.overlap;
  const bool hold_overlap = held_by_option(o, std::string(kOverlapName));
  if (!hold_overlap) {
    double best_rss = std::numeric_limits<double>::infinity();
    for (double p : kOverlapGrid) {
      try {
        const double rss = rss_of(fit_at(p));
        if (rss < best_rss) best_rss = rss, best_p = p;
      } catch (const Error&) {
      }
    }
  }
  Fit fit = fit_at(best_p);

  CalibrationResult res;
  res.measurements = n;
  res.iterations = fit.iterations;
  res.converged = fit.converged;
  const FitStats st = statistics(fit, res);
  res.device = WriteBack(prior, fit, st, res).run();
  res.device.overlap = best_p;
  res.overlap = best_p;
  FittedParameter op;
  op.name = std::string(kOverlapName);
  op.prior = prior.overlap;
  op.value = best_p;
  op.support = n;
  op.held = hold_overlap;
  op.note = hold_overlap ? "held (asked)" : "grid value with the smallest residual";
  res.parameters.push_back(op);
  if (best_p != prior.overlap)
    res.device.sources[std::string(kOverlapName)] = "fitted by fuseplan calibrate: the grid value whose fit had the smallest "
                                                    "relative residual (prior " + num(prior.overlap) + ")";
  return res;
}

}  // namespace fuseplan
