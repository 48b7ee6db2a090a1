// Number text for everything fuseplan prints: tables, reports, breakdowns.
#pragma once

#include <string>

namespace fuseplan {

/// Appends printf("%.*f", decimals, x) text, byte for byte (std::to_chars'
/// fixed notation), without its general algorithm for the common case (x ≥ 0
/// below 2^53, at most 3 decimals): a plan's breakdown prints about twenty
/// numbers per group.
void append_fixed(std::string& s, double x, int decimals);
/// printf("%.*f", decimals, x).
std::string fixed_text(double x, int decimals);
/// A byte count in binary units: "512 B", "1.5 KiB", "3.0 MiB" (whole bytes
/// below 1 KiB, one decimal above; up to TiB).
std::string bytes_text(double bytes);

}  // namespace fuseplan
