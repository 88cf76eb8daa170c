#include "core/compile/occupancy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/text/json_fields.h"

namespace kwb {

namespace {

std::int64_t divideRoundUp(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }
std::int64_t roundUp(std::int64_t x, std::int64_t y) { return divideRoundUp(x, y) * y; }

// "48 KiB", "49.5 KiB", "200 B".
std::string formatBytes(std::int64_t bytes) {
  char text[48];
  if (bytes < 1024)
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  else if (bytes % 1024 == 0)
    std::snprintf(text, sizeof text, "%lld KiB", static_cast<long long>(bytes / 1024));
  else
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
  return text;
}

// "50%", "66.7%".
std::string formatPercent(double fraction) {
  const double percent = fraction * 100.0;
  char text[32];
  if (std::fabs(percent - std::round(percent)) < 0.05)
    std::snprintf(text, sizeof text, "%.0f%%", percent);
  else
    std::snprintf(text, sizeof text, "%.1f%%", percent);
  return text;
}

std::string plural(long long n, const char *one, const char *many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

unsigned bit(OccupancyLimiter l) { return 1u << static_cast<unsigned>(l); }

}  // namespace

const char *toString(OccupancyLimiter limiter) {
  switch (limiter) {
    case OccupancyLimiter::Warps: return "warps";
    case OccupancyLimiter::Blocks: return "blocks";
    case OccupancyLimiter::Registers: return "registers";
    case OccupancyLimiter::SharedMemory: return "shared memory";
    case OccupancyLimiter::None: break;
  }
  return "none";
}

Occupancy computeOccupancy(const ArchLimits &arch, int threadsPerBlock, int registersPerThread,
                           std::int64_t sharedBytesPerBlock) {
  Occupancy o;
  o.maxWarpsPerSM = arch.maxWarpsPerSM;
  const std::string on = " on " + arch.arch();
  auto fail = [&](std::string why) {
    o.error = std::move(why);
    o.explanation = "cannot launch" + on + ": " + o.error;
    return o;
  };
  if (threadsPerBlock < 1)
    return fail("a block needs at least 1 thread (got " + std::to_string(threadsPerBlock) + ")");
  if (registersPerThread < 0)
    return fail("registers per thread cannot be negative (got " + std::to_string(registersPerThread) + ")");
  if (sharedBytesPerBlock < 0)
    return fail("shared memory per block cannot be negative (got " + std::to_string(sharedBytesPerBlock) + ")");

  // What one block is allocated.
  const int warps = static_cast<int>(divideRoundUp(threadsPerBlock, arch.warpSize));
  const std::int64_t regsPerWarp =
      roundUp(static_cast<std::int64_t>(registersPerThread) * arch.warpSize, arch.registerAllocationUnit);
  // The hardware checks the per-block register limit as if the warps filled every
  // sub-partition evenly: warps rounded up to the allocation granularity.
  const std::int64_t regsAssumedPerBlock = regsPerWarp * roundUp(warps, arch.warpAllocationGranularity);
  const std::int64_t regsPerBlock = regsPerWarp * warps;
  const std::int64_t sharedPerBlock =
      roundUp(sharedBytesPerBlock + arch.sharedReservedPerBlock, arch.sharedAllocationUnit);
  o.warpsPerBlock = warps;
  o.registersPerBlock = static_cast<int>(std::min<std::int64_t>(regsPerBlock, Occupancy::kUnlimited));
  o.sharedBytesPerBlock = sharedPerBlock;
  o.needsSharedMemoryOptIn = sharedBytesPerBlock > arch.sharedPerBlockDefault;

  // Launches no SM can hold.
  std::vector<std::string> problems;
  if (threadsPerBlock > arch.maxThreadsPerBlock)
    problems.push_back("a block of " + std::to_string(threadsPerBlock) + " threads is more than the " +
                       std::to_string(arch.maxThreadsPerBlock) + " a block may have");
  if (registersPerThread > arch.maxRegistersPerThread) {
    problems.push_back(std::to_string(registersPerThread) + " registers per thread is more than the " +
                       std::to_string(arch.maxRegistersPerThread) + " a thread may have");
  } else if (threadsPerBlock <= arch.maxThreadsPerBlock &&
             (regsAssumedPerBlock > arch.maxRegistersPerBlock || regsPerBlock > arch.maxRegistersPerBlock)) {
    // The fix: the most registers per thread this block size allows, or the most threads at
    // this register count.
    const std::int64_t warpBudget = arch.maxRegistersPerBlock / roundUp(warps, arch.warpAllocationGranularity);
    const std::int64_t fittingRegs =
        std::min<std::int64_t>(warpBudget / arch.registerAllocationUnit * arch.registerAllocationUnit / arch.warpSize,
                               arch.maxRegistersPerThread);
    const std::int64_t fittingThreads = arch.maxRegistersPerBlock / regsPerWarp / arch.warpAllocationGranularity *
                                        arch.warpAllocationGranularity * arch.warpSize;
    problems.push_back("a block of " + std::to_string(threadsPerBlock) + " threads at " +
                       std::to_string(registersPerThread) + " registers per thread needs " +
                       std::to_string(regsAssumedPerBlock) + " registers (" + std::to_string(regsPerWarp) +
                       " per warp, warps counted in groups of " + std::to_string(arch.warpAllocationGranularity) +
                       "), more than the " + std::to_string(arch.maxRegistersPerBlock) +
                       " a block may have; use at most " + std::to_string(fittingRegs) +
                       " registers per thread (__launch_bounds__(" + std::to_string(threadsPerBlock) +
                       ") or -maxrregcount) or at most " + std::to_string(fittingThreads) + " threads per block");
  }
  if (sharedPerBlock > arch.sharedPerBlockOptIn + arch.sharedReservedPerBlock) {
    std::string what = formatBytes(sharedBytesPerBlock) + " (" + std::to_string(sharedBytesPerBlock) + " bytes)";
    problems.push_back(what + " of shared memory per block is more than the " + formatBytes(arch.sharedPerBlockOptIn) +
                       " (" + std::to_string(arch.sharedPerBlockOptIn) +
                       " bytes) a block may opt in to; use at most " + std::to_string(arch.sharedPerBlockOptIn) +
                       " bytes of static and dynamic shared memory per block");
  }
  if (!problems.empty()) {
    std::string joined;
    for (const auto &p : problems) joined += (joined.empty() ? "" : "; ") + p;
    return fail(joined);
  }

  // What each resource allows alone.
  o.blockLimitWarps = arch.maxWarpsPerSM / warps;
  o.blockLimitBlocks = arch.maxBlocksPerSM;
  if (regsPerWarp == 0) {
    o.blockLimitRegisters = Occupancy::kUnlimited;
  } else {
    const std::int64_t warpsPerSubPartition = arch.registersPerSM / arch.warpAllocationGranularity / regsPerWarp;
    o.blockLimitRegisters = static_cast<int>(warpsPerSubPartition * arch.warpAllocationGranularity / warps);
  }
  o.blockLimitSharedMemory = sharedPerBlock == 0 ? Occupancy::kUnlimited
                                                 : static_cast<int>(arch.sharedPerSM / sharedPerBlock);

  const int blocks =
      std::min({o.blockLimitWarps, o.blockLimitBlocks, o.blockLimitRegisters, o.blockLimitSharedMemory});
  if (blocks == o.blockLimitWarps) o.limiters |= bit(OccupancyLimiter::Warps);
  if (blocks == o.blockLimitBlocks) o.limiters |= bit(OccupancyLimiter::Blocks);
  if (blocks == o.blockLimitRegisters) o.limiters |= bit(OccupancyLimiter::Registers);
  if (blocks == o.blockLimitSharedMemory) o.limiters |= bit(OccupancyLimiter::SharedMemory);
  for (auto l : {OccupancyLimiter::Warps, OccupancyLimiter::Blocks, OccupancyLimiter::Registers,
                 OccupancyLimiter::SharedMemory})
    if (o.limitedBy(l)) {
      o.limiter = l;
      break;
    }
  if (blocks < 1) return fail("no block fits on an SM");  // unreachable once the checks above pass

  o.activeBlocksPerSM = blocks;
  o.activeWarpsPerSM = blocks * warps;
  o.occupancy = static_cast<double>(o.activeWarpsPerSM) / arch.maxWarpsPerSM;

  o.explanation = plural(blocks, "block", "blocks") + " of " + plural(threadsPerBlock, "thread", "threads") +
                  " per SM (" + formatPercent(o.occupancy) + ")";
  if (o.activeWarpsPerSM < arch.maxWarpsPerSM) {
    std::string why;
    auto add = [&](OccupancyLimiter l, const std::string &detail) {
      if (!o.limitedBy(l)) return;
      why += (why.empty() ? "; limited by " : " and by ") + std::string(toString(l)) + ": " + detail;
    };
    add(OccupancyLimiter::Warps,
        plural(warps, "warp", "warps") + " per block, " + std::to_string(arch.maxWarpsPerSM) + " per SM");
    add(OccupancyLimiter::Blocks, "at most " + std::to_string(arch.maxBlocksPerSM) + " per SM");
    add(OccupancyLimiter::Registers, std::to_string(registersPerThread) + " per thread");
    std::string shared = formatBytes(sharedPerBlock) + " per block";
    if (arch.sharedReservedPerBlock > 0) shared += " (" + formatBytes(arch.sharedReservedPerBlock) + " reserved)";
    add(OccupancyLimiter::SharedMemory, shared + " of " + formatBytes(arch.sharedPerSM) + " per SM");
    o.explanation += why;
  }
  return o;
}

void to_json(nlohmann::json &j, OccupancyLimiter limiter) { j = toString(limiter); }
void from_json(const nlohmann::json &j, OccupancyLimiter &limiter) {
  limiter = OccupancyLimiter::None;
  for (auto l : {OccupancyLimiter::Warps, OccupancyLimiter::Blocks, OccupancyLimiter::Registers,
                 OccupancyLimiter::SharedMemory})
    if (j.is_string() && j.get<std::string>() == toString(l)) limiter = l;
}

namespace {

using json_fields::field;

constexpr auto kOccupancyFields = std::tuple{
    field("active_blocks_per_sm", &Occupancy::activeBlocksPerSM),
    field("active_warps_per_sm", &Occupancy::activeWarpsPerSM),
    field("max_warps_per_sm", &Occupancy::maxWarpsPerSM),
    field("occupancy", &Occupancy::occupancy),
    field("limiter", &Occupancy::limiter),
    field("error", &Occupancy::error),
    field("explanation", &Occupancy::explanation)};

}  // namespace

void to_json(nlohmann::json &j, const Occupancy &v) { json_fields::writeFields(j, v, kOccupancyFields); }

void from_json(const nlohmann::json &j, Occupancy &v) {
  json_fields::readFields(j, v, kOccupancyFields);
  v.limiters = v.limiter == OccupancyLimiter::None ? 0u : 1u << static_cast<unsigned>(v.limiter);
}

}  // namespace kwb
