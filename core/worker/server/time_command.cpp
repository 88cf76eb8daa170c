#include "core/worker/server/time_command.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/eval/compare.h"
#include "core/eval/evaluation_result.h"
#include "core/eval/input_generator.h"
#include "core/eval/input_permutation.h"
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

// A number of the request within [lo, hi], else invalid-argument naming it.
double within(double value, const char *key, double lo, double hi) {
  if (!std::isfinite(value) || value < lo || value > hi)
    throw bad(std::string("'") + key + "' must be a number between " + std::to_string(lo) + " and " +
              std::to_string(hi));
  return value;
}

// Each tensor: `in` tensors one shared buffer; `out` and `inout` tensors one buffer per side
// (the candidate never sees the reference's outputs). `in` and `inout` tensors also keep their
// generated elements in a buffer no kernel is given (`original`), from which every sample's
// fresh permutation is written (core/eval/input_permutation.h).
struct TensorBuf : TensorExtent {
  CUdeviceptr cand = 0, ref = 0, original = 0;
  std::vector<std::byte> host;  // the generated input (in, inout)
  PermutationKey candKey;       // the permutation in the candidate's buffer now
  std::size_t elementBytes() const { return count ? bytes / count : 0; }
};

// One timed launch.
struct Sample {
  double primaryMs = 0, eventMs = 0;
  bool observed = false;  // CUPTI saw the worker's kernels (not a host launcher's)
  std::size_t kernels = 0;
  unsigned clockMHz = 0;
  unsigned long long clockReasons = 0;
  bool throttled = false;
};

std::vector<double> primaries(const std::vector<Sample> &v, bool skipThrottled) {
  std::vector<double> out;
  for (const auto &s : v)
    if (!(skipThrottled && s.throttled)) out.push_back(s.primaryMs);
  return out;
}

// One side's statistics (pure): throttled samples (NVML: power or thermal slowdown) are left out
// when at least `minSamples` remain.
TimedSide timedSide(const std::vector<Sample> &v, std::size_t minSamples) {
  TimedSide side;
  for (const auto &s : v) side.throttledSamples += s.throttled;
  side.throttledLeftOut = side.throttledSamples && v.size() - side.throttledSamples >= minSamples;
  side.stats = summarizeSamples(primaries(v, side.throttledLeftOut));
  side.samplesMs = primaries(v, false);
  std::vector<double> events;
  side.kernelsPerSample.min = v.empty() ? 0 : v.front().kernels;
  for (const auto &s : v) {
    events.push_back(s.eventMs);
    side.smClockMhz.push_back(s.clockMHz);
    side.kernelsPerSample.min = std::min<std::uint64_t>(side.kernelsPerSample.min, s.kernels);
    side.kernelsPerSample.max = std::max<std::uint64_t>(side.kernelsPerSample.max, s.kernels);
  }
  const auto ev = summarizeSamples(events);
  side.events = EventTimes{ev.median, ev.iqr, ev.min};
  return side;
}

// The findings, roofline check and verdict of a timed request (pure): what a cheating or broken
// candidate did while being timed.
void timeVerdict(const std::vector<Sample> &candidate, bool useCupti, const std::string &recheckFailure,
                 const std::string &recheckDetail, TimeReply &reply) {
  std::size_t noKernel = 0;
  for (const auto &s : candidate) noKernel += useCupti && s.observed && s.kernels == 0;
  if (noKernel)
    reply.findings.push_back(
        {"no-kernel-ran", std::to_string(noKernel) + " timed sample(s) ran no kernel at all"});
  const double medianMs = reply.candidate ? reply.candidate->stats.median : 0.0;
  const double floorMs = reply.roofline ? reply.roofline->floorMs : 0.0;
  reply.suspicious = floorMs > 0 && medianMs < floorMs;
  if (reply.suspicious) {
    const auto &r = *reply.roofline;
    const bool memory = r.bound == "memory";
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "the candidate's median %.4g ms is below the least time the %s roofline allows, %.4g ms "
                  "(%s bound: %.4g %s at %.4g %s, over a slack of %.2g): work skipped, remembered or done "
                  "where the timer cannot see it",
                  medianMs, r.ceilings.c_str(), floorMs, r.bound.c_str(), memory ? r.bytes : r.flops,
                  memory ? "bytes" : "flops", memory ? r.peakBandwidthBytesPerS / 1e9 : r.peakFlopsPerS / 1e12,
                  memory ? "GB/s" : "TFLOP/s", rooflineSlack(r.bound));
    reply.suspiciousReason = buf;
  }
  if (!reply.inputsModified.empty()) {
    reply.verdict = "incorrect";
    reply.reason = "inputs-modified";
    reply.reasonDetail = "the kernel modified its inputs while being timed";
  } else if (noKernel) {
    reply.verdict = "incorrect";
    reply.reason = "no-kernel-ran";
    reply.reasonDetail = reply.findings.back().message;
  } else if (!recheckFailure.empty()) {
    reply.verdict = "incorrect";
    reply.reason = recheckFailure;
    reply.reasonDetail = recheckDetail;
  } else if (reply.suspicious) {
    reply.verdict = "incorrect";
    reply.reason = "below-roofline";
    reply.reasonDetail = reply.suspiciousReason;
  } else {
    reply.verdict = "timed";
  }
}


// One time request: what it asks for, checked, and its state while it runs.
struct TimingRun {
  RequestTask requested;
  std::uint64_t seed = 1;
  StopRule rule;
  double warmupMs = 50;
  std::size_t warmupLaunches = 10;
  double flops = 0, bytes = 0;
  double ceilingBytesPerS = 0, ceilingFlopsPerS = 0;  // measured; 0: unknown
  std::string compute = "f32";
  bool timeReference = true;
  LaunchSpec reference, candidate;
  std::map<std::string, std::size_t> tensorIndex;
  std::vector<TensorBuf> tensors;
  // A reference given as its outputs for `seed` (a PyTorch module's): the re-checks compare with
  // them, and the inputs are not permuted (those outputs are for the generated order only).
  std::map<std::string, std::vector<std::byte>> given;
  // While it runs.
  std::string stage = "load";
  DeviceAllocations allocations;
  bool useCupti = false;
  std::size_t flushBytes = 0;
  CUdeviceptr flush = 0;
  CUfunction flushKernel = nullptr;
  unsigned flushValue = 0;
  CUevent startEvent = nullptr, stopEvent = nullptr;
  std::unique_ptr<KernelArguments> refParams, candParams;
  CUfunction permuteKernel = nullptr;
  CUdeviceptr compareFlag = 0;  // the input check's result (holdsPermutation)
  std::string l2Reset;  // what resetL2State did, for the reply
  std::mt19937_64 rng;                // the permutations and which samples are re-checked
  std::uint64_t permutationSeed = 0;  // rng's seed: in the reply, so a run can be repeated
  std::set<std::string> modifiedInputs;
  std::vector<std::string> firstKernelNames;
  std::vector<Recheck> rechecks;
  std::string recheckFailure, recheckDetail;
  std::vector<Sample> candSamples, refSamples;
  double hostOverheadMs = 0;  // a host launcher's round trip to a clean process (launcherOverhead)
  // The reference timed again once the candidate's process has ended (host launchers).
  std::vector<double> cleanReferenceMs;

