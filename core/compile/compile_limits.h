#pragma once
// The limits every compile of untrusted code runs under: NVRTC in the compile service
// (core/compile/compile_service.h) and nvcc with what it starts (cicc, ptxas, the host
// compiler), through prlimit (core/compile/nvcc_compiler.cpp).
#include <cstdint>
#include <string>

namespace kwb {

struct CompileLimits {
  // The process's heap and other private writable memory (RLIMIT_DATA). Not its address space
  // (RLIMIT_AS): mapped libraries and reservations count there, and under a 4 GiB one NVRTC
  // compiled ten times slower on the H200 machine (0.15 s against 0.014 s a compile; README).
  std::uint64_t memoryBytes = 4ull << 30;
  std::uint64_t cpuSeconds = 120;            // CPU time per compile and process (RLIMIT_CPU)
  std::uint64_t outputBytes = 256ull << 20;  // the largest output: a reply, a file written (RLIMIT_FSIZE)
};

// The defaults, with KWB_COMPILE_MEMORY_MB, KWB_COMPILE_CPU_S and KWB_COMPILE_OUTPUT_MB on top
// (whole numbers > 0; other values are ignored).
CompileLimits compileLimitsFromEnvironment();

// "4096 MiB of memory, 120 s of CPU time and 256 MiB of output per compile (KWB_COMPILE_MEMORY_MB,
// KWB_COMPILE_CPU_S, KWB_COMPILE_OUTPUT_MB)", for messages about a compile that ran into one.
std::string describeCompileLimits(const CompileLimits &limits);

}  // namespace kwb
