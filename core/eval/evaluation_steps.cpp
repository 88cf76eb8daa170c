#include "core/eval/evaluation_steps.h"

#include <functional>
#include <stdexcept>

#include "core/compile/arch_limits.h"
#include "core/compile/compile_outcome.h"
#include "core/compile/occupancy.h"
#include "core/text/json_fields.h"

namespace kwb {

using nlohmann::json;

LaunchDims evaluateLaunch(const Launch &launch, const SizeConfig &config,
                          const std::map<std::string, std::int64_t> &tunables) {
  auto values = config.values;
  for (const auto &[k, v] : tunables) values[k] = v;
  auto eval = [&](const Expression &e, const std::string &what) -> std::int64_t {
    try {
      return e.evaluate(values);
    } catch (const ExpressionError &err) {
      throw std::invalid_argument("kernel '" + launch.kernel + "', configuration '" + config.name + "': " + what +
                                  " '" + e.text() + "': " + err.what());
    }
  };
  LaunchDims d;
  auto dims = [&](const std::vector<Expression> &list, std::array<std::int64_t, 3> &out, const char *what) {
    for (std::size_t i = 0; i < list.size() && i < 3; ++i) {
      const auto v = eval(list[i], std::string(what) + "[" + std::to_string(i) + "]");
      if (v < 1 || v > 0x7fffffffLL)
        throw std::invalid_argument("kernel '" + launch.kernel + "', configuration '" + config.name + "': " + what +
                                    "[" + std::to_string(i) + "] = '" + list[i].text() + "' is " +
                                    std::to_string(v) + "; it must be between 1 and 2^31-1");
      out[i] = v;
    }
  };
  dims(launch.grid, d.grid, "grid");
  dims(launch.block, d.block, "block");
  d.sharedBytes = launch.sharedBytes.empty() ? 0 : eval(launch.sharedBytes, "shared_bytes");
  if (d.sharedBytes < 0)
    throw std::invalid_argument("kernel '" + launch.kernel + "', configuration '" + config.name +
                                "': shared_bytes is negative");
  return d;
}

std::vector<const SizeConfig *> resolveConfigurations(const Task &task, const std::vector<std::string> &names) {
  std::vector<const SizeConfig *> configs;
  if (names.empty()) {
    for (const auto &c : task.configs) configs.push_back(&c);
    return configs;
  }
  for (const auto &name : names) {
    const auto *c = task.config(name);
    if (!c) {
      std::string known;
      for (const auto &k : task.configs) known += (known.empty() ? "" : ", ") + k.name;
      throw std::invalid_argument("task '" + task.name + "' has no size configuration '" + name +
                                  "' (its configurations: " + known + ")");
    }
    configs.push_back(c);
  }
  return configs;
}

namespace {

const KernelResources *findKernel(const CompileResult &r, const std::string &name) {
  for (const auto &k : r.kernels)
    if (k.name == name) return &k;
  return r.kernels.size() == 1 ? &r.kernels.front() : nullptr;
}

// The typed form of a worker's reply; false, with `problem` saying which field, when it does
// not read (a worker of another version).
template <typename Typed>
bool readReply(const worker::Reply &reply, Typed &typed, std::string &problem) {
  try {
    reply.result.get_to(typed);
    return true;
  } catch (const json::exception &e) {
    problem = "the worker's reply does not read: " + worker::describeJsonError(e);
    return false;
  }
}

int severityRank(Outcome o) {
  switch (o) {
    case Outcome::Correct: return 0;
    case Outcome::NotRun: return 1;
    case Outcome::Incorrect: return 2;
    case Outcome::Timeout: return 3;
    case Outcome::RuntimeError: return 4;
    case Outcome::LoadError: return 5;
    case Outcome::Cancelled: return 7;
    default: return 6;
  }
}

}  // namespace

std::vector<ConfigOutcome> planLaunches(const Task &task, const std::vector<const SizeConfig *> &configs,
                                        const std::map<std::string, std::int64_t> &tunables,
                                        const CompileResult &candidate, const std::string &arch) {
  const auto limits = archLimits(arch);
  std::vector<ConfigOutcome> planned;
  for (const auto *c : configs) {
    const Launch &candidateLaunch = task.candidateLaunch(*c);
    // A host launcher chooses its own launches: no occupancy from the manifest's.
    const KernelResources *resources =
        candidate.form == SourceForm::HostLauncher ? nullptr : findKernel(candidate, candidateLaunch.kernel);
    ConfigOutcome co;
    co.config = c->name;
    try {
      co.candidateLaunch = evaluateLaunch(candidateLaunch, *c, tunables);
      if (task.reference.hasCuda()) co.referenceLaunch = evaluateLaunch(task.referenceLaunch(*c), *c, tunables);
    } catch (const std::invalid_argument &e) {
      co.outcome = Outcome::Error;
      co.message = e.what();
    }
    if (limits && resources && co.outcome != Outcome::Error)
      co.occupancy = computeOccupancy(*limits.limits, static_cast<int>(co.candidateLaunch.threadsPerBlock()),
                                      resources->registers,
                                      resources->sharedStaticBytes + co.candidateLaunch.sharedBytes);
    planned.push_back(std::move(co));
  }
  return planned;
}

worker::LaunchRequest kernelLaunch(const std::string &cubinBase64, const Launch &launch, const LaunchDims &dims) {
  worker::LaunchRequest r;
  r.cubin = cubinBase64;
  r.kernel = launch.kernel;
  r.grid.assign(dims.grid.begin(), dims.grid.end());
  r.block.assign(dims.block.begin(), dims.block.end());
  r.sharedBytes = dims.sharedBytes;
  r.args = launch.args;
  return r;
}

worker::LaunchRequest hostLaunch(const std::string &libraryBase64, const Launch &launch) {
  worker::LaunchRequest r;
  r.library = libraryBase64;
  r.args = launch.args;
  return r;
}

std::string hostLibraryKey(const CompileResult &compiled, const std::string &imageBase64) {
  if (compiled.form != SourceForm::HostLauncher) return {};
  return compiled.cacheKey.empty() ? std::to_string(std::hash<std::string>{}(imageBase64)) : compiled.cacheKey;
}

bool readEvaluateReply(const worker::Reply &reply, std::chrono::milliseconds timeLimit, ConfigOutcome &co) {
  if (!reply.ok) {
    const auto &kind = reply.error.kind;
    if (kind == worker::error_kind::kTimeout) {
      co.outcome = Outcome::Timeout;
      co.message = "timeout: the evaluation ran past its limit of " + formatLimit(timeLimit) +
                   " (a kernel that never returns?); the worker was stopped";
    } else if (kind == worker::error_kind::kWorkerDied) {
      co.outcome = Outcome::RuntimeError;
      co.errorName = "worker-died";
      co.message = "the GPU worker died: " + reply.error.message;
    } else if (kind == worker::error_kind::kWorkerLost) {
      co.outcome = Outcome::Error;
      co.errorName = "worker-lost";
      co.message = "the GPU worker was lost: " + reply.error.message;
    } else if (kind == "no-device") {
      co.outcome = Outcome::NotRun;
      co.message = std::string(kNoDeviceMessage) + " (" + reply.error.message + ")";
    } else {
      co.outcome = Outcome::Error;
      co.message = kind + ": " + reply.error.message;
    }
    return co.outcome != Outcome::NotRun;
  }
  worker::EvaluateReply r;
  if (!readReply(reply, r, co.message)) {
    co.outcome = Outcome::Error;
    return true;
  }
  co.seeds = std::move(r.seeds);
  co.reason = r.reason;
  co.errorName = r.errorName;
  if (r.verdict == "correct") {
    co.outcome = Outcome::Correct;
    co.message = "correct on " + std::to_string(co.seeds.size()) + " seed(s)";
    return false;
  }
  if (r.verdict == "incorrect") {
    co.outcome = Outcome::Incorrect;
    if (co.reason == "forbidden-library") {
      co.message = r.forbiddenMessage.empty() ? "forbidden library" : r.forbiddenMessage;
    } else {
      for (const auto &s : co.seeds)
        if (!s.passed) {
          co.message = "seed " + std::to_string(s.seed) + ": " + s.summary;
          break;
        }
    }
    return false;
  }
  if (r.verdict == "load-error") {
    co.outcome = Outcome::LoadError;
    co.message = co.reason;
    return true;
  }
  co.outcome = Outcome::RuntimeError;
  co.message = r.reason.empty() ? "runtime error" : r.reason;
  return true;
}

TimingOutcome timingOutcome(const worker::TimeReply &r) {
  TimingOutcome t;
  t.ok = true;
  t.timer = r.timer;
  t.timerNote = r.timerNote;
  if (r.candidate) {
    t.candidate = r.candidate->stats;
    t.throttledSamples = r.candidate->throttledSamples;
    t.eventsCandidate = r.candidate->events;
  }
  t.referenceTimed = r.reference.has_value();
  if (r.reference) {
    t.reference = r.reference->stats;
    t.eventsReference = r.reference->events;
  }
  t.speedup = r.speedup.value_or(0.0);
  t.suspicious = r.suspicious;
  t.suspiciousReason = r.suspiciousReason;
  t.stopReason = r.stopReason;
  t.findings = r.findings;
  t.roofline = r.roofline;
  t.warmupCandidate = r.warmup.candidate;
  t.warmupReference = r.warmup.reference;
  t.l2FlushBytes = r.l2FlushBytes;
  t.rechecks = r.rechecks;
  t.permutationSeed = r.permutationSeed;
  t.seconds = r.seconds;
  return t;
}

TimingOutcome readTimeReply(const worker::Reply &reply, ConfigOutcome &co) {
  TimingOutcome t;
  if (!reply.ok) {
    t.error = reply.error.kind + ": " + reply.error.message;
    if (reply.error.kind == worker::error_kind::kWorkerLost) {
      // A remote worker's connection or Slurm step went while it timed: the evaluation did not
      // complete, by no doing of the candidate's (an evaluation pool runs it again).
      co.outcome = Outcome::Error;
      co.errorName = "worker-lost";
      co.message = "the GPU worker was lost while timing: " + reply.error.message;
    }
    return t;
  }
  worker::TimeReply r;
  if (!readReply(reply, r, t.error)) return t;
  if (r.verdict == "timed") return timingOutcome(r);
  t.timer = r.timer;
  t.timerNote = r.timerNote;
  t.findings = r.findings;
  if (r.verdict == "incorrect") {
    // Wrong outputs while timed, or no kernel at all: the candidate is incorrect.
    t.error = "incorrect while timed: " + (r.reasonDetail.empty() ? r.reason : r.reasonDetail);
    co.outcome = Outcome::Incorrect;
    co.reason = r.reason.empty() ? "timed-output-mismatch" : r.reason;
    co.message = r.reasonDetail.empty() ? co.reason : r.reasonDetail;
    return t;
  }
  t.error = (r.verdict.empty() ? "error" : r.verdict) + ": " + r.reason;
  return t;
}

bool lostContext(const worker::Reply &reply) {
  worker::ReplyVerdict v;
  std::string problem;
  return reply.ok && readReply(reply, v, problem) && v.contextLost;
}

Verdict verdict(const std::vector<ConfigOutcome> &configs, std::size_t seedCount) {
  const ConfigOutcome *worst = nullptr;
  for (const auto &co : configs)
    if (!worst || severityRank(co.outcome) > severityRank(worst->outcome)) worst = &co;
  if (!worst) return {Outcome::Error, "the task has no size configuration to run"};
  if (worst->outcome == Outcome::Correct)
    return {Outcome::Correct, "correct on " + std::to_string(configs.size()) + " configuration(s) × " +
                                  std::to_string(seedCount) + " seed(s)"};
  return {worst->outcome,
          worst->config + ": " +
              (worst->errorName.empty() || worst->errorName == "worker-died" ? "" : worst->errorName + ": ") +
              worst->message};
}

}  // namespace kwb
