// Shared by the fuzz targets of readers that take a path (device JSON,
// measurement JSONL, .npy): the input bytes go to a file in memory-backed
// /dev/shm (or the temp folder) once per run, then the reader reads it.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace fuseplan::fuzz {

/// Writes `data` to this process's scratch file (suffix `ext`) and returns its path.
inline std::string scratch_file(const uint8_t* data, size_t size, const std::string& ext) {
  static const std::string path = [&] {
    const std::filesystem::path dir = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    return (dir / ("fuseplan-fuzz-" + std::to_string(::getpid()) + ext)).string();
  }();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace fuseplan::fuzz
