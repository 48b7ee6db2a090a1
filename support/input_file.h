// Whole-file reads of what a user hands fuseplan (models, plans, devices,
// measurement records, .npy inputs): regular files only, since a FIFO blocks
// the read and a device such as /dev/zero never ends, and at most a stated
// size, so a wrong path fails with one line instead of exhausting memory.
#pragma once

#include <cstdint>
#include <string>

namespace fuseplan {

/// Largest model file: 2 GiB, protobuf's limit on one serialized message
/// (an ONNX model beyond it keeps its weights in external data files).
inline constexpr std::uintmax_t kMaxModelFileBytes = std::uintmax_t{2} << 30;
/// Largest JSON, JSON-lines or .npy input: 4 GiB, far above any plan, device
/// or record file fuseplan writes (a 25-model measurement sitting is 30 MiB).
inline constexpr std::uintmax_t kMaxDataFileBytes = std::uintmax_t{4} << 30;

/// Throws Error ("cannot read <what> '<path>': ...") when `path` does not
/// exist, is a directory, FIFO, socket or device, or holds more than
/// `max_bytes` bytes. `what` names the file's role ("model file", "plan").
void check_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes);

/// check_input_file, then the file's bytes. Throws Error as above, or when
/// the read fails.
std::string read_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes);

}  // namespace fuseplan