  const SizeConfig &config() const { return requested.config(); }
  KernelArguments &args(bool isCandidate) { return *(isCandidate ? candParams : refParams); }
};

// What was subtracted from a host launcher's calls and what the reference came to alone.
std::string hostLauncherNote(const TimingRun &run) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "; the clean process's least round trip, mapping the same tensors: %.4g ms", run.hostOverheadMs);
  std::string note = buf;
  if (!run.cleanReferenceMs.empty()) {
    std::snprintf(buf, sizeof buf, "; the reference timed again once the candidate's process had ended: %.4g ms median (%zu samples)",
                  summarizeSamples(run.cleanReferenceMs).median, run.cleanReferenceMs.size());
    note += buf;
  }
  return note;
}

// A host launcher's process that leaves work running on the GPU past its answer slows the
// reference's samples taken beside it: their median against the reference's once that process
// has ended (timeReferenceAlone), beyond 10% and 5 us. Empty when undisturbed.
std::string referenceDisturbance(const TimingRun &run) {
  if (run.cleanReferenceMs.empty() || run.refSamples.empty()) return {};
  const double beside = summarizeSamples(primaries(run.refSamples, false)).median;
  const double alone = summarizeSamples(run.cleanReferenceMs).median;
  if (!(beside > 1.10 * alone + 0.005)) return {};
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "the reference's median was %.4g ms while the candidate's host launcher process existed and %.4g "
                "ms once it had ended (%zu samples): that process kept the GPU busy beside the reference's "
                "samples (work left running past its answer), which would have inflated the speedup",
                beside, alone, run.cleanReferenceMs.size());
  return buf;
}

class TimingContext : DeviceContext {
 public:
  explicit TimingContext(std::optional<int> device) : DeviceContext(device) {}
  TimeReply time(const TimeRequest &request, EventSink &sink);

 private:
  // The steps, in order.
  static TimingRun readRequest(const TimeRequest &request);
  void ensureContext();
  void allocate(TimingRun &run);
  void uploadInputs(TimingRun &run);
  WarmupSides warmUp(TimingRun &run, const LoadedPair &loaded, EventSink &sink);
  StopReason sampleUntilSettled(TimingRun &run, const LoadedPair &loaded, EventSink &sink);
  // Within them.
  Sample sample(TimingRun &run, const LoadedLaunch &loaded, bool isCandidate, bool doFlush);
  void scrubReference(TimingRun &run);
  void flushL2(TimingRun &run);
  void resetL2State(TimingRun &run);
  double launcherOverhead(TimingRun &run);
  void timeReferenceAlone(TimingRun &run, LoadedPair &loaded);
  RooflineFloor rooflineFloorOf(const TimingRun &run) const;
  void recheck(TimingRun &run, const LoadedPair &loaded, std::size_t sampleIndex);
  void freshInputs(TimingRun &run, bool isCandidate);
  void permuteInto(TimingRun &run, const TensorBuf &t, CUdeviceptr target, PermutationKey key);
  bool holdsPermutation(TimingRun &run, const TensorBuf &t, CUdeviceptr target, PermutationKey key);
  void launchPermute(TimingRun &run, const TensorBuf &t, CUdeviceptr target, PermutationKey key, CUdeviceptr flag);
  static bool permutable(const TensorBuf &t);
  std::vector<std::byte> download(CUdeviceptr ptr, std::size_t n, const std::string &what);
  bool clockUp();

  std::uint64_t l2Bytes_ = 0;
  double peakBandwidth_ = 0;  // bytes/s from probeGpus(); 0 when unknown
  std::string deviceName_, pciBusId_;
  std::unique_ptr<Nvml> nvml_;
  CUmodule flushModule_ = nullptr;  // the L2 flush kernel, loaded once
  CUmodule permuteModule_ = nullptr;  // the input permutation kernel, loaded once
  std::unique_ptr<HostLauncherProcess> cleanLauncher_;  // no candidate code: the round trip's baseline
  unsigned smCount_ = 1;
  double peakSmClockMHz_ = 0;
};

TimingRun TimingContext::readRequest(const TimeRequest &p) {
  TimingRun run{readRequestTask(p, "time")};
  run.seed = p.seed;
  run.rule.timeCapSeconds = within(p.timeCapMs, "time_cap_ms", 1, 600000) / 1000.0;
  run.rule.maxSamples = static_cast<std::size_t>(within(p.maxSamples, "max_samples", 1, 100000));
  run.rule.minSamples =
      std::min(run.rule.maxSamples, static_cast<std::size_t>(within(p.minSamples, "min_samples", 1, 100000)));
  run.rule.targetSpread = within(p.targetSpread, "target_spread", 0, 10);
  run.warmupMs = within(p.warmupMs, "warmup_ms", 0, 60000);
  run.warmupLaunches = static_cast<std::size_t>(within(p.warmupLaunches, "warmup_launches", 0, 100000));
  run.flops = within(p.flops, "flops", 0, 1e30);
  run.bytes = within(p.bytes, "bytes", 0, 1e30);
  run.ceilingBytesPerS = within(p.ceilingBytesPerS, "ceiling_bytes_per_s", 0, 1e16);
  run.ceilingFlopsPerS = within(p.ceilingFlopsPerS, "ceiling_flops_per_s", 0, 1e18);
  if (p.compute != "f32" && p.compute != "tensor-core")
    throw bad("'compute' must be \"f32\" or \"tensor-core\", not \"" + p.compute + "\"");
  run.compute = p.compute;
  // false: the candidate alone is sampled (an autotuner ranks candidates against each other; the
  // reference still runs once, for the outputs the timed ones are checked against).
  run.timeReference = p.timeReference;
  run.permutationSeed = p.permutationSeed ? p.permutationSeed : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  run.rng.seed(run.permutationSeed);
  run.reference = launchSpec(p.reference, "time", "reference");
  run.candidate = launchSpec(p.candidate, "time", "candidate");
  run.candidate.allowedLibraries = run.requested.task.allowedLibraries;
  for (auto &e : tensorExtents(run.requested, {&run.reference, &run.candidate}, "time", run.tensorIndex))
    run.tensors.push_back(TensorBuf{std::move(e)});
  return run;
}

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

