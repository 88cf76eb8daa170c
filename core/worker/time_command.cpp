#include "core/worker/time_command.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/eval/input_generator.h"
#include "core/eval/timing_statistics.h"
#include "core/gpu/cuda_driver.h"
#include "core/gpu/device_info.h"
#include "core/task/manifest_parser.h"
#include "core/text/base64.h"
#include "core/worker/evaluate_command.h"  // kContextLostExitStatus
#include "core/worker/device_context.h"
#include "core/worker/launch_spec.h"
#include "core/worker/worker_server.h"

namespace kwb::worker {

namespace {

using Clock = std::chrono::steady_clock;

CommandError bad(const std::string &what) { return CommandError(error_kind::kInvalidArgument, "time: " + what); }


Json statsJson(const SampleStats &s, const std::vector<double> &samples) {
  return {{"median_ms", s.median}, {"q1_ms", s.q1},       {"q3_ms", s.q3},     {"iqr_ms", s.iqr},
          {"min_ms", s.min},       {"max_ms", s.max},     {"mean_ms", s.mean}, {"samples", s.count},
          {"relative_spread", s.relativeSpread},          {"samples_ms", samples}};
}

double numberField(const Json &p, const char *key, double fallback, double lo, double hi) {
  if (!p.contains(key)) return fallback;
  const auto &v = p[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    throw bad(std::string("'") + key + "' must be a number between " + std::to_string(lo) + " and " +
              std::to_string(hi));
  return v.get<double>();
}

class TimeSession : DeviceContext {
 public:
  explicit TimeSession(std::optional<int> device) : DeviceContext(device) {}
  Json time(const Request &request, EventSink &sink);

 private:
  void ensureContext();
  std::uint64_t l2Bytes_ = 0;
  double peakBandwidth_ = 0;  // bytes/s from probeGpus(); 0 when unknown
  std::string deviceName_;
};

// The context, plus what timing needs to know of the device: L2 size and peak bandwidth.
void TimeSession::ensureContext() {
  if (ready_) return;
  ensureDeviceContext();
  int l2 = 0;
  if (driver_.cuDeviceGetAttribute(&l2, cu::ATTR_L2_CACHE_SIZE, dev_) == cu::SUCCESS && l2 > 0) l2Bytes_ = l2;
  for (const auto &d : probeGpus().devices)
    if (d.ordinal == device_) {
      peakBandwidth_ = d.peakBandwidthBytesPerSecond();
      deviceName_ = d.name;
    }
  ready_ = true;
}

struct Cleanup {
  CudaDriver *driver = nullptr;
  const bool *lost = nullptr;
  std::vector<CUdeviceptr> buffers;
  std::vector<CUmodule> modules;
  std::vector<CUevent> events;
  ~Cleanup() {
    if (!driver || *lost) return;
    for (auto e : events) driver->cuEventDestroy(e);
    for (auto b : buffers) driver->cuMemFree(b);
    for (auto m : modules) driver->cuModuleUnload(m);
  }
};

Json TimeSession::time(const Request &request, EventSink &sink) {
  const auto started = Clock::now();
  const Json &p = request.params;
  if (!p.contains("task") || !p["task"].is_string()) throw bad("'task' (the task folder) is missing");
  if (!p.contains("config") || !p["config"].is_string()) throw bad("'config' (a size configuration name) is missing");
  const std::string folder = p["task"].get<std::string>();
  const std::string configName = p["config"].get<std::string>();
  Task task;
  try {
    if (p.contains("manifest") && p["manifest"].is_string())
      task = parseManifest(p["manifest"].get<std::string>(), folder + "/task.toml", {});
    else
      task = loadTask(folder);
  } catch (const std::exception &e) {
    throw bad(std::string("cannot read the task: ") + e.what());
  }
  const SizeConfig *config = task.config(configName);
  if (!config) throw bad("task '" + task.name + "' has no size configuration '" + configName + "'");

  std::uint64_t seed = 1;
  if (p.contains("seed")) {
    if (!p["seed"].is_number_unsigned()) throw bad("'seed' must be a non-negative integer");
    seed = p["seed"].get<std::uint64_t>();
  }
  StopRule rule;
  rule.timeCapSeconds = numberField(p, "time_cap_ms", 3000, 1, 600000) / 1000.0;
  rule.maxSamples = static_cast<std::size_t>(numberField(p, "max_samples", 1000, 1, 100000));
  rule.minSamples = std::min(rule.maxSamples, static_cast<std::size_t>(numberField(p, "min_samples", 10, 1, 100000)));
  rule.targetSpread = numberField(p, "target_spread", 0.01, 0, 10);
  const double warmupMs = numberField(p, "warmup_ms", 50, 0, 60000);
  const auto warmupLaunches = static_cast<std::size_t>(numberField(p, "warmup_launches", 10, 0, 100000));
  const double flops = numberField(p, "flops", 0, 0, 1e30);
  const double bytes = numberField(p, "bytes", 0, 0, 1e30);

  const LaunchSpec reference = parseLaunchSpec(p.value("reference", Json()), "time", "reference");
  const LaunchSpec candidate = parseLaunchSpec(p.value("candidate", Json()), "time", "candidate");

  struct TensorBuf {
    const Tensor *tensor;
    std::uint64_t count = 1;
    std::size_t bytes = 0;
    CUdeviceptr device = 0;
  };
  std::vector<TensorBuf> tensors;
  std::map<std::string, std::size_t> tensorIndex;
  for (const auto &t : task.tensors) {
    TensorBuf b{&t};
    try {
      for (const auto &dim : t.shape) {
        const auto v = dim.evaluate(config->values);
        if (v < 0) throw bad("tensor '" + t.name + "' has a negative dimension");
        b.count *= static_cast<std::uint64_t>(v);
      }
    } catch (const ExpressionError &e) {
      throw bad("tensor '" + t.name + "' shape: " + e.what());
    }
    b.bytes = static_cast<std::size_t>(b.count * dtypeSize(t.dtype));
    tensorIndex[t.name] = tensors.size();
    tensors.push_back(b);
  }
  for (const auto *spec : {&reference, &candidate})
    for (const auto &a : spec->args)
      if (!tensorIndex.count(a) && !config->values.count(a))
        throw bad("argument '" + a + "' of kernel '" + spec->kernel + "' names no tensor or size of the task");

  if (contextLost_) throw CommandError("context-lost", "the CUDA context was lost earlier; restart the worker");
  ensureContext();

  Json result = {{"config", configName}, {"timer", "cuda-events"}, {"seed", seed},
                 {"not_yet", "CUPTI activity records (kernels on other streams), NVML SM clocks per sample "
                             "and throttling flags, and a correctness re-check of timed outputs come later"}};
  std::string stage = "load";
  Cleanup cleanup;
  cleanup.driver = &driver_;
  cleanup.lost = &contextLost_;
  try {
    auto load = [&](const LaunchSpec &spec, const char *who) -> CUfunction {
      CUmodule module = nullptr;
      CUresult r = driver_.cuModuleLoadData(&module, spec.image.data());
      if (r != cu::SUCCESS) throw failure(r, std::string("loading the ") + who + " module");
      cleanup.modules.push_back(module);
      CUfunction f = nullptr;
      r = driver_.cuModuleGetFunction(&f, module, spec.kernel.c_str());
      if (r != cu::SUCCESS) throw failure(r, std::string("the ") + who + " module has no kernel '" + spec.kernel + "'");
      if (spec.sharedBytes > 48 * 1024)
        driver_.cuFuncSetAttribute(f, cu::FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(spec.sharedBytes));
      return f;
    };
    CUfunction refFunction = load(reference, "reference");
    CUfunction candFunction = load(candidate, "candidate");

    stage = "allocate";
    for (auto &t : tensors) {
      if (!t.bytes) continue;
      check(driver_.cuMemAlloc(&t.device, t.bytes),
            "allocating " + std::to_string(t.bytes) + " bytes for tensor '" + t.tensor->name + "'");
      cleanup.buffers.push_back(t.device);
    }
    // The L2 flush buffer: at least twice the L2 (64 MiB when the size is unknown).
    const std::size_t flushBytes = std::max<std::size_t>(2 * l2Bytes_, std::size_t{64} << 20);
    CUdeviceptr flush = 0;
    check(driver_.cuMemAlloc(&flush, flushBytes), "allocating the L2 flush buffer");
    cleanup.buffers.push_back(flush);

    stage = "inputs";
    for (const auto &t : tensors) {
      if (!t.bytes) continue;
      if (t.tensor->role == TensorRole::Out) {
        check(driver_.cuMemsetD8(t.device, 0, t.bytes), "clearing an output");
      } else {
        const auto input = generateInput(*t.tensor, t.count, seed);
        check(driver_.cuMemcpyHtoD(t.device, input.data(), t.bytes), "copying input '" + t.tensor->name + "'");
      }
    }

    CUevent startEvent = nullptr, stopEvent = nullptr;
    check(driver_.cuEventCreate(&startEvent, 0), "creating an event");
    cleanup.events.push_back(startEvent);
    check(driver_.cuEventCreate(&stopEvent, 0), "creating an event");
    cleanup.events.push_back(stopEvent);

    auto paramsFor = [&](const LaunchSpec &spec, std::vector<CUdeviceptr> &pointers, std::vector<long long> &sizes) {
      pointers.reserve(spec.args.size());
      sizes.reserve(spec.args.size());
      std::vector<void *> params;
      for (const auto &a : spec.args) {
        if (auto it = tensorIndex.find(a); it != tensorIndex.end()) {
          pointers.push_back(tensors[it->second].device);
          params.push_back(&pointers.back());
        } else {
          sizes.push_back(static_cast<long long>(config->values.at(a)));
          params.push_back(&sizes.back());
        }
      }
      return params;
    };
    std::vector<CUdeviceptr> refPointers, candPointers;
    std::vector<long long> refSizes, candSizes;
    auto refParams = paramsFor(reference, refPointers, refSizes);
    auto candParams = paramsFor(candidate, candPointers, candSizes);

    unsigned flushValue = 0;
    // One sample: flush L2, event, launch, event, wait; milliseconds of GPU time.
    auto sample = [&](bool isCandidate, bool doFlush) -> double {
      const LaunchSpec &spec = isCandidate ? candidate : reference;
      const std::string who = isCandidate ? "candidate" : "reference";
      if (doFlush) {
        stage = "flush";
        check(driver_.cuMemsetD8(flush, static_cast<unsigned char>((++flushValue & 1) ? 0xA5 : 0x5A), flushBytes),
              "flushing the L2 cache");
      }
      stage = who + " launch";
      check(driver_.cuEventRecord(startEvent, nullptr), "recording an event");
      check(driver_.cuLaunchKernel(isCandidate ? candFunction : refFunction, spec.grid[0], spec.grid[1], spec.grid[2],
                                   spec.block[0], spec.block[1], spec.block[2], spec.sharedBytes, nullptr,
                                   isCandidate ? candParams.data() : refParams.data(), nullptr),
            "launching " + who + " kernel '" + spec.kernel + "'");
      check(driver_.cuEventRecord(stopEvent, nullptr), "recording an event");
      stage = who + " run";
      check(driver_.cuEventSynchronize(stopEvent), who + " kernel '" + spec.kernel + "'");
      float ms = 0;
      check(driver_.cuEventElapsedTime(&ms, startEvent, stopEvent), "reading the event timer");
      return ms;
    };

    // Warm-up: each kernel until ≥ warmup_ms of GPU time and ≥ warmup_launches (at most 10 s).
    sink.progress({{"stage", "warm-up"}, {"config", configName}});
    Json warmup = Json::object();
    for (bool isCandidate : {true, false}) {
      double gpuMs = 0;
      std::size_t launches = 0;
      const auto t0 = Clock::now();
      while ((gpuMs < warmupMs || launches < warmupLaunches) &&
             std::chrono::duration<double>(Clock::now() - t0).count() < 10.0) {
        gpuMs += sample(isCandidate, false);
        ++launches;
      }
      warmup[isCandidate ? "candidate" : "reference"] = {{"launches", launches}, {"gpu_ms", gpuMs}};
    }
    result["warmup"] = warmup;

    // Interleaved samples until the spread is small, the time cap or the sample cap.
    std::vector<double> candSamples, refSamples;
    SampleStats candStats, refStats;
    const auto samplingStarted = Clock::now();
    StopReason reason = StopReason::Continue;
    auto lastProgress = samplingStarted;
    while (reason == StopReason::Continue) {
      candSamples.push_back(sample(true, true));
      refSamples.push_back(sample(false, true));
      if (candSamples.size() < rule.minSamples) continue;
      candStats = summarizeSamples(candSamples);
      refStats = summarizeSamples(refSamples);
      const double elapsed = std::chrono::duration<double>(Clock::now() - samplingStarted).count();
      reason = shouldStopSampling(candStats, refStats, elapsed, rule);
      if (Clock::now() - lastProgress > std::chrono::milliseconds(250)) {
        lastProgress = Clock::now();
        sink.progress({{"stage", "timing"}, {"config", configName}, {"samples", candSamples.size()},
                       {"candidate_spread", candStats.relativeSpread}, {"reference_spread", refStats.relativeSpread}});
      }
    }
    candStats = summarizeSamples(candSamples);
    refStats = summarizeSamples(refSamples);
    result["verdict"] = "timed";
    result["stop_reason"] = toString(reason);
    result["l2_cache_bytes"] = l2Bytes_;
    result["l2_flush_bytes"] = flushBytes;
    result["candidate"] = statsJson(candStats, candSamples);
    result["reference"] = statsJson(refStats, refSamples);
    result["speedup"] = candStats.median > 0 ? Json(refStats.median / candStats.median) : Json(nullptr);
    const double floorSeconds = rooflineFloorSeconds(flops, bytes, peakBandwidth_);
    result["roofline"] = {{"flops", flops},
                          {"bytes", bytes},
                          {"peak_bandwidth_bytes_per_s", peakBandwidth_},
                          {"peak_flops_per_s", kRooflinePeakFlopsPerSecond},
                          {"floor_ms", floorSeconds * 1000.0}};
    const bool suspicious = floorSeconds > 0 && candStats.median * 1e-3 < floorSeconds;
    result["suspicious"] = suspicious;
    if (suspicious) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "the candidate's median %.4g ms is below the roofline floor %.4g ms "
                    "(max(bytes / (2 x peak bandwidth), flops / 100 TFLOP/s)); work skipped or done elsewhere?",
                    candStats.median, floorSeconds * 1000.0);
      result["suspicious_reason"] = buf;
    }
    result["context_lost"] = false;
    result["seconds"] = std::chrono::duration<double>(Clock::now() - started).count();
    return result;
  } catch (const CudaFailure &f) {
    result["verdict"] = stage == "load" && !f.lost ? "load-error" : "runtime-error";
    result["error_name"] = f.name;
    result["stage"] = stage;
    result["reason"] = f.message;
    result["context_lost"] = f.lost;
    if (f.lost) {
      std::cerr << "kwb-worker: the CUDA context is lost (" << f.name << "); exiting after the reply\n";
      sink.stopAfterReply(kContextLostExitStatus);
    }
    return result;
  }
}

}  // namespace

void addTimeCommand(WorkerServer &server, std::optional<int> device) {
  auto *session = new TimeSession(device);  // lives as long as the process, like evaluate's
  server.addCommand("time", [session](const Request &request, EventSink &sink) { return session->time(request, sink); });
}

}  // namespace kwb::worker
