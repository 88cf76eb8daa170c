#pragma once
// What the machine offers: CUDA libraries found at run time and the GPUs the driver sees.
// Everything is loaded with dlopen, so this works (and says so) on a machine with no driver.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kwb {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::string pciBusId;
  int ccMajor = 0;
  int ccMinor = 0;
  int smCount = 0;
  std::uint64_t totalMemoryBytes = 0;
  std::uint64_t l2CacheBytes = 0;
  int memoryBusWidthBits = 0;
  int memoryClockKHz = 0;      // peak memory clock
  int smClockKHz = 0;          // peak SM clock
  // 2 transfers per clock (DDR) × clock × bus width / 8.
  double peakBandwidthBytesPerSecond() const;
  std::string computeCapability() const;  // "9.0"
};

struct LibraryStatus {
  std::string name;      // "CUDA driver", "NVRTC", "CUPTI", "NVML"
  bool loaded = false;
  std::string path;      // what was loaded
  std::string version;   // as the library reports it
  std::string problem;   // why it is not usable, when not loaded
};

struct GpuInventory {
  std::vector<LibraryStatus> libraries;
  std::vector<DeviceInfo> devices;
  std::string problem;   // "no CUDA driver", "no device", or the driver's error; empty when devices exist
  int driverVersion = 0; // as cuDriverGetVersion: 13000 = 13.0
  bool hasDevices() const { return !devices.empty(); }
  // One line for a status bar: "NVIDIA H200 (sm_90)" or "No CUDA device: compile-only".
  std::string summary() const;
};

// Probes libraries and devices. Never throws; failures land in `problem` fields.
GpuInventory probeGpus();

// `kwb-worker --devices --json` and `kwb devices --json` print these; the GUI reads them back
// (core/gpu/worker_gpu_report.h).
void to_json(nlohmann::json &, const DeviceInfo &);
void from_json(const nlohmann::json &, DeviceInfo &);
void to_json(nlohmann::json &, const LibraryStatus &);
void from_json(const nlohmann::json &, LibraryStatus &);
void to_json(nlohmann::json &, const GpuInventory &);
void from_json(const nlohmann::json &, GpuInventory &);

}  // namespace kwb
