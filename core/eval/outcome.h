#pragma once
// One vocabulary for what became of a piece of work on a candidate: an evaluation, a profile,
// a tuning point, a configuration of any of them. Spelled on the wire, in the workspace and in
// `--json` output as the strings below.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace kwb {

enum class Outcome {
  Correct,       // "correct": every configuration and seed matched the reference
  Incorrect,     // "incorrect": with where and how (ConfigOutcome::reason)
  CompileError,  // "compile-error": never reached the GPU
  LoadError,     // "load-error": the driver refused the module or it lacks the kernel
  RuntimeError,  // "runtime-error": a launch, copy or synchronisation failed (CUDA error name)
  Timeout,       // "timeout": the worker was stopped at the time limit
  NotRun,        // "not-run": no CUDA device here (compile, resources and occupancy still shown)
  Unsupported,   // "unsupported": the candidate's form cannot run here
  Cancelled,     // "cancelled": the user stopped it
  Error,         // "error": the workbench could not do it (a missing worker, a broken task)
  Profiled,      // "profiled": metrics measured
  NotProfiled,   // "not-profiled": ran, but the profiler could not measure (reason says why)
};

const char *toString(Outcome outcome);
// The outcome a string names; nullopt for one that none does.
std::optional<Outcome> parseOutcome(std::string_view text);

// Strings on the wire; an unknown string reads as Outcome::Error.
void to_json(nlohmann::json &j, Outcome outcome);
void from_json(const nlohmann::json &j, Outcome &outcome);

}  // namespace kwb
