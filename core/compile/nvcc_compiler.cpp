#include "core/compile/nvcc_compiler.h"

#include <unistd.h>

#include <cctype>
#include <csignal>
#include <string_view>

#include "core/compile/arch_limits.h"
#include "core/process/child_process.h"
#include "core/compile/diagnostics.h"
#include "core/compile/elf_symbols.h"
#include "core/compile/resource_report.h"
#include "core/compile/temporary_directory.h"
#include "core/compile/toolkit_programs.h"
#include "core/paths/install_paths.h"

namespace kwb {

namespace fs = std::filesystem;

namespace {

constexpr const char *kEntryPoint = "kwb_launch";
constexpr const char *kEntrySignature = "extern \"C\" cudaError_t kwb_launch(void *const *args, cudaStream_t stream)";

// The file name nvcc compiles: the request's base name with only safe characters, ending in .cu
// (nvcc picks the language by the extension).
std::string compiledFileName(const std::string &sourceName) {
  std::string base = fs::path(sourceName).filename().string();
  for (char &c : base)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (base.empty() || base.front() == '.' || base.front() == '-') base = "candidate" + base;
  if (base.size() < 3 || base.compare(base.size() - 3, 3, ".cu") != 0) base += ".cu";
  return base;
}

// What kwb-worker --sandbox-exec and bwrap print when the sandbox itself could not be made (before
// nvcc runs, so nothing the source controls can print it first).
bool sandboxSetupFailed(SandboxKind kind, const std::string &output) {
  auto startsWith = [&](std::string_view prefix) { return output.compare(0, prefix.size(), prefix) == 0; };
  if (kind == SandboxKind::Bwrap) return startsWith("bwrap: ");
  return startsWith("kwb-worker --sandbox-exec: ") || startsWith("unshare: ");
}

// The toolkit's root (<root>/bin/nvcc), links resolved: shown again inside the sandbox when it
// lies under a covered folder ($HOME, /tmp, ...).
std::string toolkitRoot(const fs::path &nvcc) {
  std::error_code ec;
  const auto real = fs::canonical(nvcc, ec);
  if (ec) return {};
  return real.parent_path().parent_path().string();
}

std::string lastLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
  if (const auto nl = text.rfind('\n'); nl != std::string::npos) text = text.substr(nl + 1);
  return text;
}

}  // namespace

struct NvccCompiler::Run {
  ChildProcessResult process;
  std::string fileName;  // what nvcc compiled
  std::string output;    // the output file's bytes, when nvcc succeeded
  std::vector<Diagnostic> diagnostics;
  std::string problem;   // set when nvcc could not run or finish: not the source's fault
  bool sandboxed = false;
  std::string sandbox = "none";  // "bwrap", "unshare" or "none"
  std::string sandboxReason;     // why "none"
  std::string limitsNote;        // why no limits applied
};

NvccCompiler::NvccCompiler(fs::path nvcc) {
  if (nvcc.empty()) {
    nvcc_ = findToolkitProgram("nvcc");
    if (nvcc_.empty())
      problem_ = "nvcc not found (" + toolkitProgramSearchPlaces() +
                 "); install the CUDA toolkit or set CUDA_HOME to compile host-launcher sources";
    return;
  }
  std::error_code ec;
  if (fs::is_regular_file(nvcc, ec) && ::access(nvcc.c_str(), X_OK) == 0)
    nvcc_ = std::move(nvcc);
  else
    problem_ = "nvcc not found at " + nvcc.string() + " (no such executable file)";
}

void NvccCompiler::probeVersion() const {
  std::call_once(versionOnce_, [this] {
    if (nvcc_.empty()) {
      versionProblem_ = problem_;
      return;
    }
    const auto result = runChildProcess(ChildProcessRequest{.argv = {nvcc_.string(), "--version"},
                                                            .environment = {{"LC_ALL", "C"}},
                                                            .timeout = std::chrono::seconds(30)});
    // "Cuda compilation tools, release 13.0, V13.0.88"
    const auto release = result.output.find("release ");
    if (!result.succeeded() || release == std::string::npos) {
      versionProblem_ = nvcc_.string() + " --version failed" +
                        (result.startError.empty() ? (result.timedOut ? " (timed out)" : "") : ": " + result.startError);
      return;
    }
    const auto end = result.output.find_first_of(", \n", release + 8);
    version_ = result.output.substr(release + 8, end == std::string::npos ? std::string::npos : end - release - 8);
    const auto tools = result.output.find("Cuda compilation tools");
    identity_ = "nvcc " + nvcc_.string() + " " + result.output.substr(tools == std::string::npos ? 0 : tools);
  });
}

const std::string &NvccCompiler::version() const {
  probeVersion();
  return version_;
}

const std::string &NvccCompiler::identity() const {
  probeVersion();
  return identity_;
}

