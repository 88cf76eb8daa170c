#include "core/compile/nvrtc_compiler.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "core/compile/arch_limits.h"
#include "core/compile/diagnostics.h"
#include "core/compile/elf_symbols.h"
#include "core/compile/resource_report.h"
#include "core/compile/toolkit_programs.h"
#include "core/gpu/cuda_libraries.h"

namespace kwb {

namespace fs = std::filesystem;

namespace {

constexpr int kNvrtcSuccess = 0;
constexpr int kNvrtcCancelled = 16;  // NVRTC_ERROR_CANCELLED

using Clock = std::chrono::steady_clock;

// Asked by NVRTC, from inside nvrtcCompileProgram, whether to go on.
struct Deadline {
  Clock::time_point at;
  std::atomic<bool> passed{false};
};

int deadlineCallback(void *payload, void *) {
  auto *deadline = static_cast<Deadline *>(payload);
  if (deadline->passed.load() || Clock::now() >= deadline->at) {
    deadline->passed = true;  // once cancelled, stay cancelled (NVRTC requires it)
    return 1;
  }
  return 0;
}

// The 1-based line of the first __global__ in the source, to point a missing-kernel error at.
int firstKernelLine(const std::string &source) {
  const auto at = source.find("__global__");
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

}  // namespace

std::string missingKernelMessage(const std::vector<std::string> &expected, const std::vector<std::string> &defined) {
  std::string message;
  for (const auto &want : expected) {
    if (std::find(defined.begin(), defined.end(), want) != defined.end()) continue;
    if (!message.empty()) message += "\n";
    std::string list;
    std::string cppMatch;
    for (const auto &name : defined) {
      const std::string plain = demangledName(name);
      list += (list.empty() ? "" : ", ") + (plain.empty() ? name : plain + " (C++ linkage)");
      if (!plain.empty() && unqualifiedName(plain) == want) cppMatch = plain;
    }
    if (!cppMatch.empty()) {
      message += "kernel '" + want + "' has C++ linkage (" + cppMatch +
                 "), so it cannot be found by name; declare it extern \"C\" __global__";
    } else if (defined.empty()) {
      message += "kernel '" + want + "' not found; the source defines no kernel (an extern \"C\" __global__ function)";
    } else {
      message += "kernel '" + want + "' not found; the source defines: " + list;
    }
  }
  return message;
}

const NvrtcCompiler &NvrtcCompiler::shared() {
  static const NvrtcCompiler *instance = new NvrtcCompiler();  // never destroyed: may be in use at exit
  return *instance;
}

NvrtcCompiler::NvrtcCompiler() {
  if (!openNvrtc(library_)) {
    problem_ = "NVRTC " + library_.error() + "; install the CUDA toolkit or set CUDA_HOME";
    return;
  }
  library_.keepLoaded();
  int (*versionFn)(int *, int *) = nullptr;
  int (*archCount)(int *) = nullptr;
  int (*archList)(int *) = nullptr;
  if (!library_.resolve(versionFn, "nvrtcVersion") || !library_.resolve(errorString_, "nvrtcGetErrorString") ||
      !library_.resolve(createProgram_, "nvrtcCreateProgram") ||
      !library_.resolve(destroyProgram_, "nvrtcDestroyProgram") ||
      !library_.resolve(compileProgram_, "nvrtcCompileProgram") ||
      !library_.resolve(logSize_, "nvrtcGetProgramLogSize") || !library_.resolve(log_, "nvrtcGetProgramLog") ||
      !library_.resolve(cubinSize_, "nvrtcGetCUBINSize") || !library_.resolve(cubin_, "nvrtcGetCUBIN") ||
      !library_.resolve(ptxSize_, "nvrtcGetPTXSize") || !library_.resolve(ptx_, "nvrtcGetPTX")) {
    problem_ = library_.path() + " lacks an NVRTC entry point (older than CUDA 11.1?)";
    return;
  }
  library_.resolve(setFlowCallback_, "nvrtcSetFlowCallback");
  int major = 0, minor = 0;
  if (versionFn(&major, &minor) != kNvrtcSuccess) {
    problem_ = library_.path() + ": nvrtcVersion failed";
    return;
  }
  version_ = std::to_string(major) + "." + std::to_string(minor);
  int count = 0;
  if (library_.resolve(archCount, "nvrtcGetNumSupportedArchs") && library_.resolve(archList, "nvrtcGetSupportedArchs") &&
      archCount(&count) == kNvrtcSuccess && count > 0) {
    architectures_.resize(static_cast<std::size_t>(count));
    if (archList(architectures_.data()) != kNvrtcSuccess) architectures_.clear();
  }

  // The file the loader actually opened, for the cache identity and to find the headers.
  Dl_info info{};
  libraryPath_ = library_.path();
  if (dladdr(reinterpret_cast<void *>(compileProgram_), &info) != 0 && info.dli_fname) libraryPath_ = info.dli_fname;
  std::error_code ec;
  fs::path real = fs::canonical(libraryPath_, ec);
  if (ec) real = libraryPath_;
  const auto size = fs::file_size(real, ec);
  identity_ = "nvrtc " + version_ + " " + real.string() + " " + std::to_string(ec ? 0 : size);

  std::vector<fs::path> includeCandidates;
  if (real.has_parent_path()) {
    includeCandidates.push_back(real.parent_path().parent_path() / "include");
    includeCandidates.push_back(fs::path(libraryPath_).parent_path().parent_path() / "include");
  }
  for (const auto &home : cudaHomeCandidates()) includeCandidates.push_back(home / "include");
  for (const auto &dir : includeCandidates)
    if (fs::exists(dir / "cuda_fp16.h", ec)) {
      includeDirectory_ = fs::weakly_canonical(dir, ec).string();
      break;
    }
  available_ = true;
}

std::vector<std::string> NvrtcCompiler::supportedArchitectures() const {
  std::vector<std::string> out;
  for (int a : architectures_) out.push_back("sm_" + std::to_string(a));
  return out;
}

std::string NvrtcCompiler::checkArchitecture(const std::string &arch) const {
  std::size_t digits = 0;
  const std::string prefix = arch.rfind("compute_", 0) == 0 ? "compute_" : "sm_";
  if (arch.rfind(prefix, 0) == 0)
    while (prefix.size() + digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[prefix.size() + digits])))
      ++digits;
  const std::size_t end = prefix.size() + digits;
  const bool wellFormed = digits >= 2 && (end == arch.size() || (end + 1 == arch.size() && std::isalpha(static_cast<unsigned char>(arch[end]))));
  if (!wellFormed) return "'" + arch + "' is not a GPU architecture: expected sm_XY, e.g. sm_90";
  if (architectures_.empty()) return {};
  const int number = std::atoi(arch.c_str() + prefix.size());
  if (std::find(architectures_.begin(), architectures_.end(), number) != architectures_.end()) return {};
  std::string list;
  for (const auto &a : supportedArchitectures()) list += (list.empty() ? "" : ", ") + a;
  return "NVRTC " + version_ + " cannot compile for " + arch + "; it supports " + list;
}

