// Least-squares calibration of a device's effective parameters. The model
// (costmodel/README.md) is t = max(t_mem, t_compute) + launch with every
// term linear in an inverse throughput x (µs per byte / per FLOP), so within
// one regime (memory- or compute-bound) a group's time is linear in x. We
// assign each group to its regime under the current x, solve the relative-
// error weighted non-negative least squares (Lawson–Hanson), re-assign, and
// repeat until the regimes stop changing. docs/calibration.md explains why.
#include "costmodel/calibrate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <limits>
#include <numeric>
#include <string_view>
#include <tuple>

#include <Eigen/Dense>

#include "costmodel/cost.h"
#include "costmodel/cost_detail.h"

namespace fuseplan {

namespace {

// µs per byte at 1 GB/s, and per FLOP at 1 TFLOP/s (as in cost.cpp).
constexpr double kUsPerByteAtGBps = 1e-3;
constexpr double kUsPerFlopAtTFLOPs = 1e-6;
constexpr double kUsPerNs = 1e-3;

double safe_div(double a, double b) { return b > 0 ? a / b : 0; }

bool is_core_private(const std::string& name) {  // L1/L2 capacities are per core (as cost.cpp)
  return name.size() == 2 && std::toupper(static_cast<unsigned char>(name[0])) == 'L' && (name[1] == '1' || name[1] == '2');
}

// Index into d.caches of the level a CPU working set is priced at; -1 = dram_bw_GBps.
int cpu_level_index(double ws, const DeviceSpec& d) {
  for (std::size_t i = 0; i < d.caches.size(); ++i) {
    const CacheLevel& c = d.caches[i];
    double cap = c.bytes * (is_core_private(c.name) ? std::max(1, d.sm_count) : 1);
    if ((c.bytes <= 0 || ws <= cap) && c.bw_GBps > 0) return static_cast<int>(i);
  }
  return -1;
}

int l1_index(const DeviceSpec& d) {
  for (std::size_t i = 0; i < d.caches.size(); ++i)
    if (d.caches[i].bw_GBps > 0) return static_cast<int>(i);
  return -1;
}

double level_bw(int idx, const DeviceSpec& d) { return idx < 0 ? d.dram_bw_GBps : d.caches[idx].bw_GBps; }

double peak_contraction(const DeviceSpec& d) { return d.tensor_TFLOPs > 0 ? d.tensor_TFLOPs : d.fp32_TFLOPs; }

double gpu_occ_factor(const CostFeatures& f, const DeviceSpec& d) {
  return d.min_occupancy_for_full_bw > 0 ? std::min(1.0, f.occupancy / d.min_occupancy_for_full_bw) : 1.0;
}

// ---- the linear parameterisation ----
// Columns: launch | one per memory level | write-allocate, store stall (CPU, when the prior sets
// write-allocate) | spill, gemm_call,
// source_read, libm_cold (CPU) | contraction | other
// | transcendental, reduce, select, pool steps, im2col, packing (CPU).
struct Layout {
  std::vector<std::string> names;
  std::vector<int> level_of_col;  // for memory columns: cache index or -1 (dram_bw_GBps)
  int launch = 0, write_allocate = -1, store_stall = -1, spill = -1, calls = -1, sources = -1, libm_cold = -1, im2col = -1,
      pack = -1,
      microkernels = -1,
      contraction = -1, other = -1,
      transcendental = -1, reduce = -1, select = -1, pool = -1;
  int first_level = 1, levels = 0;

  /// Appends a column; returns its index. level: cache index, -1 DRAM, -2 not a memory level.
  int add(std::string name, int level) {
    names.push_back(std::move(name));
    level_of_col.push_back(level);
    return static_cast<int>(names.size()) - 1;
  }

