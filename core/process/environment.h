#pragma once
// The environment handed to child processes that run or compile untrusted code (LLM-written
// kernels): an allow-list, so API keys, tokens and session variables never reach them.
#include <string>
#include <utility>
#include <vector>

namespace kwb {

// KEY=VALUE strings: the caller's PATH, LD_LIBRARY_PATH, HOME, USER, LOGNAME, LANG, LANGUAGE,
// TZ, TERM, sanitizer options and every LC_*, CUDA_*, NVIDIA_*, KWB_* and __NV_* variable;
// then `overrides` on top. Sorted by key.
std::vector<std::string> allowListedEnvironment(const std::vector<std::pair<std::string, std::string>> &overrides);

}  // namespace kwb
