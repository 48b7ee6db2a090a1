// The smallest predicted saving a search acts on, and how it ranks a change
// whose predicted saving is a tie.
#pragma once

#include <algorithm>
#include <cmath>

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

/// Share of the changed groups' predicted time within which two
/// alternatives are a tie on time: 0.1%, ten times below the 1–3% that
/// repeated measurements of one kernel spread over (interquartile ranges
/// of results/ranking.md) and far below the model's error on a group
/// (15–30%, results/cost-model-accuracy-zen4.md). A predicted difference
/// that small cannot be measured; the search then takes the alternative
/// that writes fewer bytes. BERT's FFN GEMM with its Erf GELU as epilogue
/// was predicted 0.5 µs slower than the two kernels apart (6891 µs), kept
/// apart, 1.5 MiB more written per layer; fused it measured 134 µs faster
/// (one Zen 4 thread, examples/bert_base_layer at S = 128).
inline constexpr double kTieFraction = 1e-3;

/// The saving a search ranks a change by, from its predicted saving
/// `gain_us` (before − after, may be negative), the bytes it saves writing
/// (before − after) and the predicted µs of the changed groups after it:
/// `gain_us` beyond the tie margin max(kMinGainUs, kTieFraction · after_us);
/// within it, 2·kMinGainUs when the change writes fewer bytes (taken after
/// every real saving) and 0 otherwise (not taken). The rule is antisymmetric:
/// a change and its reverse are never both taken, so no pass undoes
/// another's tie-break. NaN stays NaN (never taken).
inline double ranked_gain(double gain_us, double bytes_written_saved, double after_us) {
  if (std::isnan(gain_us)) return gain_us;
  const double tie = std::max(kMinGainUs, kTieFraction * std::max(after_us, 0.0));
  if (std::abs(gain_us) > tie) return gain_us;
  return bytes_written_saved > 0 ? 2 * kMinGainUs : 0.0;
}

}  // namespace fuseplan