// Fresh inputs (core/eval/input_permutation.h): dst[i] = src[(a·i + b) mod n] for elements of
// 1, 2, 4 or 8 bytes, grid-strided; 4-byte elements times `scale` as f32 when it is not 0;
// integer values drawn from [low, low + span) relabelled when `shift` is not 0: v -> low +
// ((v - low) mod 2^bits + shift) mod span (`mask` = 2^bits - 1), so that a result that depends on
// the values but not on their order (a histogram's counts) changes too. With `flag` set it writes
// nothing and compares instead: any dst[i] != the value it would have written stores 1 at flag
// (an input the candidate modified). Each thread computes its first index with one division and
// then steps by `step` = (a · stride) mod n, so the loop has no division. PTX, JIT-compiled by
// the driver like the flush kernel.
constexpr const char *kPermutePtx = R"(.version 7.0
.target sm_52
.address_size 64
.visible .entry kwb_permute(.param .u64 dst, .param .u64 src, .param .u64 n, .param .u64 a, .param .u64 b,
                            .param .u64 step, .param .u32 elem, .param .u64 flag, .param .f32 scale,
                            .param .u64 low, .param .u64 span, .param .u64 shift, .param .u64 mask)
{
  .reg .pred %p<12>;
  .reg .f32 %f<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<24>;
  ld.param.u64 %rd1, [dst];
  ld.param.u64 %rd2, [src];
  ld.param.u64 %rd3, [n];
  ld.param.u64 %rd4, [a];
  ld.param.u64 %rd5, [b];
  ld.param.u64 %rd14, [step];
  ld.param.u32 %r1, [elem];
  ld.param.u64 %rd15, [flag];
  ld.param.f32 %f1, [scale];
  ld.param.u64 %rd16, [low];
  ld.param.u64 %rd17, [span];
  ld.param.u64 %rd18, [shift];
  ld.param.u64 %rd19, [mask];
  setp.ne.f32 %p9, %f1, 0f00000000;
  setp.ne.u64 %p10, %rd18, 0;
  setp.ne.u64 %p7, %rd15, 0;
  cvta.to.global.u64 %rd15, %rd15;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mov.u32 %r5, %nctaid.x;
  mul.wide.u32 %rd6, %r2, %r3;
  cvt.u64.u32 %rd7, %r4;
  add.u64 %rd6, %rd6, %rd7;
  mul.wide.u32 %rd8, %r5, %r3;
  cvt.u64.u32 %rd9, %r1;
  setp.eq.u32 %p2, %r1, 4;
  setp.eq.u32 %p3, %r1, 2;
  setp.eq.u32 %p4, %r1, 8;
  setp.ge.u64 %p1, %rd6, %rd3;
  @%p1 bra DONE;
  mul.lo.u64 %rd10, %rd4, %rd6;
  rem.u64 %rd10, %rd10, %rd3;
  add.u64 %rd10, %rd10, %rd5;
  setp.ge.u64 %p6, %rd10, %rd3;
  @%p6 sub.u64 %rd10, %rd10, %rd3;
LOOP:
  mul.lo.u64 %rd11, %rd10, %rd9;
  add.u64 %rd11, %rd2, %rd11;
  mul.lo.u64 %rd12, %rd6, %rd9;
  add.u64 %rd12, %rd1, %rd12;
  @%p2 bra L4;
  @%p3 bra L2;
  @%p4 bra L8;
  ld.global.u8 %r6, [%rd11];
  cvt.u64.u32 %rd13, %r6;
  bra LOADED;
L2:
  ld.global.u16 %r6, [%rd11];
  cvt.u64.u32 %rd13, %r6;
  bra LOADED;
L4:
  ld.global.u32 %r6, [%rd11];
  @!%p9 bra W4;
  mov.b32 %f2, %r6;
  mul.rn.f32 %f2, %f2, %f1;
  mov.b32 %r6, %f2;
W4:
  cvt.u64.u32 %rd13, %r6;
  bra LOADED;
L8:
  ld.global.u64 %rd13, [%rd11];
LOADED:
  @!%p10 bra VALUE;
  sub.u64 %rd20, %rd13, %rd16;
  and.b64 %rd20, %rd20, %rd19;
  add.u64 %rd20, %rd20, %rd18;
  setp.ge.u64 %p11, %rd20, %rd17;
  @%p11 sub.u64 %rd20, %rd20, %rd17;
  add.u64 %rd13, %rd20, %rd16;
  and.b64 %rd13, %rd13, %rd19;
VALUE:
  @%p7 bra CMP;
  @%p2 bra S4;
  @%p3 bra S2;
  @%p4 bra S8;
  cvt.u32.u64 %r6, %rd13;
  st.global.u8 [%rd12], %r6;
  bra NEXT;
S2:
  cvt.u32.u64 %r6, %rd13;
  st.global.u16 [%rd12], %r6;
  bra NEXT;
S4:
  cvt.u32.u64 %r6, %rd13;
  st.global.u32 [%rd12], %r6;
  bra NEXT;
S8:
  st.global.u64 [%rd12], %rd13;
  bra NEXT;
CMP:
  @%p2 bra C4;
  @%p3 bra C2;
  @%p4 bra C8;
  ld.global.u8 %r7, [%rd12];
  cvt.u64.u32 %rd21, %r7;
  bra DIFF;
C2:
  ld.global.u16 %r7, [%rd12];
  cvt.u64.u32 %rd21, %r7;
  bra DIFF;
C4:
  ld.global.u32 %r7, [%rd12];
  cvt.u64.u32 %rd21, %r7;
  bra DIFF;
C8:
  ld.global.u64 %rd21, [%rd12];
DIFF:
  setp.ne.u64 %p8, %rd13, %rd21;
  mov.u32 %r6, 1;
  @%p8 st.global.u32 [%rd15], %r6;
NEXT:
  add.u64 %rd6, %rd6, %rd8;
  add.u64 %rd10, %rd10, %rd14;
  setp.ge.u64 %p6, %rd10, %rd3;
  @%p6 sub.u64 %rd10, %rd10, %rd3;
  setp.lt.u64 %p5, %rd6, %rd3;
  @%p5 bra LOOP;
DONE:
  ret;
}
)";

