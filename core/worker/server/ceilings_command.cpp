#include "core/worker/server/ceilings_command.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/text/base64.h"
#include "core/worker/commands.h"
#include "core/worker/server/device_context.h"
#include "core/worker/server/worker_server.h"

namespace kwb::worker {

namespace {

using Json = nlohmann::json;

constexpr int kRuns = 5;  // timed runs of each measurement after one warm-up; the fastest counts

class CeilingsContext : DeviceContext {
 public:
  explicit CeilingsContext(std::optional<int> device) : DeviceContext(device) {}

  CeilingsReply ceilings(const CeilingsRequest &request, EventSink &sink) {
    ensureDeviceContext();
    CeilingsReply result;
    std::string stage = "setup";
    try {
      char name[256] = {};
      check(driver_.cuDeviceGetName(name, sizeof name, dev_), "device name");
      char bus[64] = {};
      check(driver_.cuDeviceGetPCIBusId(bus, sizeof bus, dev_), "PCI bus id");
      int driverVersion = 0, sms = 0;
      check(driver_.cuDriverGetVersion(&driverVersion), "driver version");
      check(driver_.cuDeviceGetAttribute(&sms, cu::ATTR_MULTIPROCESSOR_COUNT, dev_), "SM count");
      result.device = name;
      result.pciBusId = bus;
      result.driverVersion = driverVersion;
      result.sms = sms;

      check(driver_.cuEventCreate(&start_, 0), "event");
      check(driver_.cuEventCreate(&stop_, 0), "event");

      // Copy: device to device, read + write counted, as the tasks count bytes.
      stage = "copy";
      const std::size_t copyBytes = request.copyBytes;
      CUdeviceptr a = 0, b = 0;
      check(driver_.cuMemAlloc(&a, copyBytes), "copy buffer");
      const CUresult rb = driver_.cuMemAlloc(&b, copyBytes);
      if (rb != cu::SUCCESS) {
        driver_.cuMemFree(a);
        check(rb, "copy buffer");
      }
      double copySeconds = 0;
      try {
        copySeconds = best([&] { check(driver_.cuMemcpyDtoD(b, a, copyBytes), "copy"); });
      } catch (...) {
        driver_.cuMemFree(a);
        driver_.cuMemFree(b);
        throw;
      }
      driver_.cuMemFree(a);
      driver_.cuMemFree(b);
      result.copyBytes = copyBytes;
      result.copySeconds = copySeconds;
      result.copyBytesPerS = 2.0 * static_cast<double>(copyBytes) / copySeconds;
      sink.progress({{"stage", "copy"}});

      // f32 FMA rate, and the tensor-core rate when its kernel came.
      stage = "fma";
      result.fp32FlopsPerS = kernelRate(request.fma, sms, result.fmaSeconds, result.fmaFlops, "fma");
      sink.progress({{"stage", "fma"}});
      if (request.mma) {
        stage = "mma";
        result.tensorFlopsPerS = kernelRate(*request.mma, sms, result.mmaSeconds, result.mmaFlops, "mma");
      }
      destroyEvents();
      result.verdict = "measured";
      return result;
    } catch (const CudaFailure &f) {
      destroyEvents();
      runtimeError(f, stage, result, sink);
      return result;
    }
  }

 private:
  // The fastest of kRuns timed runs of `work` (after one warm-up), in seconds.
  template <class Work>
  double best(Work work) {
    work();
    check(driver_.cuCtxSynchronize(), "warm-up");
    float bestMs = 0;
    for (int i = 0; i < kRuns; ++i) {
      check(driver_.cuEventRecord(start_, nullptr), "event record");
      work();
      check(driver_.cuEventRecord(stop_, nullptr), "event record");
      check(driver_.cuEventSynchronize(stop_), "event wait");
      float ms = 0;
      check(driver_.cuEventElapsedTime(&ms, start_, stop_), "event time");
      if (i == 0 || ms < bestMs) bestMs = ms;
    }
    return static_cast<double>(bestMs) * 1e-3;
  }

  // One of the client's kernels; returns flops per second, with the time and flops of the best run.
  double kernelRate(const CeilingKernel &k, int sms, double &seconds, double &flops, const std::string &what) {
    if (k.blocksPerSm < 1 || k.blocksPerSm > 64 || k.threads < 1 || k.threads > 1024 || k.iters < 1 ||
        k.iters > (1 << 30))
      throw CommandError(error_kind::kInvalidArgument,
                         "ceilings: " + what + ": blocks_per_sm (1-64), threads (1-1024) or iters out of range");
    const auto image = base64Decode(k.cubin);
    if (!image) throw CommandError("bad-request", what + ": 'cubin' is not valid base64");
    CUmodule module = nullptr;
    check(driver_.cuModuleLoadData(&module, image->data()), what + " module");
    seconds = 0;
    flops = 0;
    CUdeviceptr out = 0;
    try {
      CUfunction f = nullptr;
      check(driver_.cuModuleGetFunction(&f, module, k.kernel.c_str()), what + " kernel");
      const unsigned blocks = static_cast<unsigned>(sms * k.blocksPerSm);
      const unsigned threads = static_cast<unsigned>(k.threads);
      int iters = static_cast<int>(k.iters);
      check(driver_.cuMemAlloc(&out, sizeof(float) * threads), what + " output");
      void *params[] = {&out, &iters};
      seconds = best([&] {
        check(driver_.cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, nullptr, params, nullptr), what + " launch");
      });
      flops = static_cast<double>(blocks) * threads * iters * k.flopsPerThreadIter;
    } catch (...) {
      if (out) driver_.cuMemFree(out);
      driver_.cuModuleUnload(module);
      throw;
    }
    driver_.cuMemFree(out);
    driver_.cuModuleUnload(module);
    return seconds > 0 ? flops / seconds : 0.0;
  }

  void destroyEvents() {
    if (start_) driver_.cuEventDestroy(start_);
    if (stop_) driver_.cuEventDestroy(stop_);
    start_ = stop_ = nullptr;
  }

  CUevent start_ = nullptr, stop_ = nullptr;
};

}  // namespace

void addCeilingsCommand(WorkerServer &server, std::optional<int> device) {
  addDeviceCommand(server, "ceilings", device, &CeilingsContext::ceilings);
}

}  // namespace kwb::worker
