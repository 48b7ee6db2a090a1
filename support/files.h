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
/// Throws Error("cannot write '<path>': <reason>") unless `path` can be
/// written: it is not a directory, and its parent directory exists (or, with
/// `parents_made`, its nearest existing ancestor is a directory) and this
/// process may write there (not read-only). Creates nothing: commands call
/// it for every output before their work, so a bad -o costs no partial output.
void check_writable(const std::string& path, bool parents_made = false);
/// Makes `dir` and its missing parents. Throws Error("cannot create
/// directory '<dir>': <reason>") when it cannot.
void create_output_dirs(const std::string& dir);
/// Reads a whole file. Throws Error when it cannot be opened.
std::string read_file(const std::string& path);
/// Lower-case hex SHA-256 of bytes (OpenSSL EVP).
std::string sha256_hex(std::string_view bytes);

}  // namespace fuseplan