// The byte the reference's outputs are overwritten with after each reference sample, so a
// candidate that finds the reference's buffers on the device copies garbage, recognisably.
constexpr unsigned char kReferenceScrub = 0xDE;
// The byte the candidate's outputs hold before each of its samples (NaN for floats).
constexpr unsigned char kCandidatePoison = 0xFF;

// Buffers for every tensor (per side, see TensorBuf), the L2 flush buffer and kernel, the events.
void TimingContext::allocate(TimingRun &run) {
  run.stage = "allocate";
  auto &held = run.allocations;
  for (auto &t : run.tensors) {
    if (!t.bytes) continue;
    const std::string what = "tensor '" + t.tensor->name + "'";
    t.cand = DeviceContext::allocate(held, t.bytes, what);
    t.ref = t.tensor->role == TensorRole::In ? t.cand : DeviceContext::allocate(held, t.bytes, what + " (reference)");
    if (t.tensor->role != TensorRole::Out) t.original = DeviceContext::allocate(held, t.bytes, what + " (generated)");
  }
  // The L2 flush buffer: at least twice the L2 (64 MiB when the size is unknown).
  run.flushBytes = std::max<std::size_t>(2 * l2Bytes_, std::size_t{64} << 20);
  run.flush = DeviceContext::allocate(held, run.flushBytes, "the L2 flush buffer");
  check(driver_.cuMemsetD8(run.flush, 0, run.flushBytes), "clearing the L2 flush buffer");
  if (!flushModule_) {
    if (driver_.cuModuleLoadData(&flushModule_, kFlushPtx) != cu::SUCCESS) flushModule_ = nullptr;
  }
  if (flushModule_ && driver_.cuModuleGetFunction(&run.flushKernel, flushModule_, "kwb_l2_flush") != cu::SUCCESS)
    run.flushKernel = nullptr;
  if (!permuteModule_) check(driver_.cuModuleLoadData(&permuteModule_, kPermutePtx), "loading the input permutation kernel");
  check(driver_.cuModuleGetFunction(&run.permuteKernel, permuteModule_, "kwb_permute"), "finding the input permutation kernel");
  run.compareFlag = DeviceContext::allocate(held, 4, "the input check's flag");
  run.startEvent = createEvent(held);
  run.stopEvent = createEvent(held);
  // Each side's own output buffers (`in` tensors are shared: cand and ref are one buffer).
  run.refParams = std::make_unique<KernelArguments>(
      run.reference.args, tensorBuffers(run.tensorIndex, run.tensors, &TensorBuf::ref),
      scalarArguments(run.requested.task, run.config()));
  run.candParams = std::make_unique<KernelArguments>(
      run.candidate.args, tensorBuffers(run.tensorIndex, run.tensors, &TensorBuf::cand),
      scalarArguments(run.requested.task, run.config()));
}

void TimingContext::uploadInputs(TimingRun &run) {
  run.stage = "inputs";
  for (auto &t : run.tensors) {
    if (!t.bytes || t.tensor->role == TensorRole::Out) continue;
    // The first generator (the task's typical values): a timed figure does not depend on which of
    // the task's extremes a seed would pick.
    if (!t.tensor->init) throw bad("tensor '" + t.tensor->name + "' has no generator (init)");
    t.host = generateInput(t.tensor->dtype, t.shape, *t.tensor->init, run.seed, t.tensor->name);
    check(driver_.cuMemcpyHtoD(t.original, t.host.data(), t.bytes), "copying input '" + t.tensor->name + "'");
    // Something valid in the buffers the kernels get before the first sample permutes them (the
    // warm-up's batches run without that when warmup_launches is 0).
    check(driver_.cuMemcpyDtoD(t.cand, t.original, t.bytes), "copying input '" + t.tensor->name + "'");
    if (t.ref != t.cand) check(driver_.cuMemcpyDtoD(t.ref, t.original, t.bytes), "copying input '" + t.tensor->name + "'");
  }
}

// dst = the tensor's generated elements permuted by `key` (the kernel above), on the worker's
// stream; element sizes other than 1, 2, 4 and 8 bytes are copied unpermuted.
void TimingContext::permuteInto(TimingRun &run, const TensorBuf &t, CUdeviceptr target, PermutationKey key) {
  if (!permutable(t)) {
    check(driver_.cuMemcpyDtoD(target, t.original, t.bytes), "restoring '" + t.tensor->name + "'");
    return;
  }
  launchPermute(run, t, target, key, 0);
}

// Whether `target` still holds the tensor's generated elements permuted by `key` (compared on the
// device: no copy of the tensor comes back).
bool TimingContext::holdsPermutation(TimingRun &run, const TensorBuf &t, CUdeviceptr target, PermutationKey key) {
  if (!permutable(t)) return download(target, t.bytes, "input '" + t.tensor->name + "'") == t.host;
  check(driver_.cuMemsetD8(run.compareFlag, 0, 4), "clearing the input check's flag");
  launchPermute(run, t, target, key, run.compareFlag);
  check(driver_.cuCtxSynchronize(), "checking input '" + t.tensor->name + "'");
  std::uint32_t differs = 0;
  check(driver_.cuMemcpyDtoH(&differs, run.compareFlag, 4), "reading the input check's flag");
  return differs == 0;
}

// Element sizes the kernel moves; and not an `arange` tensor, whose order is its meaning (offsets,
// indices): those are copied as generated.
bool TimingContext::permutable(const TensorBuf &t) {
  const std::size_t elem = t.elementBytes();
  if (t.tensor->init && t.tensor->init->kind == Generator::Kind::Arange) return false;
  return elem == 1 || elem == 2 || elem == 4 || elem == 8;
}

