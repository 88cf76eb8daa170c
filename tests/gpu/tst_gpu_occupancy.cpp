// On a machine with a GPU: our occupancy calculation (core/compile/occupancy.h) agrees exactly
// with the driver's cuOccupancyMaxActiveBlocksPerMultiprocessor. Kernels of different register
// and shared-memory appetite are compiled with NVRTC for the device, their real register count
// and static shared memory read back with cuFuncGetAttribute, and both sides are asked about
// many block sizes and dynamic shared-memory sizes. The limits table's row for the device is
// checked against the device's own attributes too. Skips, saying why, where there is no device.
#include <QtTest>

#include <algorithm>
#include <string>
#include <vector>

#include "core/compile/arch_limits.h"
#include "core/compile/occupancy.h"
#include "core/gpu/cuda_driver.h"
#include "core/gpu/cuda_libraries.h"
#include "core/gpu/device_info.h"

namespace {

using nvrtcProgram = struct _nvrtcProgram *;

struct Nvrtc {
  kwb::DynamicLibrary lib;
  int (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *) = nullptr;
  int (*compile)(nvrtcProgram, int, const char *const *) = nullptr;
  int (*logSize)(nvrtcProgram, std::size_t *) = nullptr;
  int (*log)(nvrtcProgram, char *) = nullptr;
  int (*cubinSize)(nvrtcProgram, std::size_t *) = nullptr;
  int (*cubin)(nvrtcProgram, char *) = nullptr;
  int (*destroy)(nvrtcProgram *) = nullptr;

  bool load() {
    return kwb::openNvrtc(lib) && lib.resolve(create, "nvrtcCreateProgram") &&
           lib.resolve(compile, "nvrtcCompileProgram") && lib.resolve(logSize, "nvrtcGetProgramLogSize") &&
           lib.resolve(log, "nvrtcGetProgramLog") && lib.resolve(cubinSize, "nvrtcGetCUBINSize") &&
           lib.resolve(cubin, "nvrtcGetCUBIN") && lib.resolve(destroy, "nvrtcDestroyProgram");
  }

  // The CUBIN, or an empty string with `problem` set.
  std::string build(const std::string &source, const std::vector<std::string> &options, std::string &problem) {
    nvrtcProgram prog = nullptr;
    if (create(&prog, source.c_str(), "occupancy_kernels.cu", 0, nullptr, nullptr) != 0) {
      problem = "nvrtcCreateProgram failed";
      return {};
    }
    std::vector<const char *> argv;
    for (const auto &o : options) argv.push_back(o.c_str());
    std::string image;
    if (compile(prog, static_cast<int>(argv.size()), argv.data()) != 0) {
      std::size_t n = 0;
      logSize(prog, &n);
      std::string text(n, '\0');
      log(prog, text.data());
      problem = "compile failed:\n" + text;
    } else {
      std::size_t n = 0;
      cubinSize(prog, &n);
      image.resize(n);
      cubin(prog, image.data());
    }
    destroy(&prog);
    return image;
  }
};

// Kernels whose appetite is set by macros: `heavy` keeps WIDTH floats live per thread (its
// register count follows -maxrregcount), `tiled` holds TILE floats of static shared memory,
// `heavyTiled` does both.
// Every kernel declares dynamic shared memory so each launch size is meaningful.
constexpr const char *kSource = R"(
#ifndef WIDTH
#define WIDTH 64
#endif
#ifndef TILE
#define TILE 256
#endif
extern "C" __global__ void light(const float *in, float *out, int n) {
  extern __shared__ float dyn[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.0f + (n < 0 ? dyn[threadIdx.x] : 0.0f);
}
extern "C" __global__ void heavy(const float *in, float *out, int n) {
  extern __shared__ float dyn[];
  float acc[WIDTH];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < WIDTH; ++k) acc[k] = in[(t + k * 977) % n];
#pragma unroll
  for (int r = 1; r < 6; ++r) {
#pragma unroll
    for (int k = 0; k < WIDTH; ++k) acc[k] = fmaf(acc[k], acc[(k + r) % WIDTH], 1.0f);
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < WIDTH; ++k) s += acc[k] * (float)(k + 1);
  out[t] = s + (n < 0 ? dyn[0] : 0.0f);
}
extern "C" __global__ void tiled(const float *in, float *out, int n) {
  __shared__ float tile[TILE];
  extern __shared__ float dyn[];
  for (int k = threadIdx.x; k < TILE; k += blockDim.x) tile[k] = in[(blockIdx.x * TILE + k) % n];
  __syncthreads();
  float s = 0.0f;
  for (int k = 0; k < 8; ++k) s += tile[(threadIdx.x * 7 + k) % TILE];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s + (n < 0 ? dyn[0] : 0.0f);
}
extern "C" __global__ void heavyTiled(const float *in, float *out, int n) {
  __shared__ float tile[TILE];
  extern __shared__ float dyn[];
  float acc[WIDTH];
  for (int k = threadIdx.x; k < TILE; k += blockDim.x) tile[k] = in[(blockIdx.x * TILE + k) % n];
  __syncthreads();
#pragma unroll
  for (int k = 0; k < WIDTH; ++k) acc[k] = tile[(threadIdx.x + k * 33) % TILE];
#pragma unroll
  for (int r = 1; r < 6; ++r) {
#pragma unroll
    for (int k = 0; k < WIDTH; ++k) acc[k] = fmaf(acc[k], acc[(k + r) % WIDTH], 1.0f);
  }
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < WIDTH; ++k) s += acc[k] * (float)(k + 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s + (n < 0 ? dyn[0] : 0.0f);
}
)";

