// File helpers for everything fuseplan writes: atomic writes (temp file +
// rename, so a failure never leaves a partial file) and content hashes.
#pragma once

#include <string>
#include <string_view>

namespace fuseplan {

/// Writes `content` to `path` atomically (temp file in the same directory,
/// then rename; through a symlink, to its target). Throws Error naming the
/// path when it cannot, or when `path` exists and is not a regular file
/// (directory, device, FIFO).
void write_file_atomic(const std::string& path, std::string_view content);
/// Reads a whole file. Throws Error when it cannot be opened.
std::string read_file(const std::string& path);
/// Lower-case hex SHA-256 of bytes (OpenSSL EVP).
std::string sha256_hex(std::string_view bytes);

}  // namespace fuseplan