const std::string &NvccCompiler::versionProblem() const {
  probeVersion();
  return versionProblem_;
}

NvccCompiler::Run NvccCompiler::run(const CompileRequest &request, const std::vector<std::string> &modeArguments,
                                    const std::string &outputName, std::chrono::milliseconds timeLimit) const {
  Run out;
  TemporaryDirectory dir("kwb-nvcc-");
  if (!dir.valid()) {
    out.problem = dir.error();
    return out;
  }
  out.fileName = compiledFileName(request.sourceName);
  const fs::path source = dir.path() / out.fileName;
  const fs::path output = dir.path() / outputName;
  if (!writeWholeFile(source, request.source)) {
    out.problem = "cannot write " + source.string();
    return out;
  }

  std::vector<std::string> argv{nvcc_.string()};
  argv.insert(argv.end(), modeArguments.begin(), modeArguments.end());
  if (request.lineInfo) argv.push_back("-lineinfo");
  argv.push_back("-std=c++17");
  for (const auto &[name, value] : request.defines) argv.push_back("-D" + name + (value.empty() ? "" : "=" + value));
  argv.insert(argv.end(), request.extraOptions.begin(), request.extraOptions.end());
  argv.insert(argv.end(), {"-o", output.string(), source.string()});
  // The limits go on before nvcc starts, so cicc, ptxas and the host compiler inherit them.
  static const auto prlimit = findOnPath("prlimit");
  if (prlimit) {
    argv.insert(argv.begin(), {prlimit->string(), "--data=" + std::to_string(limits_.memoryBytes),
                               "--cpu=" + std::to_string(limits_.cpuSeconds),
                               "--fsize=" + std::to_string(limits_.outputBytes), "--core=0", "--"});
  } else {
    out.limitsNote = "nvcc ran without memory, CPU time and file size limits: util-linux's prlimit was not found";
  }

  // nvcc's own intermediate files go to the private folder too, so a killed run leaves nothing.
  ChildProcessRequest child{.argv = argv,
                            .workingDirectory = dir.path(),
                            .environment = {{"LC_ALL", "C"}, {"TMPDIR", dir.path().string()}},
                            .untrusted = true,
                            .timeout = timeLimit};
  // The same, inside a sandbox whose only writable folder is `dir`.
  const auto support = detectSandbox(sandbox_);
  ChildProcessRequest sandboxed = child;
  const SandboxCommandOptions sandboxOptions{.gpuDevices = false, .extraKeeps = {toolkitRoot(nvcc_)}};
  out.sandboxReason = support.reason;
  switch (support.kind) {
    case SandboxKind::None:
      break;
    case SandboxKind::Bwrap:
      sandboxed.argv = sandboxCommand(support, argv, dir.path(), sandboxOptions);
      out.sandbox = "bwrap";
      break;
    case SandboxKind::Unshare: {
      auto helper = sandboxHelper_;
      if (helper.empty()) helper = workerExecutable().value_or(fs::path());
      if (helper.empty()) {
        out.sandboxReason = "unshare works here, but kwb-worker, which finishes that sandbox (--sandbox-exec), was "
                            "not found (set KWB_WORKER)";
        break;
      }
      std::vector<std::string> inner{helper.string(), "--sandbox-exec", "--private-dir", dir.path().string(), "--"};
      inner.insert(inner.end(), argv.begin(), argv.end());
      sandboxed.argv = sandboxCommand(support, inner, dir.path(), sandboxOptions);
      // The helper covers these itself; $XDG_RUNTIME_DIR is not in its environment.
      const auto covers = sandboxCovers(helper, {}, sandboxOptions.extraKeeps);
      sandboxed.environment.emplace_back(kSandboxCoversVariable, joinPathList(covers.covers));
      sandboxed.environment.emplace_back(kSandboxKeepsVariable, joinPathList(covers.keeps));
      out.sandbox = "unshare";
      break;
    }
  }
  if (out.sandbox != "none") {
    out.process = runChildProcess(sandboxed);
    // The sandbox could not be set up (before nvcc ran): compile without it and say why.
    if (out.process.started && !out.process.timedOut && out.process.exitCode != 0 &&
        sandboxSetupFailed(support.kind, out.process.output)) {
      out.sandboxReason = support.reason + "; but the " + out.sandbox + " sandbox could not be made for nvcc: " +
                          lastLine(out.process.output);
      out.sandbox = "none";
    } else {
      out.sandboxed = true;
      out.sandboxReason.clear();
    }
  }
  if (!out.sandboxed) out.process = runChildProcess(child);
  out.diagnostics = parseDiagnostics(out.process.output, DiagnosticContext{.compiledName = out.fileName,
                                                                          .sourceName = request.sourceName,
                                                                          .source = request.source});
  if (!out.process.started) {
    out.problem = out.process.startError;
  } else if (out.process.timedOut) {
    out.problem = "nvcc timed out after " + formatLimit(timeLimit);
  } else if (out.process.signal != 0) {
    out.problem = "nvcc was killed by signal " + std::to_string(out.process.signal) + "; it runs with " +
                  describeCompileLimits(limits_);
  } else if (out.process.exitCode != 0) {
    if (!hasErrors(out.diagnostics)) {
      // No error in the source: a program nvcc started failed, often at a limit (cicc out of
      // memory, "Signal 24" for CPU time, "File size limit exceeded").
      const std::string last = lastLine(out.process.output);
      out.diagnostics.push_back(Diagnostic{.file = request.sourceName,
                                           .severity = Diagnostic::Severity::Error,
                                           .message = "nvcc failed with exit status " + std::to_string(out.process.exitCode) +
                                                      (last.empty() ? "" : ": " + last) + " (it runs with " +
                                                      describeCompileLimits(limits_) + ")"});
    }
  } else if (!readWholeFile(output, out.output)) {
    out.diagnostics.push_back(Diagnostic{.file = request.sourceName,
                                         .severity = Diagnostic::Severity::Error,
                                         .message = "nvcc succeeded but wrote no " + outputName});
  }
  if (!out.problem.empty())
    out.diagnostics.push_back(
        Diagnostic{.file = request.sourceName, .severity = Diagnostic::Severity::Error, .message = out.problem});
  return out;
}