  explicit Layout(const DeviceSpec& d) {
    launch = add("launch_us", -2);
    if (d.is_gpu()) {
      add("dram_bw_GBps", -1);
      levels = 1;
    } else {
      bool has_dram = false;
      for (std::size_t i = 0; i < d.caches.size(); ++i) {
        if (d.caches[i].bw_GBps <= 0) continue;
        add("caches[" + d.caches[i].name + "].bw_GBps", static_cast<int>(i));
        has_dram = has_dram || d.caches[i].bytes <= 0;
        ++levels;
      }
      if (!has_dram) {
        add("dram_bw_GBps", -1);
        ++levels;
      }
      // Stores beyond the store buffer at the write-allocate bandwidth: a
      // column only when the prior prices them so (0 = with the reads).
      if (d.write_allocate_bw_GBps > 0) {
        write_allocate = add("write_allocate_bw_GBps", -2);
        store_stall = add("store_stall_us", -2);  // one line-fill wait when they overflow it
      }
      spill = add("spill_penalty", -2);
      // CPU backend: per library GEMM call (GPU libraries batch in one launch).
      calls = add("gemm_call_us", -2);
      // CPU backend: first touch of each source tensor after a flush.
      sources = add("source_read_us", -2);
      // CPU backend: each libm routine a group calls, cold beyond the LLC
      // (measured by the probe, never fitted: docs/calibration.md, "The fit").
      libm_cold = add("libm_cold_us", -2);
    }
    contraction = add("e_contraction", -2);
    other = add("e_cmp", -2);
    if (!d.is_gpu()) {  // CPU: scalar libm calls (GPU: SFU, priced through e_cmp)
      transcendental = add("e_transcendental", -2);
      // CPU backend: serial reduction, max/min and pooling steps (compute regime).
      reduce = add("reduce_step_ns", -2);
      select = add("select_step_ns", -2);
      pool = add("pool_step_ns", -2);
      // CPU backend: the convs' im2col pass and the GEMMs' panel packing
      // (both regimes: serial passes outside the roofline max).
      im2col = add("im2col_elem_ns", -2);
      pack = add("gemm_pack_elem_ns", -2);
      // And the fixed cost of each micro-kernel run: measured by the probe,
      // never fitted (next to a 256-step K block it is a few percent, which
      // large GEMMs cannot tell from e_contraction; docs/calibration.md).
      microkernels = add("gemm_microkernel_ns", -2);
    }
  }

