#pragma once
// What a compilation is asked to do and what it gives back. Two source forms are accepted:
//  - device-only: extern "C" __global__ kernels, launched as the task's manifest declares;
//    compiled in process by NVRTC to a CUBIN for one architecture;
//  - host launcher: full CUDA C++ that defines the entry point
//        extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream);
//    where args[i] points at the i-th argument of the task's `args` list (a device pointer for
//    a tensor, a long long for a size), as cuLaunchKernel's kernelParams do; compiled by nvcc
//    into a shared library the worker loads.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kwb {

enum class SourceForm { DeviceOnly, HostLauncher };
// HostLauncher when the source's code (comments and string literals aside) names kwb_launch
// followed by a parameter list, i.e. declares or defines the entry point; DeviceOnly otherwise.
SourceForm detectSourceForm(const std::string &source);

struct Diagnostic;
// A device-only source may include only the toolkit's headers by name. Errors for quoted
// includes, computed includes and names that are absolute or contain '..'. A first message, not
// the defence: the compile service's sandbox and fence keep every other file unreadable
// (core/compile/compile_service.h), spellings this check does not know included.
std::vector<Diagnostic> includeProblems(const std::string &source, const std::string &sourceName);

// Bytes NVRTC cannot take: NUL (the source travels as a C string: the rest would be dropped)
// and 0xFF (read as the end of the file, so a kernel after it "does not exist"). An error at
// the first of each, with its line and column and the fix.
std::vector<Diagnostic> byteProblems(const std::string &source, const std::string &sourceName);

struct CompileRequest {
  std::string source;
  std::string sourceName = "candidate.cu";          // used in diagnostics
  SourceForm form = SourceForm::DeviceOnly;
  std::string arch = "sm_90";                        // sm_XY for any architecture the toolkit knows
  std::vector<std::pair<std::string, std::string>> defines;  // tunables: -DNAME=value
  std::vector<std::string> extraOptions;             // passed through to NVRTC / nvcc
  bool lineInfo = true;                              // -lineinfo, for source correlation
  std::vector<std::string> expectedKernels;          // must exist in the result (device-only form)
};

struct Diagnostic {
  enum class Severity { Error, Warning, Note };
  std::string file;
  int line = 0;     // 1-based; 0 when the compiler gave none
  int column = 0;   // 1-based; 0 when unknown
  Severity severity = Severity::Error;
  std::string message;
  std::string code;  // the compiler's own id where it gives one: "177-D" (EDG), "-Wunused-variable" (gcc)

  bool operator==(const Diagnostic &) const = default;
};

// Per-kernel figures from the compiler's resource report (ptxas -v).
struct KernelResources {
  std::string name;
  int registers = 0;
  int sharedStaticBytes = 0;
  int constantBytes = 0;
  int stackFrameBytes = 0;
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  int barriers = 0;                     // named barriers the kernel uses

  bool operator==(const KernelResources &) const = default;
};

struct CompileResult {
  bool ok = false;
  SourceForm form = SourceForm::DeviceOnly;
  std::string arch;
  std::vector<Diagnostic> diagnostics;
  std::string log;                      // the compiler's full output
  std::string image;                    // CUBIN bytes (device-only) or shared-library bytes (host launcher)
  std::vector<KernelResources> kernels;
  std::string toolkitVersion;           // "13.0"
  std::string cacheKey;
  bool cacheHit = false;
  double seconds = 0.0;                 // wall time of the compile (or cache lookup)
  // Whether the compiler ran inside a sandbox (no network, $HOME, /tmp, /run hidden, only its
  // work directory writable; NVRTC in the compile service, nvcc as a child: compile_service.h,
  // nvcc_compiler.h) for this compile. False when it ran without one (sandboxReason says why) and
  // for cache hits (no compiler ran: sandbox empty). In --json as "sandbox" and "sandbox_reason".
  bool sandboxed = false;
  std::string sandbox;                  // "bwrap", "unshare" or "none"; empty for a cache hit
  std::string sandboxReason;            // why "none"
};

// The wire and storage forms (an evaluation's "compile" object, core/eval/evaluation_result.h).
// A diagnostic also carries its formatted line ("text"); the compile summary carries neither the
// image nor the log.
const char *sourceFormName(SourceForm form);  // "device-only", "host-launcher"
void to_json(nlohmann::json &j, SourceForm form);
void from_json(const nlohmann::json &j, SourceForm &form);
void to_json(nlohmann::json &j, Diagnostic::Severity severity);  // "error", "warning", "note"
void from_json(const nlohmann::json &j, Diagnostic::Severity &severity);
void to_json(nlohmann::json &j, const Diagnostic &v);
void from_json(const nlohmann::json &j, Diagnostic &v);
void to_json(nlohmann::json &j, const KernelResources &v);
void from_json(const nlohmann::json &j, KernelResources &v);
void to_json(nlohmann::json &j, const CompileResult &v);
void from_json(const nlohmann::json &j, CompileResult &v);

}  // namespace kwb
