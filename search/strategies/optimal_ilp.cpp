#include "search/strategies/optimal_ilp.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "graph/graph.h"

#ifdef FUSEPLAN_HAVE_CBC
#include <CbcModel.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>
#endif

namespace fuseplan::strategies {

RegionIlp::RegionIlp(std::vector<Candidate> columns, const std::vector<NodeId>& region)
    : cols_(std::move(columns)), region_(region) {}

void RegionIlp::forbid_together(const std::vector<std::size_t>& cols) { cuts_.push_back(cols); }

std::vector<std::size_t> RegionIlp::singletons(double* objective) const {
  std::vector<std::size_t> out;
  double obj = 0;
  for (std::size_t j = 0; j < cols_.size(); ++j)
    if (cols_[j].nodes.size() == 1 && cols_[j].needs.empty()) {
      out.push_back(j);
      obj += cols_[j].cost_us;
    }
  if (objective) *objective = obj;
  return out;
}

void RegionIlp::keep_singletons() {
  chosen_ = singletons(&objective_);
  bound_ = 0;
  has_bound_ = proven_ = false;
  unsolved_ = true;
}

void RegionIlp::solve(double time_limit_s) {
  const int ncol = static_cast<int>(cols_.size());
  // All singletons that write their outputs: always feasible, the incumbent to start from.
  double init_obj = 0;
  const std::vector<std::size_t> singles = singletons(&init_obj);
  std::vector<double> init(ncol, 0.0);
  for (std::size_t j : singles) init[j] = 1;
  unsolved_ = seconds_limit_hit_ = false;
  if (ncol == static_cast<int>(singles.size())) {  // nothing to choose
    chosen_ = singles;
    objective_ = bound_ = init_obj;
    has_bound_ = proven_ = true;
    return;
  }
#ifdef FUSEPLAN_HAVE_CBC
  const double inf = std::numeric_limits<double>::infinity();
  std::unordered_map<NodeId, std::vector<int>> holders;
  for (int j = 0; j < ncol; ++j)
    for (NodeId n : cols_[j].nodes) holders[n].push_back(j);
  // The rows are gathered in compressed form and handed to CBC in one
  // matrix: appending them one at a time (CoinPackedMatrix::appendRow)
  // reallocates and copies the matrix per row, quadratic in the rows.
  std::vector<double> elem, rlb, rub;
  std::vector<int> ind;
  std::vector<CoinBigIndex> start;
  std::vector<int> len;
  auto begin_row = [&] { start.push_back(static_cast<CoinBigIndex>(elem.size())); };
  auto put = [&](int j, double v) { ind.push_back(j), elem.push_back(v); };
  auto end_row = [&](double lo, double hi) {
    len.push_back(static_cast<int>(static_cast<CoinBigIndex>(elem.size()) - start.back()));
    rlb.push_back(lo);
    rub.push_back(hi);
  };
  for (NodeId n : region_) {  // cover: every primitive at least once
    begin_row();
    for (int j : holders[n]) put(j, 1.0);
    end_row(1.0, inf);
  }
  for (int j = 0; j < ncol; ++j)  // an unwritten output is recomputed by a chosen column holding its consumer
    for (auto [n, c] : cols_[j].needs) {
      begin_row();
      put(j, 1.0);
      for (int k : holders[n]) {
        const auto& ks = cols_[k].nodes;
        if (k != j && std::find(ks.begin(), ks.end(), c) != ks.end()) put(k, -1.0);
      }
      end_row(-inf, 0.0);
    }
  // Nobody may read an unwritten output from memory: a column holding n
  // without writing it (a `needs` pair, or n's consumer c inside the column)
  // excludes every column that holds c without n. Without this, a kernel
  // recomputing n elsewhere would read n's unwritten operands and make_plan
  // would price their write, which the ILP did not (plan total > objective).
  for (int j = 0; j < ncol; ++j)
    for (auto [n, c] : cols_[j].unwritten) {
      std::vector<int> readers;
      for (int k : holders[c]) {
        const auto& ks = cols_[k].nodes;
        if (std::find(ks.begin(), ks.end(), n) == ks.end()) readers.push_back(k);
      }
      if (readers.empty()) continue;
      const double r = static_cast<double>(readers.size());
      begin_row();
      for (int k : readers) put(k, 1.0);
      put(j, r);
      end_row(-inf, r);
    }
  for (const auto& cut : cuts_) {  // lazy cycle cuts
    begin_row();
    for (std::size_t j : cut) put(static_cast<int>(j), 1.0);
    end_row(-inf, static_cast<double>(cut.size()) - 1.0);
  }
  const int nrow = static_cast<int>(len.size());
  const CoinPackedMatrix m(false, ncol, nrow, static_cast<CoinBigIndex>(elem.size()), elem.data(), ind.data(),
                           start.data(), len.data());
  std::vector<double> clb(ncol, 0.0), cub(ncol, 1.0), obj(ncol);
  for (int j = 0; j < ncol; ++j) obj[j] = cols_[j].cost_us;
  // Optimal to a relative gap of kAllowableFractionGap: with the overlap's
  // unhidden share of the shorter regime (DeviceSpec::overlap < 1) the
  // groups of an elementwise chain differ by fractions of a ns, their LP
  // relaxation is no longer integral, and CBC closed the last 0.005% of a
  // 1200-primitive chain's gap only at the 120 s limit (1.3 s with
  // overlap 1; 20 s at this gap).
  constexpr double kAllowableFractionGap = 1e-3;  // 0.1%: far below the cost model's error
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(m, clb.data(), cub.data(), obj.data(), rlb.data(), rub.data());
  for (int j = 0; j < ncol; ++j) solver.setInteger(j);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setUseElapsedTime(true);  // the strategy's deadline is wall time
  model.setMaximumSeconds(time_limit_s);
  model.setAllowableFractionGap(kAllowableFractionGap);
  model.setBestSolution(init.data(), ncol, init_obj, true);
  model.branchAndBound();
  const double* sol = model.bestSolution();
  chosen_.clear();
  seconds_limit_hit_ = model.isSecondsLimitReached();
  if (!sol) {
    keep_singletons();
    unsolved_ = false;  // CBC ran but found nothing better: no bound either
    return;
  }
  for (int j = 0; j < ncol; ++j)
    if (sol[j] > 0.5) chosen_.push_back(j);
  objective_ = 0;
  for (std::size_t j : chosen_) objective_ += cols_[j].cost_us;
  proven_ = model.isProvenOptimal();
  // A bound exists once CBC has solved the root relaxation (stopped before
  // that, it reports an infinite or huge negative value).
  const double best_possible = model.getBestPossibleObjValue();
  has_bound_ = proven_ || (std::isfinite(best_possible) && best_possible > -1e30);
  bound_ = proven_ ? objective_ : has_bound_ ? std::min(objective_, best_possible) : 0;
#else
  (void)time_limit_s;
  throw Error("strategy 'optimal' needs COIN-OR CBC (pkg-config cbc), which this build did not find");
#endif
}

}  // namespace fuseplan::strategies
