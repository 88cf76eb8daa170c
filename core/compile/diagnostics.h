#pragma once
// Turning compiler output into Diagnostic records. Recognised, whoever wrote them:
//  - the CUDA front end (NVRTC and nvcc):  name.cu(12): error: identifier "x" is undefined
//    with `warning #177-D:`, `remark`, `catastrophic error`; the quoted source line and the
//    caret under it give the column; "detected during instantiation ... at line N" becomes a
//    note; further indented lines continue the message;
//  - ptxas, nvlink, nvcc and NVRTC's own lines:  ptxas error   : ...   nvrtc: error: ...
//    (`ptxas info` lines are the resource report, see resource_report.h, not diagnostics);
//  - the host compiler (gcc):  file.cu:12:5: error: ...  [-Wcode]   and the assembler's
//    file.cu:4: Error: ...;  linker lines (ld, collect2, undefined references).
// Diagnostics about the compiled file name it sourceName; others keep the path printed.
#include <string>
#include <string_view>
#include <vector>

#include "core/compile/compile_types.h"

namespace kwb {

struct DiagnosticContext {
  std::string compiledName;  // the file name the compiler was given (its base name is matched)
  std::string sourceName;    // what Diagnostic::file says for that file and for tool messages
  std::string_view source;   // the text compiled: a caret's column is checked against it
};

std::vector<Diagnostic> parseDiagnostics(std::string_view output, const DiagnosticContext &context);

bool hasErrors(const std::vector<Diagnostic> &diagnostics);

std::string_view severityName(Diagnostic::Severity severity);

// "candidate.cu:12:5: error: message", as a compiler would print it.
std::string formatDiagnostic(const Diagnostic &diagnostic);

// "<what>: <first error, formatted>", or just <what> when no error diagnostic is present.
std::string describeFailure(const std::string &what, const std::vector<Diagnostic> &diagnostics);

}  // namespace kwb