CompileOutcome NvccCompiler::compile(const CompileRequest &request, std::chrono::milliseconds timeLimit) const {
  if (!available()) return compileFailure(request, problem_);
  if (version().empty()) return compileFailure(request, versionProblem());

  // -arch=sm_90a would also make compute_90 PTX, where wgmma does not assemble: name the pair.
  const std::string target = archSpecificTarget(request.arch);
  const bool suffixed = target.rfind("sm_", 0) == 0 && !std::isdigit(static_cast<unsigned char>(target.back()));
  const std::string archFlag =
      suffixed ? "-gencode=arch=compute_" + target.substr(3) + ",code=" + target : "-arch=" + target;
  Run run = this->run(request, {"-shared", "-Xcompiler", "-fPIC", archFlag, "-Xptxas", "-v"},
                      "candidate.so", timeLimit);
  CompileOutcome out;
  CompileResult &r = out.result;
  r.form = SourceForm::HostLauncher;
  r.arch = request.arch;
  r.toolkitVersion = version();
  r.log = std::move(run.process.output);
  if (run.process.outputTruncated) r.log += "\n[output truncated]\n";
  if (!run.limitsNote.empty()) r.log = "[" + run.limitsNote + "]\n" + r.log;
  r.diagnostics = std::move(run.diagnostics);
  r.kernels = parseResourceReport(r.log, request.arch);
  r.sandboxed = run.sandboxed;
  r.sandbox = run.sandbox;
  r.sandboxReason = run.sandboxReason;
  out.cacheable = run.problem.empty();
  if (hasErrors(r.diagnostics)) return out;

  r.image = std::move(run.output);
  std::string elfError;
  const auto elf = readElf(r.image, &elfError);
  std::string problem;
  if (!elf) {
    problem = "nvcc produced a library that cannot be read: " + elfError;
  } else if (!exportsFunction(*elf, kEntryPoint)) {
    std::string cppEntry;
    for (const auto &s : elf->dynamicSymbols)
      if (s.defined)
        if (auto plain = demangledName(s.name); !plain.empty() && unqualifiedName(plain) == kEntryPoint) cppEntry = plain;
    problem = cppEntry.empty()
                  ? std::string("the module does not export kwb_launch; define ") + kEntrySignature
                  : "kwb_launch has C++ linkage (" + cppEntry + "), so the worker cannot find it; declare it " +
                        kEntrySignature;
  }
  if (!problem.empty())
    r.diagnostics.push_back(
        Diagnostic{.file = request.sourceName, .severity = Diagnostic::Severity::Error, .message = std::move(problem)});
  r.ok = !hasErrors(r.diagnostics);
  return out;
}

TextOutput NvccCompiler::ptx(const CompileRequest &request, std::chrono::milliseconds timeLimit) const {
  TextOutput out;
  if (!available()) {
    out.error = problem_;
    return out;
  }
  std::string arch = archSpecificTarget(request.arch);
  if (arch.rfind("sm_", 0) == 0) arch = "compute_" + arch.substr(3);
  Run run = this->run(request, {"-ptx", "-arch=" + arch}, "candidate.ptx", timeLimit);
  out.log = std::move(run.process.output);
  out.diagnostics = std::move(run.diagnostics);
  out.ok = !hasErrors(out.diagnostics) && !run.output.empty();
  out.text = std::move(run.output);
  if (!out.ok) out.error = describeFailure("the source does not compile to PTX", out.diagnostics);
  return out;
}

}  // namespace kwb
