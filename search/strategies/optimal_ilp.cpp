#include "search/strategies/optimal_ilp.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "graph/graph.h"

#ifdef FUSEPLAN_HAVE_CBC
#include <CbcModel.hpp>
#include <CoinPackedMatrix.hpp>
#include <CoinPackedVector.hpp>
#include <OsiClpSolverInterface.hpp>
#endif

namespace fuseplan::strategies {

RegionIlp::RegionIlp(std::vector<Candidate> columns, const std::vector<NodeId>& region)
    : cols_(std::move(columns)), region_(region) {}

void RegionIlp::forbid_together(const std::vector<std::size_t>& cols) { cuts_.push_back(cols); }

void RegionIlp::solve(double time_limit_s) {
  const int ncol = static_cast<int>(cols_.size());
  // All singletons that write their outputs: always feasible, the incumbent to start from.
  std::vector<double> init(ncol, 0.0);
  double init_obj = 0;
  std::vector<std::size_t> singles;
  for (int j = 0; j < ncol; ++j)
    if (cols_[j].nodes.size() == 1 && cols_[j].needs.empty()) {
      init[j] = 1;
      init_obj += cols_[j].cost_us;
      singles.push_back(j);
    }
  if (ncol == static_cast<int>(singles.size())) {  // nothing to choose
    chosen_ = singles;
    objective_ = bound_ = init_obj;
    proven_ = true;
    return;
  }
#ifdef FUSEPLAN_HAVE_CBC
  const double inf = std::numeric_limits<double>::infinity();
  std::unordered_map<NodeId, std::vector<int>> holders;
  for (int j = 0; j < ncol; ++j)
    for (NodeId n : cols_[j].nodes) holders[n].push_back(j);
  CoinPackedMatrix m(false, 0, 0);
  m.setDimensions(0, ncol);
  std::vector<double> rlb, rub;
  for (NodeId n : region_) {  // cover: every primitive at least once
    CoinPackedVector row;
    for (int j : holders[n]) row.insert(j, 1.0);
    m.appendRow(row);
    rlb.push_back(1.0);
    rub.push_back(inf);
  }
  for (int j = 0; j < ncol; ++j)  // an unwritten output is recomputed by a chosen column holding its consumer
    for (auto [n, c] : cols_[j].needs) {
      CoinPackedVector row;
      row.insert(j, 1.0);
      for (int k : holders[n]) {
        const auto& ks = cols_[k].nodes;
        if (k != j && std::find(ks.begin(), ks.end(), c) != ks.end()) row.insert(k, -1.0);
      }
      m.appendRow(row);
      rlb.push_back(-inf);
      rub.push_back(0.0);
    }
  // Nobody may read an unwritten output from memory: a column holding n
  // without writing it (a `needs` pair, or n's consumer c inside the column)
  // excludes every column that holds c without n. Without this, a kernel
  // recomputing n elsewhere would read n's unwritten operands and make_plan
  // would price their write, which the ILP did not (plan total > objective).
  for (int j = 0; j < ncol; ++j)
    for (auto [n, c] : cols_[j].unwritten) {
      CoinPackedVector row;
      double readers = 0;
      for (int k : holders[c]) {
        const auto& ks = cols_[k].nodes;
        if (std::find(ks.begin(), ks.end(), n) == ks.end()) row.insert(k, 1.0), readers += 1;
      }
      if (readers == 0) continue;
      row.insert(j, readers);
      m.appendRow(row);
      rlb.push_back(-inf);
      rub.push_back(readers);
    }
  for (const auto& cut : cuts_) {  // lazy cycle cuts
    CoinPackedVector row;
    for (std::size_t j : cut) row.insert(static_cast<int>(j), 1.0);
    m.appendRow(row);
    rlb.push_back(-inf);
    rub.push_back(static_cast<double>(cut.size()) - 1.0);
  }
  std::vector<double> clb(ncol, 0.0), cub(ncol, 1.0), obj(ncol);
  for (int j = 0; j < ncol; ++j) obj[j] = cols_[j].cost_us;
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(m, clb.data(), cub.data(), obj.data(), rlb.data(), rub.data());
  for (int j = 0; j < ncol; ++j) solver.setInteger(j);
  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setMaximumSeconds(std::max(0.1, time_limit_s));
  model.setBestSolution(init.data(), ncol, init_obj, true);
  model.branchAndBound();
  const double* sol = model.bestSolution();
  chosen_.clear();
  if (!sol) {
    chosen_ = singles;
    objective_ = init_obj;
    bound_ = 0;
    proven_ = false;
    return;
  }
  for (int j = 0; j < ncol; ++j)
    if (sol[j] > 0.5) chosen_.push_back(j);
  objective_ = 0;
  for (std::size_t j : chosen_) objective_ += cols_[j].cost_us;
  proven_ = model.isProvenOptimal();
  bound_ = proven_ ? objective_ : std::min(objective_, model.getBestPossibleObjValue());
#else
  (void)time_limit_s;
  throw Error("strategy 'optimal' needs COIN-OR CBC (pkg-config cbc), which this build did not find");
#endif
}

}  // namespace fuseplan::strategies
