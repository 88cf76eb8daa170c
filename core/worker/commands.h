#pragma once
// The worker's device commands as typed requests and replies (PROTOCOL.md): the client
// (core/eval, core/profile) builds the request structs and reads the replies through these
// pairs; the server (core/worker/server) reads the requests and writes its replies through the
// same pairs. Each pair is made from one field table (core/text/json_fields.h), so a key is
// named once. The profile command's pair is in core/profile/profile_request.h.
//
// Reading checks types (a string where a number belongs, a negative or fractional number where
// a count belongs) and throws nlohmann::json::type_error naming the field; what a value must be
// beyond its type (a grid of 1 to 3 positive integers, a time cap between 1 ms and 10 min) is
// the server's to check (core/worker/server/launch_spec.h), with messages naming the field.
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval/evaluation_result.h"
#include "core/eval/timing_statistics.h"
#include "core/text/json_fields.h"
#include "core/worker/protocol.h"

namespace kwb::worker {

// A launch, a request's "reference" or "candidate": device code (a CUBIN's kernel with its
// evaluated grid, block and dynamic shared memory), or a host launcher (a shared library
// exporting kwb_launch, which does its own launches). args: tensor and size names in
// parameter order.
// A reference given as its outputs (a PyTorch module's, core/eval/torch_reference.h): a file of
// one output tensor's bytes for one seed, in the worker's private directory; the worker reads and
// removes it before any candidate code runs in the request.
struct GivenOutput {
  std::uint64_t seed = 0;
  std::string tensor;
  std::string file;
};

struct LaunchRequest {
  std::vector<GivenOutput> outputs;  // a reference given as outputs: no code, no launch
  std::string cubin;    // base64 CUBIN (device code)
  std::string library;  // base64 shared library (a host launcher)
  std::string kernel;
  std::vector<std::int64_t> grid, block;
  std::int64_t sharedBytes = 0;
  std::vector<std::string> args;
  bool hostLauncher() const { return !library.empty(); }
  bool givenOutputs() const { return !outputs.empty(); }
};

// The task and size configuration every device request names. `manifest` is the task.toml's
// text (empty: the worker reads the folder's own).
struct TaskRequest {
  std::string task;  // the task folder
  std::string manifest;
  std::string config;
};

struct EvaluateRequest : TaskRequest {
  std::vector<std::uint64_t> seeds;  // empty: the manifest's
  std::uint64_t maxReported = 10;    // mismatches listed per output
  LaunchRequest reference, candidate;
};

struct TimeRequest : TaskRequest {
  std::uint64_t seed = 1;
  double timeCapMs = 3000, maxSamples = 1000, minSamples = 10, targetSpread = 0.01;
  double warmupMs = 50, warmupLaunches = 10;
  double flops = 0, bytes = 0;  // the task's cost for the configuration (0: no roofline floor)
  // The device's measured ceilings for this task (core/eval/roofline.h): copy bandwidth and the
  // compute rate of the task's data type, named by `compute` ("f32" or "tensor-core"). 0: not
  // measured; the floor then uses the theoretical DRAM bandwidth alone.
  double ceilingBytesPerS = 0, ceilingFlopsPerS = 0;
  std::string compute = "f32";
  bool timeReference = true;    // false: the candidate alone is sampled
  std::uint64_t permutationSeed = 0;  // the samples' fresh inputs and re-checks; 0: a random one
  LaunchRequest reference, candidate;
};

// The kernels of the ceilings measurement (core/eval/roofline.h): each launched as
// (sms × blocksPerSm) blocks of `threads`, with (float *out, int iters).
struct CeilingKernel {
  std::string cubin;  // base64
  std::string kernel;
  std::int64_t blocksPerSm = 8, threads = 256, iters = 4096;
  double flopsPerThreadIter = 0;
};

struct CeilingsRequest {
  std::uint64_t copyBytes = std::uint64_t{1} << 30;
  CeilingKernel fma;
  std::optional<CeilingKernel> mma;  // tensor cores (sm_80 and later)
};

// What every device command's reply says of its outcome: the verdict ("correct",
// "incorrect", "timed", "profiled", "not-profiled", "measured", or "load-error" /
// "runtime-error"), a named reason (or, for errors, the failure in words) with detail, the
// CUDA error's name and the stage it happened in, whether the context is lost (the worker
// exits after the reply), and the request's wall time.
struct ReplyVerdict {
  std::string verdict;
  std::string reason;
  std::string reasonDetail;
  std::string errorName;
  std::string stage;
  bool contextLost = false;
  double seconds = 0;
};

// A launch as an evaluate reply echoes it.
struct LaunchShape {
  std::vector<std::int64_t> grid, block;
  std::int64_t sharedBytes = 0;
  bool hostLauncher = false;
};

struct EvaluateReply : ReplyVerdict {
  std::string config;
  LaunchShape referenceLaunch, candidateLaunch;
  std::vector<SeedOutcome> seeds;
  std::vector<std::string> forbiddenLibraries;  // "cublas (/path/libcublas.so.13)"
  std::string forbiddenMessage;
  bool kernelRecords = false;  // CUPTI recorded the kernels: the no-kernel check was made
  std::uint64_t candidateRuns = 0;
};

struct KernelCountRange {
  std::uint64_t min = 0, max = 0;
};

// One side ("candidate", "reference") of a time reply: its statistics (SampleStats' keys at
// the side's top level) and what each sample saw.
struct TimedSide {
  SampleStats stats;
  std::vector<double> samplesMs;
  EventTimes events;  // the CUDA-event cross-check
  std::vector<unsigned> smClockMhz;
  std::uint64_t throttledSamples = 0;
  bool throttledLeftOut = false;
  KernelCountRange kernelsPerSample;
};

struct WarmupSides {
  std::optional<WarmupRecord> candidate, reference;
};

struct TimeReply : ReplyVerdict {
  std::string config;
  std::uint64_t seed = 0;
  std::string timer;      // "cupti" or "cuda-events"
  std::string timerNote;  // why not CUPTI
  std::string l2Flush;    // how the L2 was flushed
  std::string l2Reset;    // what was reset in the L2 before every sample
  double launcherOverheadMs = 0;  // a host launcher: the clean process's least round trip, subtracted
  WarmupSides warmup;
  std::string stopReason;
  std::uint64_t l2CacheBytes = 0, l2FlushBytes = 0;
  std::optional<TimedSide> candidate, reference;  // reference: none when not timed
  std::vector<std::string> candidateKernels;
  std::vector<Recheck> rechecks;
  std::uint64_t permutationSeed = 0;  // what the request's permutation_seed repeats this run with
  std::optional<double> speedup;
  std::string nvml;
  std::optional<RooflineFloor> roofline;
  bool suspicious = false;
  std::string suspiciousReason;
  std::vector<Finding> findings;
  std::vector<std::string> inputsModified;
};

struct CeilingsReply : ReplyVerdict {
  std::string device, pciBusId, message;
  int driverVersion = 0, sms = 0;
  std::uint64_t copyBytes = 0;
  double copySeconds = 0, copyBytesPerS = 0;
  double fmaSeconds = 0, fmaFlops = 0, fp32FlopsPerS = 0;
  double mmaSeconds = 0, mmaFlops = 0, tensorFlopsPerS = 0;
};

// Progress events of the evaluate command: stage "inputs", "candidate", "race-check" for each
// seed as it goes, "seed" (with passed) after each.
struct EvaluateProgress {
  std::string stage, config;
  std::uint64_t seed = 0, done = 0, of = 0;
  std::optional<bool> passed;
};

// Progress events of the time command: stage "warm-up" once, then "timing" with the candidate's
// sample times since the last event (a live view plots them as they come).
struct TimingProgress {
  std::string stage, config;
  std::uint64_t samples = 0;
  double candidateSpread = 0;
  std::optional<double> referenceSpread;  // none when the reference is not timed
  std::vector<double> candidateMs;
};

// A progress event's typed form; none for another event or one that does not read.
template <typename Progress>
std::optional<Progress> readProgress(const Event &event) {
  if (event.event != "progress") return std::nullopt;
  try {
    return event.data.get<Progress>();
  } catch (const nlohmann::json::exception &) {
    return std::nullopt;
  }
}

void to_json(nlohmann::json &j, const EvaluateProgress &v);
void from_json(const nlohmann::json &j, EvaluateProgress &v);
void to_json(nlohmann::json &j, const TimingProgress &v);
void from_json(const nlohmann::json &j, TimingProgress &v);
void to_json(nlohmann::json &j, const GivenOutput &v);
void from_json(const nlohmann::json &j, GivenOutput &v);
void to_json(nlohmann::json &j, const LaunchRequest &v);
void from_json(const nlohmann::json &j, LaunchRequest &v);
void to_json(nlohmann::json &j, const EvaluateRequest &v);
void from_json(const nlohmann::json &j, EvaluateRequest &v);
void to_json(nlohmann::json &j, const TimeRequest &v);
void from_json(const nlohmann::json &j, TimeRequest &v);
void to_json(nlohmann::json &j, const CeilingKernel &v);
void from_json(const nlohmann::json &j, CeilingKernel &v);
void to_json(nlohmann::json &j, const CeilingsRequest &v);
void from_json(const nlohmann::json &j, CeilingsRequest &v);
void to_json(nlohmann::json &j, const ReplyVerdict &v);
void from_json(const nlohmann::json &j, ReplyVerdict &v);
void to_json(nlohmann::json &j, const LaunchShape &v);
void from_json(const nlohmann::json &j, LaunchShape &v);
void to_json(nlohmann::json &j, const EvaluateReply &v);
void from_json(const nlohmann::json &j, EvaluateReply &v);
void to_json(nlohmann::json &j, const KernelCountRange &v);
void from_json(const nlohmann::json &j, KernelCountRange &v);
void to_json(nlohmann::json &j, const TimedSide &v);
void from_json(const nlohmann::json &j, TimedSide &v);
void to_json(nlohmann::json &j, const WarmupSides &v);
void from_json(const nlohmann::json &j, WarmupSides &v);
void to_json(nlohmann::json &j, const TimeReply &v);
void from_json(const nlohmann::json &j, TimeReply &v);
void to_json(nlohmann::json &j, const CeilingsReply &v);
void from_json(const nlohmann::json &j, CeilingsReply &v);

// The fields every device request and every device reply shares, for the field tables of the
// commands' structs (core/profile/profile_request.cpp builds on them too).
inline constexpr auto kTaskRequestFields =
    std::tuple{json_fields::field("task", &TaskRequest::task), json_fields::omitEmpty("manifest", &TaskRequest::manifest),
               json_fields::field("config", &TaskRequest::config)};
inline constexpr auto kReplyVerdictFields = std::tuple{
    json_fields::field("verdict", &ReplyVerdict::verdict),
    json_fields::omitEmpty("reason", &ReplyVerdict::reason),
    json_fields::omitEmpty("reason_detail", &ReplyVerdict::reasonDetail),
    json_fields::omitEmpty("error_name", &ReplyVerdict::errorName),
    json_fields::omitEmpty("stage", &ReplyVerdict::stage),
    json_fields::field("context_lost", &ReplyVerdict::contextLost),
    json_fields::field("seconds", &ReplyVerdict::seconds)};

// The text of a JSON reading error without the library's "[json.exception...] " prefixes:
// "field 'seeds': type must be number, but is string".
std::string describeJsonError(const nlohmann::json::exception &e);

}  // namespace kwb::worker
