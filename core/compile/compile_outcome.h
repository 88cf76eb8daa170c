#pragma once
// What a compiler back end (NVRTC, nvcc) hands the front door: the result, and whether it may be
// cached. A compile the compiler finished is cached, failed or not (the same source fails the
// same way); one cut short (time limit) or never run (toolkit missing) is not.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "core/compile/compile_types.h"

namespace kwb {

struct CompileOutcome {
  CompileResult result;
  bool cacheable = true;
};

// Text made from a request or an image (PTX, SASS), or why there is none: `error` says it in one
// line; `log` and `diagnostics` hold the compiler's words where a compile failed.
struct TextOutput {
  bool ok = false;
  std::string text;
  std::string error;
  std::string log;
  std::vector<Diagnostic> diagnostics;
};

// The result of a compile that did not get to run the compiler: one Error diagnostic.
inline CompileOutcome compileFailure(const CompileRequest &request, std::string message, bool cacheable = false) {
  CompileOutcome out;
  out.cacheable = cacheable;
  out.result.form = request.form;
  out.result.arch = request.arch;
  out.result.log = message;
  out.result.diagnostics.push_back(
      Diagnostic{.file = request.sourceName, .severity = Diagnostic::Severity::Error, .message = std::move(message)});
  return out;
}

// A time limit for messages: "120 s", "0.001 s".
inline std::string formatLimit(std::chrono::milliseconds limit) {
  const auto ms = limit.count();
  std::string text = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    std::string fraction = std::to_string(1000 + ms % 1000).substr(1);
    while (fraction.back() == '0') fraction.pop_back();
    text += "." + fraction;
  }
  return text + " s";
}

}  // namespace kwb
