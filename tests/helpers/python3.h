#pragma once
// For the suites that run the Python helpers (resources/python): python3's path on PATH, as the
// workbench finds it (kwb::findPython), or empty when there is none.
#include <string>

#include "core/eval/torch_reference.h"

namespace kwb::test {

inline std::string python3() {
  std::string problem;
  kwb::TorchSettings s;
  s.python = "python3";
  const auto p = kwb::findPython(s, problem);
  return p ? p->string() : std::string();
}

}  // namespace kwb::test
