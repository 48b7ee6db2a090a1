// The smallest predicted saving a search acts on.
#pragma once

namespace fuseplan {

/// µs. A merge, duplication or move is taken only when it is predicted to
/// save more than this; a smaller gain is a tie with leaving the groups as
/// they are. Gains are differences of sums of doubles (Σ group predicted_us
/// before − after) whose terms are 0.1–10^5 µs: the same partition priced in
/// two summation orders differs by ~10^-11 µs, so a tie computed as a
/// difference can come out as a tiny positive "gain" and, acted on, would
/// let rounding pick the plan (and a search could undo and redo the same
/// move). 10^-6 µs (1 ps) lies far above that rounding and far below the
/// time a kernel can resolve (a launch is ~1 µs; one 64-byte cache line at
/// 3 TB/s is ~2·10^-5 µs). Estimate, not measured.
inline constexpr double kMinGainUs = 1e-6;

}  // namespace fuseplan