// The permutation kernel over the tensor's elements: writes `target` (flag 0), or compares it and
// sets *flag on a difference.
void TimingContext::launchPermute(TimingRun &run, const TensorBuf &t, CUdeviceptr target, PermutationKey key,
                                  CUdeviceptr flag) {
  const std::size_t elem = t.elementBytes();
  constexpr unsigned kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(std::max<std::uint64_t>(
      1, std::min<std::uint64_t>(4ull * smCount_, (t.count + kThreads - 1) / kThreads)));
  CUdeviceptr dst = target, src = t.original;
  unsigned long long n = t.count, a = key.a, b = key.b;
  const std::uint64_t stride = std::uint64_t{blocks} * kThreads;
  unsigned long long step = permutedIndex(stride % n, n, PermutationKey{key.a, 0});
  unsigned elemBytes = static_cast<unsigned>(elem);
  CUdeviceptr flagPtr = flag;
  float scale = key.scale;
  unsigned long long low = key.low, span = key.span, shift = key.shift, mask = key.mask;
  void *params[] = {&dst, &src, &n, &a, &b, &step, &elemBytes, &flagPtr, &scale, &low, &span, &shift, &mask};
  check(driver_.cuLaunchKernel(run.permuteKernel, blocks, 1, 1, kThreads, 1, 1, 0, nullptr, params, nullptr),
        "writing fresh inputs for '" + t.tensor->name + "'");
}

// Before every sample: each `in` tensor (shared) and the side's `inout` buffers get a fresh
// permutation of their generated elements; a candidate's outputs are poisoned.
void TimingContext::freshInputs(TimingRun &run, bool isCandidate) {
  for (auto &t : run.tensors) {
    if (!t.bytes) continue;
    if (t.tensor->role == TensorRole::Out) {
      if (isCandidate)
        check(driver_.cuMemsetD8(t.cand, kCandidatePoison, t.bytes), "poisoning '" + t.tensor->name + "'");
      continue;
    }
    // A given reference's outputs are for the generated order: the identity then (PermutationKey{}).
    PermutationKey key;
    if (!run.reference.outputsOnly()) {
      key = permutationKey(t.count, run.rng);
      // f32 values are scaled too, so what does not depend on their order (a sum) changes as well.
      if (t.tensor->dtype == DType::F32) key.scale = std::uniform_real_distribution<float>(0.75f, 1.25f)(run.rng);
      // Integers drawn by randint move within their range too (a histogram's counts change).
      drawRelabelling(key, *t.tensor->init, t.tensor->dtype, run.rng);
    }
    if (isCandidate || t.tensor->role == TensorRole::In) t.candKey = key;
    permuteInto(run, t, isCandidate ? t.cand : t.ref, key);
  }
}

std::vector<std::byte> TimingContext::download(CUdeviceptr ptr, std::size_t n, const std::string &what) {
  std::vector<std::byte> out(n);
  if (n) check(driver_.cuMemcpyDtoH(out.data(), ptr, n), "copying " + what + " back");
  return out;
}

// One sample: fresh inputs, poison the candidate's outputs, flush L2, then event,
// launch, event, wait; CUPTI's kernels give the primary figure. A reference sample's outputs
// are scrubbed after it.
Sample TimingContext::sample(TimingRun &run, const LoadedLaunch &loaded, bool isCandidate, bool doFlush) {
  const std::string who = isCandidate ? "candidate" : "reference";
  run.stage = "prepare";
  freshInputs(run, isCandidate);
  resetL2State(run);
  if (doFlush) flushL2(run);
  check(driver_.cuCtxSynchronize(), "preparing a sample");
  activity();  // nothing before the launch counts
  Sample s;
  if (loaded.host) {
    // A host launcher: the worker's clock from the request to the end of its work in its own
    // process (host work, copies, every stream), read around the whole call, less a clean
    // process's round trip. The process runs only while it is being timed: no untimed window in
    // which its threads could work (launcherOverhead says why nothing is done before the call).
    run.stage = who + " run";
    s.eventMs = 1e3 * DeviceContext::run(loaded, run.args(isCandidate), who);
    s.primaryMs = std::max(0.0, s.eventMs - run.hostOverheadMs);
    s.observed = false;
    if (!isCandidate) scrubReference(run);
    return s;
  }
  run.stage = who + " launch";
  check(driver_.cuEventRecord(run.startEvent, nullptr), "recording an event");
  enqueue(loaded, run.args(isCandidate), who);
  check(driver_.cuEventRecord(run.stopEvent, nullptr), "recording an event");
  if (nvml_ && nvml_->ready()) {
    const auto c = nvml_->clocks(pciBusId_);  // while the kernel runs, for all but tiny ones
    if (c.ok) {
      s.clockMHz = c.smMHz;
      s.clockReasons = c.reasons;
      s.throttled = c.throttled();
    }
  }
  run.stage = who + " run";
  check(driver_.cuCtxSynchronize(), who + " kernel '" + loaded.spec->kernel + "'");
  float ms = 0;
  check(driver_.cuEventElapsedTime(&ms, run.startEvent, run.stopEvent), "reading the event timer");
  s.eventMs = ms;
  s.primaryMs = ms;
  const auto ran = activity();
  s.observed = ran.recorded;
  if (ran.recorded) {
    const auto span = spanOf(ran.kernels);
    s.kernels = span.kernels;
    s.primaryMs = static_cast<double>(span.spanNs) * 1e-6;
    if (run.firstKernelNames.empty() && isCandidate)
      for (const auto &k : ran.kernels) run.firstKernelNames.push_back(k.name);
  }
  if (!isCandidate) scrubReference(run);
  return s;
}

// What a candidate can leave in the L2 for the next sample, its own or the reference's: lines
// marked persisting (a host launcher's access policy window, or evict_last loads) survive the
// flush, and a persisting set-aside keeps them there. Both are reset before every sample (the
// lines are the device's; the set-aside is set to none). On GPUs without persisting L2 (before
// sm_80) the driver says "not supported", which is left at that.
void TimingContext::resetL2State(TimingRun &run) {
  run.stage = "L2 reset";
  const CUresult lines = driver_.cuCtxResetPersistingL2Cache();
  const CUresult limit = driver_.cuCtxSetLimit(cu::LIMIT_PERSISTING_L2_CACHE_SIZE, 0);
  if (run.l2Reset.empty())
    run.l2Reset = lines == cu::SUCCESS && limit == cu::SUCCESS
                      ? "persisting lines reset and set-aside cleared before every sample"
                      : "not reset: " + driver_.describe(lines == cu::SUCCESS ? limit : lines);
}

