#pragma once
// For the test suites: the bundled kernels folder ($KWB_KERNELS_DIR when set, e.g. a bundle run
// on the GPU machine), the test's output folder, reading a file whole, and a file with one
// textual change, a shell script written executable.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace kwb::test {

inline std::filesystem::path kernelsDir() {
  if (const char *env = std::getenv("KWB_KERNELS_DIR"); env && *env) return env;
  return std::filesystem::path(KWB_SOURCE_DIR) / "kernels";
}

inline std::string readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// $KWB_TEST_OUTPUT_DIR when set (a bundle run elsewhere), else the build's folder for the test.
inline std::filesystem::path outputDir() {
  if (const char *env = std::getenv("KWB_TEST_OUTPUT_DIR"); env && *env) return env;
  return KWB_TEST_OUTPUT_DIR;
}

// `file`'s text with `from` replaced by `to` once; throws when `from` is not there (the file
// changed under the test).
inline std::string fileVariant(const std::filesystem::path &file, const std::string &from, const std::string &to) {
  auto text = readFile(file);
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error(file.filename().string() + " changed: '" + from + "' not found");
  return text.replace(at, from.size(), to);
}

// An executable /bin/sh script at `path` running `body`.
inline void writeScript(const std::filesystem::path &path, const std::string &body) {
  {
    std::ofstream out(path);
    out << "#!/bin/sh\n" << body << "\n";
  }
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

}  // namespace kwb::test
