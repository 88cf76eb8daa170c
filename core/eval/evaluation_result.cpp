#include "core/eval/evaluation_result.h"

#include "core/text/json_fields.h"

namespace kwb {

using nlohmann::json;
using json_fields::read;
using json_fields::readFields;
using json_fields::writeFields;

std::string evaluationResultText(const EvaluationResult &result) { return json(result).dump(); }

EvaluationResult parseEvaluationResult(const std::string &text) {
  EvaluationResult result;
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) {
    result.message = "the stored result of this run is not valid JSON";
    return result;
  }
  try {
    j.get_to(result);
  } catch (const json::exception &e) {
    result = EvaluationResult{};
    result.message = std::string("the stored result of this run does not read as one: ") + e.what();
  }
  return result;
}

namespace {

using json_fields::field;
using json_fields::omitEmpty;

constexpr auto kLaunchDimsFields = std::tuple{
    field("grid", &LaunchDims::grid), field("block", &LaunchDims::block),
    field("shared_bytes", &LaunchDims::sharedBytes)};

constexpr auto kMismatchFields = std::tuple{
    field("index", &MismatchRecord::index), field("coordinates", &MismatchRecord::coordinates),
    field("got", &MismatchRecord::got), field("want", &MismatchRecord::want)};

constexpr auto kComparisonFields = std::tuple{
    field("passed", &ComparisonSummary::passed),
    field("checked", &ComparisonSummary::checked),
    field("mismatches", &ComparisonSummary::mismatches),
    field("first_mismatches", &ComparisonSummary::firstMismatches),
    field("max_abs_error", &ComparisonSummary::maxAbsError),
    field("max_abs_error_index", &ComparisonSummary::maxAbsErrorIndex),
    field("max_rel_error", &ComparisonSummary::maxRelError),
    field("max_rel_error_index", &ComparisonSummary::maxRelErrorIndex),
    field("relative_l2_error", &ComparisonSummary::relativeL2Error),
    field("nan_in_got", &ComparisonSummary::nanInGot),
    field("nan_in_reference", &ComparisonSummary::nanInReference),
    field("summary", &ComparisonSummary::summary)};

constexpr auto kUnwrittenFields = std::tuple{
    field("count", &UnwrittenSummary::count), field("first_indices", &UnwrittenSummary::firstIndices),
    field("summary", &UnwrittenSummary::summary)};

constexpr auto kRaceFields = std::tuple{
    field("race", &RaceSummary::race), field("different_bits", &RaceSummary::differentBits),
    field("beyond_rounding", &RaceSummary::beyondRounding),
    field("max_abs_difference", &RaceSummary::maxAbsDifference), field("summary", &RaceSummary::summary)};

constexpr auto kOutputCheckFields = std::tuple{
    field("tensor", &OutputCheck::tensor), omitEmpty("comparison", &OutputCheck::comparison),
    omitEmpty("unwritten", &OutputCheck::unwritten), omitEmpty("race", &OutputCheck::race)};

constexpr auto kSeedFields = std::tuple{
    field("seed", &SeedOutcome::seed),
    field("passed", &SeedOutcome::passed),
    field("summary", &SeedOutcome::summary),
    field("unwritten", &SeedOutcome::unwritten),
    field("inputs_modified", &SeedOutcome::inputsModified),
    field("modified_inputs", &SeedOutcome::modifiedInputs),
    field("race", &SeedOutcome::race),
    field("output_reused", &SeedOutcome::outputReused),
    field("no_kernel_ran", &SeedOutcome::noKernelRan),
    field("reference_cached", &SeedOutcome::referenceCached),
    field("outputs", &SeedOutcome::outputs)};

constexpr auto kWarmupFields = std::tuple{
    field("launches", &WarmupRecord::launches), field("gpu_ms", &WarmupRecord::gpuMs),
    field("ended_on_clock", &WarmupRecord::endedOnClock)};

constexpr auto kEventTimesFields = std::tuple{
    field("median_ms", &EventTimes::medianMs), field("iqr_ms", &EventTimes::iqrMs),
    field("min_ms", &EventTimes::minMs)};

constexpr auto kRecheckFields = std::tuple{
    field("sample", &Recheck::sample), field("tensor", &Recheck::tensor), field("passed", &Recheck::passed),
    field("summary", &Recheck::summary), field("reference_scrub_bytes", &Recheck::referenceScrubBytes)};

constexpr auto kRooflineFloorFields = std::tuple{
    field("flops", &RooflineFloor::flops), field("bytes", &RooflineFloor::bytes),
    field("peak_bandwidth_bytes_per_s", &RooflineFloor::peakBandwidthBytesPerS),
    field("peak_flops_per_s", &RooflineFloor::peakFlopsPerS), field("floor_ms", &RooflineFloor::floorMs),
    field("bound", &RooflineFloor::bound), field("ceilings", &RooflineFloor::ceilings)};

constexpr auto kFindingFields = std::tuple{field("reason", &Finding::reason), field("message", &Finding::message)};

// Timing fields whose form does not depend on the outcome.
constexpr auto kTimingFields = std::tuple{
    field("ok", &TimingOutcome::ok), field("timer", &TimingOutcome::timer),
    omitEmpty("timer_note", &TimingOutcome::timerNote), field("findings", &TimingOutcome::findings)};
constexpr auto kTimedFields = std::tuple{
    field("candidate", &TimingOutcome::candidate),
    field("suspicious", &TimingOutcome::suspicious),
    omitEmpty("suspicious_reason", &TimingOutcome::suspiciousReason),
    field("stop_reason", &TimingOutcome::stopReason),
    field("l2_flush_bytes", &TimingOutcome::l2FlushBytes),
    field("throttled_samples", &TimingOutcome::throttledSamples),
    field("rechecks", &TimingOutcome::rechecks),
    field("permutation_seed", &TimingOutcome::permutationSeed),
    field("seconds", &TimingOutcome::seconds)};

constexpr auto kTorchBaselineFields = std::tuple{
    field("eager_ms", &TorchBaseline::eagerMs), field("compiled_ms", &TorchBaseline::compiledMs),
    field("eager_samples", &TorchBaseline::eagerSamples), field("compiled_samples", &TorchBaseline::compiledSamples),
    field("eager_spread", &TorchBaseline::eagerSpread), field("compiled_spread", &TorchBaseline::compiledSpread),
    field("speedup_eager", &TorchBaseline::speedupEager), field("speedup_compiled", &TorchBaseline::speedupCompiled),
    field("compile_seconds", &TorchBaseline::compileSeconds), field("timer", &TorchBaseline::timer),
    omitEmpty("eager_error", &TorchBaseline::eagerError), omitEmpty("compiled_error", &TorchBaseline::compiledError)};

constexpr auto kConfigFields = std::tuple{
    field("config", &ConfigOutcome::config),
    field("outcome", &ConfigOutcome::outcome),
    field("reason", &ConfigOutcome::reason),
    field("error_name", &ConfigOutcome::errorName),
    field("message", &ConfigOutcome::message),
    field("candidate_launch", &ConfigOutcome::candidateLaunch),
    field("reference_launch", &ConfigOutcome::referenceLaunch),
    omitEmpty("occupancy", &ConfigOutcome::occupancy),
    field("seeds", &ConfigOutcome::seeds),
    omitEmpty("timing", &ConfigOutcome::timing),
    omitEmpty("torch", &ConfigOutcome::torch)};

constexpr auto kResultFields = std::tuple{
    field("outcome", &EvaluationResult::outcome),
    field("message", &EvaluationResult::message),
    field("arch", &EvaluationResult::arch),
    field("device", &EvaluationResult::device),
    field("device_ordinal", &EvaluationResult::deviceOrdinal),
    field("sandbox", &EvaluationResult::sandbox),
    field("seconds", &EvaluationResult::seconds),
    field("compile", &EvaluationResult::candidate),
    omitEmpty("reference_diagnostics", &EvaluationResult::referenceDiagnostics),
    field("configs", &EvaluationResult::configs),
    field("fresh_seed", &EvaluationResult::freshSeed),
    omitEmpty("sanitize", &EvaluationResult::sanitize),
    field("reference", &EvaluationResult::reference),
    omitEmpty("torch_version", &EvaluationResult::torchVersion),
    omitEmpty("torch_problem", &EvaluationResult::torchProblem)};

}  // namespace

