// Number text for everything fuseplan prints: tables, reports, breakdowns;
// the escaping of model-supplied names.
#pragma once

#include <string>
#include <string_view>

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

/// `s` safe on every output stream: printable ASCII (0x20..0x7E) and valid
/// UTF-8 sequences of printable code points are kept; every other byte
/// (controls below 0x20, DEL 0x7F, bytes of invalid UTF-8, and the two bytes
/// of a UTF-8 C1 control U+0080..U+009F) becomes the four characters \xNN
/// (upper-case hex). The result is valid UTF-8 with no control byte, so it
/// goes into JSON (nlohmann refuses invalid UTF-8), tables and terminals
/// as is. The importer applies it to every string a model supplies (graph/).
std::string escape_name(std::string_view s);

}  // namespace fuseplan
