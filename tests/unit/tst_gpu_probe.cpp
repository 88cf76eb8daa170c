// The GPU probe on a machine without a usable driver: it must say so, never crash, and still
// find the toolkit's libraries when they are installed.
#include <QtTest>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/gpu/device_info.h"
#include "core/gpu/device_report.h"

class TestGpuProbe : public QObject {
  Q_OBJECT
 private slots:
  void cleanup() { unsetenv("KWB_CUDA_DRIVER_LIBRARY"); }

  void missingDriverMeansCompileOnly() {
    setenv("KWB_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    const auto inv = kwb::probeGpus();
    QVERIFY(!inv.hasDevices());
    QCOMPARE(inv.problem, std::string("no CUDA driver: libcuda is not installed"));
    QCOMPARE(inv.summary(), std::string("No CUDA device: compile-only"));
    QCOMPARE(inv.libraries.size(), std::size_t(4));
    QCOMPARE(inv.libraries[0].name, std::string("CUDA driver"));
    QVERIFY(!inv.libraries[0].loaded);
    QVERIFY(inv.libraries[0].problem.find("/nonexistent/libcuda.so.1") != std::string::npos);
    QCOMPARE(inv.libraries[3].name, std::string("NVML"));
    QVERIFY(!inv.libraries[3].loaded);
    const auto text = kwb::formatInventory(inv);
    // A driver library that exists but cannot be loaded is not "not installed": the reason shows.
    setenv("KWB_CUDA_DRIVER_LIBRARY", KWB_SOURCE_DIR "/README.md", 1);
    const auto bad = kwb::probeGpus();
    QVERIFY2(bad.problem.rfind("no CUDA driver: libcuda not found (tried " KWB_SOURCE_DIR "/README.md)", 0) == 0,
             bad.problem.c_str());
    QVERIFY(text.rfind("No CUDA device: compile-only (no CUDA driver", 0) == 0);
  }

  void stubDriverIsNotADriver() {
    const std::filesystem::path stub = std::filesystem::path(KWB_CUDA_HOME_FOR_TESTS) / "lib64/stubs/libcuda.so";
    if (!std::filesystem::exists(stub)) QSKIP("the CUDA toolkit's stub libcuda.so is not installed here");
    setenv("KWB_CUDA_DRIVER_LIBRARY", stub.c_str(), 1);
    const auto inv = kwb::probeGpus();
    QVERIFY(!inv.hasDevices());
    QVERIFY2(inv.problem.find("stub library") != std::string::npos, inv.problem.c_str());
    QVERIFY(!inv.libraries[0].loaded);
  }

  void toolkitLibrariesFoundWhenInstalled() {
    const std::filesystem::path nvrtc = std::filesystem::path(KWB_CUDA_HOME_FOR_TESTS) / "lib64/libnvrtc.so";
    if (!std::filesystem::exists(nvrtc)) QSKIP("no CUDA toolkit here: NVRTC cannot be found");
    setenv("KWB_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    const auto inv = kwb::probeGpus();
    QCOMPARE(inv.libraries[1].name, std::string("NVRTC"));
    QVERIFY2(inv.libraries[1].loaded, inv.libraries[1].problem.c_str());
    QVERIFY(inv.libraries[1].version.find('.') != std::string::npos);
    QCOMPARE(inv.libraries[2].name, std::string("CUPTI"));
    QVERIFY2(inv.libraries[2].loaded, inv.libraries[2].problem.c_str());
  }

  void peakBandwidthFromClockAndBus() {
    kwb::DeviceInfo d;
    d.memoryClockKHz = 2619000;  // H100 SXM HBM3
    d.memoryBusWidthBits = 5120;
    QCOMPARE(d.peakBandwidthBytesPerSecond(), 2.0 * 2619e6 * 640.0);
    d.ccMajor = 9;
    d.ccMinor = 0;
    QCOMPARE(d.computeCapability(), std::string("9.0"));
  }

  void summaryNamesTheFirstDevice() {
    kwb::GpuInventory inv;
    kwb::DeviceInfo d;
    d.name = "NVIDIA H200";
    d.ccMajor = 9;
    d.smCount = 132;
    d.totalMemoryBytes = 150754820096ull;
    inv.devices = {d, d};
    QCOMPARE(inv.summary(), std::string("NVIDIA H200 (sm_90, 132 SMs, 140 GiB) +1 more"));
  }

  void jsonCarriesEveryFigure() {
    kwb::DeviceInfo d;
    d.name = "GPU";
    d.l2CacheBytes = 62914560;
    const nlohmann::json j = d;
    for (const char *key : {"name", "compute_capability", "sm_count", "memory_bytes", "l2_cache_bytes",
                            "memory_bus_width_bits", "memory_clock_khz", "peak_bandwidth_bytes_per_s"})
      QVERIFY2(j.contains(key), key);
    QCOMPARE(j["l2_cache_bytes"].get<std::uint64_t>(), std::uint64_t(62914560));
  }
};

QTEST_GUILESS_MAIN(TestGpuProbe)
#include "tst_gpu_probe.moc"
