#include "tune/dispatch.h"

#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "emit/plan_json.h"
#include "graph/import.h"

namespace fuseplan {

namespace {

// Smallest b in (lo, hi] where `next` is predicted no slower than `prev`;
// hi when it never is (the measured choice at hi stands), lo + 1 when it
// already is at lo. Assumes one crossover between neighbouring tuned sizes.
int64_t crossover(const std::string& prev, const std::string& next, int64_t lo, int64_t hi, const PredictAt& predict) {
  auto next_wins = [&](int64_t b) { return predict(next, b) <= predict(prev, b); };
  if (!next_wins(hi)) return hi;
  if (next_wins(lo)) return lo + 1;
  while (hi - lo > 1) {  // invariant: !next_wins(lo), next_wins(hi)
    const int64_t mid = lo + (hi - lo) / 2;
    (next_wins(mid) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace

Dispatch build_dispatch(const std::vector<DispatchInput>& tuned, const PredictAt& predict) {
  Dispatch out;
  for (const auto& t : tuned) out.tuned_batches.push_back(t.batch);
  std::vector<const DispatchInput*> heads;  // first tuned size of each run of identical plans
  for (std::size_t i = 0; i < tuned.size(); ++i) {
    if (!out.ranges.empty() && tuned[i].plan_key == heads.back()->plan_key) {
      out.ranges.back().tuned_at.push_back(tuned[i].batch);
      continue;
    }
    if (!out.ranges.empty()) {
      const DispatchInput& prev = tuned[i - 1];
      const int64_t start = crossover(prev.plan_json, tuned[i].plan_json, prev.batch, tuned[i].batch, predict);
      out.ranges.back().max_batch = start - 1;
      out.ranges.back().boundary = start == tuned[i].batch ? "tuned size" : "predicted crossover";
    }
    DispatchRange r;
    r.min_batch = out.ranges.empty() ? 1 : out.ranges.back().max_batch + 1;
    r.plan = tuned[i].plan_file;
    r.tuned_at = {tuned[i].batch};
    out.ranges.push_back(r);
    heads.push_back(&tuned[i]);
  }
  return out;
}

PredictAt predict_by_import(const std::string& model_path, const std::map<std::string, int64_t>& dims,
                            const DeviceSpec& d) {
  auto graphs = std::make_shared<std::map<int64_t, Graph>>();
  return [=](const std::string& plan_json, int64_t batch) {
    auto it = graphs->find(batch);
    if (it == graphs->end()) {
      ImportOptions o;
      o.batch = batch;
      o.dims = dims;
      it = graphs->emplace(batch, import_model(model_path, o)).first;
    }
    return load_plan(plan_json, it->second, d).totals.predicted_us;
  };
}

std::string dispatch_to_json(const Dispatch& d) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema"] = kDispatchSchema;
  j["model"] = {{"path", d.model_path}, {"sha256", d.model_sha256}};
  j["device"] = d.device;
  j["strategy"] = d.strategy;
  j["tuned_batches"] = d.tuned_batches;
  j["ranges"] = ordered_json::array();
  for (const auto& r : d.ranges)
    j["ranges"].push_back({{"min_batch", r.min_batch},
                           {"max_batch", r.max_batch < 0 ? ordered_json(nullptr) : ordered_json(r.max_batch)},
                           {"plan", r.plan},
                           {"tuned_at", r.tuned_at},
                           {"boundary", r.boundary}});
  return j.dump(2) + "\n";
}

Dispatch dispatch_from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(std::string("dispatch: not JSON: ") + e.what());
  }
  if (!j.is_object() || j.value("schema", "") != kDispatchSchema)
    throw Error(std::string("dispatch: schema must be \"") + kDispatchSchema + "\"");
  Dispatch d;
  try {
    d.model_path = j.at("model").value("path", "");
    d.model_sha256 = j.at("model").value("sha256", "");
    d.device = j.value("device", "");
    d.strategy = j.value("strategy", "");
    d.tuned_batches = j.at("tuned_batches").get<std::vector<int64_t>>();
    for (const auto& r : j.at("ranges")) {
      DispatchRange x;
      x.min_batch = r.at("min_batch").get<int64_t>();
      x.max_batch = r.at("max_batch").is_null() ? -1 : r.at("max_batch").get<int64_t>();
      x.plan = r.at("plan").get<std::string>();
      x.tuned_at = r.at("tuned_at").get<std::vector<int64_t>>();
      x.boundary = r.value("boundary", "");
      d.ranges.push_back(x);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("dispatch: ") + e.what());
  }
  return d;
}

const DispatchRange& dispatch_pick(const Dispatch& d, int64_t batch) {
  if (d.ranges.empty()) throw Error("dispatch: no ranges");
  for (const auto& r : d.ranges)
    if (batch <= r.max_batch || r.max_batch < 0) return r;
  return d.ranges.back();
}

}  // namespace fuseplan
