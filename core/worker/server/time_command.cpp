#include "core/worker/server/time_command.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/eval/compare.h"
#include "core/eval/evaluation_result.h"
#include "core/eval/input_generator.h"
#include "core/eval/timing_statistics.h"
#include "core/gpu/cuda_driver.h"
#include "core/gpu/cuda_libraries.h"
#include "core/gpu/device_info.h"
#include "core/gpu/kernel_activity.h"
#include "core/task/manifest_parser.h"
#include "core/text/base64.h"
#include "core/worker/server/evaluate_command.h"  // kContextLostExitStatus
#include "core/worker/server/device_context.h"
#include "core/worker/server/launch_spec.h"
#include "core/worker/server/worker_server.h"

namespace kwb::worker {

namespace {

using Clock = std::chrono::steady_clock;

CommandError bad(const std::string &what) { return CommandError(error_kind::kInvalidArgument, "time: " + what); }


Json statsJson(const SampleStats &s, const std::vector<double> &samples) {
  Json j = s;
  j["samples_ms"] = samples;
  return j;
}

double numberField(const Json &p, const char *key, double fallback, double lo, double hi) {
  if (!p.contains(key)) return fallback;
  const auto &v = p[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    throw bad(std::string("'") + key + "' must be a number between " + std::to_string(lo) + " and " +
              std::to_string(hi));
  return v.get<double>();
}

class TimingContext : DeviceContext {
 public:
  explicit TimingContext(std::optional<int> device) : DeviceContext(device) {}
  Json time(const Request &request, EventSink &sink);

 private:
  void ensureContext();
  std::uint64_t l2Bytes_ = 0;
  double peakBandwidth_ = 0;  // bytes/s from probeGpus(); 0 when unknown
  std::string deviceName_, pciBusId_;
  std::unique_ptr<Nvml> nvml_;
  CUmodule flushModule_ = nullptr;  // the L2 flush kernel, loaded once
  unsigned smCount_ = 1;
  double peakSmClockMHz_ = 0;
};

// The context, plus what timing needs to know of the device: L2 size, peak bandwidth, NVML.
void TimingContext::ensureContext() {
  if (ready_) return;
  ensureDeviceContext();
  int l2 = 0;
  if (driver_.cuDeviceGetAttribute(&l2, cu::ATTR_L2_CACHE_SIZE, dev_) == cu::SUCCESS && l2 > 0) l2Bytes_ = l2;
  int sms = 0;
  if (driver_.cuDeviceGetAttribute(&sms, cu::ATTR_MULTIPROCESSOR_COUNT, dev_) == cu::SUCCESS && sms > 0) smCount_ = sms;
  for (const auto &d : probeGpus().devices)
    if (d.ordinal == device_) {
      peakBandwidth_ = d.peakBandwidthBytesPerSecond();
      deviceName_ = d.name;
      pciBusId_ = d.pciBusId;
      peakSmClockMHz_ = d.smClockKHz / 1000.0;
    }
  nvml_ = std::make_unique<Nvml>();
}

struct Cleanup {
  CudaDriver *driver = nullptr;
  const bool *lost = nullptr;
  std::vector<CUdeviceptr> buffers;
  std::vector<CUevent> events;
  ~Cleanup() {
    if (!driver || *lost) return;
    for (auto e : events) driver->cuEventDestroy(e);
    for (auto b : buffers) driver->cuMemFree(b);
  }
};

// The L2 flush: a kernel that reads the flush buffer (ld.global.cg: through L2), so L2 ends up
// holding clean lines of that buffer. A memset would leave it full of dirty lines whose
// write-backs the next kernel would pay for (measured on an H200: +12% on a 65 us kernel whose
// data fit in L2, against ncu's flushed-and-invalidated caches). PTX, JIT-compiled by the
// driver, so the worker needs no compiler. The sum is stored only if it equals a value the
// zeroed buffer never gives, so the loads cannot be optimised away.
constexpr const char *kFlushPtx = R"(.version 7.0
.target sm_52
.address_size 64
.visible .entry kwb_l2_flush(.param .u64 buf, .param .u64 n, .param .u64 sink)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [buf];
  ld.param.u64 %rd2, [n];
  ld.param.u64 %rd3, [sink];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  mul.wide.u32 %rd6, %r4, %r2;
  mov.u32 %r5, 0;
  setp.ge.u64 %p1, %rd4, %rd2;
  @%p1 bra DONE;
LOOP:
  shl.b64 %rd7, %rd4, 4;
  add.u64 %rd8, %rd1, %rd7;
  ld.global.cg.v4.u32 {%r6, %r7, %r8, %r9}, [%rd8];
  xor.b32 %r5, %r5, %r6;
  xor.b32 %r5, %r5, %r7;
  xor.b32 %r5, %r5, %r8;
  xor.b32 %r5, %r5, %r9;
  add.u64 %rd4, %rd4, %rd6;
  setp.lt.u64 %p2, %rd4, %rd2;
  @%p2 bra LOOP;
DONE:
  setp.ne.u32 %p1, %r5, -1640531527;
  @%p1 bra END;
  st.global.u32 [%rd3], %r5;
END:
  ret;
}
)";

// The byte the reference's outputs are overwritten with after each reference sample, so a
// candidate that finds the reference's buffers on the device copies garbage, recognisably.
constexpr unsigned char kReferenceScrub = 0xDE;
// The byte the candidate's outputs hold before each of its samples (NaN for floats).
constexpr unsigned char kCandidatePoison = 0xFF;

Json TimingContext::time(const Request &request, EventSink &sink) {
  const auto started = Clock::now();
  const Json &p = request.params;
  const RequestTask requested = readRequestTask(p, "time");
  const std::string &configName = requested.configName;
  const SizeConfig *config = &requested.config();

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
  const std::size_t maxReported = 10;
  // false: the candidate alone is sampled (an autotuner ranks candidates against each other; the
  // reference still runs once, for the outputs the timed ones are checked against).
  bool timeReference = true;
  if (p.contains("time_reference")) {
    if (!p["time_reference"].is_boolean()) throw bad("'time_reference' must be true or false");
    timeReference = p["time_reference"].get<bool>();
  }

  const LaunchSpec reference = parseLaunchSpec(p.value("reference", Json()), "time", "reference");
  const LaunchSpec candidate = parseLaunchSpec(p.value("candidate", Json()), "time", "candidate");

  // Each tensor: `in` tensors one shared buffer; `out` and `inout` tensors one buffer per side
  // (the candidate never sees the reference's outputs); `inout` tensors also a pristine copy
  // restored before every launch.
  struct TensorBuf : TensorExtent {
    CUdeviceptr cand = 0, ref = 0, pristine = 0;
    std::vector<std::byte> host;  // the generated input (in, inout)
  };
  std::map<std::string, std::size_t> tensorIndex;
  std::vector<TensorBuf> tensors;
  for (auto &e : tensorExtents(requested, {&reference, &candidate}, "time", tensorIndex))
    tensors.push_back(TensorBuf{std::move(e)});

  if (contextLost_) throw CommandError("context-lost", "the CUDA context was lost earlier; restart the worker");
  ensureContext();
  auto &cupti = KernelActivity::instance();
  const bool useCupti = cupti.active();

  Json result = {{"config", configName}, {"seed", seed}, {"timer", useCupti ? "cupti" : "cuda-events"}};
  if (!useCupti)
    result["timer_note"] = "CUPTI kernel records are unavailable (" + cupti.problem() +
                           "): CUDA events around the launch are the figure; kernels on other streams are not counted";
  std::string stage = "load";
  Cleanup cleanup;
  cleanup.driver = &driver_;
  cleanup.lost = &contextLost_;
  LoadedPair loaded(*this);
  const LoadedLaunch &refLoaded = loaded.reference, &candLoaded = loaded.candidate;
  try {
    if (!loadBoth(loaded, reference, candidate, result)) return result;

    stage = "allocate";
    auto alloc = [&](CUdeviceptr &ptr, std::size_t n, const std::string &what) {
      check(driver_.cuMemAlloc(&ptr, n), "allocating " + std::to_string(n) + " bytes for " + what);
      cleanup.buffers.push_back(ptr);
    };
    for (auto &t : tensors) {
      if (!t.bytes) continue;
      const std::string what = "tensor '" + t.tensor->name + "'";
      alloc(t.cand, t.bytes, what);
      if (t.tensor->role == TensorRole::In) {
        t.ref = t.cand;
      } else {
        alloc(t.ref, t.bytes, what + " (reference)");
        if (t.tensor->role == TensorRole::InOut) alloc(t.pristine, t.bytes, what + " (pristine copy)");
      }
    }
    // The L2 flush buffer: at least twice the L2 (64 MiB when the size is unknown).
    const std::size_t flushBytes = std::max<std::size_t>(2 * l2Bytes_, std::size_t{64} << 20);
    CUdeviceptr flush = 0;
    alloc(flush, flushBytes, "the L2 flush buffer");
    check(driver_.cuMemsetD8(flush, 0, flushBytes), "clearing the L2 flush buffer");
    CUfunction flushKernel = nullptr;
    if (!flushModule_) {
      if (driver_.cuModuleLoadData(&flushModule_, kFlushPtx) != cu::SUCCESS) flushModule_ = nullptr;
    }
    if (flushModule_ && driver_.cuModuleGetFunction(&flushKernel, flushModule_, "kwb_l2_flush") != cu::SUCCESS)
      flushKernel = nullptr;
    CUdeviceptr flushBase = flush;
    unsigned long long flushVectors = flushBytes / 16;
    void *flushParams[] = {&flushBase, &flushVectors, &flushBase};
    result["l2_flush"] = flushKernel ? "read (ld.global.cg) of the flush buffer" : "memset of the flush buffer";

    stage = "inputs";
    for (auto &t : tensors) {
      if (!t.bytes || t.tensor->role == TensorRole::Out) continue;
      t.host = generateInput(*t.tensor, t.count, seed);
      const CUdeviceptr target = t.tensor->role == TensorRole::In ? t.cand : t.pristine;
      check(driver_.cuMemcpyHtoD(target, t.host.data(), t.bytes), "copying input '" + t.tensor->name + "'");
    }

    CUevent startEvent = nullptr, stopEvent = nullptr;
    check(driver_.cuEventCreate(&startEvent, 0), "creating an event");
    cleanup.events.push_back(startEvent);
    check(driver_.cuEventCreate(&stopEvent, 0), "creating an event");
    cleanup.events.push_back(stopEvent);

    // Each side's own output buffers (`in` tensors are shared: cand and ref are one buffer).
    KernelArguments refParams(reference.args, tensorBuffers(tensorIndex, tensors, &TensorBuf::ref), config->values);
    KernelArguments candParams(candidate.args, tensorBuffers(tensorIndex, tensors, &TensorBuf::cand), config->values);

    struct Sample {
      double primaryMs = 0, eventMs = 0;
      std::size_t kernels = 0, otherStreams = 0;
      unsigned clockMHz = 0;
      unsigned long long clockReasons = 0;
      bool throttled = false;
    };
    unsigned flushValue = 0;
    std::vector<std::string> firstKernelNames;
    // One sample: restore inout tensors, poison the candidate's outputs (or scrub nothing),
    // flush L2, then event, launch, event, wait; CUPTI's kernels give the primary figure.
    auto sample = [&](bool isCandidate, bool doFlush) -> Sample {
      const LoadedLaunch &loaded = isCandidate ? candLoaded : refLoaded;
      const std::string who = isCandidate ? "candidate" : "reference";
      stage = "prepare";
      for (const auto &t : tensors) {
        if (!t.bytes) continue;
        const CUdeviceptr target = isCandidate ? t.cand : t.ref;
        if (t.tensor->role == TensorRole::InOut)
          check(driver_.cuMemcpyDtoD(target, t.pristine, t.bytes), "restoring '" + t.tensor->name + "'");
        else if (t.tensor->role == TensorRole::Out && isCandidate)
          check(driver_.cuMemsetD8(target, kCandidatePoison, t.bytes), "poisoning '" + t.tensor->name + "'");
      }
      if (doFlush) {
        stage = "flush";
        if (flushKernel)
          check(driver_.cuLaunchKernel(flushKernel, 4 * smCount_, 1, 1, 512, 1, 1, 0, nullptr, flushParams, nullptr),
                "flushing the L2 cache");
        else
          check(driver_.cuMemsetD8(flush, static_cast<unsigned char>((++flushValue & 1) ? 0xA5 : 0x5A), flushBytes),
                "flushing the L2 cache");
      }
      check(driver_.cuCtxSynchronize(), "preparing a sample");
      activity();  // nothing before the launch counts
      const CUstream launchStream = loaded.launcher ? launcherStream() : nullptr;
      stage = who + " launch";
      check(driver_.cuEventRecord(startEvent, launchStream), "recording an event");
      enqueue(loaded, isCandidate ? candParams.data() : refParams.data(), who);
      check(driver_.cuEventRecord(stopEvent, launchStream), "recording an event");
      Sample s;
      if (nvml_ && nvml_->ready()) {
        const auto c = nvml_->clocks(pciBusId_);  // while the kernel runs, for all but tiny ones
        if (c.ok) {
          s.clockMHz = c.smMHz;
          s.clockReasons = c.reasons;
          s.throttled = c.throttled();
        }
      }
      stage = who + " run";
      check(driver_.cuCtxSynchronize(), who + (loaded.launcher ? " kwb_launch" : " kernel '" + loaded.spec->kernel + "'"));
      float ms = 0;
      check(driver_.cuEventElapsedTime(&ms, startEvent, stopEvent), "reading the event timer");
      s.eventMs = ms;
      s.primaryMs = ms;
      const auto ran = activity();
      if (ran.recorded) {
        const auto span = spanOf(ran.kernels);
        s.kernels = span.kernels;
        s.otherStreams = loaded.launcher ? ran.otherStreams : 0;
        s.primaryMs = static_cast<double>(span.spanNs) * 1e-6;
        if (firstKernelNames.empty() && isCandidate)
          for (const auto &k : ran.kernels) firstKernelNames.push_back(k.name);
      }
      if (!isCandidate)
        for (const auto &t : tensors)
          if (t.bytes && t.tensor->role != TensorRole::In)
            check(driver_.cuMemsetD8(t.ref, kReferenceScrub, t.bytes), "scrubbing reference output");
      return s;
    };
    auto download = [&](CUdeviceptr ptr, std::size_t n, const std::string &what) {
      std::vector<std::byte> out(n);
      if (n) check(driver_.cuMemcpyDtoH(out.data(), ptr, n), "copying " + what + " back");
      return out;
    };
    // The reference's outputs, taken once before they are scrubbed.
    std::map<std::string, std::vector<std::byte>> want;
    auto referenceOnce = [&] {
      stage = "reference outputs";
      for (const auto &t : tensors)
        if (t.bytes && t.tensor->role != TensorRole::In) {
          if (t.tensor->role == TensorRole::InOut)
            check(driver_.cuMemcpyDtoD(t.ref, t.pristine, t.bytes), "restoring '" + t.tensor->name + "'");
          else
            check(driver_.cuMemsetD8(t.ref, 0, t.bytes), "clearing '" + t.tensor->name + "'");
        }
      activity();
      run(refLoaded, refParams.data(), "reference");
      activity();
      for (const auto &t : tensors)
        if (t.tensor->role != TensorRole::In) want[t.tensor->name] = download(t.ref, t.bytes, "reference output");
    };
    referenceOnce();

    // Correctness of outputs produced while timing: compared with the reference's.
    std::vector<Recheck> rechecks;
    std::string recheckFailure;
    auto recheck = [&](std::size_t sampleIndex) {
      stage = "re-check";
      for (const auto &t : tensors) {
        if (t.tensor->role == TensorRole::In) continue;
        const auto got = download(t.cand, t.bytes, "output '" + t.tensor->name + "'");
        const auto report = compareOutputs(got, want[t.tensor->name], t.tensor->dtype, t.count,
                                           t.tensor->tolerance.value_or(Tolerance{}), t.shape, maxReported);
        std::size_t scrubbed = 0;
        for (auto b : got)
          if (b == std::byte{kReferenceScrub}) ++scrubbed;
        const bool copiedReference = !report.passed() && got.size() && scrubbed * 2 > got.size();
        rechecks.push_back({sampleIndex, t.tensor->name, report.passed(), report.summary, scrubbed});
        if (!report.passed() && recheckFailure.empty()) {
          recheckFailure = copiedReference ? "reference-buffer-copied" : "timed-output-mismatch";
          result["reason_detail"] =
              copiedReference
                  ? "timed sample " + std::to_string(sampleIndex) + ": output '" + t.tensor->name +
                        "' holds the bytes the reference's output buffer is scrubbed with: the candidate copied the "
                        "reference's buffer instead of computing"
                  : "timed sample " + std::to_string(sampleIndex) + ": output '" + t.tensor->name +
                        "' is wrong although the evaluation passed (work skipped on repeated calls?): " + report.summary;
        }
      }
    };

    // Warm-up, each kernel: warmup_launches samples as timed ones are taken (no flush), then
    // batches of launches back to back, doubling, until one batch holds ≥ warmup_ms of GPU time
    // (the SM clock has risen by then), at most 10 s.
    sink.progress({{"stage", "warm-up"}, {"config", configName}});
    Json warmup = Json::object();
    bool warmupClockUp = false;
    auto clockUp = [&] {
      if (!nvml_ || !nvml_->ready() || peakSmClockMHz_ <= 0) return false;
      const auto c = nvml_->clocks(pciBusId_);
      return c.ok && c.smMHz >= 0.9 * peakSmClockMHz_;
    };
    for (bool isCandidate : {true, false}) {
      if (!isCandidate && !timeReference) break;
      const LoadedLaunch &loaded = isCandidate ? candLoaded : refLoaded;
      const std::string who = isCandidate ? "candidate" : "reference";
      double gpuMs = 0;
      std::size_t launches = 0;
      for (; launches < warmupLaunches; ++launches) gpuMs += sample(isCandidate, false).eventMs;
      const auto t0 = Clock::now();
      const CUstream launchStream = loaded.launcher ? launcherStream() : nullptr;
      for (std::size_t batch = 1; warmupMs > 0; batch *= 2) {
        stage = who + " warm-up";
        check(driver_.cuEventRecord(startEvent, launchStream), "recording an event");
        for (std::size_t i = 0; i < batch; ++i)
          enqueue(loaded, isCandidate ? candParams.data() : refParams.data(), who);
        check(driver_.cuEventRecord(stopEvent, launchStream), "recording an event");
        check(driver_.cuCtxSynchronize(), who + " warm-up");
        float ms = 0;
        check(driver_.cuEventElapsedTime(&ms, startEvent, stopEvent), "reading the event timer");
        gpuMs += ms;
        launches += batch;
        if (ms >= warmupMs || std::chrono::duration<double>(Clock::now() - t0).count() > 10.0 || batch >= (1u << 20))
          break;
        // The point of warming up is the SM clock: once NVML reads it within 10% of its peak
        // (the evaluation that came just before usually got it there), a short batch is enough.
        if (clockUp()) {
          warmupClockUp = true;
          break;
        }
      }
      activity();
      warmup[who] = WarmupRecord{launches, gpuMs, warmupClockUp};
      warmupClockUp = false;
    }
    result["warmup"] = warmup;

    // Interleaved samples until the spread is small, the time cap or the sample cap.
    std::vector<Sample> candSamples, refSamples;
    auto primaries = [](const std::vector<Sample> &v, bool skipThrottled) {
      std::vector<double> out;
      for (const auto &s : v)
        if (!(skipThrottled && s.throttled)) out.push_back(s.primaryMs);
      return out;
    };
    SampleStats candStats, refStats;
    const auto samplingStarted = Clock::now();
    StopReason reason = StopReason::Continue;
    auto lastProgress = samplingStarted;
    std::size_t sentSamples = 0;  // candidate samples already sent in a progress event
    // The candidate's sample times since the last event: a live view plots them as they come.
    auto sendSamples = [&] {
      Json recent = Json::array();
      for (; sentSamples < candSamples.size(); ++sentSamples) recent.push_back(candSamples[sentSamples].primaryMs);
      sink.progress({{"stage", "timing"}, {"config", configName}, {"samples", candSamples.size()},
                     {"candidate_spread", candStats.relativeSpread},
                     {"reference_spread", timeReference ? Json(refStats.relativeSpread) : Json(nullptr)},
                     {"candidate_ms", recent}});
    };
    while (reason == StopReason::Continue) {
      candSamples.push_back(sample(true, true));
      if (candSamples.size() == 1) recheck(0);
      if (timeReference) refSamples.push_back(sample(false, true));
      // (Below rule.minSamples the rule always goes on; the samples are still sent as they come.)
      candStats = summarizeSamples(primaries(candSamples, false));
      refStats = timeReference ? summarizeSamples(primaries(refSamples, false)) : candStats;
      const double elapsed = std::chrono::duration<double>(Clock::now() - samplingStarted).count();
      reason = shouldStopSampling(candStats, refStats, elapsed, rule);
      if (Clock::now() - lastProgress > std::chrono::milliseconds(250)) {
        lastProgress = Clock::now();
        sendSamples();
      }
    }
    if (sentSamples < candSamples.size()) sendSamples();  // the last ones (or all, when it settled at once)
    recheck(candSamples.size() - 1);  // the last candidate sample's outputs are still there

    // Inputs unmodified by all those launches.
    stage = "inputs check";
    Json modified = Json::array();
    for (const auto &t : tensors)
      if (t.bytes && t.tensor->role == TensorRole::In && download(t.cand, t.bytes, "input") != t.host)
        modified.push_back(t.tensor->name);

    // Throttled samples (NVML: power or thermal slowdown) are left out when enough remain.
    auto summarize = [&](const std::vector<Sample> &v, std::size_t &throttled) {
      throttled = 0;
      for (const auto &s : v) throttled += s.throttled;
      const bool skip = throttled && v.size() - throttled >= rule.minSamples;
      return summarizeSamples(primaries(v, skip));
    };
    std::size_t candThrottled = 0, refThrottled = 0;
    candStats = summarize(candSamples, candThrottled);
    if (timeReference) refStats = summarize(refSamples, refThrottled);
    auto sideJson = [&](const SampleStats &st, const std::vector<Sample> &v, std::size_t throttled) {
      Json j = statsJson(st, primaries(v, false));
      std::vector<double> events;
      std::vector<unsigned> clocks;
      std::size_t minKernels = v.empty() ? 0 : v.front().kernels, maxKernels = 0, other = 0;
      for (const auto &s : v) {
        events.push_back(s.eventMs);
        clocks.push_back(s.clockMHz);
        minKernels = std::min(minKernels, s.kernels);
        maxKernels = std::max(maxKernels, s.kernels);
        other += s.otherStreams;
      }
      const auto ev = summarizeSamples(events);
      j["events"] = EventTimes{ev.median, ev.iqr, ev.min};
      j["sm_clock_mhz"] = clocks;
      j["throttled_samples"] = throttled;
      j["throttled_left_out"] = throttled && v.size() - throttled >= rule.minSamples;
      j["kernels_per_sample"] = {{"min", minKernels}, {"max", maxKernels}};
      j["other_stream_kernels"] = other;
      return j;
    };
    result["stop_reason"] = toString(reason);
    result["l2_cache_bytes"] = l2Bytes_;
    result["l2_flush_bytes"] = flushBytes;
    result["candidate"] = sideJson(candStats, candSamples, candThrottled);
    result["reference"] = timeReference ? sideJson(refStats, refSamples, refThrottled) : Json(nullptr);
    result["candidate_kernels"] = firstKernelNames;
    result["rechecks"] = rechecks;
    result["speedup"] =
        timeReference && candStats.median > 0 ? Json(refStats.median / candStats.median) : Json(nullptr);
    if (!pciBusId_.empty() && nvml_) result["nvml"] = nvml_->ready() ? "sm clock per sample" : nvml_->status().problem;
    const double floorSeconds = rooflineFloorSeconds(flops, bytes, peakBandwidth_);
    result["roofline"] = RooflineFloor{flops, bytes, peakBandwidth_, kRooflinePeakFlopsPerSecond, floorSeconds * 1000.0};
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
    // Findings with names: what a cheating or broken candidate did while being timed.
    Json findings = Json::array();
    std::size_t noKernel = 0, otherStreams = 0;
    for (const auto &s : candSamples) {
      noKernel += useCupti && s.kernels == 0;
      otherStreams += s.otherStreams;
    }
    if (otherStreams)
      findings.push_back({{"reason", "side-stream"},
                          {"message", std::to_string(otherStreams) +
                                          " kernel(s) ran on streams other than the one kwb_launch was given; they "
                                          "are counted in the time (CUPTI sees every stream)"}});
    if (noKernel)
      findings.push_back({{"reason", "no-kernel-ran"},
                          {"message", std::to_string(noKernel) + " timed sample(s) ran no kernel at all"}});
    result["findings"] = findings;
    result["inputs_modified"] = modified;
    if (!recheckFailure.empty() || noKernel || !modified.empty()) {
      result["verdict"] = "incorrect";
      result["reason"] = !modified.empty() ? "inputs-modified" : noKernel ? "no-kernel-ran" : recheckFailure;
      if (!modified.empty()) result["reason_detail"] = "the kernel modified its inputs while being timed";
      else if (noKernel) result["reason_detail"] = findings.back()["message"];
    } else {
      result["verdict"] = "timed";
    }
    completeReply(result, started);
    return result;
  } catch (const CudaFailure &f) {
    runtimeError(f, stage, result, sink);
    return result;
  }
}

}  // namespace

void addTimeCommand(WorkerServer &server, std::optional<int> device) {
  addDeviceCommand(server, "time", device, &TimingContext::time);
}

}  // namespace kwb::worker
