#pragma once
// The NULL-terminated array of C strings execve() takes (argv, envp), pointing into `strings`,
// which must outlive it. Built before fork(): the child must not allocate.
#include <string>
#include <vector>

namespace kwb {

inline std::vector<char *> execArguments(std::vector<std::string> &strings) {
  std::vector<char *> out;
  out.reserve(strings.size() + 1);
  for (auto &s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace kwb
