#pragma once
// Per-architecture limits that decide how many blocks of a kernel fit on one SM.
//
// Figures are from the CUDA C++ Programming Guide's "Technical Specifications per Compute
// Capability" table; the allocation rules (units, granularities, the per-block reservation)
// are those of NVIDIA's occupancy calculator (cuda_occupancy.h, CUDA 13.0), which is what the
// driver's cuOccupancyMaxActiveBlocksPerMultiprocessor agrees with.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kwb {

struct ArchLimits {
  int ccMajor = 0;
  int ccMinor = 0;
  std::string_view family;                 // "Hopper", "Ampere (GA10x)", ...

  int warpSize = 32;
  int maxThreadsPerBlock = 1024;
  int maxThreadsPerSM = 0;
  int maxWarpsPerSM = 0;                   // maxThreadsPerSM / warpSize
  int maxBlocksPerSM = 0;

  // Registers are allocated per warp, in units of registerAllocationUnit registers, and each of
  // the SM's warpAllocationGranularity sub-partitions (schedulers) holds a quarter of the file.
  int registersPerSM = 65536;
  int maxRegistersPerBlock = 65536;
  int maxRegistersPerThread = 255;
  int registerAllocationUnit = 256;        // registers, per warp
  int warpAllocationGranularity = 4;       // warps: sub-partitions per SM

  // Shared memory. sharedPerSM is the largest carveout (what the driver picks by default for
  // occupancy); a block may use sharedPerBlockDefault without asking and up to
  // sharedPerBlockOptIn after cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES). The driver
  // reserves sharedReservedPerBlock for every resident block (8.0 and later), and allocations
  // are rounded up to sharedAllocationUnit.
  std::int64_t sharedPerSM = 0;
  std::int64_t sharedPerBlockDefault = 48 * 1024;
  std::int64_t sharedPerBlockOptIn = 0;
  std::int64_t sharedReservedPerBlock = 0;
  int sharedAllocationUnit = 128;

  std::string arch() const;               // "sm_90"
  std::string computeCapability() const;  // "9.0"
};

// Every architecture in the table, oldest first: 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, 10.0,
// 10.3, 12.0.
std::span<const ArchLimits> knownArchitectures();

struct ArchLimitsLookup {
  std::optional<ArchLimits> limits;
  std::string error;  // "unknown architecture sm_61 (known: ...)" or why the name did not parse
  explicit operator bool() const { return limits.has_value(); }
};

// Accepts "sm_90", "sm_90a", "sm_100f", "compute_90", "90", "9.0" and "10.3".
ArchLimitsLookup archLimits(std::string_view arch);
ArchLimitsLookup archLimits(int ccMajor, int ccMinor);

// What the compilers are asked for when told "sm_XY": the architecture-specific target sm_XYa where
// the toolkit has one (9.0, 10.0, 10.3, 11.0, 12.0, 12.1; compute_XY likewise), else the name as
// given. Code for sm_90a runs only on compute capability 9.0, which is the GPU the workbench
// compiles for, and may use what only that architecture has (wgmma, setmaxnreg); sm_90 code is a
// subset. Names that carry a suffix already (sm_90a, sm_100f) and older architectures are kept.
std::string archSpecificTarget(std::string_view arch);

// Whether two architecture names are the same architecture, suffixes aside (sm_90 and sm_90a).
bool sameArchitecture(std::string_view a, std::string_view b);

}  // namespace kwb