struct Variant {
  const char *label;
  const char *kernel;
  std::vector<std::string> options;  // besides the architecture
};

struct LoadedKernel {
  std::string label;
  kwb::CUmodule module = nullptr;
  kwb::CUfunction function = nullptr;
  int registers = 0;
  int staticShared = 0;
  int localBytes = 0;
  int maxThreads = 0;
};

}  // namespace

class TestGpuOccupancy : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    const auto inventory = kwb::probeGpus();
    if (!inventory.hasDevices())
      QSKIP(qPrintable(QStringLiteral("no CUDA device here (%1)").arg(QString::fromStdString(inventory.problem))));
    QVERIFY2(driver_.load(), driver_.problem().c_str());
    driver_.library.keepLoaded();
    QVERIFY2(check(driver_.cuInit(0)), "cuInit");
    QVERIFY2(check(driver_.cuDeviceGet(&device_, 0)), "cuDeviceGet");
    QVERIFY2(check(driver_.cuDevicePrimaryCtxRetain(&context_, device_)), "cuDevicePrimaryCtxRetain");
    retained_ = true;
    QVERIFY2(check(driver_.cuCtxSetCurrent(context_)), "cuCtxSetCurrent");
    ccMajor_ = attribute(kwb::cu::ATTR_COMPUTE_CAPABILITY_MAJOR);
    ccMinor_ = attribute(kwb::cu::ATTR_COMPUTE_CAPABILITY_MINOR);
    auto found = kwb::archLimits(ccMajor_, ccMinor_);
    QVERIFY2(found, found.error.c_str());
    limits_ = *found.limits;
    qInfo("%s: %s (%s)", inventory.devices.front().name.c_str(), limits_.arch().c_str(),
          std::string(limits_.family).c_str());
  }

  void tableRowMatchesTheDevice() {
    QCOMPARE(attribute(kwb::cu::ATTR_WARP_SIZE), limits_.warpSize);
    QCOMPARE(attribute(kwb::cu::ATTR_MAX_THREADS_PER_BLOCK), limits_.maxThreadsPerBlock);
    QCOMPARE(attribute(kwb::cu::ATTR_MAX_THREADS_PER_MULTIPROCESSOR), limits_.maxThreadsPerSM);
    QCOMPARE(attribute(kwb::cu::ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR), limits_.maxBlocksPerSM);
    QCOMPARE(attribute(kwb::cu::ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR), limits_.registersPerSM);
    QCOMPARE(attribute(kwb::cu::ATTR_MAX_REGISTERS_PER_BLOCK), limits_.maxRegistersPerBlock);
    QCOMPARE(qint64(attribute(kwb::cu::ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)), qint64(limits_.sharedPerSM));
    QCOMPARE(qint64(attribute(kwb::cu::ATTR_MAX_SHARED_MEMORY_PER_BLOCK)), qint64(limits_.sharedPerBlockDefault));
    QCOMPARE(qint64(attribute(kwb::cu::ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)),
             qint64(limits_.sharedPerBlockOptIn));
    QCOMPARE(qint64(attribute(kwb::cu::ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK)),
             qint64(limits_.sharedReservedPerBlock));
  }

  void loadKernels() {
    Nvrtc nvrtc;
    QVERIFY2(nvrtc.load(), ("NVRTC is not available: " + nvrtc.lib.error()).c_str());
    const std::vector<Variant> variants{
        {"light", "light", {}},
        {"heavy", "heavy", {}},
        {"heavy r32", "heavy", {"-maxrregcount=32"}},
        {"heavy r40", "heavy", {"-maxrregcount=40"}},
        {"heavy r56", "heavy", {"-maxrregcount=56"}},
        {"heavy r72", "heavy", {"-maxrregcount=72"}},
        {"heavy r80", "heavy", {"-maxrregcount=80"}},
        {"heavy r96", "heavy", {"-maxrregcount=96"}},
        {"heavy128 r128", "heavy", {"-DWIDTH=128", "-maxrregcount=128"}},
        {"heavy240 r168", "heavy", {"-DWIDTH=240", "-maxrregcount=168"}},
        {"heavy240 r255", "heavy", {"-DWIDTH=240", "-maxrregcount=255"}},
        {"tiled 4000B", "tiled", {"-DTILE=1000"}},
        {"tiled 16KiB", "tiled", {"-DTILE=4096"}},
        {"tiled 48000B", "tiled", {"-DTILE=12000"}},
        {"heavyTiled 20000B", "heavyTiled", {"-DTILE=5000"}},
        {"heavyTiled 32KiB r72", "heavyTiled", {"-DTILE=8192", "-maxrregcount=72"}},
    };
    for (const auto &v : variants) {
      std::vector<std::string> options{"--gpu-architecture=" + limits_.arch(), "-std=c++17"};
      options.insert(options.end(), v.options.begin(), v.options.end());
      std::string problem;
      const std::string image = nvrtc.build(kSource, options, problem);
      QVERIFY2(!image.empty(), (std::string(v.label) + ": " + problem).c_str());
      LoadedKernel k;
      k.label = v.label;
      QVERIFY2(check(driver_.cuModuleLoadData(&k.module, image.data())), v.label);
      kernels_.push_back(k);
      auto &loaded = kernels_.back();
      QVERIFY2(check(driver_.cuModuleGetFunction(&loaded.function, loaded.module, v.kernel)), v.label);
      loaded.registers = functionAttribute(loaded.function, kwb::cu::FUNC_ATTR_NUM_REGS);
      loaded.staticShared = functionAttribute(loaded.function, kwb::cu::FUNC_ATTR_SHARED_SIZE_BYTES);
      loaded.localBytes = functionAttribute(loaded.function, kwb::cu::FUNC_ATTR_LOCAL_SIZE_BYTES);
      loaded.maxThreads = functionAttribute(loaded.function, kwb::cu::FUNC_ATTR_MAX_THREADS_PER_BLOCK);
      // Opt in to the most dynamic shared memory the block may have, as our calculation assumes.
      const int maxDynamic = static_cast<int>(limits_.sharedPerBlockOptIn) - loaded.staticShared;
      QVERIFY2(check(driver_.cuFuncSetAttribute(loaded.function, kwb::cu::FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                maxDynamic)),
               v.label);
    }
    qInfo("%-20s %5s %8s %8s %11s", "kernel", "regs", "static", "local", "max threads");
    for (const auto &k : kernels_)
      qInfo("%-20s %5d %8d %8d %11d", k.label.c_str(), k.registers, k.staticShared, k.localBytes, k.maxThreads);
  }

  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK is the driver's largest launchable block for the
  // function (896 at 72 registers, 256 at 255): our rules must draw the line at the same size.
  void largestBlockMatchesTheDriver() {
    QVERIFY(!kernels_.empty());
    for (const auto &k : kernels_) {
      int largest = 0;
      for (int block = 1; block <= limits_.maxThreadsPerBlock; ++block)
        if (kwb::computeOccupancy(limits_, block, k.registers, k.staticShared).launchable()) largest = block;
      QVERIFY2(largest == k.maxThreads, (k.label + ": ours " + std::to_string(largest) + ", driver " +
                                         std::to_string(k.maxThreads)).c_str());
    }
  }

  void agreesWithTheDriver() {
    QVERIFY(!kernels_.empty());
    std::vector<int> blockSizes{1, 33, 100, 250, 500, 800, 999};
    for (int b = 32; b <= limits_.maxThreadsPerBlock; b += 32) blockSizes.push_back(b);
    std::sort(blockSizes.begin(), blockSizes.end());
    blockSizes.erase(std::unique(blockSizes.begin(), blockSizes.end()), blockSizes.end());

    int compared = 0;
    int impossible = 0;
    std::vector<std::string> mismatches;
    qInfo("%-20s %5s %6s %7s %6s %6s  %s", "kernel", "regs", "block", "dynamic", "ours", "driver", "explanation");
    for (const auto &k : kernels_) {
      const std::int64_t maxDynamic = limits_.sharedPerBlockOptIn - k.staticShared;
      std::vector<std::int64_t> dynamicSizes{0, 1, 1000, 4 * 1024, 16 * 1024, 32 * 1024, 48 * 1024 - k.staticShared,
                                             64 * 1024, 100 * 1024, 150 * 1024, maxDynamic, maxDynamic + 1};
      std::sort(dynamicSizes.begin(), dynamicSizes.end());
      dynamicSizes.erase(std::unique(dynamicSizes.begin(), dynamicSizes.end()), dynamicSizes.end());
      for (int block : blockSizes) {
        for (std::int64_t dynamic : dynamicSizes) {
          if (dynamic < 0) continue;
          const auto ours = kwb::computeOccupancy(limits_, block, k.registers, k.staticShared + dynamic);
          int driverBlocks = 0;
          const kwb::CUresult r = driver_.cuOccupancyMaxActiveBlocksPerMultiprocessor(
              &driverBlocks, k.function, block, static_cast<std::size_t>(dynamic));
          ++compared;
          std::string driverSays = std::to_string(driverBlocks);
          bool agree = false;
          if (r != kwb::cu::SUCCESS) {
            driverSays = driver_.describe(r);
            agree = !ours.launchable();  // a refusal is the driver's way of saying 0
          } else {
            agree = driverBlocks == ours.activeBlocksPerSM;
          }
          if (!ours.launchable()) ++impossible;
          const bool shown = (block == 128 || block == 256 || block == 800 || block == 1024) &&
                             (dynamic == 0 || dynamic == 32 * 1024 || dynamic == maxDynamic);
          if (shown || !agree)
            qInfo("%-20s %5d %6d %7lld %6d %6s  %s%s", k.label.c_str(), k.registers, block,
                  static_cast<long long>(dynamic), ours.activeBlocksPerSM, driverSays.c_str(),
                  ours.explanation.c_str(), agree ? "" : "   <-- MISMATCH");
          if (!agree)
            mismatches.push_back(k.label + " (" + std::to_string(k.registers) + " regs, " +
                                 std::to_string(k.staticShared) + " B static), block " + std::to_string(block) +
                                 ", dynamic " + std::to_string(dynamic) + ": ours " +
                                 std::to_string(ours.activeBlocksPerSM) + ", driver " + driverSays);
        }
      }
    }
    qInfo("%d launch configurations compared (%d impossible by our rules), %zu disagree", compared, impossible,
          mismatches.size());
    std::string report;
    for (std::size_t i = 0; i < mismatches.size() && i < 20; ++i) report += "\n  " + mismatches[i];
    QVERIFY2(mismatches.empty(), report.c_str());
  }

  void cleanupTestCase() {
    for (auto &k : kernels_)
      if (k.module) driver_.cuModuleUnload(k.module);
    kernels_.clear();
    if (retained_) {
      driver_.cuCtxSetCurrent(nullptr);
      driver_.cuDevicePrimaryCtxRelease(device_);
    }
  }

 private:
  bool check(kwb::CUresult r) {
    if (r == kwb::cu::SUCCESS) return true;
    qWarning("CUDA driver call failed: %s", driver_.describe(r).c_str());
    return false;
  }
  int attribute(int which) {
    int v = 0;
    if (!check(driver_.cuDeviceGetAttribute(&v, which, device_))) return -1;
    return v;
  }
  int functionAttribute(kwb::CUfunction f, int which) {
    int v = 0;
    if (!check(driver_.cuFuncGetAttribute(&v, which, f))) return -1;
    return v;
  }

  kwb::CudaDriver driver_;
  kwb::CUdevice device_ = 0;
  kwb::CUcontext context_ = nullptr;
  bool retained_ = false;
  int ccMajor_ = 0;
  int ccMinor_ = 0;
  kwb::ArchLimits limits_;
  std::vector<LoadedKernel> kernels_;
};

QTEST_GUILESS_MAIN(TestGpuOccupancy)
#include "tst_gpu_occupancy.moc"
