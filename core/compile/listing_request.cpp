#include "core/compile/listing_request.h"

#include "core/compile/diagnostics.h"
#include "core/compile/disassembly.h"
#include "core/task/task.h"

namespace kwb {

namespace {

std::string firstError(const std::vector<Diagnostic> &diagnostics, const std::string &log) {
  for (const auto &d : diagnostics)
    if (d.severity == Diagnostic::Severity::Error) return formatDiagnostic(d);
  return log.empty() ? std::string("the compile failed") : log;
}

}  // namespace

ListingResult candidateListing(const Compiler &compiler, const Task &task, const std::string &source,
                               const std::string &sourceName, const std::string &arch, ListingKind kind,
                               const std::map<std::string, std::int64_t> &tunables) {
  ListingResult out;
  auto request = requestFor(task, source, sourceName, arch, effectiveTunables(task, tunables));
  request.lineInfo = true;
  if (kind == ListingKind::Ptx) {
    const auto ptx = ptxText(request);
    if (!ptx.ok) {
      out.error = ptx.diagnostics.empty() ? ptx.error : firstError(ptx.diagnostics, ptx.log);
      return out;
    }
    out.ok = true;
    out.text = ptx.text;
    out.listing = annotatePtx(out.text);
    return out;
  }
  const auto compiled = compiler.compile(request);
  if (!compiled.ok) {
    out.error = firstError(compiled.diagnostics, compiled.log);
    return out;
  }
  const auto sass = sassText(compiled.image);
  if (!sass.ok) {
    out.error = sass.error;
    return out;
  }
  out.ok = true;
  out.text = sass.text;
  out.listing = annotateSass(out.text);
  return out;
}

}  // namespace kwb