void TimingContext::flushL2(TimingRun &run) {
  run.stage = "flush";
  CUdeviceptr flushBase = run.flush;
  unsigned long long flushVectors = run.flushBytes / 16;
  void *flushParams[] = {&flushBase, &flushVectors, &flushBase};
  if (run.flushKernel)
    check(driver_.cuLaunchKernel(run.flushKernel, 4 * smCount_, 1, 1, 512, 1, 1, 0, nullptr, flushParams, nullptr),
          "flushing the L2 cache");
  else
    check(driver_.cuMemsetD8(run.flush, static_cast<unsigned char>((++run.flushValue & 1) ? 0xA5 : 0x5A),
                             run.flushBytes),
          "flushing the L2 cache");
}

// What a host launcher's clock includes but the candidate does not owe: the request and answer
// through the pipes, the process's wake-ups and, most of it, the GPU's switch from the worker's
// context (which has just run the L2 flush) to the launcher's: about 150 of 170 us on an H200
// (tests/bench/results/2026-12-02-h200-cd2e6aa-ipc-launch-latency.txt). Measured as the median
// round trip of a clean launcher process (no candidate code, one empty kernel) after the same
// preparation as a sample, flush included, mapping the same tensors as the candidate's process
// does (on the H200 that added 0.002-0.02 ms to mapping none; without them when mapping fails).
// 0 when it cannot be measured.
//
// Tried and dropped (2026-12-02, H200): priming the candidate's process before each call (an
// empty kernel of its own, so that the switch happens before the clock starts). The switch to a
// candidate's context took 0.03-0.13 ms longer than to the clean process's (softmax, sgemm), an
// excess that cannot be told from work the candidate's threads do while the prime runs, and
// threads on other cores are not seen in the prime's time at all: an untimed window in which
// the candidate's process runs is a place to hide work.
double TimingContext::launcherOverhead(TimingRun &run) {
  if (!cleanLauncher_ || !cleanLauncher_->alive()) {
    std::string name, problem;
    cleanLauncher_ = HostLauncherProcess::start("", device_, name, problem);
    if (!cleanLauncher_) {
      std::cerr << "kwb-worker: no clean launcher process (" << problem << "): host launchers are timed raw\n";
      return 0;
    }
  }
  auto roundTrips = [&](const std::vector<HostArgument> &args) {
    std::vector<double> ms;
    for (int i = 0; i < 40; ++i) {
      flushL2(run);
      check(driver_.cuCtxSynchronize(), "preparing a sample");
      const auto r = cleanLauncher_->launch(driver_, args);
      if (r.status != HostLaunchResult::Status::Done) return 0.0;
      if (i >= 8) ms.push_back(1e3 * r.seconds);  // the first ones start the process's context up
    }
    // The least round trip: noise only adds to it. Its median, subtracted, once came out above an
    // honest launcher's own median call (softmax small on the H200, a fresh worker), which then
    // read 0 ms and failed as "below the roofline floor".
    return summarizeSamples(ms).min;
  };
  const double mapped = roundTrips(run.args(true).host);
  if (cleanLauncher_ && cleanLauncher_->alive()) cleanLauncher_->release();  // before this request's buffers are freed
  return mapped > 0 ? mapped : roundTrips({});  // mapping failed: the round trip without
}

// The reference timed alone once the candidate's host launcher process has ended (ending it ends
// whatever it left running on the GPU): its interleaved samples were taken while that process
// existed, and a process that leaves work queued past its answer (on a context of its own, say)
// slows them. As many samples as the interleaved ones, at most 10.
void TimingContext::timeReferenceAlone(TimingRun &run, LoadedPair &loaded) {
  run.stage = "reference alone";
  end(loaded.candidate);
  const std::size_t n = std::min<std::size_t>(run.refSamples.size(), 10);
  for (std::size_t i = 0; i < n; ++i) run.cleanReferenceMs.push_back(sample(run, loaded.reference, false, true).primaryMs);
}

void TimingContext::scrubReference(TimingRun &run) {
  for (const auto &t : run.tensors)
    if (t.bytes && t.tensor->role != TensorRole::In)
      check(driver_.cuMemsetD8(t.ref, kReferenceScrub, t.bytes), "scrubbing reference output");
}

// Right after a timed candidate sample: its `in` tensors still hold what it was given (else
// they were modified), and its outputs match the reference's run on the same inputs, which runs
// here untimed (its outputs are then scrubbed).
void TimingContext::recheck(TimingRun &run, const LoadedPair &loaded, std::size_t sampleIndex) {
  constexpr std::size_t kMaxReported = 10;
  run.stage = "re-check";
  std::map<std::string, std::vector<std::byte>> got;
  bool inputsIntact = true;
  for (const auto &t : run.tensors) {
    if (!t.bytes) continue;
    if (t.tensor->role == TensorRole::In) {
      if (!holdsPermutation(run, t, t.cand, t.candKey)) {
        run.modifiedInputs.insert(t.tensor->name);
        inputsIntact = false;
      }
      continue;
    }
    got[t.tensor->name] = download(t.cand, t.bytes, "output '" + t.tensor->name + "'");
  }
  // The reference on the very inputs the candidate was given (a given reference: its outputs).
  const bool given = run.reference.outputsOnly();
  for (const auto &t : run.tensors) {
    if (given || !t.bytes || (t.tensor->role == TensorRole::In && inputsIntact)) continue;
    if (t.tensor->role == TensorRole::Out) check(driver_.cuMemsetD8(t.ref, 0, t.bytes), "clearing '" + t.tensor->name + "'");
    else permuteInto(run, t, t.ref, t.candKey);
  }
  if (!given) {
    activity();
    run.stage = "re-check reference";
    DeviceContext::run(loaded.reference, run.args(false), "reference");
    activity();
  }
  run.stage = "re-check";
  for (const auto &t : run.tensors) {
    if (t.tensor->role == TensorRole::In) continue;
    const auto want = given ? run.given.at(t.tensor->name) : download(t.ref, t.bytes, "reference output");
    const auto &mine = got[t.tensor->name];
    const auto report = compareOutputs(mine, want, t.tensor->dtype, t.count,
                                       t.tensor->tolerance.value_or(Tolerance{}), t.shape, kMaxReported);
    std::size_t scrubbed = 0;
    for (auto b : mine)
      if (b == std::byte{kReferenceScrub}) ++scrubbed;
    const bool copiedReference = !report.passed() && mine.size() && scrubbed * 2 > mine.size();
    run.rechecks.push_back({sampleIndex, t.tensor->name, report.passed(), report.summary, scrubbed});
    if (report.passed() || !run.recheckFailure.empty()) continue;
    run.recheckFailure = copiedReference ? "reference-buffer-copied" : "timed-output-mismatch";
    run.recheckDetail =
        copiedReference
            ? "timed sample " + std::to_string(sampleIndex) + ": output '" + t.tensor->name +
                  "' holds the bytes the reference's output buffer is scrubbed with: the candidate copied the "
                  "reference's buffer instead of computing"
            : "timed sample " + std::to_string(sampleIndex) + ": output '" + t.tensor->name +
                  "' is wrong on this sample's fresh inputs although the evaluation passed (a result "
                  "remembered from earlier inputs, or work skipped on repeated calls?): " + report.summary;
  }
  scrubReference(run);
}

