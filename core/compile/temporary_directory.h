#pragma once
// A private folder (mode 0700) under $TMPDIR, removed with everything in it when this goes away.
#include <filesystem>
#include <string>
#include <string_view>

namespace kwb {

class TemporaryDirectory {
 public:
  // Creates <tmp>/<prefix>XXXXXX; valid() is false (and error() says why) when that fails.
  explicit TemporaryDirectory(const std::string &prefix);
  ~TemporaryDirectory();
  TemporaryDirectory(const TemporaryDirectory &) = delete;
  TemporaryDirectory &operator=(const TemporaryDirectory &) = delete;

  bool valid() const { return !path_.empty(); }
  const std::filesystem::path &path() const { return path_; }
  const std::string &error() const { return error_; }

 private:
  std::filesystem::path path_;
  std::string error_;
};

// Reads a whole file; false when it cannot be read.
bool readWholeFile(const std::filesystem::path &path, std::string &bytes);
// Writes a whole file (replacing it); false on any error.
bool writeWholeFile(const std::filesystem::path &path, std::string_view bytes);

}  // namespace kwb
