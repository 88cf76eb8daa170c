#pragma once
// What an evaluation of one candidate found, as typed payloads. The same structs travel from the
// worker (its `evaluate` seeds, its `time` reply) to the Evaluator, from there to the command
// line's --json, the workspace's run history and the GUI's views, each through the one
// to_json/from_json pair beside it. Keys are snake_case; times are in milliseconds (`_ms`).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compile/compile_types.h"
#include "core/compile/occupancy.h"
#include "core/eval/outcome.h"
#include "core/eval/sanitizer.h"
#include "core/eval/timing_statistics.h"

namespace kwb {

// A launch's dimensions for one configuration, its expressions evaluated.
struct LaunchDims {
  std::array<std::int64_t, 3> grid{1, 1, 1};
  std::array<std::int64_t, 3> block{1, 1, 1};
  std::int64_t sharedBytes = 0;
  std::int64_t threadsPerBlock() const { return block[0] * block[1] * block[2]; }
};

// ---- correctness: one seed's outputs --------------------------------------------------------

// An element where the candidate differs: its flat index, coordinates and both values as exact
// text in the tensor's dtype.
struct MismatchRecord {
  std::uint64_t index = 0;
  std::vector<std::int64_t> coordinates;
  std::string got, want;
};

// compareOutputs()'s report as it travels (core/eval/compare.h).
struct ComparisonSummary {
  bool passed = false;
  std::uint64_t checked = 0, mismatches = 0;
  std::vector<MismatchRecord> firstMismatches;
  double maxAbsError = 0;
  std::uint64_t maxAbsErrorIndex = 0;
  std::optional<double> maxRelError;  // empty: infinite (an error against a zero reference)
  std::uint64_t maxRelErrorIndex = 0;
  double relativeL2Error = 0;
  std::uint64_t nanInGot = 0, nanInReference = 0;
  std::string summary;
};

// Elements that still held the poison after both candidate runs.
struct UnwrittenSummary {
  std::uint64_t count = 0;
  std::vector<std::uint64_t> firstIndices;
  std::string summary;
};

// The two candidate runs on the same inputs compared (differenceBeyondRounding()).
struct RaceSummary {
  bool race = false;
  std::uint64_t differentBits = 0, beyondRounding = 0;
  double maxAbsDifference = 0;
  std::string summary;
};

struct OutputCheck {
  std::string tensor;
  std::optional<ComparisonSummary> comparison;
  std::optional<UnwrittenSummary> unwritten;  // `out` tensors only
  std::optional<RaceSummary> race;
};

struct SeedOutcome {
  std::uint64_t seed = 0;
  bool passed = false;
  std::string summary;
  std::uint64_t unwritten = 0;
  bool inputsModified = false;
  std::vector<std::string> modifiedInputs;
  bool race = false;
  std::uint64_t outputReused = 0;  // elements the first run wrote and the second left alone
  bool noKernelRan = false;
  bool referenceCached = false;
  std::vector<OutputCheck> outputs;
};

// ---- timing ---------------------------------------------------------------------------------

struct WarmupRecord {
  std::uint64_t launches = 0;
  double gpuMs = 0;
  bool endedOnClock = false;  // NVML read the SM clock near its peak
};

// CUDA events around each launch, kept as a cross-check of the CUPTI figure.
struct EventTimes {
  double medianMs = 0, iqrMs = 0, minMs = 0;
};

// A timed sample's outputs compared with the reference's again.
struct Recheck {
  std::uint64_t sample = 0;
  std::string tensor;
  bool passed = false;
  std::string summary;
  std::uint64_t referenceScrubBytes = 0;
};

// The floor "faster than possible" is judged against (PROTOCOL.md, time).
struct RooflineFloor {
  double flops = 0, bytes = 0;
  double peakBandwidthBytesPerS = 0, peakFlopsPerS = 0;  // the ceilings, before the slack
  double floorMs = 0;                                    // the bound over its slack
  std::string bound;     // "memory", "f32 compute", "tensor-core compute"
  std::string ceilings;  // "measured" (this device's, cached) or "theoretical" (DRAM bandwidth only)
};

struct Finding {
  std::string reason;  // "side-stream", "no-kernel-ran"
  std::string message;
};

// The worker's `time` result for one configuration, as the Evaluator keeps it.
struct TimingOutcome {
  bool ok = false;          // false: `error` says why there is no figure
  std::string error;
  std::string timer;        // "cupti" (kernel records: every stream), "cuda-events" without CUPTI, "host-wall-clock"
  std::string timerNote;    // what the figure is made of, in words (a host launcher's especially)
  SampleStats candidate, reference;
  bool referenceTimed = true;  // false: only the candidate was sampled (EvaluationOptions::timeReference)
  double speedup = 0;       // reference median / candidate median; 0 when the reference was not timed
  bool suspicious = false;  // faster than the task's roofline floor allows
  std::string suspiciousReason;
  std::string stopReason;   // "converged", "time-cap", "max-samples"
  std::size_t throttledSamples = 0;  // candidate samples NVML saw slowed by power or heat
  std::vector<Finding> findings;
  std::optional<RooflineFloor> roofline;
  std::optional<WarmupRecord> warmupCandidate, warmupReference;
  std::optional<EventTimes> eventsCandidate, eventsReference;
  std::uint64_t l2FlushBytes = 0;
  std::vector<Recheck> rechecks;
  std::uint64_t permutationSeed = 0;  // the samples' fresh inputs: repeats the run (TimeRequest)
  double seconds = 0;  // the worker's wall time for the request (warm-up and sampling)
};

// The task's PyTorch module timed on one configuration (core/eval/torch_reference.h): eagerly and
// through torch.compile, and the candidate's speedups over each (0: not measured).
struct TorchBaseline {
  double eagerMs = 0, compiledMs = 0;
  std::size_t eagerSamples = 0, compiledSamples = 0;
  double eagerSpread = 0, compiledSpread = 0;  // IQR / median
  double speedupEager = 0, speedupCompiled = 0;  // module median / candidate median
  double compileSeconds = 0;
  std::string timer;                             // "cupti" or "cuda-events"
  std::string eagerError, compiledError;         // why a figure is missing
};

struct ConfigOutcome {
  std::string config;
  Outcome outcome = Outcome::NotRun;
  // incorrect: "mismatch", "unwritten", "inputs-modified", "race", "output-reused",
  // "no-kernel-ran", "forbidden-library", and from timing "timed-output-mismatch",
  // "reference-buffer-copied"
  std::string reason;
  std::string errorName;  // runtime/load error: CUDA_ERROR_ILLEGAL_ADDRESS
  std::string message;    // in words
  LaunchDims candidateLaunch, referenceLaunch;
  std::optional<Occupancy> occupancy;  // of the candidate's launch on the chosen architecture
  std::vector<SeedOutcome> seeds;
  std::optional<TimingOutcome> timing;  // with EvaluationOptions::time, after a correct evaluation
  std::optional<TorchBaseline> torch;   // with timing, for a task with a PyTorch module
};

struct EvaluationResult {
  Outcome outcome = Outcome::Error;
  std::string message;     // one line
  std::string arch;        // what was compiled for
  std::string device;      // the GPU used, empty when none
  int deviceOrdinal = -1;  // its CUDA ordinal, -1 when none
  std::string sandbox;     // the worker's confirmed sandbox ("bwrap", "unshare", "none")
  CompileResult candidate; // diagnostics, resources
  std::vector<Diagnostic> referenceDiagnostics;
  std::vector<ConfigOutcome> configs;
  std::uint64_t freshSeed = 0;  // the seed drawn for this evaluation beyond the task's; 0: none
  double seconds = 0.0;
  // kwb eval --sanitize: compute-sanitizer's tools at the smallest configuration (empty: not asked).
  std::optional<SanitizeResult> sanitize;
  // What the candidate was checked against: "cuda" (the task's CUDA reference) or "pytorch" (its
  // PyTorch module's outputs).
  std::string reference = "cuda";
  std::string torchVersion;  // the PyTorch that ran the module, when one did
  std::string torchProblem;  // why the module was not timed (or did not run), when it was not

};

// The stored form (the workspace's run history, core/store): JSON text, and back. Text that
// does not parse, or parses into something else, reads as an Outcome::Error result that says so.
std::string evaluationResultText(const EvaluationResult &result);
EvaluationResult parseEvaluationResult(const std::string &text);

void to_json(nlohmann::json &j, const TorchBaseline &v);
void from_json(const nlohmann::json &j, TorchBaseline &v);
void to_json(nlohmann::json &j, const LaunchDims &v);
void from_json(const nlohmann::json &j, LaunchDims &v);
void to_json(nlohmann::json &j, const MismatchRecord &v);
void from_json(const nlohmann::json &j, MismatchRecord &v);
void to_json(nlohmann::json &j, const ComparisonSummary &v);
void from_json(const nlohmann::json &j, ComparisonSummary &v);
void to_json(nlohmann::json &j, const UnwrittenSummary &v);
void from_json(const nlohmann::json &j, UnwrittenSummary &v);
void to_json(nlohmann::json &j, const RaceSummary &v);
void from_json(const nlohmann::json &j, RaceSummary &v);
void to_json(nlohmann::json &j, const OutputCheck &v);
void from_json(const nlohmann::json &j, OutputCheck &v);
void to_json(nlohmann::json &j, const SeedOutcome &v);
void from_json(const nlohmann::json &j, SeedOutcome &v);
void to_json(nlohmann::json &j, const WarmupRecord &v);
void from_json(const nlohmann::json &j, WarmupRecord &v);
void to_json(nlohmann::json &j, const EventTimes &v);
void from_json(const nlohmann::json &j, EventTimes &v);
void to_json(nlohmann::json &j, const Recheck &v);
void from_json(const nlohmann::json &j, Recheck &v);
void to_json(nlohmann::json &j, const RooflineFloor &v);
void from_json(const nlohmann::json &j, RooflineFloor &v);
void to_json(nlohmann::json &j, const Finding &v);
void from_json(const nlohmann::json &j, Finding &v);
void to_json(nlohmann::json &j, const TimingOutcome &v);
void from_json(const nlohmann::json &j, TimingOutcome &v);
void to_json(nlohmann::json &j, const ConfigOutcome &v);
void from_json(const nlohmann::json &j, ConfigOutcome &v);
void to_json(nlohmann::json &j, const EvaluationResult &v);
void from_json(const nlohmann::json &j, EvaluationResult &v);

}  // namespace kwb
