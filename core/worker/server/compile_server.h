#pragma once
// kwb-worker --compile-service: the long-lived, sandboxed process that compiles device-only
// sources with NVRTC for a client (core/compile/compile_service.h), so that text an LLM wrote is
// never compiled in the workbench's own process. It limits itself (private memory, CPU time per
// compile, file size, no core dumps), loads NVRTC and compiles once to warm it, then raises a
// Landlock fence that leaves only the toolkit's headers and its private folder readable, and
// answers requests in the wire format of core/compile/compile_wire.h until its input ends.
#include <cstdint>
#include <string>

namespace kwb::worker {

struct CompileServerConfig {
  std::string sandbox = "none";  // as the worker reports it: "bwrap", "unshare", "none"
  std::string sandboxReason;
  std::string privateDir;
  std::uint64_t memoryBytes = 0;  // RLIMIT_DATA; 0: none
  std::uint64_t cpuSeconds = 0;   // CPU time per compile (RLIMIT_CPU, moved on before each); 0: none
  std::uint64_t outputBytes = 0;  // the largest reply and file; 0: none
  bool noFence = false;           // raise no Landlock fence (--no-fence, for debugging)
};

// Serves until `in` ends; returns the process's exit status.
int runCompileServer(int in, int out, const CompileServerConfig &config);

}  // namespace kwb::worker
