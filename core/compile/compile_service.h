#pragma once
// The client of the compile service: device-only sources (candidates, references, starters, the
// editor's text) are compiled by NVRTC in long-lived kwb-worker --compile-service processes,
// each inside the sandbox (core/sandbox/sandbox.h), with its memory, CPU time per compile
// and output limited, and, once NVRTC is loaded, nothing but the toolkit's headers readable
// (Landlock). A process is started on first use and kept, so NVRTC is loaded once per process;
// compiles on several threads use several processes (up to maxProcesses). A process that hits a
// limit or dies is replaced on the next compile, and the compile that killed it fails with the
// limit named. Where no sandbox works here the processes run as plain children, still limited,
// and every result says so (CompileResult::sandbox, sandboxReason).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/compile/compile_limits.h"
#include "core/compile/compile_outcome.h"
#include "core/sandbox/sandbox.h"

namespace kwb {

namespace compile_wire {
struct Request;
}


struct CompileServiceOptions {
  std::filesystem::path worker;  // empty: workerExecutable()
  SandboxPreference sandbox = SandboxPreference::Auto;
  CompileLimits limits = compileLimitsFromEnvironment();
  int maxProcesses = 0;  // 0: the machine's hardware threads, between 2 and 8
  std::chrono::milliseconds startTimeout{60000};
};

// What the last process started said of itself.
struct CompileServiceState {
  bool started = false;
  std::string sandbox;        // "bwrap", "unshare", "none"
  std::string sandboxReason;  // why "none"
  std::string fence;          // "Landlock (ABI 6): only ... readable", or "none: why"
  std::string problem;        // why no process could be started (then every compile fails saying it)
};

// What the service processes did for the compiles answered so far, as they measured it
// themselves (getrusage around each compile): with the round trips the caller sees, this tells
// the cost of the process boundary apart from the cost of compiling in a limited process.
struct CompileServiceWork {
  std::uint64_t compiles = 0;   // replies that carried figures
  double wallSeconds = 0;       // inside the service, from reading a request to its reply
  double cpuSeconds = 0;        // user + system, every thread of the process
  std::uint64_t minorFaults = 0, majorFaults = 0;
  std::uint64_t voluntarySwitches = 0, involuntarySwitches = 0;
};

class CompileService {
 public:
  explicit CompileService(CompileServiceOptions options = {});
  ~CompileService();  // ends the processes
  CompileService(const CompileService &) = delete;
  CompileService &operator=(const CompileService &) = delete;

  // The service of this process (options from the environment), made on first use.
  static CompileService &shared();

  // As NvrtcCompiler::compile and ptx, in a service process. Thread-safe. The result's
  // sandboxed/sandbox/sandboxReason say where it ran.
  CompileOutcome compile(const CompileRequest &request, std::chrono::milliseconds timeLimit);
  TextOutput ptx(const CompileRequest &request, std::chrono::milliseconds timeLimit);

  CompileServiceState state() const;
  CompileServiceWork work() const;  // summed over every reply so far
  const CompileServiceOptions &options() const { return options_; }
  int runningProcesses() const;  // started and not ended (idle or busy)

 private:
  struct Process;
  class Spawner;
  struct Reply;  // compile_service.cpp
  std::unique_ptr<Process> acquire(std::string &problem);
  void release(std::unique_ptr<Process> process);
  std::unique_ptr<Process> start(std::string &problem);
  Reply call(compile_wire::Request &request);  // numbers it, sends it, waits for its reply

  CompileServiceOptions options_;
  std::unique_ptr<Spawner> spawner_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<Process>> idle_;
  int running_ = 0;
  std::uint64_t nextId_ = 1;
  CompileServiceState state_;
  CompileServiceWork work_;
};

}  // namespace kwb
