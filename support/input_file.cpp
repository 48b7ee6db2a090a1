#include "support/input_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace fuseplan {

void check_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes) {
  namespace fs = std::filesystem;
  const std::string head = "cannot read " + what + " '" + path + "': ";
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error("cannot open " + what + " '" + path + "': no such file");
  if (fs::is_directory(st)) throw Error(head + "it is a directory, not a file");
  if (!fs::is_regular_file(st)) throw Error(head + "not a regular file (a FIFO, socket or device)");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw Error(head + ec.message());
  if (size > max_bytes)
    throw Error(head + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) + "-byte limit");
}

std::string read_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes) {
  check_input_file(path, what, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + what + " '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error("cannot read " + what + " '" + path + "'");
  return ss.str();
}

}  // namespace fuseplan
