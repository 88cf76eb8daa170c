#include "core/gpu/cuda_libraries.h"

#include <cstdint>
#include <filesystem>

namespace kwb {

bool openNvrtc(DynamicLibrary &nvrtc) {
  const auto candidates = cudaToolkitLibraryCandidates({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"},
                                                       {"lib64", "targets/x86_64-linux/lib"});
  for (const auto &candidate : candidates) {
    const std::filesystem::path path(candidate);
    if (path.has_parent_path()) {
      // Found by path: preload the builtins NVRTC will ask the loader for by soname.
      std::error_code ec;
      for (const auto &entry : std::filesystem::directory_iterator(path.parent_path(), ec)) {
        const auto name = entry.path().filename().string();
        if (name.rfind("libnvrtc-builtins.so.", 0) == 0) {
          DynamicLibrary builtins;
          if (builtins.open({entry.path().string()})) builtins.keepLoaded();
        }
      }
    }
    if (nvrtc.open({candidate})) return true;
  }
  nvrtc.open(candidates);  // fills error() with every name tried
  return false;
}

LibraryStatus probeNvrtc() {
  LibraryStatus s{.name = "NVRTC"};
  DynamicLibrary lib;
  if (!openNvrtc(lib)) {
    s.problem = "libnvrtc " + lib.error() + "; install the CUDA toolkit or set CUDA_HOME";
    return s;
  }
  s.path = lib.path();
  int (*nvrtcVersion)(int *, int *) = nullptr;
  int major = 0, minor = 0;
  if (lib.resolve(nvrtcVersion, "nvrtcVersion") && nvrtcVersion(&major, &minor) == 0) {
    s.loaded = true;
    s.version = std::to_string(major) + "." + std::to_string(minor);
  } else {
    s.problem = lib.path() + ": nvrtcVersion failed";
  }
  return s;
}

LibraryStatus probeCupti() {
  LibraryStatus s{.name = "CUPTI"};
  DynamicLibrary lib;
  if (!lib.open(cudaToolkitLibraryCandidates({"libcupti.so.13", "libcupti.so.12", "libcupti.so"},
                                             {"extras/CUPTI/lib64", "lib64",
                                              "targets/x86_64-linux/lib"}))) {
    s.problem = "libcupti " + lib.error() + "; install the CUDA toolkit's CUPTI or set CUDA_HOME";
    return s;
  }
  s.path = lib.path();
  int (*cuptiGetVersion)(std::uint32_t *) = nullptr;
  std::uint32_t version = 0;
  if (lib.resolve(cuptiGetVersion, "cuptiGetVersion") && cuptiGetVersion(&version) == 0) {
    s.loaded = true;
    s.version = "API " + std::to_string(version);
  } else {
    s.problem = lib.path() + ": cuptiGetVersion failed";
  }
  return s;
}

namespace {
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;   // nvmlClockType_t NVML_CLOCK_SM
constexpr int kNvmlClockMem = 2;  // nvmlClockType_t NVML_CLOCK_MEM
constexpr int kNvmlTemperatureGpu = 0;  // nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU
}  // namespace

Nvml::Nvml() {
  status_.name = "NVML";
  if (!library_.open({"libnvidia-ml.so.1", "libnvidia-ml.so"})) {
    status_.problem = "libnvidia-ml " + library_.error() + " (it comes with the NVIDIA driver)";
    return;
  }
  status_.path = library_.path();
  int (*init)() = nullptr;
  int (*driverVersion)(char *, unsigned) = nullptr;
  const char *(*errorString)(int) = nullptr;
  library_.resolve(errorString, "nvmlErrorString");
  if (!library_.resolve(init, "nvmlInit_v2") || !library_.resolve(shutdown_, "nvmlShutdown") ||
      !library_.resolve(handleByPciBusId_, "nvmlDeviceGetHandleByPciBusId_v2") ||
      !library_.resolve(maxClockInfo_, "nvmlDeviceGetMaxClockInfo")) {
    status_.problem = library_.path() + " lacks an NVML entry point (too old?)";
    return;
  }
  library_.resolve(busWidth_, "nvmlDeviceGetMemoryBusWidth");
  library_.resolve(clockInfo_, "nvmlDeviceGetClockInfo");
  if (!library_.resolve(clockReasons_, "nvmlDeviceGetCurrentClocksEventReasons"))
    library_.resolve(clockReasons_, "nvmlDeviceGetCurrentClocksThrottleReasons");
  library_.resolve(utilization_, "nvmlDeviceGetUtilizationRates");
  library_.resolve(memoryInfo_, "nvmlDeviceGetMemoryInfo");
  library_.resolve(temperature_, "nvmlDeviceGetTemperature");
  if (int r = init(); r != kNvmlSuccess) {
    status_.problem = std::string("nvmlInit failed: ") + (errorString ? errorString(r) : std::to_string(r));
    return;
  }
  initialized_ = true;
  status_.loaded = true;
  char buf[96] = {};
  if (library_.resolve(driverVersion, "nvmlSystemGetDriverVersion") &&
      driverVersion(buf, sizeof buf) == kNvmlSuccess)
    status_.version = std::string("driver ") + buf;
}

Nvml::~Nvml() {
  if (initialized_ && shutdown_) shutdown_();
}

void *Nvml::deviceHandle(const std::string &pciBusId) const {
  if (cachedHandle_ && pciBusId == cachedBusId_) return cachedHandle_;
  void *handle = nullptr;
  if (!initialized_ || handleByPciBusId_(pciBusId.c_str(), &handle) != kNvmlSuccess) return nullptr;
  cachedBusId_ = pciBusId;
  cachedHandle_ = handle;
  return handle;
}

Nvml::ClockSample Nvml::clocks(const std::string &pciBusId) const {
  ClockSample c;
  void *h = deviceHandle(pciBusId);
  if (!h || !clockInfo_ || clockInfo_(h, kNvmlClockSm, &c.smMHz) != kNvmlSuccess) return c;
  if (clockReasons_ && clockReasons_(h, &c.reasons) != kNvmlSuccess) c.reasons = 0;
  c.ok = true;
  return c;
}

std::string Nvml::describeReasons(unsigned long long reasons) {
  static const std::pair<unsigned long long, const char *> names[] = {
      {0x1, "gpu-idle"},          {0x2, "applications-clocks-setting"}, {0x4, "sw-power-cap"},
      {0x8, "hw-slowdown"},       {0x10, "sync-boost"},                 {0x20, "sw-thermal-slowdown"},
      {0x40, "hw-thermal-slowdown"}, {0x80, "hw-power-brake-slowdown"}, {0x100, "display-clock-setting"}};
  std::string out;
  for (const auto &[bit, name] : names)
    if (reasons & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

Nvml::LiveSample Nvml::live(const std::string &pciBusId) const {
  LiveSample s;
  s.clock = clocks(pciBusId);
  void *h = deviceHandle(pciBusId);
  if (!h) return s;
  struct {
    unsigned gpu, memory;
  } utilization{};  // nvmlUtilization_t
  if (utilization_ && utilization_(h, &utilization) == kNvmlSuccess) {
    s.hasUtilization = true;
    s.gpuPercent = utilization.gpu;
    s.memoryPercent = utilization.memory;
  }
  struct {
    unsigned long long total, free, used;
  } memory{};  // nvmlMemory_t (v1)
  if (memoryInfo_ && memoryInfo_(h, &memory) == kNvmlSuccess) {
    s.hasMemory = true;
    s.memoryUsedBytes = memory.used;
    s.memoryTotalBytes = memory.total;
  }
  if (temperature_ && temperature_(h, kNvmlTemperatureGpu, &s.temperatureC) == kNvmlSuccess) s.hasTemperature = true;
  return s;
}

int Nvml::maxMemoryClockKHz(const std::string &pciBusId) const {
  unsigned mhz = 0;
  void *h = deviceHandle(pciBusId);
  if (!h || maxClockInfo_(h, kNvmlClockMem, &mhz) != kNvmlSuccess) return 0;
  return static_cast<int>(mhz) * 1000;
}

int Nvml::memoryBusWidthBits(const std::string &pciBusId) const {
  unsigned bits = 0;
  void *h = deviceHandle(pciBusId);
  if (!h || !busWidth_ || busWidth_(h, &bits) != kNvmlSuccess) return 0;
  return static_cast<int>(bits);
}

}  // namespace kwb
