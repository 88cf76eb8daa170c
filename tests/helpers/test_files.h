#pragma once
// For the test suites: the bundled kernels folder ($KWB_KERNELS_DIR when set, e.g. a bundle run
// on the GPU machine) and reading a file whole.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
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

}  // namespace kwb::test