std::vector<std::string> NvrtcCompiler::options(const CompileRequest &request, Target target) const {
  std::string arch = archSpecificTarget(request.arch);
  if (target == Target::Ptx && arch.rfind("sm_", 0) == 0) arch = "compute_" + arch.substr(3);
  std::vector<std::string> out{"--gpu-architecture=" + arch, "-std=c++17"};
  if (request.lineInfo) out.push_back("-lineinfo");
  if (!includeDirectory_.empty()) out.push_back("--include-path=" + includeDirectory_);
  for (const auto &[name, value] : request.defines) out.push_back("-D" + name + (value.empty() ? "" : "=" + value));
  if (target == Target::Cubin) out.push_back("--ptxas-options=-v");
  out.insert(out.end(), request.extraOptions.begin(), request.extraOptions.end());
  return out;
}

NvrtcCompiler::RunOutput NvrtcCompiler::run(const CompileRequest &request, Target target,
                                            std::chrono::milliseconds timeLimit) const {
  RunOutput out;
  NvrtcProgramHandle program = nullptr;
  out.status = createProgram_(&program, request.source.c_str(), request.sourceName.c_str(), 0, nullptr, nullptr);
  if (out.status != kNvrtcSuccess) {
    out.log = std::string("nvrtcCreateProgram failed: ") + errorString_(out.status);
    return out;
  }
  Deadline deadline;
  deadline.at = Clock::now() + timeLimit;
  if (setFlowCallback_) setFlowCallback_(program, deadlineCallback, &deadline);

  const auto opts = options(request, target);
  std::vector<const char *> argv;
  for (const auto &o : opts) argv.push_back(o.c_str());
  out.status = compileProgram_(program, static_cast<int>(argv.size()), argv.data());
  out.timedOut = out.status == kNvrtcCancelled && deadline.passed.load();

  std::size_t size = 0;
  if (logSize_(program, &size) == kNvrtcSuccess && size > 1) {
    out.log.resize(size);
    log_(program, out.log.data());
    out.log.resize(size - 1);  // the terminating NUL
  }
  if (out.status == kNvrtcSuccess) {
    auto getSize = target == Target::Cubin ? cubinSize_ : ptxSize_;
    auto get = target == Target::Cubin ? cubin_ : ptx_;
    size = 0;
    if (getSize(program, &size) == kNvrtcSuccess && size > 0) {
      out.binary.resize(size);
      if (get(program, out.binary.data()) != kNvrtcSuccess) out.binary.clear();
      if (target == Target::Ptx && !out.binary.empty() && out.binary.back() == '\0') out.binary.pop_back();
    }
  }
  destroyProgram_(&program);

  out.diagnostics = parseDiagnostics(
      out.log, DiagnosticContext{.compiledName = request.sourceName, .sourceName = request.sourceName, .source = request.source});
  if (out.timedOut) {
    out.diagnostics.push_back(Diagnostic{.file = request.sourceName,
                                         .severity = Diagnostic::Severity::Error,
                                         .message = "NVRTC compile stopped after " + formatLimit(timeLimit) + " (the time limit)"});
  } else if (out.status != kNvrtcSuccess && !hasErrors(out.diagnostics)) {
    std::string last = out.log;
    while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
    if (const auto nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
    out.diagnostics.push_back(Diagnostic{.file = request.sourceName,
                                         .severity = Diagnostic::Severity::Error,
                                         .message = std::string("NVRTC failed (") + errorString_(out.status) + ")" +
                                                    (last.empty() ? "" : ": " + last)});
  }
  return out;
}

namespace {

// What stops a source before NVRTC sees it: bytes it cannot take, then includes it must not follow.
std::vector<Diagnostic> sourceProblems(const CompileRequest &request) {
  auto problems = byteProblems(request.source, request.sourceName);
  return problems.empty() ? includeProblems(request.source, request.sourceName) : problems;
}

}  // namespace

CompileOutcome NvrtcCompiler::compile(const CompileRequest &request, std::chrono::milliseconds timeLimit) const {
  if (!available_) return compileFailure(request, problem_);
  if (auto problem = checkArchitecture(request.arch); !problem.empty()) return compileFailure(request, problem);
  if (auto problems = sourceProblems(request); !problems.empty()) {
    CompileOutcome out;
    out.result.form = SourceForm::DeviceOnly;
    out.result.arch = request.arch;
    out.result.toolkitVersion = version_;
    out.result.diagnostics = std::move(problems);
    out.cacheable = true;  // located in the source
    return out;
  }

  RunOutput run = this->run(request, Target::Cubin, timeLimit);
  CompileOutcome out;
  CompileResult &r = out.result;
  r.form = SourceForm::DeviceOnly;
  r.arch = request.arch;
  r.toolkitVersion = version_;
  r.log = std::move(run.log);
  r.diagnostics = std::move(run.diagnostics);
  out.cacheable = !run.timedOut;
  if (run.status != kNvrtcSuccess) return out;

  r.image = std::move(run.binary);
  r.kernels = parseResourceReport(r.log, request.arch);
  std::string elfError;
  const auto elf = readElf(r.image, &elfError);
  if (!elf) {
    r.diagnostics.push_back(Diagnostic{.file = request.sourceName,
                                       .severity = Diagnostic::Severity::Error,
                                       .message = "NVRTC produced a CUBIN that cannot be read: " + elfError});
    return out;
  }
  addCubinFigures(r.kernels, *elf);
  if (auto missing = missingKernelMessage(request.expectedKernels, cubinKernelNames(*elf)); !missing.empty())
    r.diagnostics.push_back(Diagnostic{.file = request.sourceName,
                                       .line = firstKernelLine(request.source),
                                       .severity = Diagnostic::Severity::Error,
                                       .message = std::move(missing)});
  r.ok = !hasErrors(r.diagnostics);
  return out;
}

TextOutput NvrtcCompiler::ptx(const CompileRequest &request, std::chrono::milliseconds timeLimit) const {
  TextOutput out;
  if (!available_) {
    out.error = problem_;
    return out;
  }
  if (auto problem = checkArchitecture(request.arch); !problem.empty()) {
    out.error = problem;
    return out;
  }
  if (auto problems = sourceProblems(request); !problems.empty()) {
    out.diagnostics = std::move(problems);
    out.error = describeFailure("the source does not compile to PTX", out.diagnostics);
    return out;
  }
  RunOutput run = this->run(request, Target::Ptx, timeLimit);
  out.ok = run.status == kNvrtcSuccess && !run.binary.empty();
  out.text = std::move(run.binary);
  out.log = std::move(run.log);
  out.diagnostics = std::move(run.diagnostics);
  if (!out.ok) out.error = describeFailure("the source does not compile to PTX", out.diagnostics);
  return out;
}

}  // namespace kwb
