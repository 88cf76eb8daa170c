#include "core/profile/profiler.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "core/compile/compiler.h"
#include "core/task/source_file.h"
#include "core/text/base64.h"
#include "core/text/json_fields.h"
#include "core/worker/worker_client.h"

namespace kwb::profile {

namespace {

using json = nlohmann::json;

std::string readWhole(const std::filesystem::path &path) {
  try {
    return readManifestText(path);
  } catch (const SourceFileError &) {
    return {};
  }
}

using json_fields::field;
using json_fields::omitEmpty;

constexpr auto kProfileFields = std::tuple{
    field("outcome", &ProfileResult::outcome),
    omitEmpty("reason", &ProfileResult::reason),
    field("message", &ProfileResult::message),
    field("config", &ProfileResult::config),
    field("device", &ProfileResult::device),
    field("device_ordinal", &ProfileResult::deviceOrdinal),
    field("chip", &ProfileResult::chip),
    field("arch", &ProfileResult::arch),
    field("passes", &ProfileResult::passes),
    field("passes_run", &ProfileResult::passesRun),
    field("ranges", &ProfileResult::ranges),
    field("ranges_dropped", &ProfileResult::rangesDropped),
    field("candidate_kernels", &ProfileResult::candidateKernels),
    field("cupti", &ProfileResult::cupti),
    field("metrics", &ProfileResult::metrics),
    field("seconds", &ProfileResult::seconds)};

}  // namespace

void to_json(json &j, const ProfileResult &v) { json_fields::writeFields(j, v, kProfileFields); }
void from_json(const json &j, ProfileResult &v) { json_fields::readFields(j, v, kProfileFields); }

ProfileResult profileCandidate(const Task &task, const std::string &source, const ProfileOptions &options,
                               const EvaluatorSettings &settings) {
  Evaluator evaluator(settings);
  return profileCandidate(task, source, options, evaluator);
}

ProfileResult profileCandidate(const Task &task, const std::string &source, const ProfileOptions &options,
                               Evaluator &evaluator) {
  const auto started = std::chrono::steady_clock::now();
  ProfileResult result;
  auto finish = [&]() -> ProfileResult {
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return std::move(result);
  };
  if (task.configs.empty()) throw std::invalid_argument("task '" + task.name + "' has no size configuration");
  // The configuration asked for, else the task's first (the evaluation's steps, evaluation_steps.h).
  const SizeConfig *config =
      options.config.empty() ? &task.configs.front() : resolveConfigurations(task, {options.config}).front();
  result.config = config->name;
  const auto tunables = effectiveTunables(task, options.tunables);
  checkConstraints(task, {config}, tunables);

  // The evaluator's worker says which device it has (its hello); CUDA never starts here.
  const WorkerDevice &gpu = evaluator.device();
  if (gpu.present) result.device = gpu.name;
  result.arch = !options.arch.empty() ? options.arch : gpu.present ? gpu.arch : "sm_90";

  // Compile: the candidate's errors come first, GPU or not.
  Compiler compiler(evaluator.settings().compiler);
  const auto compiled = compiler.compile(requestFor(task, source, options.sourceName, result.arch, tunables));
  if (!compiled.ok) {
    result.outcome = Outcome::CompileError;
    result.message = options.sourceName + " does not compile";
    for (const auto &d : compiled.diagnostics)
      if (d.severity == Diagnostic::Severity::Error) {
        result.message += ": " + (d.file.empty() ? options.sourceName : d.file) +
                          (d.line ? ":" + std::to_string(d.line) : "") + ": " + d.message;
        break;
      }
    return finish();
  }
  const Launch &launch = task.candidateLaunch(*config);
  const ConfigOutcome plan = planLaunches(task, {config}, tunables, compiled, result.arch).front();
  if (plan.outcome == Outcome::Error) {
    result.outcome = Outcome::Error;
    result.message = plan.message;
    return finish();
  }
  if (!gpu.present) {
    result.outcome = Outcome::NotRun;
    result.message = std::string("not run: no CUDA device") + (gpu.problem.empty() ? "" : " (" + gpu.problem + ")");
    return finish();
  }

  const std::string image = base64Encode(compiled.image);
  ProfileRequest request;
  request.task = task.folder.string();
  request.manifest = readWhole(task.manifestPath);
  request.config = config->name;
  request.seed = options.seed;
  request.candidate = compiled.form == SourceForm::HostLauncher ? hostLaunch(image, launch)
                                                               : kernelLaunch(image, launch, plan.candidateLaunch);
  if (!options.metrics.empty()) request.metrics = options.metrics;
  else request.set = options.set;

  // On the evaluator's worker: a host launcher gets a worker that ran no other candidate's code.
  worker::Reply reply;
  std::string problem;
  const std::string hostKey = hostLibraryKey(compiled, image);
  if (!evaluator.withWorker([&](worker::WorkerClient &client) { reply = client.call("profile", request, options.timeLimit); },
                            problem, hostKey)) {
    result.outcome = Outcome::Error;
    result.message = problem;
    return finish();
  }
  if (!reply.ok) {
    result.outcome = reply.error.kind == "timeout" ? Outcome::Timeout : Outcome::Error;
    result.reason = reply.error.kind;
    result.message = reply.error.message;
    return finish();
  }
  ProfileReply r;
  try {
    reply.result.get_to(r);
  } catch (const json::exception &e) {
    result.outcome = Outcome::Error;
    result.message = "the worker's profile reply does not read: " + worker::describeJsonError(e);
    return finish();
  }
  if (!r.device.empty()) result.device = r.device;
  result.deviceOrdinal = r.deviceOrdinal;
  result.chip = r.chip;
  result.passes = r.passes;
  result.passesRun = r.passesRun;
  result.ranges = r.ranges;
  result.rangesDropped = r.rangesDropped;
  result.candidateKernels = r.candidateKernels;
  result.cupti = r.cupti;
  result.metrics = r.metrics;
  result.outcome = parseOutcome(r.verdict).value_or(Outcome::Error);
  if (result.outcome == Outcome::Profiled) {
    result.message = "profiled in " + std::to_string(result.passes) + " pass(es) on " + result.device + " (" +
                     result.chip + ")";
  } else if (result.outcome == Outcome::NotProfiled) {
    result.reason = r.reason;
    result.message = r.reasonDetail.empty() ? "not profiled" : r.reasonDetail;
  } else {
    result.reason = r.errorName;
    result.message = r.reason.empty() ? r.verdict : r.reason;
  }
  return finish();
}

}  // namespace kwb::profile
