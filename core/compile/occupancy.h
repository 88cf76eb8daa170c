#pragma once
// Theoretical occupancy of a launch: how many blocks of a kernel fit on one SM at once, and
// what stops more from fitting. Mirrors NVIDIA's occupancy calculator (cuda_occupancy.h) with
// the default shared-memory carveout and the per-function shared-memory opt-in:
//  - warps:     a block takes ceil(threads / 32) warp slots of the SM's maxWarpsPerSM;
//  - blocks:    at most maxBlocksPerSM resident blocks;
//  - registers: ceil(registers × 32 / 256) × 256 registers per warp; each of the 4
//               sub-partitions holds registersPerSM / 4, so whole warps per sub-partition × 4
//               warps fit, rounded down to whole blocks; a block whose warps, rounded up to a
//               multiple of 4, need more than 64K registers cannot launch at all;
//  - shared memory: static + dynamic + the per-block reservation (1 KiB on 8.0+), rounded up
//               to the allocation unit, out of the SM's largest carveout.
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/compile/arch_limits.h"

namespace kwb {

enum class OccupancyLimiter {
  None,          // the launch is impossible (see Occupancy::error)
  Warps,         // warp slots (threads) per SM
  Blocks,        // resident blocks per SM
  Registers,
  SharedMemory,
};

// "warps", "blocks", "registers", "shared memory", "none"
const char *toString(OccupancyLimiter limiter);

struct Occupancy {
  int activeBlocksPerSM = 0;
  int activeWarpsPerSM = 0;
  int maxWarpsPerSM = 0;
  double occupancy = 0.0;  // activeWarpsPerSM / maxWarpsPerSM, 0..1

  // The resource that stops one more block from fitting. When several run out together the
  // first of warps, blocks, registers, shared memory is named; `limiters` holds them all.
  OccupancyLimiter limiter = OccupancyLimiter::None;
  unsigned limiters = 0;  // bit (1 << int(OccupancyLimiter)) for each resource at the minimum

  // What each resource alone would allow (blocks per SM); kUnlimited when it does not bind.
  static constexpr int kUnlimited = 1 << 30;
  int blockLimitWarps = 0;
  int blockLimitBlocks = 0;
  int blockLimitRegisters = 0;
  int blockLimitSharedMemory = 0;

  // What one block is allocated, after the calculator's rounding.
  int warpsPerBlock = 0;
  int registersPerBlock = 0;              // per-warp allocation × warps
  std::int64_t sharedBytesPerBlock = 0;   // static + dynamic + reservation, rounded
  // More than sharedPerBlockDefault (48 KiB): the kernel must opt in with
  // cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) before launching.
  bool needsSharedMemoryOptIn = false;

  // Empty for a launch that fits; otherwise why no block of this launch can run, with the fix
  // when one is known.
  std::string error;
  // One line: "4 blocks of 256 threads per SM (50%); limited by registers: 64 per thread".
  std::string explanation;

  bool launchable() const { return error.empty(); }
  bool limitedBy(OccupancyLimiter l) const { return (limiters & (1u << static_cast<unsigned>(l))) != 0; }
};

// Pure: no device is needed. sharedBytesPerBlock is static + dynamic shared memory.
Occupancy computeOccupancy(const ArchLimits &arch, int threadsPerBlock, int registersPerThread,
                           std::int64_t sharedBytesPerBlock);

// The wire and storage form (a configuration's "occupancy" in an evaluation result). Read
// back, `limiters` holds the named limiter only.
void to_json(nlohmann::json &j, OccupancyLimiter limiter);
void from_json(const nlohmann::json &j, OccupancyLimiter &limiter);
void to_json(nlohmann::json &j, const Occupancy &v);
void from_json(const nlohmann::json &j, Occupancy &v);

}  // namespace kwb
