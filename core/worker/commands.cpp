#include "core/worker/commands.h"

#include <tuple>

#include "core/text/json_fields.h"

namespace kwb::worker {

using nlohmann::json;
using json_fields::field;
using json_fields::omitEmpty;
using json_fields::readFields;
using json_fields::writeFields;

namespace {

constexpr auto kGivenOutputFields = std::tuple{field("seed", &GivenOutput::seed), field("tensor", &GivenOutput::tensor),
                                               field("file", &GivenOutput::file)};

constexpr auto kLaunchRequestFields = std::tuple{
    omitEmpty("outputs", &LaunchRequest::outputs), omitEmpty("cubin", &LaunchRequest::cubin),   omitEmpty("library", &LaunchRequest::library),
    omitEmpty("kernel", &LaunchRequest::kernel), omitEmpty("grid", &LaunchRequest::grid),
    omitEmpty("block", &LaunchRequest::block),   field("shared_bytes", &LaunchRequest::sharedBytes),
    field("args", &LaunchRequest::args)};

constexpr auto kEvaluateRequestFields = std::tuple_cat(kTaskRequestFields, std::tuple{
    omitEmpty("seeds", &EvaluateRequest::seeds), field("max_reported", &EvaluateRequest::maxReported),
    field("reference", &EvaluateRequest::reference), field("candidate", &EvaluateRequest::candidate)});

constexpr auto kTimeRequestFields = std::tuple_cat(kTaskRequestFields, std::tuple{
    field("seed", &TimeRequest::seed),
    field("time_cap_ms", &TimeRequest::timeCapMs),
    field("max_samples", &TimeRequest::maxSamples),
    field("min_samples", &TimeRequest::minSamples),
    field("target_spread", &TimeRequest::targetSpread),
    field("warmup_ms", &TimeRequest::warmupMs),
    field("warmup_launches", &TimeRequest::warmupLaunches),
    field("flops", &TimeRequest::flops),
    field("bytes", &TimeRequest::bytes),
    field("ceiling_bytes_per_s", &TimeRequest::ceilingBytesPerS),
    field("ceiling_flops_per_s", &TimeRequest::ceilingFlopsPerS),
    field("compute", &TimeRequest::compute),
    field("time_reference", &TimeRequest::timeReference),
    field("permutation_seed", &TimeRequest::permutationSeed),
    field("reference", &TimeRequest::reference),
    field("candidate", &TimeRequest::candidate)});

constexpr auto kCeilingKernelFields = std::tuple{
    field("cubin", &CeilingKernel::cubin),          field("kernel", &CeilingKernel::kernel),
    field("blocks_per_sm", &CeilingKernel::blocksPerSm), field("threads", &CeilingKernel::threads),
    field("iters", &CeilingKernel::iters),          field("flops_per_thread_iter", &CeilingKernel::flopsPerThreadIter)};

constexpr auto kCeilingsRequestFields = std::tuple{field("copy_bytes", &CeilingsRequest::copyBytes),
                                                   field("fma", &CeilingsRequest::fma),
                                                   omitEmpty("mma", &CeilingsRequest::mma)};

constexpr auto kLaunchShapeFields = std::tuple{
    omitEmpty("grid", &LaunchShape::grid), omitEmpty("block", &LaunchShape::block),
    field("shared_bytes", &LaunchShape::sharedBytes), field("host_launcher", &LaunchShape::hostLauncher)};

constexpr auto kEvaluateReplyFields = std::tuple_cat(kReplyVerdictFields, std::tuple{
    field("config", &EvaluateReply::config),
    field("reference_launch", &EvaluateReply::referenceLaunch),
    field("candidate_launch", &EvaluateReply::candidateLaunch),
    field("seeds", &EvaluateReply::seeds),
    omitEmpty("forbidden_libraries", &EvaluateReply::forbiddenLibraries),
    omitEmpty("forbidden_message", &EvaluateReply::forbiddenMessage),
    field("kernel_records", &EvaluateReply::kernelRecords),
    field("candidate_runs", &EvaluateReply::candidateRuns)});

constexpr auto kKernelCountFields =
    std::tuple{field("min", &KernelCountRange::min), field("max", &KernelCountRange::max)};

constexpr auto kTimedSideFields = std::tuple{
    field("samples_ms", &TimedSide::samplesMs),
    field("events", &TimedSide::events),
    field("sm_clock_mhz", &TimedSide::smClockMhz),
    field("throttled_samples", &TimedSide::throttledSamples),
    field("throttled_left_out", &TimedSide::throttledLeftOut),
    field("kernels_per_sample", &TimedSide::kernelsPerSample)};

constexpr auto kWarmupSidesFields =
    std::tuple{omitEmpty("candidate", &WarmupSides::candidate), omitEmpty("reference", &WarmupSides::reference)};

constexpr auto kTimeReplyFields = std::tuple_cat(kReplyVerdictFields, std::tuple{
    field("config", &TimeReply::config),
    field("seed", &TimeReply::seed),
    field("timer", &TimeReply::timer),
    omitEmpty("timer_note", &TimeReply::timerNote),
    omitEmpty("l2_flush", &TimeReply::l2Flush),
    omitEmpty("l2_reset", &TimeReply::l2Reset),
    field("launcher_overhead_ms", &TimeReply::launcherOverheadMs),
    field("warmup", &TimeReply::warmup),
    omitEmpty("stop_reason", &TimeReply::stopReason),
    field("l2_cache_bytes", &TimeReply::l2CacheBytes),
    field("l2_flush_bytes", &TimeReply::l2FlushBytes),
    field("candidate", &TimeReply::candidate),
    field("reference", &TimeReply::reference),
    field("candidate_kernels", &TimeReply::candidateKernels),
    field("rechecks", &TimeReply::rechecks),
    field("permutation_seed", &TimeReply::permutationSeed),
    field("speedup", &TimeReply::speedup),
    omitEmpty("nvml", &TimeReply::nvml),
    omitEmpty("roofline", &TimeReply::roofline),
    field("suspicious", &TimeReply::suspicious),
    omitEmpty("suspicious_reason", &TimeReply::suspiciousReason),
    field("findings", &TimeReply::findings),
    field("inputs_modified", &TimeReply::inputsModified)});

constexpr auto kCeilingsReplyFields = std::tuple_cat(kReplyVerdictFields, std::tuple{
    field("device", &CeilingsReply::device),
    field("pci_bus_id", &CeilingsReply::pciBusId),
    omitEmpty("message", &CeilingsReply::message),
    field("driver_version", &CeilingsReply::driverVersion),
    field("sms", &CeilingsReply::sms),
    field("copy_bytes", &CeilingsReply::copyBytes),
    field("copy_seconds", &CeilingsReply::copySeconds),
    field("copy_bytes_per_s", &CeilingsReply::copyBytesPerS),
    field("fma_seconds", &CeilingsReply::fmaSeconds),
    field("fma_flops", &CeilingsReply::fmaFlops),
    field("fp32_flops_per_s", &CeilingsReply::fp32FlopsPerS),
    field("mma_seconds", &CeilingsReply::mmaSeconds),
    field("mma_flops", &CeilingsReply::mmaFlops),
    field("tensor_flops_per_s", &CeilingsReply::tensorFlopsPerS)});

constexpr auto kEvaluateProgressFields = std::tuple{
    field("stage", &EvaluateProgress::stage), field("config", &EvaluateProgress::config),
    field("seed", &EvaluateProgress::seed),   field("done", &EvaluateProgress::done),
    field("of", &EvaluateProgress::of),       omitEmpty("passed", &EvaluateProgress::passed)};

constexpr auto kTimingProgressFields = std::tuple{
    field("stage", &TimingProgress::stage),
    field("config", &TimingProgress::config),
    field("samples", &TimingProgress::samples),
    field("candidate_spread", &TimingProgress::candidateSpread),
    field("reference_spread", &TimingProgress::referenceSpread),
    field("candidate_ms", &TimingProgress::candidateMs)};

}  // namespace

void to_json(json &j, const EvaluateProgress &v) { writeFields(j, v, kEvaluateProgressFields); }
void from_json(const json &j, EvaluateProgress &v) { readFields(j, v, kEvaluateProgressFields); }
void to_json(json &j, const TimingProgress &v) { writeFields(j, v, kTimingProgressFields); }
void from_json(const json &j, TimingProgress &v) { readFields(j, v, kTimingProgressFields); }

void to_json(json &j, const GivenOutput &v) { writeFields(j, v, kGivenOutputFields); }
void from_json(const json &j, GivenOutput &v) { readFields(j, v, kGivenOutputFields); }
void to_json(json &j, const LaunchRequest &v) { writeFields(j, v, kLaunchRequestFields); }
void from_json(const json &j, LaunchRequest &v) { readFields(j, v, kLaunchRequestFields); }

void to_json(json &j, const EvaluateRequest &v) { writeFields(j, v, kEvaluateRequestFields); }
void from_json(const json &j, EvaluateRequest &v) { readFields(j, v, kEvaluateRequestFields); }

void to_json(json &j, const TimeRequest &v) { writeFields(j, v, kTimeRequestFields); }
void from_json(const json &j, TimeRequest &v) { readFields(j, v, kTimeRequestFields); }

void to_json(json &j, const CeilingKernel &v) { writeFields(j, v, kCeilingKernelFields); }
void from_json(const json &j, CeilingKernel &v) { readFields(j, v, kCeilingKernelFields); }
void to_json(json &j, const CeilingsRequest &v) { writeFields(j, v, kCeilingsRequestFields); }
void from_json(const json &j, CeilingsRequest &v) { readFields(j, v, kCeilingsRequestFields); }

void to_json(json &j, const ReplyVerdict &v) { writeFields(j, v, kReplyVerdictFields); }
void from_json(const json &j, ReplyVerdict &v) { readFields(j, v, kReplyVerdictFields); }
void to_json(json &j, const LaunchShape &v) { writeFields(j, v, kLaunchShapeFields); }
void from_json(const json &j, LaunchShape &v) { readFields(j, v, kLaunchShapeFields); }

void to_json(json &j, const EvaluateReply &v) { writeFields(j, v, kEvaluateReplyFields); }
void from_json(const json &j, EvaluateReply &v) { readFields(j, v, kEvaluateReplyFields); }

void to_json(json &j, const KernelCountRange &v) { writeFields(j, v, kKernelCountFields); }
void from_json(const json &j, KernelCountRange &v) { readFields(j, v, kKernelCountFields); }

void to_json(json &j, const TimedSide &v) {
  j = v.stats;
  writeFields(j, v, kTimedSideFields);
}
void from_json(const json &j, TimedSide &v) {
  j.get_to(v.stats);
  readFields(j, v, kTimedSideFields);
}

void to_json(json &j, const WarmupSides &v) { writeFields(j, v, kWarmupSidesFields); }
void from_json(const json &j, WarmupSides &v) { readFields(j, v, kWarmupSidesFields); }

void to_json(json &j, const TimeReply &v) { writeFields(j, v, kTimeReplyFields); }
void from_json(const json &j, TimeReply &v) { readFields(j, v, kTimeReplyFields); }

void to_json(json &j, const CeilingsReply &v) { writeFields(j, v, kCeilingsReplyFields); }
void from_json(const json &j, CeilingsReply &v) { readFields(j, v, kCeilingsReplyFields); }

std::string describeJsonError(const nlohmann::json::exception &e) {
  std::string text = e.what();
  // "[json.exception.type_error.302] field 'x': [json.exception.type_error.302] type must be ..."
  for (std::size_t at; (at = text.find("[json.exception.")) != std::string::npos;) {
    const auto end = text.find("] ", at);
    if (end == std::string::npos) break;
    text.erase(at, end + 2 - at);
  }
  return text;
}

}  // namespace kwb::worker
