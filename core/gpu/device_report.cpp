#include "core/gpu/device_report.h"

#include <cstdio>
#include <sstream>

#include "core/text/printable.h"

namespace kwb {

std::string formatInventory(const GpuInventory &inv) {
  std::ostringstream out;
  if (inv.devices.empty()) {
    out << "No CUDA device: compile-only (" << inv.problem << ")\n";
  } else {
    for (const auto &d : inv.devices) {
      out << "GPU " << d.ordinal << ": " << d.name << "\n"
          << "  PCI bus id              " << d.pciBusId << "\n"
          << "  compute capability      " << d.computeCapability() << " (sm_" << d.ccMajor << d.ccMinor << ")\n"
          << "  SMs                     " << d.smCount << "\n"
          << "  memory                  " << fixed(d.totalMemoryBytes / 1073741824.0, 1) << " GiB ("
          << d.totalMemoryBytes << " bytes)\n"
          << "  L2 cache                " << fixed(d.l2CacheBytes / 1048576.0, 1) << " MiB\n"
          << "  memory bus width        " << d.memoryBusWidthBits << " bits\n"
          << "  memory clock (peak)     " << (d.memoryClockKHz ? fixed(d.memoryClockKHz / 1000.0, 0) + " MHz" : "unknown") << "\n"
          << "  SM clock (peak)         " << (d.smClockKHz ? fixed(d.smClockKHz / 1000.0, 0) + " MHz" : "unknown") << "\n"
          << "  peak memory bandwidth   "
          << (d.peakBandwidthBytesPerSecond() > 0 ? fixed(d.peakBandwidthBytesPerSecond() / 1e9, 1) + " GB/s (theoretical)" : "unknown")
          << "\n";
    }
  }
  out << "Libraries:\n";
  for (const auto &lib : inv.libraries) {
    out << "  " << lib.name << ": ";
    if (lib.loaded) out << (lib.version.empty() ? "loaded" : lib.version) << " (" << lib.path << ")\n";
    else out << "unavailable: " << lib.problem << "\n";
  }
  return out.str();
}

}  // namespace kwb