// clang-format off
void to_json(json &j, const TorchBaseline &v) { writeFields(j, v, kTorchBaselineFields); }
void from_json(const json &j, TorchBaseline &v) { readFields(j, v, kTorchBaselineFields); }
void to_json(json &j, const LaunchDims &v) { writeFields(j, v, kLaunchDimsFields); }
void from_json(const json &j, LaunchDims &v) { readFields(j, v, kLaunchDimsFields); }
void to_json(json &j, const MismatchRecord &v) { writeFields(j, v, kMismatchFields); }
// The values are exact text in the tensor's dtype ("0.51", "NaN"); a number written by another
// writer reads as its JSON text.
void from_json(const json &j, MismatchRecord &v) {
  json copy = j;
  for (const char *key : {"got", "want"})
    if (copy.contains(key) && copy[key].is_number()) copy[key] = copy[key].dump();
  readFields(copy, v, kMismatchFields);
}
void to_json(json &j, const ComparisonSummary &v) { writeFields(j, v, kComparisonFields); }
void from_json(const json &j, ComparisonSummary &v) { readFields(j, v, kComparisonFields); }
void to_json(json &j, const UnwrittenSummary &v) { writeFields(j, v, kUnwrittenFields); }
void from_json(const json &j, UnwrittenSummary &v) { readFields(j, v, kUnwrittenFields); }
void to_json(json &j, const RaceSummary &v) { writeFields(j, v, kRaceFields); }
void from_json(const json &j, RaceSummary &v) { readFields(j, v, kRaceFields); }
void to_json(json &j, const OutputCheck &v) { writeFields(j, v, kOutputCheckFields); }
void from_json(const json &j, OutputCheck &v) { readFields(j, v, kOutputCheckFields); }
void to_json(json &j, const SeedOutcome &v) { writeFields(j, v, kSeedFields); }
void from_json(const json &j, SeedOutcome &v) { readFields(j, v, kSeedFields); }
void to_json(json &j, const WarmupRecord &v) { writeFields(j, v, kWarmupFields); }
void from_json(const json &j, WarmupRecord &v) { readFields(j, v, kWarmupFields); }
void to_json(json &j, const EventTimes &v) { writeFields(j, v, kEventTimesFields); }
void from_json(const json &j, EventTimes &v) { readFields(j, v, kEventTimesFields); }
void to_json(json &j, const Recheck &v) { writeFields(j, v, kRecheckFields); }
void from_json(const json &j, Recheck &v) { readFields(j, v, kRecheckFields); }
void to_json(json &j, const RooflineFloor &v) { writeFields(j, v, kRooflineFloorFields); }
void from_json(const json &j, RooflineFloor &v) { readFields(j, v, kRooflineFloorFields); }
void to_json(json &j, const Finding &v) { writeFields(j, v, kFindingFields); }
void from_json(const json &j, Finding &v) { readFields(j, v, kFindingFields); }
void to_json(json &j, const ConfigOutcome &v) { writeFields(j, v, kConfigFields); }
void from_json(const json &j, ConfigOutcome &v) { readFields(j, v, kConfigFields); }
void to_json(json &j, const EvaluationResult &v) { writeFields(j, v, kResultFields); }
void from_json(const json &j, EvaluationResult &v) { readFields(j, v, kResultFields); }
// clang-format on

