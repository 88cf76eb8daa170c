#include "core/compile/compiler.h"

#include <stdexcept>

#include "core/compile/compile_service.h"
#include "core/task/task.h"

namespace kwb {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A failed compile is worth caching only when the compiler pointed into the source: the same
// source then fails the same way. Failures without a source location (a full disk, a missing
// host compiler, NVRTC out of memory) may pass on the next try.
bool failureIsTheSources(const CompileResult &r) {
  for (const auto &d : r.diagnostics)
    if (d.severity == Diagnostic::Severity::Error && d.line > 0) return true;
  return false;
}

}  // namespace

Compiler::Compiler(CompilerOptions options)
    : options_(std::move(options)),
      cache_(options_.cacheDirectory.empty() ? CompileCache::defaultDirectory() : options_.cacheDirectory),
      nvcc_(options_.nvcc) {}

CompileResult Compiler::compile(const CompileRequest &request) const {
  const auto start = Clock::now();
  auto finish = [&](CompileOutcome outcome, const std::string &key) {
    CompileResult r = std::move(outcome.result);
    r.cacheKey = key;
    r.seconds = secondsSince(start);
    if (options_.useCache && outcome.cacheable && !key.empty() && (r.ok || failureIsTheSources(r)))
      cache_.store(key, r);
    return r;
  };

  const bool host = request.form == SourceForm::HostLauncher;
  const NvrtcCompiler &nvrtc = NvrtcCompiler::shared();
  if (host ? !nvcc_.available() : !nvrtc.available())
    return finish(compileFailure(request, host ? nvcc_.problem() : nvrtc.problem()), {});
  const std::string &identity = host ? nvcc_.identity() : nvrtc.identity();
  if (identity.empty()) return finish(compileFailure(request, nvcc_.versionProblem()), {});

  const std::string key = CompileCache::key(request, identity);
  if (options_.useCache)
    if (auto hit = cache_.load(key)) {
      hit->cacheHit = true;
      hit->seconds = secondsSince(start);
      return std::move(*hit);
    }
  // Untrusted text is never compiled in this process: NVRTC runs in the sandboxed compile service.
  return finish(host ? nvcc_.compile(request, options_.timeLimit) : CompileService::shared().compile(request, options_.timeLimit),
                key);
}

CompileRequest requestFor(const Task &task, const std::string &source, const std::string &sourceName,
                          const std::string &arch, const std::map<std::string, std::int64_t> &tunableValues) {
  CompileRequest request;
  request.source = source;
  request.sourceName = sourceName;
  request.form = detectSourceForm(source);
  request.arch = arch;
  for (const auto &[name, value] : effectiveTunables(task, tunableValues))
    request.defines.emplace_back(name, std::to_string(value));
  for (auto &define : paramDefines(task)) request.defines.push_back(std::move(define));
  if (request.form == SourceForm::DeviceOnly) request.expectedKernels = task.candidateKernels();
  return request;
}

}  // namespace kwb
