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
  const Launch &candidateLaunch = task.launch ? *task.launch : task.reference.launch;
  const auto limits = archLimits(arch);
  // A host launcher chooses its own launches: no occupancy from the manifest's.
  const KernelResources *resources =
      candidate.form == SourceForm::HostLauncher ? nullptr : findKernel(candidate, candidateLaunch.kernel);
  std::vector<ConfigOutcome> planned;
  for (const auto *c : configs) {
    ConfigOutcome co;
    co.config = c->name;
    try {
      co.candidateLaunch = evaluateLaunch(candidateLaunch, *c, tunables);
      co.referenceLaunch = evaluateLaunch(task.reference.launch, *c, tunables);
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

json launchSpec(const std::string &imageBase64, const Launch &launch, const LaunchDims &dims) {
  return {{"cubin", imageBase64}, {"kernel", launch.kernel},          {"grid", dims.grid},
          {"block", dims.block},  {"shared_bytes", dims.sharedBytes}, {"args", launch.args}};
}

json hostLauncherSpec(const std::string &libraryBase64, const Launch &launch) {
  return {{"library", libraryBase64}, {"args", launch.args}};
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
    } else if (kind == "no-device") {
      co.outcome = Outcome::NotRun;
      co.message = std::string(kNoDeviceMessage) + " (" + reply.error.message + ")";
    } else {
      co.outcome = Outcome::Error;
      co.message = kind + ": " + reply.error.message;
    }
    return co.outcome != Outcome::NotRun;
  }
  const auto &r = reply.result;
  const std::string verdict = r.value("verdict", "");
  json_fields::read(r, "seeds", co.seeds);
  co.reason = r.value("reason", "");
  co.errorName = r.value("error_name", "");
  if (verdict == "correct") {
    co.outcome = Outcome::Correct;
    co.message = "correct on " + std::to_string(co.seeds.size()) + " seed(s)";
    return false;
  }
  if (verdict == "incorrect") {
    co.outcome = Outcome::Incorrect;
    if (co.reason == "forbidden-library") {
      co.message = r.value("forbidden_message", std::string("forbidden library"));
    } else {
      for (const auto &s : co.seeds)
        if (!s.passed) {
          co.message = "seed " + std::to_string(s.seed) + ": " + s.summary;
          break;
        }
    }
    return false;
  }
  if (verdict == "load-error") {
    co.outcome = Outcome::LoadError;
    co.message = co.reason;
    return true;
  }
  co.outcome = Outcome::RuntimeError;
  co.message = r.value("reason", "runtime error");
  return true;
}

TimingOutcome readTimeReply(const worker::Reply &reply, ConfigOutcome &co) {
  using json_fields::read;
  TimingOutcome t;
  if (!reply.ok) {
    t.error = reply.error.kind + ": " + reply.error.message;
    return t;
  }
  const json &r = reply.result;
  read(r, "timer", t.timer);
  read(r, "findings", t.findings);
  const std::string verdict = r.value("verdict", std::string("error"));
  if (verdict == "incorrect") {
    // Wrong outputs while timed, or no kernel at all: the candidate is incorrect.
    t.error = "incorrect while timed: " + r.value("reason_detail", r.value("reason", std::string()));
    co.outcome = Outcome::Incorrect;
    co.reason = r.value("reason", std::string("timed-output-mismatch"));
    co.message = r.value("reason_detail", co.reason);
    return t;
  }
  if (verdict != "timed") {
    t.error = verdict + ": " + r.value("reason", std::string());
    return t;
  }
  // The reply carries the stored form's keys (evaluation_result.h), but each side's CUDA-event
  // cross-check and the throttled count inside that side.
  r.get_to(t);
  t.ok = true;
  if (r.contains("candidate") && r["candidate"].is_object()) {
    read(r["candidate"], "throttled_samples", t.throttledSamples);
    read(r["candidate"], "events", t.eventsCandidate);
  }
  if (t.referenceTimed) read(r["reference"], "events", t.eventsReference);
  return t;
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
