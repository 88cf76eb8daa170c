#include "core/compile/toolkit_programs.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace kwb {

namespace fs = std::filesystem;

namespace {

bool isExecutableFile(const fs::path &p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::vector<fs::path> homeCandidatesUnchecked() {
  std::vector<fs::path> homes;
  if (const char *env = std::getenv("CUDA_HOME"); env && *env) homes.emplace_back(env);
  if (const char *env = std::getenv("CUDA_PATH"); env && *env) homes.emplace_back(env);
  if (std::string built = KWB_CUDA_HOME; !built.empty()) homes.emplace_back(built);
  homes.emplace_back("/usr/local/cuda");
  return homes;
}

}  // namespace

std::vector<fs::path> cudaHomeCandidates() {
  std::vector<fs::path> out;
  for (const auto &home : homeCandidatesUnchecked()) {
    std::error_code ec;
    if (!fs::is_directory(home, ec)) continue;
    if (std::find(out.begin(), out.end(), home) == out.end()) out.push_back(home);
  }
  return out;
}

fs::path findToolkitProgram(const std::string &name) {
  for (const auto &home : cudaHomeCandidates())
    if (auto p = home / "bin" / name; isExecutableFile(p)) return p;
  // Where packaging/install-deps.sh puts toolkit utilities the toolkit lacks (nvdisasm).
  if (auto p = fs::path(kKwbCudaToolsDir) / name; isExecutableFile(p)) return p;
  if (const char *path = std::getenv("PATH"); path && *path) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty())
        if (auto p = fs::path(dir) / name; isExecutableFile(p)) return p;
  }
  return {};
}

std::string toolkitProgramSearchPlaces() {
  std::string out = "looked in ";
  std::vector<fs::path> seen;
  for (const auto &home : homeCandidatesUnchecked()) {
    if (std::find(seen.begin(), seen.end(), home) != seen.end()) continue;
    seen.push_back(home);
    out += (home / "bin").string() + ", ";
  }
  return out + kKwbCudaToolsDir + ", and $PATH";
}

}  // namespace kwb