  int size() const { return static_cast<int>(names.size()); }
  // Columns calibrate() always holds at the prior (measured, not fitted).
  bool measured_only(int j) const { return j >= 0 && (j == microkernels || j == libm_cold); }
  int column_of_level(int cache_idx) const {
    for (int c = first_level; c < first_level + levels; ++c)
      if (level_of_col[c] == cache_idx) return c;
    return -1;
  }
};

// x (inverse throughputs, µs per unit) of a device.
Eigen::VectorXd params_of(const DeviceSpec& d, const Layout& L) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(L.size());
  x[L.launch] = d.launch_us;
  for (int c = L.first_level; c < L.first_level + L.levels; ++c)
    x[c] = safe_div(kUsPerByteAtGBps, level_bw(L.level_of_col[c], d) * d.e_mem);
  if (L.write_allocate >= 0) x[L.write_allocate] = safe_div(kUsPerByteAtGBps, d.write_allocate_bw_GBps * d.e_mem);
  if (L.spill >= 0) {
    int l1 = l1_index(d);
    x[L.spill] = d.spill_penalty * safe_div(kUsPerByteAtGBps, level_bw(l1, d) * d.e_mem);
  }
  if (L.calls >= 0) x[L.calls] = d.gemm_call_us;
  if (L.sources >= 0) x[L.sources] = d.source_read_us;
  if (L.libm_cold >= 0) x[L.libm_cold] = d.libm_cold_us;
  if (L.im2col >= 0) x[L.im2col] = d.im2col_elem_ns * kUsPerNs;
  if (L.pack >= 0) x[L.pack] = d.gemm_pack_elem_ns * kUsPerNs;
  if (L.microkernels >= 0) x[L.microkernels] = d.gemm_microkernel_ns * kUsPerNs;
  if (L.store_stall >= 0) x[L.store_stall] = d.store_stall_us;
  x[L.contraction] = safe_div(kUsPerFlopAtTFLOPs, peak_contraction(d) * d.e_contraction);
  x[L.other] = safe_div(kUsPerFlopAtTFLOPs, d.fp32_TFLOPs * d.e_cmp);
  if (L.transcendental >= 0)
    x[L.transcendental] = safe_div(kUsPerFlopAtTFLOPs, d.fp32_TFLOPs * costmodel_detail::transcendental_efficiency(d));
  if (L.reduce >= 0) x[L.reduce] = d.reduce_step_ns * kUsPerNs;
  if (L.select >= 0) x[L.select] = d.select_step_ns * kUsPerNs;
  if (L.pool >= 0) x[L.pool] = d.pool_step_ns * kUsPerNs;
  return x;
}

// Design rows of one sample: the memory-regime and compute-regime rows.
void rows_of(const CostFeatures& f, const DeviceSpec& d, const Layout& L, Eigen::RowVectorXd& mem,
             Eigen::RowVectorXd& cmp) {
  mem = Eigen::RowVectorXd::Zero(L.size());
  cmp = Eigen::RowVectorXd::Zero(L.size());
  mem[L.launch] = cmp[L.launch] = 1;
  if (d.is_gpu()) {
    double occ = gpu_occ_factor(f, d);
    double bytes = f.bytes_read + f.bytes_written + f.spill_bytes_raw * d.spill_penalty;
    mem[L.first_level] = safe_div(bytes, occ);
  } else {
    double ws = f.bytes_read + f.bytes_written;
    double wa = costmodel_detail::write_allocate_bytes(f.bytes_written, f.graph_bytes, d);
    mem[L.column_of_level(cpu_level_index(ws, d))] = ws - wa - f.bytes_read_sources;
    mem[L.column_of_level(cpu_level_index(std::numeric_limits<double>::infinity(), d))] += f.bytes_read_sources;
    if (L.write_allocate >= 0) mem[L.write_allocate] = wa;
    mem[L.spill] = f.spill_bytes_raw;
  }
  cmp[L.contraction] = f.flops_contraction;
  if (L.transcendental >= 0) {
    cmp[L.other] = f.flops_other - f.flops_transcendental + f.flops_scalar * costmodel_detail::scalar_extra_flops(d);
    // At the device's weights (its probe-measured times) where the record has the elements.
    cmp[L.transcendental] = f.transcendental_elems.empty() ? f.flops_transcendental
                                                           : costmodel_detail::transcendental_flops(f.transcendental_elems, d);
  } else {
    cmp[L.other] = f.flops_other + f.flops_scalar * costmodel_detail::scalar_extra_flops(d);
  }
  if (L.calls >= 0) mem[L.calls] = cmp[L.calls] = f.gemm_calls;  // additive, like launch
  if (L.sources >= 0) mem[L.sources] = cmp[L.sources] = f.sources_read;  // additive too
  if (L.libm_cold >= 0)  // additive too
    mem[L.libm_cold] = cmp[L.libm_cold] =
        costmodel_detail::libm_cold_calls(costmodel_detail::libm_routines(f.transcendental_elems), f.graph_bytes, d);
  if (L.im2col >= 0) mem[L.im2col] = cmp[L.im2col] = f.im2col_elems;     // a serial pass before the GEMM
  if (L.pack >= 0) mem[L.pack] = cmp[L.pack] = f.gemm_pack_elems;         // and the GEMM's own packing
  if (L.microkernels >= 0) mem[L.microkernels] = cmp[L.microkernels] = f.gemm_microkernels;  // and micro-kernel runs
  if (L.store_stall >= 0) mem[L.store_stall] = cmp[L.store_stall] = costmodel_detail::store_stalls(f.bytes_written, f.graph_bytes, d);
  if (L.reduce >= 0) cmp[L.reduce] = f.reduction_steps;
  if (L.select >= 0) cmp[L.select] = f.select_steps;
  if (L.pool >= 0) cmp[L.pool] = f.pool_steps;
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

}  // namespace

CostFeatures cost_features(const Graph& g, const Group& grp, const DeviceSpec& d) {
  GroupCost c = cost(g, grp, d);
  costmodel_detail::GroupView v(g, grp);
  costmodel_detail::GroupFlops fl = costmodel_detail::group_flops(v, d.gemm_tile_m, d.gemm_tile_n);
  CostFeatures f;
  f.bytes_read = c.bytes_read - c.spill_bytes / 2;
  f.bytes_written = c.bytes_written - c.spill_bytes / 2;
  f.bytes_read_sources = c.bytes_read_sources;
  if (c.spill_bytes > 0) {
    DeviceSpec unit = d;
    unit.spill_penalty = 1;
    f.spill_bytes_raw = costmodel_detail::estimate_registers(v, unit).spill_bytes;
  }
  f.flops_contraction = fl.contraction;
  f.flops_other = fl.other;
  f.occupancy = c.occupancy;
  f.gemm_calls = fl.gemm_calls;
  f.flops_transcendental = fl.transcendental;
  f.flops_scalar = fl.scalar;
  f.transcendental_elems = costmodel_detail::transcendental_elems(v, fl);
  f.reduction_steps = fl.reduction_steps;
  f.select_steps = fl.select_steps;
  f.pool_steps = fl.pool_steps;
  f.sources_read = c.sources_read;
  f.im2col_elems = fl.im2col_elems;
  f.gemm_pack_elems = fl.gemm_pack_elems;
  f.gemm_microkernels = fl.gemm_microkernels;
  f.graph_bytes = c.graph_bytes;
  return f;
}

double predict_us(const CostFeatures& f, const DeviceSpec& d) {
  Layout L(d);
  Eigen::RowVectorXd mem, cmp;
  rows_of(f, d, L, mem, cmp);
  Eigen::VectorXd x = params_of(d, L);
  if (L.transcendental < 0 && f.flops_transcendental > 0 && d.e_transcendental > 0)  // GPU device set by hand
    cmp[L.other] += f.flops_transcendental * (d.e_cmp / d.e_transcendental - 1);
  // Launch, GEMM calls, their packing and micro-kernel runs, source first touches, the store stall and im2col
  // are outside the roofline max (both rows hold them).
  double t_fixed = x[L.launch] + (L.calls >= 0 ? f.gemm_calls * x[L.calls] : f.gemm_calls * d.gemm_call_us) +
                   (L.sources >= 0 ? f.sources_read * x[L.sources] : f.sources_read * d.source_read_us) +
                   (L.libm_cold >= 0 ? mem[L.libm_cold] * x[L.libm_cold] : 0) +
                   (L.im2col >= 0 ? f.im2col_elems * x[L.im2col] : f.im2col_elems * d.im2col_elem_ns * kUsPerNs) +
                   (L.pack >= 0 ? f.gemm_pack_elems * x[L.pack] : f.gemm_pack_elems * d.gemm_pack_elem_ns * kUsPerNs) +
                   (L.microkernels >= 0 ? f.gemm_microkernels * x[L.microkernels]
                                        : f.gemm_microkernels * d.gemm_microkernel_ns * kUsPerNs) +
                   costmodel_detail::store_stalls(f.bytes_written, f.graph_bytes, d) *
                       (L.store_stall >= 0 ? x[L.store_stall] : d.store_stall_us);
  double t_mem = mem.dot(x) - t_fixed, t_cmp = cmp.dot(x) - t_fixed;
  if (L.reduce < 0)  // GPU device with the CPU terms set by hand: priced as cost() does
    t_cmp += (f.reduction_steps * d.reduce_step_ns + f.select_steps * d.select_step_ns + f.pool_steps * d.pool_step_ns) *
             kUsPerNs;
  return std::max(t_mem, t_cmp) + t_fixed;
}

std::string memory_level(double bytes, const DeviceSpec& d) {
  if (d.is_gpu()) return "DRAM";
  int i = cpu_level_index(bytes, d);
  return i < 0 ? "DRAM" : d.caches[i].name;
}

std::vector<std::string> calibration_parameter_names(const DeviceSpec& d) { return Layout(d).names; }

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
  const int p = L.size();
  const int n = static_cast<int>(samples.size());
  if (n == 0) throw Error("no measurements to calibrate " + prior.name + " with");
  for (const auto& s : samples)
    if (!(s.measured_us > 0) || !std::isfinite(s.measured_us))
      throw Error("measurement " + s.tag + " has a non-positive time " + num(s.measured_us));