bool TimingContext::clockUp() {
  if (!nvml_ || !nvml_->ready() || peakSmClockMHz_ <= 0) return false;
  const auto c = nvml_->clocks(pciBusId_);
  return c.ok && c.smMHz >= 0.9 * peakSmClockMHz_;
}

// Warm-up, each kernel: warmup_launches samples as timed ones are taken (no flush), then
// batches of launches back to back, doubling, until one batch holds ≥ warmup_ms of GPU time
// (the SM clock has risen by then), at most 10 s.
WarmupSides TimingContext::warmUp(TimingRun &run, const LoadedPair &loaded, EventSink &sink) {
  sink.progress(TimingProgress{"warm-up", run.requested.configName, 0, 0, std::nullopt, {}});
  WarmupSides warmup;
  for (bool isCandidate : {true, false}) {
    if (!isCandidate && !run.timeReference) break;
    const LoadedLaunch &launch = isCandidate ? loaded.candidate : loaded.reference;
    const std::string who = isCandidate ? "candidate" : "reference";
    double gpuMs = 0;
    std::size_t launches = 0;
    bool endedOnClock = false;
    for (; launches < run.warmupLaunches; ++launches) gpuMs += sample(run, launch, isCandidate, false).eventMs;
    const auto t0 = Clock::now();
    for (std::size_t batch = 1; run.warmupMs > 0; batch *= 2) {
      run.stage = who + " warm-up";
      float ms = 0;
      if (launch.host) {
        ms = static_cast<float>(1e3 * DeviceContext::run(launch, run.args(isCandidate), who, batch));
      } else {
        check(driver_.cuEventRecord(run.startEvent, nullptr), "recording an event");
        for (std::size_t i = 0; i < batch; ++i) enqueue(launch, run.args(isCandidate), who);
        check(driver_.cuEventRecord(run.stopEvent, nullptr), "recording an event");
        check(driver_.cuCtxSynchronize(), who + " warm-up");
        check(driver_.cuEventElapsedTime(&ms, run.startEvent, run.stopEvent), "reading the event timer");
      }
      gpuMs += ms;
      launches += batch;
      if (ms >= run.warmupMs || std::chrono::duration<double>(Clock::now() - t0).count() > 10.0 ||
          batch >= (1u << 20))
        break;
      // The point of warming up is the SM clock: once NVML reads it within 10% of its peak
      // (the evaluation that came just before usually got it there), a short batch is enough.
      if (clockUp()) {
        endedOnClock = true;
        break;
      }
    }
    activity();
    (isCandidate ? warmup.candidate : warmup.reference) = WarmupRecord{launches, gpuMs, endedOnClock};
  }
  return warmup;
}

// Interleaved samples until the spread is small, the time cap or the sample cap. Re-checked
// (recheck) right after them: the candidate's first sample, one drawn at random among the
// next min_samples - 1, later ones with probability 1/16 (kRandomRechecks in all), and one more
// candidate sample taken after the rule stopped: a candidate cannot tell which of its samples
// will be looked at.
StopReason TimingContext::sampleUntilSettled(TimingRun &run, const LoadedPair &loaded, EventSink &sink) {
  SampleStats candStats, refStats;
  const auto samplingStarted = Clock::now();
  StopReason reason = StopReason::Continue;
  auto lastProgress = samplingStarted;
  std::size_t sentSamples = 0;  // candidate samples already sent in a progress event
  // The candidate's sample times since the last event: a live view plots them as they come.
  auto sendSamples = [&] {
    TimingProgress p{"timing", run.requested.configName, run.candSamples.size(), candStats.relativeSpread,
                     std::nullopt, {}};
    if (run.timeReference) p.referenceSpread = refStats.relativeSpread;
    for (; sentSamples < run.candSamples.size(); ++sentSamples)
      p.candidateMs.push_back(run.candSamples[sentSamples].primaryMs);
    sink.progress(p);
  };
  // Each re-check costs a reference run and a download of the outputs (on a 256 MiB softmax
  // about as much as a hundred samples): three beyond the first.
  constexpr std::size_t kRandomRechecks = 3;
  const std::size_t early = std::uniform_int_distribution<std::size_t>(1, std::max<std::size_t>(1, run.rule.minSamples - 1))(run.rng);
  std::size_t randomRechecks = 0;
  while (reason == StopReason::Continue) {
    const std::size_t index = run.candSamples.size();
    run.candSamples.push_back(sample(run, loaded.candidate, true, true));
    if (index == 0) recheck(run, loaded, 0);
    else if (randomRechecks < kRandomRechecks && (index == early || run.rng() % 16 == 0)) {
      ++randomRechecks;
      recheck(run, loaded, index);
    }
    if (run.timeReference) run.refSamples.push_back(sample(run, loaded.reference, false, true));
    // (Below rule.minSamples the rule always goes on; the samples are still sent as they come.)
    candStats = summarizeSamples(primaries(run.candSamples, false));
    refStats = run.timeReference ? summarizeSamples(primaries(run.refSamples, false)) : candStats;
    const double elapsed = std::chrono::duration<double>(Clock::now() - samplingStarted).count();
    reason = shouldStopSampling(candStats, refStats, elapsed, run.rule);
    if (Clock::now() - lastProgress > std::chrono::milliseconds(250)) {
      lastProgress = Clock::now();
      sendSamples();
    }
  }
  // One more candidate sample, re-checked: a candidate that turns bad after some launches cannot
  // count on the re-checks having happened early.
  run.candSamples.push_back(sample(run, loaded.candidate, true, true));
  recheck(run, loaded, run.candSamples.size() - 1);
  if (sentSamples < run.candSamples.size()) sendSamples();  // the last ones (or all, when it settled at once)
  return reason;
}

