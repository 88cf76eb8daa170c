#pragma once
// The device-only path: NVRTC, loaded at run time, compiles extern "C" __global__ kernels in
// process to a CUBIN for one architecture, with ptxas's resource report, and checks that the
// kernels the task launches are there. NVRTC is thread-safe across programs, so compile() may
// run on several threads at once.
#include <chrono>
#include <string>
#include <vector>

#include "core/compile/compile_outcome.h"
#include "core/gpu/dynamic_library.h"

namespace kwb {

using NvrtcProgramHandle = struct _nvrtcProgram *;

class NvrtcCompiler {
 public:
  // The process's NVRTC, opened on first use (thread-safe); never unloaded.
  static const NvrtcCompiler &shared();

  NvrtcCompiler(const NvrtcCompiler &) = delete;
  NvrtcCompiler &operator=(const NvrtcCompiler &) = delete;

  bool available() const { return available_; }
  const std::string &problem() const { return problem_; }    // why it is not available
  const std::string &version() const { return version_; }    // "13.0"
  const std::string &identity() const { return identity_; }  // version and library file, for cache keys
  const std::string &libraryPath() const { return libraryPath_; }
  const std::string &includeDirectory() const { return includeDirectory_; }  // empty where not found
  std::vector<std::string> supportedArchitectures() const;   // "sm_75", "sm_80", ...

  // A CUBIN for request.arch (sm_XY), or the failure with its diagnostics. timeLimit cancels a
  // compile that runs longer (NVRTC's flow callback).
  CompileOutcome compile(const CompileRequest &request, std::chrono::milliseconds timeLimit) const;

  // The PTX for request.arch's virtual architecture (compute_XY); the log and diagnostics on failure.
  TextOutput ptx(const CompileRequest &request, std::chrono::milliseconds timeLimit) const;

 private:
  NvrtcCompiler();

  enum class Target { Cubin, Ptx };
  struct RunOutput {
    int status = 0;
    bool timedOut = false;
    std::string log;
    std::string binary;
    std::vector<Diagnostic> diagnostics;
  };
  RunOutput run(const CompileRequest &request, Target target, std::chrono::milliseconds timeLimit) const;
  std::vector<std::string> options(const CompileRequest &request, Target target) const;
  std::string checkArchitecture(const std::string &arch) const;  // empty when NVRTC takes it

  DynamicLibrary library_;
  bool available_ = false;
  std::string problem_;
  std::string version_;
  std::string identity_;
  std::string libraryPath_;
  std::string includeDirectory_;  // the toolkit's headers (cuda_fp16.h, ...) where found
  std::vector<int> architectures_;

  const char *(*errorString_)(int) = nullptr;
  int (*createProgram_)(NvrtcProgramHandle *, const char *, const char *, int, const char *const *,
                        const char *const *) = nullptr;
  int (*destroyProgram_)(NvrtcProgramHandle *) = nullptr;
  int (*compileProgram_)(NvrtcProgramHandle, int, const char *const *) = nullptr;
  int (*logSize_)(NvrtcProgramHandle, std::size_t *) = nullptr;
  int (*log_)(NvrtcProgramHandle, char *) = nullptr;
  int (*cubinSize_)(NvrtcProgramHandle, std::size_t *) = nullptr;
  int (*cubin_)(NvrtcProgramHandle, char *) = nullptr;
  int (*ptxSize_)(NvrtcProgramHandle, std::size_t *) = nullptr;
  int (*ptx_)(NvrtcProgramHandle, char *) = nullptr;
  int (*setFlowCallback_)(NvrtcProgramHandle, int (*)(void *, void *), void *) = nullptr;  // NVRTC 12.8+
};

// "kernel 'softmax' not found; the source defines: softmax_v2" (empty when every expected
// kernel is among `defined`). Kernels with C++ linkage are named with the fix.
std::string missingKernelMessage(const std::vector<std::string> &expected, const std::vector<std::string> &defined);

}  // namespace kwb
