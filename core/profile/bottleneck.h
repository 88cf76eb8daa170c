#pragma once
// What limits a profiled kernel, in a few lines an LLM (or a person) can act on: the agent's
// prompts carry it beside the timing (issue 16, "the profiler's bottleneck summary"). Read from
// the metrics of the default or detailed set (metric_sets.h): DRAM and SM throughput as a share
// of peak, achieved occupancy, the L1 and L2 hit rates and, with the detailed set, the warp-stall
// reasons that hold the most warps. Pure: no GPU, no CUPTI.
#include <string>

#include "core/profile/profiler.h"

namespace kwb::profile {

enum class Limiter {
  Unknown,   // not profiled, or neither throughput figure measured
  Memory,    // DRAM throughput at or above kBusyPercent of peak, and above SM throughput
  Compute,   // SM throughput at or above kBusyPercent of peak, and at or above DRAM's
  Latency,   // both under kIdlePercent: warps wait (stalls, too few warps, launch overhead)
  Balanced,  // in between: neither saturated nor idle
};

inline constexpr double kBusyPercent = 60.0;
inline constexpr double kIdlePercent = 40.0;

std::string toString(Limiter limiter);  // "memory-bound", "compute-bound", "latency-bound", ...
Limiter limiterOf(const ProfileResult &result);

// "Profile (h200, 14 passes): memory-bound: DRAM at 84% of peak, SM at 31%; achieved occupancy
// 92%; L1 hit 0%, L2 hit 50%; warps mostly stalled on long scoreboard (1.92 per cycle), ...\n
// What helps: ...". A result that is not "profiled" gives one line saying why not.
std::string bottleneckSummary(const ProfileResult &result);

}  // namespace kwb::profile
