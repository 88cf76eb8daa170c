#include "core/gpu/device_stats.h"

#include <nlohmann/json.hpp>

#include "core/gpu/cuda_libraries.h"
#include "core/gpu/device_info.h"
#include "core/text/json_fields.h"

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

namespace {

using json_fields::field;

constexpr auto kStatsFields = std::tuple{
    field("ordinal", &GpuStats::ordinal),
    field("name", &GpuStats::name),
    field("pci_bus_id", &GpuStats::pciBusId),
    field("utilization_percent", &GpuStats::utilizationPercent),
    field("memory_utilization_percent", &GpuStats::memoryUtilizationPercent),
    field("memory_used_bytes", &GpuStats::memoryUsedBytes),
    field("memory_total_bytes", &GpuStats::memoryTotalBytes),
    field("temperature_c", &GpuStats::temperatureC),
    field("sm_clock_mhz", &GpuStats::smClockMHz),
    field("clock_event_reasons", &GpuStats::clockEventReasons),
    field("clock_event_text", &GpuStats::clockEventText),
    field("throttled", &GpuStats::throttled),
    field("problem", &GpuStats::problem)};

constexpr auto kReportFields =
    std::tuple{field("devices", &GpuStatsReport::devices), field("problem", &GpuStatsReport::problem)};

}  // namespace

void to_json(nlohmann::json &j, const GpuStats &v) { json_fields::writeFields(j, v, kStatsFields); }
void from_json(const nlohmann::json &j, GpuStats &v) { json_fields::readFields(j, v, kStatsFields); }
void to_json(nlohmann::json &j, const GpuStatsReport &v) { json_fields::writeFields(j, v, kReportFields); }
void from_json(const nlohmann::json &j, GpuStatsReport &v) { json_fields::readFields(j, v, kReportFields); }

}  // namespace kwb
