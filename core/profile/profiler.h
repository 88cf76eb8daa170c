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

struct MetricValue {
  std::string name;   // dram__throughput.avg.pct_of_peak_sustained_elapsed
  std::string label;  // DRAM throughput
  std::string unit;   // %
  double value = 0;
};

struct ProfileResult {
  // "profiled", "not-profiled", "not-run" (no CUDA device), "compile-error", "load-error",
  // "runtime-error", "timeout", "error"
  std::string outcome = "error";
  std::string reason;   // not-profiled: insufficient-privileges, profiler-busy, unsupported, ...
  std::string message;  // one line, with the fix where one is known
  std::string device;   // the GPU's name
  std::string chip;     // GH100
  std::string config;
  std::string arch;
  std::size_t passes = 0;
  std::vector<MetricValue> metrics;
  nlohmann::json detail = nlohmann::json::object();  // the worker's reply
  double seconds = 0;

  nlohmann::json toJson() const;
};

// Throws std::invalid_argument for options that do not fit the task (an unknown configuration
// or tunable); every other problem is in the result. Starts a worker of its own for the call.
ProfileResult profileCandidate(const Task &task, const std::string &candidateSource, const ProfileOptions &options,
                               const EvaluatorSettings &settings = {});

}  // namespace kwb::profile
