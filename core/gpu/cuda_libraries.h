#pragma once
// Probing the CUDA toolkit's run-time libraries (NVRTC, CUPTI) and NVML: where they are and
// which version, without needing them at link time.
#include <string>

#include "core/gpu/device_info.h"
#include "core/gpu/dynamic_library.h"

namespace kwb {

// Opens NVRTC. When it is found by path rather than by the loader (the toolkit's lib64 is not on
// the loader's path), its companion libnvrtc-builtins, which NVRTC opens by name at compile
// time, is loaded from the same folder first and kept loaded, so compiling works there too.
bool openNvrtc(DynamicLibrary &nvrtc);

LibraryStatus probeNvrtc();
LibraryStatus probeCupti();

// NVML gives figures the driver API does not (memory clock where the attribute is gone).
class Nvml {
 public:
  Nvml();
  ~Nvml();
  Nvml(const Nvml &) = delete;
  Nvml &operator=(const Nvml &) = delete;
  const LibraryStatus &status() const { return status_; }
  bool ready() const { return initialized_; }
  // Max memory clock in kHz and bus width in bits for the device at pciBusId; 0 when unknown.
  int maxMemoryClockKHz(const std::string &pciBusId) const;
  int memoryBusWidthBits(const std::string &pciBusId) const;

  // The SM clock now and why clocks are held down (nvmlClocksEventReasons bits); ok is false
  // when NVML cannot say. Cheap enough to call once per timing sample.
  struct ClockSample {
    bool ok = false;
    unsigned smMHz = 0;
    unsigned long long reasons = 0;
    // Power or thermal slowdown (software or hardware) or a power brake: the sample is slowed.
    bool throttled() const { return (reasons & kSlowdownReasons) != 0; }
    static constexpr unsigned long long kSlowdownReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
  };
  ClockSample clocks(const std::string &pciBusId) const;
  // "sw-power-cap, hw-slowdown": the reasons' names.
  static std::string describeReasons(unsigned long long reasons);

  // Live figures for a devices panel; each `has*` is false when NVML cannot say.
  struct LiveSample {
    bool hasUtilization = false;
    unsigned gpuPercent = 0;     // nvmlDeviceGetUtilizationRates: kernels running, last sample period
    unsigned memoryPercent = 0;  // memory controller busy
    bool hasMemory = false;
    unsigned long long memoryUsedBytes = 0;
    unsigned long long memoryTotalBytes = 0;
    bool hasTemperature = false;
    unsigned temperatureC = 0;   // NVML_TEMPERATURE_GPU
    ClockSample clock;
  };
  LiveSample live(const std::string &pciBusId) const;

 private:
  void *deviceHandle(const std::string &pciBusId) const;
  DynamicLibrary library_;
  LibraryStatus status_;
  bool initialized_ = false;
  int (*shutdown_)() = nullptr;
  int (*handleByPciBusId_)(const char *, void **) = nullptr;
  int (*maxClockInfo_)(void *, int, unsigned *) = nullptr;
  int (*busWidth_)(void *, unsigned *) = nullptr;
  int (*clockInfo_)(void *, int, unsigned *) = nullptr;
  int (*clockReasons_)(void *, unsigned long long *) = nullptr;
  int (*utilization_)(void *, void *) = nullptr;   // nvmlUtilization_t *
  int (*memoryInfo_)(void *, void *) = nullptr;    // nvmlMemory_t *
  int (*temperature_)(void *, int, unsigned *) = nullptr;
  mutable std::string cachedBusId_;
  mutable void *cachedHandle_ = nullptr;
};

}  // namespace kwb
