#include "core/process/environment.h"

#include <algorithm>
#include <iterator>
#include <map>

extern char **environ;

namespace kwb {

std::vector<std::string> allowListedEnvironment(const std::vector<std::pair<std::string, std::string>> &overrides) {
  static const char *const exact[] = {"PATH", "LD_LIBRARY_PATH", "HOME", "USER", "LOGNAME", "LANG",
                                      "LANGUAGE", "TZ", "TERM", "ASAN_OPTIONS", "UBSAN_OPTIONS"};
  static const char *const prefixes[] = {"LC_", "CUDA_", "NVIDIA_", "KWB_", "__NV_"};
  std::map<std::string, std::string> vars;
  for (char **e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = entry.substr(0, eq);
    const bool keep =
        std::any_of(std::begin(exact), std::end(exact), [&](const char *k) { return key == k; }) ||
        std::any_of(std::begin(prefixes), std::end(prefixes), [&](const char *p) { return key.rfind(p, 0) == 0; });
    if (keep) vars.emplace(key, entry.substr(eq + 1));
  }
  for (const auto &[key, value] : overrides) vars[key] = value;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto &[key, value] : vars) out.push_back(key + "=" + value);
  return out;
}

}  // namespace kwb