namespace {

template <typename T>
json sides(const std::optional<T> &candidate, const std::optional<T> &reference) {
  json j = json::object();
  if (candidate) j["candidate"] = *candidate;
  if (reference) j["reference"] = *reference;
  return j;
}

}  // namespace

// Timed: the candidate's and the reference's statistics (the reference null when only the
// candidate was sampled), the floor, warm-up and CUDA-event cross-checks; not timed: the error.
void to_json(json &j, const TimingOutcome &v) {
  writeFields(j, v, kTimingFields);
  if (!v.ok) {
    j["error"] = v.error;
    return;
  }
  writeFields(j, v, kTimedFields);
  j["reference"] = v.referenceTimed ? json(v.reference) : json(nullptr);
  j["speedup"] = v.referenceTimed ? json(v.speedup) : json(nullptr);
  j["roofline"] = v.roofline ? json(*v.roofline) : json::object();
  j["warmup"] = sides(v.warmupCandidate, v.warmupReference);
  j["events"] = sides(v.eventsCandidate, v.eventsReference);
}

void from_json(const json &j, TimingOutcome &v) {
  readFields(j, v, kTimingFields);
  read(j, "error", v.error);
  readFields(j, v, kTimedFields);
  v.referenceTimed = j.contains("reference") && j["reference"].is_object();
  read(j, "reference", v.reference);
  read(j, "speedup", v.speedup);
  if (j.contains("roofline") && j["roofline"].is_object() && !j["roofline"].empty()) read(j, "roofline", v.roofline);
  // An empty object stands for a side that was not timed (as earlier versions wrote it).
  auto side = [&j](const char *group, const char *key, auto &member) {
    if (!j.contains(group) || !j[group].is_object()) return;
    const auto &g = j[group];
    if (g.contains(key) && g[key].is_object() && !g[key].empty()) read(g, key, member);
  };
  side("warmup", "candidate", v.warmupCandidate);
  side("warmup", "reference", v.warmupReference);
  side("events", "candidate", v.eventsCandidate);
  side("events", "reference", v.eventsReference);
}

}  // namespace kwb