// The floor the candidate's median is judged against: this device's measured ceilings for the
// task's data type when the client sent them, else the theoretical DRAM bandwidth alone.
RooflineFloor TimingContext::rooflineFloorOf(const TimingRun &run) const {
  const bool measured = run.ceilingBytesPerS > 0;
  const double bytesPerS = measured ? run.ceilingBytesPerS : peakBandwidth_;
  const double flopsPerS = measured ? run.ceilingFlopsPerS : 0.0;
  // Up to the L2's size of the traffic (outputs written into it) may not reach DRAM while the
  // kernel runs: only the rest counts against the bandwidth.
  const double dramBytes = std::max(0.0, run.bytes - static_cast<double>(l2Bytes_));
  const auto floor = rooflineFloor(run.flops, dramBytes, bytesPerS, flopsPerS, run.compute);
  return RooflineFloor{run.flops,         dramBytes,   bytesPerS, flopsPerS, floor.seconds * 1000.0,
                       floor.bound, measured ? "measured" : "theoretical"};
}

TimeReply TimingContext::time(const TimeRequest &request, EventSink &sink) {
  const auto started = Clock::now();
  TimingRun run = readRequest(request);
  if (run.reference.outputsOnly()) {
    run.given = readGivenOutputs(run.reference, run.tensors, {run.seed}, "time").at(run.seed);
    run.timeReference = false;  // nothing to time: the client times the module itself
  }
  if (contextLost_) throw CommandError("context-lost", "the CUDA context was lost earlier; restart the worker");
  ensureContext();
  auto &cupti = KernelActivity::instance();
  run.useCupti = cupti.active();

  TimeReply reply;
  reply.config = run.requested.configName;
  reply.seed = run.seed;
  reply.timer = run.useCupti ? "cupti" : "cuda-events";
  if (!run.useCupti)
    reply.timerNote = "CUPTI kernel records are unavailable (" + cupti.problem() +
                      "): CUDA events around the launch are the figure; kernels on other streams are not counted";
  if (run.reference.outputsOnly())
    reply.timerNote += std::string(reply.timerNote.empty() ? "" : "; ") +
                       "inputs were not permuted between samples: the reference is given as its outputs for the "
                       "generated inputs (a PyTorch module's), which the re-checks compare with";
  LoadedPair loaded(*this);
  try {
    if (!loadBoth(loaded, run.reference, run.candidate, reply)) return reply;
    endIdleLaunchers();  // earlier candidates' processes: nothing of theirs runs beside these samples
    const bool hostCandidate = loaded.candidate.host != nullptr;
    if (loaded.candidate.host) {
      reply.timer = "host-wall-clock";
      reply.timerNote = "a host launcher's figure is the worker's clock from the call to the end of its work in its "
                        "own process (host work, copies, every stream), less the round trip of a clean launcher "
                        "process (launcher_overhead_ms); the reference's is " +
                        std::string(run.useCupti ? "CUPTI's kernel span" : "CUDA events") +
                        (reply.timerNote.empty() ? "" : "; " + reply.timerNote);
    }
    allocate(run);
    // After allocate: the baseline's samples flush L2 as the candidate's do. The GPU's switch
    // from the worker's context after the flush is most of a host launcher's round trip.
    if (loaded.candidate.host) reply.launcherOverheadMs = run.hostOverheadMs = launcherOverhead(run);
    reply.l2Flush = run.flushKernel ? "read (ld.global.cg) of the flush buffer" : "memset of the flush buffer";
    uploadInputs(run);
    reply.warmup = warmUp(run, loaded, sink);
    reply.stopReason = toString(sampleUntilSettled(run, loaded, sink));
    // Without the library fence (no Landlock) a vendor library loaded while timed is still caught.
    if (const auto forbidden = forbiddenLibrariesLoaded(loaded.candidate, run.requested.task.allowedLibraries);
        !forbidden.empty() && run.recheckFailure.empty()) {
      run.recheckFailure = "forbidden-library";
      run.recheckDetail = "the candidate loaded vendor libraries the task does not allow while it was timed: " + forbidden.front();
    }
    if (hostCandidate && run.timeReference) timeReferenceAlone(run, loaded);
    // The generated values themselves, kept where a device kernel in this context could write
    // them: had a candidate changed them, every later sample and re-check would agree with it.
    run.stage = "inputs check";
    for (const auto &t : run.tensors)
      if (t.bytes && t.tensor->role != TensorRole::Out && download(t.original, t.bytes, "input") != t.host)
        run.modifiedInputs.insert(t.tensor->name);
    reply.inputsModified.assign(run.modifiedInputs.begin(), run.modifiedInputs.end());

    reply.candidate = timedSide(run.candSamples, run.rule.minSamples);
    if (run.timeReference) reply.reference = timedSide(run.refSamples, run.rule.minSamples);
    reply.l2CacheBytes = l2Bytes_;
    reply.l2FlushBytes = run.flushBytes;
    reply.candidateKernels = run.firstKernelNames;
    reply.rechecks = run.rechecks;
    reply.l2Reset = run.l2Reset;
    reply.permutationSeed = run.permutationSeed;
    if (reply.reference && reply.candidate->stats.median > 0)
      reply.speedup = reply.reference->stats.median / reply.candidate->stats.median;
    if (!pciBusId_.empty() && nvml_) reply.nvml = nvml_->ready() ? "sm clock per sample" : nvml_->status().problem;
    reply.roofline = rooflineFloorOf(run);
    if (hostCandidate) {  // (its process has ended: loaded.candidate.host is no more)
      reply.timerNote += hostLauncherNote(run);
      if (const auto disturbed = referenceDisturbance(run); !disturbed.empty() && run.recheckFailure.empty()) {
        run.recheckFailure = "reference-disturbed";
        run.recheckDetail = disturbed;
      }
    }
    timeVerdict(run.candSamples, run.useCupti, run.recheckFailure, run.recheckDetail, reply);
    completeReply(reply, started);
    return reply;
  } catch (const CudaFailure &f) {
    runtimeError(f, run.stage, reply, sink);
    return reply;
  }
}

}  // namespace

void addTimeCommand(WorkerServer &server, std::optional<int> device) {
  addDeviceCommand(server, "time", device, &TimingContext::time);
}

}  // namespace kwb::worker
