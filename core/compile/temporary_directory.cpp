#include "core/compile/temporary_directory.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace kwb {

namespace fs = std::filesystem;

TemporaryDirectory::TemporaryDirectory(const std::string &prefix) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / (prefix + "XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    error_ = "cannot create a temporary folder in " + base.string() + ": " + std::strerror(errno);
    return;
  }
  path_ = pattern;
}

TemporaryDirectory::~TemporaryDirectory() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

bool readWholeFile(const fs::path &path, std::string &bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size < 0) return false;
  in.seekg(0, std::ios::beg);
  bytes.resize(static_cast<std::size_t>(size));
  in.read(bytes.data(), size);
  return static_cast<bool>(in) || (in.eof() && in.gcount() == size);
}

bool writeWholeFile(const fs::path &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return false;
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  return static_cast<bool>(out);
}

}  // namespace kwb
