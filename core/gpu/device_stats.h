#pragma once
// Live figures of every visible GPU (load, memory, temperature, SM clock, why clocks are held
// down), read through NVML for a devices panel: `kwb-worker --stats --json` prints them.
// The devices are the ones the CUDA driver shows this process (CUDA_VISIBLE_DEVICES applies),
// matched to NVML by PCI bus id. Never throws; what cannot be read says why.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kwb {

struct GpuStats {
  int ordinal = 0;               // CUDA ordinal, as this process sees it
  std::string name;
  std::string pciBusId;
  int utilizationPercent = -1;   // -1: unknown
  int memoryUtilizationPercent = -1;
  std::uint64_t memoryUsedBytes = 0;
  std::uint64_t memoryTotalBytes = 0;
  int temperatureC = -1;         // -1: unknown
  int smClockMHz = -1;           // -1: unknown
  std::uint64_t clockEventReasons = 0;  // nvmlClocksEventReasons bits
  std::string clockEventText;    // "sw-power-cap, hw-slowdown"
  bool throttled = false;        // power or thermal slowdown
  std::string problem;           // why figures are missing (NVML absent, ...); empty when read
};

struct GpuStatsReport {
  std::vector<GpuStats> devices;
  std::string problem;  // why there are none ("no CUDA driver: ..."), or why NVML says nothing
};

GpuStatsReport sampleGpuStats();

void to_json(nlohmann::json &, const GpuStats &);
void from_json(const nlohmann::json &, GpuStats &);
void to_json(nlohmann::json &, const GpuStatsReport &);
void from_json(const nlohmann::json &, GpuStatsReport &);

}  // namespace kwb
