#pragma once
// One candidate's evaluation as named steps, shared by the Evaluator (core/eval/evaluator.h), the
// profiler's client (core/profile/profiler.h) and the ceilings measurement:
//
//   resolveConfigurations  the size configurations asked for, or the task's
//   planLaunches           each configuration's launches and the candidate's occupancy
//   kernelLaunch, hostLaunch  a kernel (or host launcher) as a worker request carries it
//   readEvaluateReply      the worker's `evaluate` reply for one configuration, as its outcome
//   readTimeReply          the worker's `time` reply for one configuration
//   verdict                the whole evaluation's outcome from its configurations' (pure)
//
// The Evaluator runs them in order, with the compile (core/compile) and the worker requests
// (core/worker) between them. No I/O here: each step is tested alone.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compile/compile_types.h"
#include "core/eval/evaluation_result.h"
#include "core/task/task.h"
#include "core/worker/commands.h"
#include "core/worker/protocol.h"

namespace kwb {

inline constexpr const char *kNoDeviceMessage = "no CUDA device here, compiled only";

// Evaluates grid, block and shared bytes over the configuration's sizes and the tunables.
// Throws std::invalid_argument naming the expression when one fails (unknown name, division
// by zero) or a dimension is not positive / out of range.
LaunchDims evaluateLaunch(const Launch &launch, const SizeConfig &config,
                          const std::map<std::string, std::int64_t> &tunables);

// The configurations named (in that order), or all of the task's when none is. Throws
// std::invalid_argument naming an unknown one and listing the task's.
std::vector<const SizeConfig *> resolveConfigurations(const Task &task, const std::vector<std::string> &names);

// One ConfigOutcome per configuration with both launches evaluated (Outcome::Error with the
// expression's problem when one does not evaluate) and, for a device-only candidate whose kernel
// the compile reported, its occupancy on `arch` (none for a host launcher: it chooses its own
// launches). The outcome is NotRun until a worker says otherwise.
std::vector<ConfigOutcome> planLaunches(const Task &task, const std::vector<const SizeConfig *> &configs,
                                        const std::map<std::string, std::int64_t> &tunables,
                                        const CompileResult &candidate, const std::string &arch);

// A kernel as a request's "reference" or "candidate" (PROTOCOL.md): the CUBIN (base64), kernel
// name, launch and argument list; or, for a host launcher, the library and the argument list.
worker::LaunchRequest kernelLaunch(const std::string &cubinBase64, const Launch &launch, const LaunchDims &dims);
worker::LaunchRequest hostLaunch(const std::string &libraryBase64, const Launch &launch);

// The key a worker's loaded host code is known by (Evaluator::withWorker): a host launcher's
// compile cache key (its image's hash without one); empty for device code.
std::string hostLibraryKey(const CompileResult &compiled, const std::string &imageBase64);

// What the worker's answer to an `evaluate` request means for the configuration: its outcome,
// reason, CUDA error name, message and seeds. Returns whether the evaluation stops here (a load
// or runtime error, a timeout, a dead worker: later configurations are not run).
// `timeLimit` is named in a timeout's message.
bool readEvaluateReply(const worker::Reply &reply, std::chrono::milliseconds timeLimit, ConfigOutcome &co);

// The worker's `time` reply (PROTOCOL.md) as the Evaluator keeps it. ok only for the "timed"
// verdict; `error` then says why not. A reply that finds the candidate incorrect while timed
// (wrong outputs, no kernel, the reference's buffer copied) makes `co` incorrect, with why.
TimingOutcome readTimeReply(const worker::Reply &reply, ConfigOutcome &co);
// A "timed" reply as the Evaluator keeps it (the per-side statistics, events and throttled count).
TimingOutcome timingOutcome(const worker::TimeReply &reply);
// Whether a reply says the worker's CUDA context is lost (it exits after the reply).
bool lostContext(const worker::Reply &reply);

// The outcome of the whole: the most severe configuration's (correct < not run < incorrect <
// timeout < runtime error < load error < error < cancelled), with a one-line message.
struct Verdict {
  Outcome outcome = Outcome::Error;
  std::string message;
};
Verdict verdict(const std::vector<ConfigOutcome> &configs, std::size_t seedCount);

}  // namespace kwb
