#include "support/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <openssl/evp.h>
#include <unistd.h>

#include "support/error.h"
#include "support/input_file.h"

namespace fuseplan {

void write_file_atomic(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::error_code sec;
  // A symlink is written through (its target is replaced), and anything but
  // a regular file is refused: renaming over a device node or a FIFO would
  // replace it with a plain file (`-o /dev/full` as root).
  if (fs::is_symlink(fs::symlink_status(target, sec)))
    if (fs::path resolved = fs::weakly_canonical(target, sec); !sec && !resolved.empty()) target = resolved;
  if (const fs::file_status st = fs::status(target, sec); fs::exists(st) && !fs::is_regular_file(st))
    throw Error("cannot write '" + path + "': " + (fs::is_directory(st) ? "it is a directory" : "not a regular file"));
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error("cannot write '" + path + "': write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("cannot write '" + path + "': " + ec.message());
  }
}

void check_writable(const std::string& path, bool parents_made) {
  namespace fs = std::filesystem;
  const std::string head = "cannot write '" + path + "': ";
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(head + "it is a directory");
  fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (!parents_made && !fs::exists(dir, ec)) throw Error(head + "no directory '" + dir.string() + "'");
  while (!fs::exists(dir, ec) && dir.has_parent_path() && dir != dir.parent_path()) dir = dir.parent_path();
  if (!fs::is_directory(dir, ec)) throw Error(head + "'" + dir.string() + "' is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) throw Error(head + "'" + dir.string() + "': " + std::strerror(errno));
}

void create_output_dirs(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create directory '" + dir + "': " + ec.message());
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error("cannot read '" + path + "': it is a directory, not a file");
  return read_input_file(path, "file", kMaxDataFileBytes);
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw Error("SHA-256 failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

}  // namespace fuseplan
