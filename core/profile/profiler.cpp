#include "core/profile/profiler.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "core/compile/compiler.h"
#include "core/text/base64.h"
#include "core/worker/worker_client.h"

namespace kwb::profile {

namespace {

using json = nlohmann::json;

std::string readWhole(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json dims(const std::array<std::int64_t, 3> &d) { return json::array({d[0], d[1], d[2]}); }

}  // namespace

json ProfileResult::toJson() const {
  json list = json::array();
  for (const auto &m : metrics)
    list.push_back({{"name", m.name}, {"label", m.label}, {"unit", m.unit}, {"value", m.value}});
  json j = {{"outcome", outcome}, {"message", message}, {"config", config},  {"device", device},
            {"chip", chip},       {"arch", arch},       {"passes", passes}, {"metrics", list},
            {"seconds", seconds}};
  if (!reason.empty()) j["reason"] = reason;
  if (!detail.empty()) j["worker"] = detail;
  return j;
}

ProfileResult profileCandidate(const Task &task, const std::string &source, const ProfileOptions &options,
                               const EvaluatorSettings &settings) {
  const auto started = std::chrono::steady_clock::now();
  ProfileResult result;
  auto finish = [&]() -> ProfileResult {
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return std::move(result);
  };
  if (task.configs.empty()) throw std::invalid_argument("task '" + task.name + "' has no size configuration");
  const SizeConfig *config = options.config.empty() ? &task.configs.front() : task.config(options.config);
  if (!config) {
    std::string names;
    for (const auto &k : task.configs) names += (names.empty() ? "" : ", ") + k.name;
    throw std::invalid_argument("task '" + task.name + "' has no size configuration '" + options.config +
                                "' (its configurations: " + names + ")");
  }
  result.config = config->name;
  const auto tunables = effectiveTunables(task, options.tunables);

  // The worker says which device it has (its hello); CUDA never starts in this process.
  std::unique_ptr<worker::WorkerClient> client;
  std::string deviceProblem, deviceArch;
  bool haveDevice = false;
  if (settings.useDevice) {
    client = startWorker(settings, settings.device, deviceProblem);
    if (client) {
      for (const auto &d : devicesInHello(client->hello()))
        if (d.ordinal == settings.device) {
          haveDevice = true;
          result.device = d.name;
          deviceArch = d.arch;
        }
      if (!haveDevice) deviceProblem = missingDeviceProblem(client->hello(), settings.device);
    }
  } else {
    deviceProblem = "no device use requested";
  }
  result.arch = !options.arch.empty() ? options.arch : haveDevice ? deviceArch : "sm_90";

  // Compile: the candidate's errors come first, GPU or not.
  Compiler compiler(settings.compiler);
  const auto compiled = compiler.compile(requestFor(task, source, options.sourceName, result.arch, tunables));
  if (!compiled.ok) {
    result.outcome = "compile-error";
    result.message = options.sourceName + " does not compile";
    for (const auto &d : compiled.diagnostics)
      if (d.severity == Diagnostic::Severity::Error) {
        result.message += ": " + (d.file.empty() ? options.sourceName : d.file) +
                          (d.line ? ":" + std::to_string(d.line) : "") + ": " + d.message;
        break;
      }
    return finish();
  }
  const Launch &launch = task.launch ? *task.launch : task.reference.launch;
  LaunchDims dimsOf;
  try {
    dimsOf = evaluateLaunch(launch, *config, tunables);
  } catch (const std::invalid_argument &e) {
    result.outcome = "error";
    result.message = e.what();
    return finish();
  }
  if (!haveDevice) {
    result.outcome = "not-run";
    result.message = std::string("not run: no CUDA device") + (deviceProblem.empty() ? "" : " (" + deviceProblem + ")");
    return finish();
  }

  const std::string image = base64Encode(compiled.image);
  json candidate = compiled.form == SourceForm::HostLauncher
                       ? json{{"library", image}, {"args", launch.args}}
                       : json{{"cubin", image},          {"kernel", launch.kernel},
                              {"grid", dims(dimsOf.grid)}, {"block", dims(dimsOf.block)},
                              {"shared_bytes", dimsOf.sharedBytes}, {"args", launch.args}};
  json params = {{"task", task.folder.string()}, {"config", config->name}, {"seed", options.seed},
                 {"candidate", candidate}};
  if (const auto manifest = readWhole(task.manifestPath); !manifest.empty()) params["manifest"] = manifest;
  if (!options.metrics.empty()) params["metrics"] = options.metrics;
  else params["set"] = options.set;

  const auto reply = client->call("profile", params, options.timeLimit);
  if (!reply.ok) {
    result.outcome = reply.error.kind == "timeout" ? "timeout" : "error";
    result.reason = reply.error.kind;
    result.message = reply.error.message;
    return finish();
  }
  const json &r = reply.result;
  result.detail = r;
  result.chip = r.value("chip", std::string());
  result.passes = r.value("passes", std::size_t{0});
  if (r.contains("device") && r["device"].is_string() && !r["device"].get<std::string>().empty())
    result.device = r["device"].get<std::string>();
  const std::string verdict = r.value("verdict", std::string("error"));
  result.outcome = verdict;
  if (verdict == "profiled") {
    for (const auto &m : r.value("metrics", json::array()))
      result.metrics.push_back({m.value("name", std::string()), m.value("label", std::string()),
                               m.value("unit", std::string()), m.value("value", 0.0)});
    result.message = "profiled in " + std::to_string(result.passes) + " pass(es) on " + result.device + " (" +
                     result.chip + ")";
  } else if (verdict == "not-profiled") {
    result.reason = r.value("reason", std::string());
    result.message = r.value("reason_detail", std::string("not profiled"));
  } else {
    result.reason = r.value("error_name", std::string());
    result.message = r.value("reason", std::string(verdict));
  }
  return finish();
}

}  // namespace kwb::profile
