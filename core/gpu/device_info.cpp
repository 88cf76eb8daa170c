#include "core/gpu/device_info.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/gpu/cuda_driver.h"
#include "core/gpu/cuda_libraries.h"
#include "core/text/json_fields.h"

namespace kwb {

double DeviceInfo::peakBandwidthBytesPerSecond() const {
  return 2.0 * memoryClockKHz * 1000.0 * memoryBusWidthBits / 8.0;
}

std::string DeviceInfo::computeCapability() const {
  return std::to_string(ccMajor) + "." + std::to_string(ccMinor);
}

std::string GpuInventory::summary() const {
  if (devices.empty()) return "No CUDA device: compile-only";
  const auto &d = devices.front();
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.0f GiB", d.totalMemoryBytes / 1073741824.0);
  std::string s = d.name + " (sm_" + std::to_string(d.ccMajor) + std::to_string(d.ccMinor) + ", " +
                  std::to_string(d.smCount) + " SMs, " + memory + ")";
  if (devices.size() > 1) s += " +" + std::to_string(devices.size() - 1) + " more";
  return s;
}

namespace {

LibraryStatus driverStatus(const CudaDriver &driver, int version) {
  LibraryStatus s{.name = "CUDA driver"};
  s.loaded = driver.library.isOpen() && driver.problem().empty();
  s.path = driver.library.path();
  s.problem = driver.problem();
  if (version > 0) s.version = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  return s;
}

// Queries one device; attributes the driver does not report stay 0.
DeviceInfo queryDevice(const CudaDriver &cu, const Nvml &nvml, int ordinal, CUdevice dev) {
  DeviceInfo d;
  d.ordinal = ordinal;
  char name[256] = {};
  if (cu.cuDeviceGetName(name, sizeof name, dev) == cu::SUCCESS) d.name = name;
  char bus[64] = {};
  if (cu.cuDeviceGetPCIBusId(bus, sizeof bus, dev) == cu::SUCCESS) d.pciBusId = bus;
  std::size_t bytes = 0;
  if (cu.cuDeviceTotalMem(&bytes, dev) == cu::SUCCESS) d.totalMemoryBytes = bytes;
  auto attr = [&](int which) {
    int v = 0;
    return cu.cuDeviceGetAttribute(&v, which, dev) == cu::SUCCESS ? v : 0;
  };
  d.ccMajor = attr(cu::ATTR_COMPUTE_CAPABILITY_MAJOR);
  d.ccMinor = attr(cu::ATTR_COMPUTE_CAPABILITY_MINOR);
  d.smCount = attr(cu::ATTR_MULTIPROCESSOR_COUNT);
  d.l2CacheBytes = static_cast<std::uint64_t>(attr(cu::ATTR_L2_CACHE_SIZE));
  d.memoryBusWidthBits = attr(cu::ATTR_GLOBAL_MEMORY_BUS_WIDTH);
  d.memoryClockKHz = attr(cu::ATTR_MEMORY_CLOCK_RATE);
  d.smClockKHz = attr(cu::ATTR_CLOCK_RATE);
  // Newer drivers may stop reporting the clock attributes; NVML still knows them.
  if (d.memoryClockKHz == 0) d.memoryClockKHz = nvml.maxMemoryClockKHz(d.pciBusId);
  if (d.memoryBusWidthBits == 0) d.memoryBusWidthBits = nvml.memoryBusWidthBits(d.pciBusId);
  return d;
}

}  // namespace

GpuInventory probeGpus() {
  GpuInventory inv;
  CudaDriver cu;
  bool driverLoaded = cu.load();
  if (driverLoaded) cu.cuDriverGetVersion(&inv.driverVersion);

  if (!driverLoaded) {
    const bool absent = !cu.library.isOpen() && cu.library.error().find("No such file") != std::string::npos;
    inv.problem = absent ? "no CUDA driver: libcuda is not installed" : cu.problem();
  } else if (CUresult r = cu.cuInit(0); r != cu::SUCCESS) {
    cu.library.keepLoaded();
    if (r == cu::ERROR_STUB_LIBRARY)
      inv.problem = "no CUDA driver: " + cu.library.path() +
                    " is the toolkit's stub library, not an installed NVIDIA driver";
    else if (r == cu::ERROR_NO_DEVICE)
      inv.problem = "no device: the CUDA driver sees no CUDA-capable GPU";
    else
      inv.problem = "no device: cuInit failed with " + cu.describe(r);
  } else {
    cu.library.keepLoaded();  // the driver keeps threads and state after cuInit
    int count = 0;
    if (CUresult r = cu.cuDeviceGetCount(&count); r != cu::SUCCESS) {
      inv.problem = "no device: cuDeviceGetCount failed with " + cu.describe(r);
    } else if (count == 0) {
      inv.problem = "no device: the CUDA driver sees no CUDA-capable GPU";
    } else {
      Nvml nvml;
      for (int i = 0; i < count; ++i) {
        CUdevice dev = 0;
        if (cu.cuDeviceGet(&dev, i) == cu::SUCCESS) inv.devices.push_back(queryDevice(cu, nvml, i, dev));
      }
      inv.libraries = {driverStatus(cu, inv.driverVersion), probeNvrtc(), probeCupti(), nvml.status()};
      return inv;
    }
  }
  auto status = driverStatus(cu, inv.driverVersion);
  if (status.problem.empty()) status.problem = inv.problem;
  status.loaded = false;  // present or not, it gives no device to work with
  LibraryStatus nvml{.name = "NVML", .problem = "not probed: no CUDA driver"};
  if (driverLoaded) nvml = Nvml().status();
  inv.libraries = {status, probeNvrtc(), probeCupti(), nvml};
  return inv;
}

namespace {

using json_fields::field;

constexpr auto kDeviceFields = std::tuple{
    field("ordinal", &DeviceInfo::ordinal),
    field("name", &DeviceInfo::name),
    field("pci_bus_id", &DeviceInfo::pciBusId),
    field("sm_count", &DeviceInfo::smCount),
    field("memory_bytes", &DeviceInfo::totalMemoryBytes),
    field("l2_cache_bytes", &DeviceInfo::l2CacheBytes),
    field("memory_bus_width_bits", &DeviceInfo::memoryBusWidthBits),
    field("memory_clock_khz", &DeviceInfo::memoryClockKHz),
    field("sm_clock_khz", &DeviceInfo::smClockKHz)};

constexpr auto kLibraryFields = std::tuple{
    field("name", &LibraryStatus::name), field("loaded", &LibraryStatus::loaded), field("path", &LibraryStatus::path),
    field("version", &LibraryStatus::version), field("problem", &LibraryStatus::problem)};

constexpr auto kInventoryFields = std::tuple{
    field("devices", &GpuInventory::devices), field("libraries", &GpuInventory::libraries),
    field("driver_version", &GpuInventory::driverVersion), field("problem", &GpuInventory::problem)};

}  // namespace

// With the derived figures a reader wants: "compute_capability" ("9.0") and the peak bandwidth.
void to_json(nlohmann::json &j, const DeviceInfo &v) {
  json_fields::writeFields(j, v, kDeviceFields);
  j["compute_capability"] = v.computeCapability();
  j["peak_bandwidth_bytes_per_s"] = v.peakBandwidthBytesPerSecond();
}

void from_json(const nlohmann::json &j, DeviceInfo &v) {
  json_fields::readFields(j, v, kDeviceFields);
  std::string cc;
  json_fields::read(j, "compute_capability", cc);
  const auto dot = cc.find('.');
  try {
    v.ccMajor = cc.empty() ? 0 : std::stoi(cc.substr(0, dot));
    v.ccMinor = dot == std::string::npos ? 0 : std::stoi(cc.substr(dot + 1));
  } catch (const std::exception &) {
    throw nlohmann::json::type_error::create(302, "field 'compute_capability': not MAJOR.MINOR: " + cc, &j);
  }
}

void to_json(nlohmann::json &j, const LibraryStatus &v) { json_fields::writeFields(j, v, kLibraryFields); }
void from_json(const nlohmann::json &j, LibraryStatus &v) { json_fields::readFields(j, v, kLibraryFields); }

void to_json(nlohmann::json &j, const GpuInventory &v) {
  json_fields::writeFields(j, v, kInventoryFields);
  j["summary"] = v.summary();
}
void from_json(const nlohmann::json &j, GpuInventory &v) { json_fields::readFields(j, v, kInventoryFields); }

}  // namespace kwb
