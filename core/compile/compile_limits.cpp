#include "core/compile/compile_limits.h"

#include <cstdlib>

namespace kwb {

namespace {

std::uint64_t positiveFromEnvironment(const char *name, std::uint64_t fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text) return fallback;
  char *end = nullptr;
  const unsigned long long n = std::strtoull(text, &end, 10);
  return (*end || *text == '-' || n == 0 || n > (1ull << 30)) ? fallback : n;
}

}  // namespace

CompileLimits compileLimitsFromEnvironment() {
  CompileLimits limits;
  limits.memoryBytes = positiveFromEnvironment("KWB_COMPILE_MEMORY_MB", limits.memoryBytes >> 20) << 20;
  limits.cpuSeconds = positiveFromEnvironment("KWB_COMPILE_CPU_S", limits.cpuSeconds);
  limits.outputBytes = positiveFromEnvironment("KWB_COMPILE_OUTPUT_MB", limits.outputBytes >> 20) << 20;
  return limits;
}

std::string describeCompileLimits(const CompileLimits &limits) {
  return std::to_string(limits.memoryBytes >> 20) + " MiB of memory, " + std::to_string(limits.cpuSeconds) +
         " s of CPU time and " + std::to_string(limits.outputBytes >> 20) +
         " MiB of output per compile (KWB_COMPILE_MEMORY_MB, KWB_COMPILE_CPU_S, KWB_COMPILE_OUTPUT_MB)";
}

}  // namespace kwb
