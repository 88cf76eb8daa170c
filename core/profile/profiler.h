#pragma once
// Profiling one candidate, client side (no Qt): compile it (kwb::Compiler), work out its launch
// for one size configuration, and send one `profile` request (core/worker/PROTOCOL.md) to a
// kwb-worker, which replays the launch once per CUPTI pass and evaluates the metrics. Outcomes
// are explicit: compile error, "not run" where there is no CUDA device, load or runtime error,
// "not profiled" with a reason (insufficient-privileges, profiler-busy, unsupported, no-cupti,
// cupti-error), or the metric values with the pass count, chip and device. Never a fake number.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval/evaluator.h"
#include "core/profile/profile_request.h"
#include "core/task/task.h"

namespace kwb::profile {

struct ProfileOptions {
  std::string config;                     // empty: the task's first size configuration
  std::vector<std::string> metrics;       // empty: the set below
  std::string set = "default";            // "default" or "detailed"
  std::map<std::string, std::int64_t> tunables;
  std::string arch;                       // empty: the device's
  std::uint64_t seed = 1;
  std::chrono::milliseconds timeLimit{120000};
  std::string sourceName = "candidate.cu";
};


struct ProfileResult {
  // Profiled, NotProfiled, NotRun (no CUDA device), CompileError, LoadError, RuntimeError,
  // Timeout, Error
  Outcome outcome = Outcome::Error;
  std::string reason;   // not-profiled: insufficient-privileges, profiler-busy, unsupported, ...
  std::string message;  // one line, with the fix where one is known
  std::string device;   // the GPU's name
  int deviceOrdinal = -1;
  std::string chip;     // GH100
  std::string config;
  std::string arch;
  std::size_t passes = 0;     // the host API's count for the metrics asked for
  std::size_t passesRun = 0;  // the replays made (equal to passes on success)
  std::size_t ranges = 0, rangesDropped = 0;
  std::vector<std::string> candidateKernels;  // the kernels the launch ran
  std::string cupti;          // the libcupti the worker loaded
  std::vector<MetricValue> metrics;
  double seconds = 0;
};

// The worker's `profile` reply (PROTOCOL.md) and `kwb profile --json` share these keys; the
// worker's "verdict" is read as the outcome.
void to_json(nlohmann::json &j, const ProfileResult &v);
void from_json(const nlohmann::json &j, ProfileResult &v);

// Throws std::invalid_argument for options that do not fit the task (an unknown configuration
// or tunable); every other problem is in the result. On the evaluator's worker and device (an
// EvaluatorPool's, through EvaluatorPool::submitWork), between its evaluations.
ProfileResult profileCandidate(const Task &task, const std::string &candidateSource, const ProfileOptions &options,
                               Evaluator &evaluator);
// The same on an evaluator of its own for the call (the command line's one-shot use).
ProfileResult profileCandidate(const Task &task, const std::string &candidateSource, const ProfileOptions &options,
                               const EvaluatorSettings &settings = {});

}  // namespace kwb::profile