  Eigen::VectorXd x = params_of(prior, L);
  const Eigen::VectorXd x_prior = x;
  std::vector<Eigen::RowVectorXd> mem(n), cmp(n);
  for (int i = 0; i < n; ++i) rows_of(samples[i].features, prior, L, mem[i], cmp[i]);

  std::vector<int> regime(n, -1);  // 0 memory, 1 compute
  // A compute-only column whose prior is 0 (the CPU per-step terms) is no
  // knowledge that the term is small: in the first assignment a group that
  // carries such a fitted feature starts in the compute regime, so the first
  // solve can estimate it (with 0 it could never pull a group out of the
  // memory regime); later rounds re-assign with the estimate.
  std::vector<char> unknown(p, 0);
  for (int j : {L.reduce, L.select, L.pool})
    if (j >= 0 && x_prior[j] == 0 && std::find(o.hold.begin(), o.hold.end(), L.names[j]) == o.hold.end()) unknown[j] = 1;
  bool first_assignment = true;
  auto assign = [&] {
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      bool carries_unknown = false;
      for (int j = 0; j < p && first_assignment; ++j) carries_unknown = carries_unknown || (unknown[j] && cmp[i][j] != 0);
      int r = carries_unknown ? 1 : mem[i].dot(x) >= cmp[i].dot(x) ? 0 : 1;
      changed = changed || r != regime[i];
      regime[i] = r;
    }
    return changed;
  };

  CalibrationResult res;
  res.measurements = n;
  std::vector<int> support(p, 0);
  std::vector<bool> free(p, false);
  Eigen::MatrixXd A;
  Eigen::VectorXd b;
  std::vector<int> cols;
  struct Round {
    double rss = std::numeric_limits<double>::infinity();
    Eigen::VectorXd x;
    std::vector<int> regime;
    int iteration = 0;
  } best;
  assign();
  first_assignment = false;
  for (res.iterations = 1; res.iterations <= o.max_iterations; ++res.iterations) {
    // Support: measurements whose regime row uses the parameter.
    std::fill(support.begin(), support.end(), 0);
    for (int i = 0; i < n; ++i) {
      const auto& row = regime[i] == 0 ? mem[i] : cmp[i];
      for (int j = 0; j < p; ++j) support[j] += row[j] != 0;
    }
    cols.clear();
    for (int j = 0; j < p; ++j) {
      free[j] = support[j] >= o.min_support && !L.measured_only(j) &&
                std::find(o.hold.begin(), o.hold.end(), L.names[j]) == o.hold.end();
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
                                    L.names[least],
                                L.names[least]);
    }
    // Weighted rows: relative error (pred - meas) / meas.
    A.resize(n, pf);
    b.resize(n);
    for (int i = 0; i < n; ++i) {
      const auto& row = regime[i] == 0 ? mem[i] : cmp[i];
      double w = 1 / samples[i].measured_us, held = 0;
      for (int j = 0; j < p; ++j)
        if (!free[j]) held += row[j] * x_prior[j];
      for (int k = 0; k < pf; ++k) A(i, k) = row[cols[k]] * w;
      b[i] = (samples[i].measured_us - held) * w;
      // A feature (or time) so large or small that its weighted row, or its
      // square in the residual and the normal matrix, overflows would make
      // every round's residual inf or NaN and leave no round to keep.
      auto in_range = [](double v) { return std::isfinite(v) && std::fabs(v) < 1e150; };
      bool ok = in_range(b[i]);
      for (int k = 0; k < pf; ++k) ok = ok && in_range(A(i, k));
      if (!ok)
        throw Error("measurement " + samples[i].tag +
                    " is out of range for the fit: its features or time overflow a double (re-measure it)");
    }
    // Column scaling keeps the normal matrix well conditioned for the check.
    Eigen::VectorXd scale(pf);
    for (int k = 0; k < pf; ++k) scale[k] = A.col(k).norm() > 0 ? 1 / A.col(k).norm() : 1;
    Eigen::MatrixXd As = A * scale.asDiagonal();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(As.transpose() * As);
    double lmax = es.eigenvalues().maxCoeff(), lmin = es.eigenvalues().minCoeff();
    if (!(lmin > 0) || lmax / lmin > o.max_condition) {
      Eigen::Index worst = 0;
      es.eigenvectors().col(0).cwiseAbs().maxCoeff(&worst);
      throw DegenerateParameter("rank-deficient measurements: " + L.names[cols[worst]] +
                                    " cannot be told apart from the other parameters (condition number " +
                                    (lmin > 0 ? num(lmax / lmin, 3) : std::string("inf")) +
                                    "); measure more varied groups",
                                L.names[cols[worst]]);
    }
    Eigen::VectorXd xs = nnls(As, b);
    for (int j = 0; j < p; ++j) x[j] = x_prior[j];
    for (int k = 0; k < pf; ++k) x[cols[k]] = xs[k] * scale[k];
    // Keep the round with the smallest residual in case the regimes cycle.
    double rss_round = (As * xs - b).squaredNorm();
    if (!std::isfinite(rss_round) || !xs.allFinite())
      throw Error("the fit overflowed: the measurements' features span more than a double holds (re-measure them)");
    if (rss_round < best.rss) best = {rss_round, x, regime, res.iterations};
    if (!assign()) break;
  }
  if (res.iterations > o.max_iterations) {
    // Regimes still alternate (groups near t_mem = t_compute): use the best
    // round, rebuilt with its own regimes.
    res.converged = false;
    res.iterations = o.max_iterations;
    x = best.x;
    regime = best.regime;
    std::fill(support.begin(), support.end(), 0);
    for (int i = 0; i < n; ++i) {
      const auto& row = regime[i] == 0 ? mem[i] : cmp[i];
      for (int j = 0; j < p; ++j) support[j] += row[j] != 0;
    }
    cols.clear();
    for (int j = 0; j < p; ++j)
      if (free[j]) cols.push_back(j);
    A.resize(n, static_cast<Eigen::Index>(cols.size()));
    for (int i = 0; i < n; ++i) {
      const auto& row = regime[i] == 0 ? mem[i] : cmp[i];
      double w = 1 / samples[i].measured_us, held = 0;
      for (int j = 0; j < p; ++j)
        if (!free[j]) held += row[j] * x_prior[j];
      for (std::size_t k = 0; k < cols.size(); ++k) A(i, k) = row[cols[k]] * w;
      b[i] = (samples[i].measured_us - held) * w;
    }
  }

  // Bound check, residuals, covariance on the fitted columns.
  const int pf = static_cast<int>(cols.size());
  for (int k = 0; k < pf; ++k)
    if (!(x[cols[k]] > 0))
      throw DegenerateParameter("degenerate fit: " + L.names[cols[k]] + " was estimated at its bound 0 (" +
                                    (cols[k] == L.launch  ? std::string("no dispatch overhead")
                                     : cols[k] == L.calls ? std::string("no per-call overhead")
                                     : cols[k] == L.reduce || cols[k] == L.select || cols[k] == L.pool ||
                                               cols[k] == L.im2col || cols[k] == L.pack
                                         ? std::string("no per-step cost")
                                                          : std::string("infinite throughput")) +
                                    "); the measurements do not identify it: keep its prior with --hold " +
                                    L.names[cols[k]],
                                L.names[cols[k]]);
  Eigen::VectorXd xf(pf);
  for (int k = 0; k < pf; ++k) xf[k] = x[cols[k]];
  Eigen::VectorXd r = A * xf - b;
  double rss = r.squaredNorm();
  res.rms_relative_residual = std::sqrt(rss / n);
  double sigma2 = rss / std::max(1, n - pf);
  Eigen::MatrixXd cov = sigma2 * (A.transpose() * A).inverse();
  Eigen::VectorXd se_x = Eigen::VectorXd::Zero(p);
  for (int k = 0; k < pf; ++k) se_x[cols[k]] = std::sqrt(std::max(0.0, cov(k, k)));
  for (int i = 0; i < n; ++i) (regime[i] == 0 ? res.memory_bound : res.compute_bound)++;
  for (int k = 0; k < pf; ++k)
    if (se_x[cols[k]] > o.max_relative_se * x[cols[k]])
      throw DegenerateParameter("unidentifiable: " + L.names[cols[k]] + " has a relative standard error of " +
                                    num(100 * se_x[cols[k]] / x[cols[k]], 3) +
                                    "% (its term is small next to the others in every measurement); keep its prior "
                                    "with --hold " + L.names[cols[k]] + " or measure groups it dominates",
                                L.names[cols[k]]);

  // Back to device units.
  DeviceSpec d = prior;
  d.name = calibrated_name(prior.name);
  d.calibrated = true;
  const std::string provenance = "fitted by fuseplan calibrate on " + today() + " from " + std::to_string(n) +
                                 " measured groups (relative least squares, docs/calibration.md)";
  auto add = [&](int j, double prior_v, double v, double rel_se) {
    FittedParameter fp;
    fp.name = L.names[j];
    fp.prior = prior_v;
    fp.held = !free[j];
    fp.value = fp.held ? prior_v : v;
    fp.std_error = fp.held ? 0 : std::fabs(fp.value) * rel_se;
    fp.support = support[j];
    if (fp.held && L.measured_only(j))
      fp.note = "held at prior: measured by fuseplan probe, not fitted";
    else if (fp.held)
      fp.note = support[j] < o.min_support ? "held at prior: " + std::to_string(support[j]) +
                                                 " measurement(s) exercise it (need " + std::to_string(o.min_support) + ")"
                                           : std::string("held at prior (--hold)");
    res.parameters.push_back(fp);
    return fp;
  };
  auto rel = [&](int j) { return x[j] > 0 ? se_x[j] / x[j] : 0; };
  auto note_source = [&](const std::string& key, const FittedParameter& fp) {
    if (!fp.held) d.sources[key] = num(fp.value) + " ± " + num(fp.std_error, 2) + " " + provenance;
  };
  {
    auto fp = add(L.launch, prior.launch_us, x[L.launch], 0);
    fp.std_error = fp.held ? 0 : se_x[L.launch];
    res.parameters.back().std_error = fp.std_error;
    d.launch_us = fp.value;
    note_source("launch_us", fp);
  }
  for (int c = L.first_level; c < L.first_level + L.levels; ++c) {
    int li = L.level_of_col[c];
    double bw = safe_div(kUsPerByteAtGBps, x[c] * prior.e_mem);
    auto fp = add(c, level_bw(li, prior), bw, rel(c));
    if (li >= 0) d.caches[li].bw_GBps = fp.value;
    if (li < 0 || prior.caches[li].bytes <= 0) d.dram_bw_GBps = fp.value;
    note_source(li >= 0 ? "caches" : "dram_bw_GBps", fp);
    if (li >= 0 && !fp.held)
      d.sources["caches"] = "bw_GBps fitted by fuseplan calibrate on " + today() + " (see " + d.name +
                            " parameters); capacities from the probe";
    if (li >= 0 && prior.caches[li].bytes <= 0 && !fp.held) note_source("dram_bw_GBps", fp);
  }
  if (L.write_allocate >= 0) {
    auto fp = add(L.write_allocate, prior.write_allocate_bw_GBps,
                  safe_div(kUsPerByteAtGBps, x[L.write_allocate] * prior.e_mem), rel(L.write_allocate));
    d.write_allocate_bw_GBps = fp.value;
    note_source("write_allocate_bw_GBps", fp);
  }
  if (L.spill >= 0) {
    int l1 = l1_index(d);
    double pen = x[L.spill] / safe_div(kUsPerByteAtGBps, level_bw(l1, d) * d.e_mem);
    // penalty = x_spill / x_L1: relative variance by the delta method with
    // the covariance of the two estimates (when both are fitted).
    double rel_pen = rel(L.spill);
    int c1 = L.column_of_level(l1), ks = -1, k1 = -1;
    for (int k = 0; k < pf; ++k) ks = cols[k] == L.spill ? k : ks, k1 = cols[k] == c1 ? k : k1;
    if (ks >= 0 && k1 >= 0 && x[L.spill] > 0 && x[c1] > 0) {
      double v = cov(ks, ks) / (x[L.spill] * x[L.spill]) + cov(k1, k1) / (x[c1] * x[c1]) -
                 2 * cov(ks, k1) / (x[L.spill] * x[c1]);
      rel_pen = std::sqrt(std::max(0.0, v));
    }
    auto fp = add(L.spill, prior.spill_penalty, pen, rel_pen);
    d.spill_penalty = fp.value;
    note_source("spill_penalty", fp);
  }
  // Additive µs terms: x is the device value.
  for (auto [col, prior_v, dst] : {std::tuple{L.calls, prior.gemm_call_us, &d.gemm_call_us},
                                   std::tuple{L.sources, prior.source_read_us, &d.source_read_us},
                                   std::tuple{L.libm_cold, prior.libm_cold_us, &d.libm_cold_us},
                                   std::tuple{L.store_stall, prior.store_stall_us, &d.store_stall_us}}) {
    if (col < 0) continue;
    auto fp = add(col, prior_v, x[col], 0);
    fp.std_error = fp.held ? 0 : se_x[col];
    res.parameters.back().std_error = fp.std_error;
    *dst = fp.value;
    note_source(L.names[col], fp);
  }
  {
    double ec = safe_div(kUsPerFlopAtTFLOPs, x[L.contraction] * peak_contraction(prior));
    auto fc = add(L.contraction, prior.e_contraction, ec, rel(L.contraction));
    double eo = safe_div(kUsPerFlopAtTFLOPs, x[L.other] * prior.fp32_TFLOPs);
    auto fo = add(L.other, prior.e_cmp, eo, rel(L.other));
    d.e_contraction = fc.value;
    d.e_cmp = fo.value;
    // The loader caps efficiencies at 1.5: an efficiency above 1 means the
    // peak was understated; move the excess into the peak (same product).
    double s = std::max(d.e_cmp, d.tensor_TFLOPs > 0 ? 0.0 : d.e_contraction);
    if (s > 1) {
      d.fp32_TFLOPs *= s;
      d.e_cmp /= s;
      if (d.tensor_TFLOPs <= 0) d.e_contraction /= s;
      d.sources["fp32_TFLOPs"] = "raised ×" + num(s, 3) + " by fuseplan calibrate on " + today() +
                                 " (fitted efficiency above 1: the probe understated the peak)";
    }
    if (d.tensor_TFLOPs > 0 && d.e_contraction > 1) {
      d.tensor_TFLOPs *= d.e_contraction;
      d.e_contraction = 1;
    }
    note_source("e_contraction", fc);
    note_source("e_cmp", fo);
  }
  if (L.transcendental >= 0) {
    double et = safe_div(kUsPerFlopAtTFLOPs, x[L.transcendental] * d.fp32_TFLOPs);
    auto ft = add(L.transcendental, costmodel_detail::transcendental_efficiency(prior), et, rel(L.transcendental));
    // Held: keep the prior's setting (0 = follow e_cmp); fitted: the value
    // against the (possibly raised) fp32 peak written above.
    d.e_transcendental = ft.held ? prior.e_transcendental : ft.value;
    note_source("e_transcendental", ft);
  }
  for (auto [col, prior_v, dst] : {std::tuple{L.reduce, prior.reduce_step_ns, &d.reduce_step_ns},
                                   std::tuple{L.select, prior.select_step_ns, &d.select_step_ns},
                                   std::tuple{L.pool, prior.pool_step_ns, &d.pool_step_ns},
                                   std::tuple{L.im2col, prior.im2col_elem_ns, &d.im2col_elem_ns},
                                   std::tuple{L.pack, prior.gemm_pack_elem_ns, &d.gemm_pack_elem_ns},
                                   std::tuple{L.microkernels, prior.gemm_microkernel_ns, &d.gemm_microkernel_ns}}) {
    if (col < 0) continue;
    auto fp = add(col, prior_v, x[col] / kUsPerNs, 0);  // x in µs per step, the device in ns
    fp.std_error = fp.held ? 0 : se_x[col] / kUsPerNs;
    res.parameters.back().std_error = fp.std_error;
    *dst = fp.value;
    note_source(L.names[col], fp);
  }
  res.device = d;
  return res;
}

}  // namespace fuseplan
