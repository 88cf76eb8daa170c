#include "core/gpu/device_stats.h"

#include <nlohmann/json.hpp>

#include "core/gpu/cuda_libraries.h"
#include "core/gpu/device_info.h"

namespace kwb {

GpuStatsReport sampleGpuStats() {
  GpuStatsReport report;
  const GpuInventory inventory = probeGpus();
  if (!inventory.hasDevices()) {
    report.problem = inventory.problem.empty() ? std::string("no CUDA device") : inventory.problem;
    return report;
  }
  Nvml nvml;
  if (!nvml.ready()) report.problem = "NVML: " + nvml.status().problem;
  for (const auto &d : inventory.devices) {
    GpuStats s;
    s.ordinal = d.ordinal;
    s.name = d.name;
    s.pciBusId = d.pciBusId;
    s.memoryTotalBytes = d.totalMemoryBytes;
    if (!nvml.ready()) {
      s.problem = report.problem;
      report.devices.push_back(std::move(s));
      continue;
    }
    const auto live = nvml.live(d.pciBusId);
    if (live.hasUtilization) {
      s.utilizationPercent = static_cast<int>(live.gpuPercent);
      s.memoryUtilizationPercent = static_cast<int>(live.memoryPercent);
    }
    if (live.hasMemory) {
      s.memoryUsedBytes = live.memoryUsedBytes;
      s.memoryTotalBytes = live.memoryTotalBytes;
    }
    if (live.hasTemperature) s.temperatureC = static_cast<int>(live.temperatureC);
    if (live.clock.ok) {
      s.smClockMHz = static_cast<int>(live.clock.smMHz);
      s.clockEventReasons = live.clock.reasons;
      s.clockEventText = Nvml::describeReasons(live.clock.reasons);
      s.throttled = live.clock.throttled();
    }
    if (!live.hasUtilization && !live.hasMemory && !live.hasTemperature && !live.clock.ok)
      s.problem = "NVML has no figures for " + d.pciBusId;
    report.devices.push_back(std::move(s));
  }
  return report;
}

void to_json(nlohmann::json &j, const GpuStats &s) {
  j = {{"ordinal", s.ordinal},
       {"name", s.name},
       {"pci_bus_id", s.pciBusId},
       {"utilization_percent", s.utilizationPercent},
       {"memory_utilization_percent", s.memoryUtilizationPercent},
       {"memory_used_bytes", s.memoryUsedBytes},
       {"memory_total_bytes", s.memoryTotalBytes},
       {"temperature_c", s.temperatureC},
       {"sm_clock_mhz", s.smClockMHz},
       {"clock_event_reasons", s.clockEventReasons},
       {"clock_event_text", s.clockEventText},
       {"throttled", s.throttled},
       {"problem", s.problem}};
}

void to_json(nlohmann::json &j, const GpuStatsReport &r) {
  j = {{"devices", r.devices}, {"problem", r.problem}};
}

}  // namespace kwb
