#pragma once
// The host-launcher path: nvcc, run as a child process with a time limit, compiles full CUDA C++
// that defines kwb_launch into a shared library the worker loads. The library is checked (by
// reading its dynamic symbol table, never by loading it here) to export kwb_launch.
//
// The source is untrusted and the host compiler reads whatever it #includes, so nvcc runs in
// the same kind of sandbox as the worker (core/sandbox/sandbox.h): no network, /tmp, /run,
// /home, $HOME, ... behind empty tmpfs, the file system read-only, only its private work
// directory writable; the toolkit's folder is shown again if it lies under a cover. With
// unshare, `kwb-worker --sandbox-exec` finishes the sandbox and then runs nvcc. Where no sandbox
// can be made, nvcc runs as a plain child process and CompileResult::sandboxed says so. Either
// way nvcc runs under the compile limits (memory, CPU time, file size: compile_limits.h).
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>

#include "core/compile/compile_limits.h"
#include "core/compile/compile_outcome.h"
#include "core/sandbox/sandbox.h"

namespace kwb {

class NvccCompiler {
 public:
  // nvcc at `nvcc`, or where findToolkitProgram("nvcc") finds it when empty.
  explicit NvccCompiler(std::filesystem::path nvcc = {});

  bool available() const { return !nvcc_.empty(); }
  const std::string &problem() const { return problem_; }  // why it is not available
  const std::filesystem::path &path() const { return nvcc_; }

  // Which sandbox nvcc runs in: Auto (the default) takes the best that works here, honouring
  // KWB_SANDBOX; None turns it off. Set before compiling; not thread-safe against compile().
  void setSandbox(SandboxPreference preference) { sandbox_ = preference; }
  // The kwb-worker program used with unshare (`--sandbox-exec`); found by workerExecutable()
  // (core/paths/install_paths.h) when empty.
  void setSandboxHelper(std::filesystem::path helper) { sandboxHelper_ = std::move(helper); }
  // The limits nvcc and every program it starts run under (util-linux's prlimit sets them before
  // nvcc starts; where prlimit is missing the log says nvcc ran without them). From the
  // environment by default. Not thread-safe against compile().
  void setLimits(CompileLimits limits) { limits_ = limits; }
  const CompileLimits &limits() const { return limits_; }

  // From `nvcc --version`, run once on first use (thread-safe): "13.0", and the full build
  // identification with nvcc's path, for cache keys. Empty when nvcc could not be run
  // (versionProblem() says why).
  const std::string &version() const;
  const std::string &identity() const;
  const std::string &versionProblem() const;

  // request.image-to-be: the shared library's bytes. Thread-safe.
  CompileOutcome compile(const CompileRequest &request, std::chrono::milliseconds timeLimit) const;

  // The device code's PTX for request.arch's virtual architecture (nvcc -ptx).
  TextOutput ptx(const CompileRequest &request, std::chrono::milliseconds timeLimit) const;

 private:
  struct Run;
  Run run(const CompileRequest &request, const std::vector<std::string> &modeArguments, const std::string &outputName,
          std::chrono::milliseconds timeLimit) const;
  void probeVersion() const;

  std::filesystem::path nvcc_;
  std::string problem_;
  SandboxPreference sandbox_ = SandboxPreference::Auto;
  std::filesystem::path sandboxHelper_;
  CompileLimits limits_ = compileLimitsFromEnvironment();
  mutable std::once_flag versionOnce_;
  mutable std::string version_;
  mutable std::string identity_;
  mutable std::string versionProblem_;
};

}  // namespace kwb
