#include "core/sandbox/worker_sandbox.h"

#include "core/process/environment.h"

namespace kwb::worker {

namespace fs = std::filesystem;

std::vector<std::string> workerEnvironment(const fs::path &privateDir,
                                           const std::vector<std::pair<std::string, std::string>> &extra) {
  std::vector<std::pair<std::string, std::string>> overrides;
  if (!privateDir.empty()) {
    overrides.emplace_back("TMPDIR", privateDir.string());
    overrides.emplace_back("CUDA_CACHE_PATH", (privateDir / "cuda-cache").string());
  }
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return allowListedEnvironment(overrides);
}

}  // namespace kwb::worker
