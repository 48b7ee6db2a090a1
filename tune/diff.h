// Why a decision flips between two tuned batch sizes. With --measure the
// device is recalibrated as measurements accumulate, so two batch sizes'
// kept plans differ for two reasons: the graph changed (the batch size), or
// the device they were searched on changed (recalibration; also keeping the
// best measured plan of several rounds). Models whose batch dim is fixed in
// the file run the same graph at every --batch: their flips are all of the
// second kind. tune labels each flip (DecisionFlip::cause) by searching every
// batch size again on one device, the final calibration: a flip that these
// same-device plans show too is caused by the batch size; one they do not
// show (or any flip between identical graphs) by recalibration.
#pragma once

#include <string>
#include <vector>

#include "emit/report_md.h"

namespace fuseplan {

/// True when both graphs have the same primitives with the same output shapes.
bool same_graph_shapes(const Graph& a, const Graph& b);

/// Sets DecisionFlip::cause on every flip: one clause per pair of
/// consecutive batch sizes whose action differs: "batch size (A→B: ...)"
/// when the same-device plans flip it the same way, "batch size and
/// recalibration (...)" when they flip it another way ("batch size and
/// measured choice" where a kept plan is not the search's), "recalibration
/// (...)" when they agree or the two graphs are identical (or "measured
/// choice (...)", see `kept_is_search`). `kept` are the plans the flips come from,
/// `same_device` the same batch sizes (same order, same graphs) searched on
/// one device named `device`.
/// `kept_is_search`, when given (same order as `kept`), says whether each
/// kept plan is what the strategy finds on that size's final device. Where
/// one is not (tune kept another round's or a peer strategy's plan because
/// it measured faster), a flip the same-device plans do not show is the
/// "measured choice", not recalibration.
void label_flip_causes(std::vector<DecisionFlip>& flips, const std::vector<PlanAt>& kept,
                       const std::vector<PlanAt>& same_device, const std::string& device,
                       const std::vector<bool>& kept_is_search = {});

}  // namespace fuseplan
