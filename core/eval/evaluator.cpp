#include "core/eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/compile/arch_limits.h"
#include "core/compile/diagnostics.h"
#include "core/paths/install_paths.h"
#include "core/text/base64.h"
#include "core/worker/worker_client.h"

namespace kwb {

namespace fs = std::filesystem;
using nlohmann::json;

const char *toString(EvalOutcome outcome) {
  switch (outcome) {
    case EvalOutcome::Correct: return "correct";
    case EvalOutcome::Incorrect: return "incorrect";
    case EvalOutcome::CompileError: return "compile-error";
    case EvalOutcome::LoadError: return "load-error";
    case EvalOutcome::RuntimeError: return "runtime-error";
    case EvalOutcome::Timeout: return "timeout";
    case EvalOutcome::NotRun: return "not-run";
    case EvalOutcome::Unsupported: return "unsupported";
    case EvalOutcome::Cancelled: return "cancelled";
    case EvalOutcome::Error: return "error";
  }
  return "error";
}

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

namespace {

json dimsJson(const std::array<std::int64_t, 3> &d) { return json::array({d[0], d[1], d[2]}); }

json launchJson(const LaunchDims &d) {
  return {{"grid", dimsJson(d.grid)}, {"block", dimsJson(d.block)}, {"shared_bytes", d.sharedBytes}};
}

json diagnosticJson(const Diagnostic &d) {
  return {{"file", d.file},
          {"line", d.line},
          {"column", d.column},
          {"severity", std::string(severityName(d.severity))},
          {"message", d.message},
          {"code", d.code},
          {"text", formatDiagnostic(d)}};
}

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const KernelResources *findKernel(const CompileResult &r, const std::string &name) {
  for (const auto &k : r.kernels)
    if (k.name == name) return &k;
  return r.kernels.size() == 1 ? &r.kernels.front() : nullptr;
}

int severityRank(EvalOutcome o) {
  switch (o) {
    case EvalOutcome::Correct: return 0;
    case EvalOutcome::NotRun: return 1;
    case EvalOutcome::Incorrect: return 2;
    case EvalOutcome::Timeout: return 3;
    case EvalOutcome::RuntimeError: return 4;
    case EvalOutcome::LoadError: return 5;
    case EvalOutcome::Cancelled: return 7;
    default: return 6;
  }
}

}  // namespace

json EvaluationResult::toJson() const {
  json j = {{"outcome", toString(outcome)}, {"message", message}, {"arch", arch},
            {"device", device},              {"device_ordinal", deviceOrdinal},
            {"sandbox", sandbox},            {"seconds", seconds}};
  json diags = json::array();
  for (const auto &d : candidate.diagnostics) diags.push_back(diagnosticJson(d));
  json kernels = json::array();
  for (const auto &k : candidate.kernels)
    kernels.push_back({{"name", k.name},
                       {"registers", k.registers},
                       {"shared_static_bytes", k.sharedStaticBytes},
                       {"constant_bytes", k.constantBytes},
                       {"stack_frame_bytes", k.stackFrameBytes},
                       {"spill_store_bytes", k.spillStoreBytes},
                       {"spill_load_bytes", k.spillLoadBytes}});
  j["compile"] = {{"ok", candidate.ok},          {"form", candidate.form == SourceForm::DeviceOnly ? "device-only" : "host-launcher"},
                  {"diagnostics", diags},        {"kernels", kernels},
                  {"cache_hit", candidate.cacheHit}, {"seconds", candidate.seconds},
                  {"toolkit", candidate.toolkitVersion}};
  if (!referenceDiagnostics.empty()) {
    json rd = json::array();
    for (const auto &d : referenceDiagnostics) rd.push_back(diagnosticJson(d));
    j["reference_diagnostics"] = rd;
  }
  json cs = json::array();
  for (const auto &c : configs) {
    json cj = {{"config", c.config},
               {"outcome", toString(c.outcome)},
               {"reason", c.reason},
               {"error_name", c.errorName},
               {"message", c.message},
               {"candidate_launch", launchJson(c.candidateLaunch)},
               {"reference_launch", launchJson(c.referenceLaunch)}};
    if (c.occupancy)
      cj["occupancy"] = {{"active_blocks_per_sm", c.occupancy->activeBlocksPerSM},
                         {"active_warps_per_sm", c.occupancy->activeWarpsPerSM},
                         {"occupancy", c.occupancy->occupancy},
                         {"limiter", toString(c.occupancy->limiter)},
                         {"error", c.occupancy->error},
                         {"explanation", c.occupancy->explanation}};
    json seeds = json::array();
    for (const auto &s : c.seeds)
      seeds.push_back({{"seed", s.seed},
                       {"passed", s.passed},
                       {"summary", s.summary},
                       {"unwritten", s.unwritten},
                       {"inputs_modified", s.inputsModified},
                       {"race", s.race},
                       {"outputs", s.detail.value("outputs", json::array())}});
    cj["seeds"] = seeds;
    if (c.timing) {
      const auto &t = *c.timing;
      auto stats = [](const SampleStats &x) {
        return json{{"median_ms", x.median}, {"iqr_ms", x.iqr},       {"min_ms", x.min},
                    {"mean_ms", x.mean},     {"samples", x.count},     {"relative_spread", x.relativeSpread},
                    {"median_uncertainty", x.medianUncertainty}};
      };
      json tj = {{"ok", t.ok}, {"timer", t.timer}};
      json findings = json::array();
      for (const auto &[reason, message] : t.findings) findings.push_back({{"reason", reason}, {"message", message}});
      tj["findings"] = findings;
      if (t.ok) {
        tj["candidate"] = stats(t.candidate);
        tj["reference"] = t.referenceTimed ? stats(t.reference) : json(nullptr);
        tj["speedup"] = t.referenceTimed ? json(t.speedup) : json(nullptr);
        tj["suspicious"] = t.suspicious;
        if (t.suspicious) tj["suspicious_reason"] = t.suspiciousReason;
        tj["stop_reason"] = t.stopReason;
        tj["roofline"] = t.detail.value("roofline", json::object());
        tj["warmup"] = t.detail.value("warmup", json::object());
        tj["l2_flush_bytes"] = t.detail.value("l2_flush_bytes", 0ull);
        tj["throttled_samples"] = t.throttledSamples;
        auto events = [&t](const char *side) {
          const auto it = t.detail.find(side);
          return it != t.detail.end() && it->is_object() ? it->value("events", json::object()) : json::object();
        };
        tj["events"] = {{"candidate", events("candidate")}, {"reference", events("reference")}};
        tj["rechecks"] = t.detail.value("rechecks", json::array());
      } else {
        tj["error"] = t.error;
      }
      cj["timing"] = tj;
    }
    cs.push_back(cj);
  }
  j["configs"] = cs;
  return j;
}

std::optional<worker::WorkerClientOptions> workerOptions(const EvaluatorSettings &settings, std::string &problem) {
  worker::WorkerClientOptions o;
  if (!settings.workerPath.empty()) {
    o.workerPath = settings.workerPath;
  } else if (auto found = workerExecutable()) {
    o.workerPath = *found;
  } else {
    problem = "the GPU worker (kwb-worker) was not found; set KWB_WORKER to its path";
    return std::nullopt;
  }
  o.sandbox = settings.sandbox;
  o.startTimeout = settings.workerStartTimeout;
  return o;
}

std::string archOfComputeCapability(std::string cc) {
  cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
  return "sm_" + (cc.empty() ? std::string("90") : cc);
}

std::vector<VisibleDevice> devicesInHello(const json &hello) {
  std::vector<VisibleDevice> out;
  if (!hello.is_object()) return out;
  for (const auto &d : hello.value("devices", json::array()))
    if (d.is_object() && d.contains("ordinal") && d["ordinal"].is_number_integer()) {
      VisibleDevice v;
      v.ordinal = d["ordinal"].get<int>();
      v.name = d.value("name", std::string());
      v.arch = archOfComputeCapability(d.value("compute_capability", std::string()));
      v.pciBusId = d.value("pci_bus_id", std::string());
      out.push_back(std::move(v));
    }
  return out;
}

std::string missingDeviceProblem(const json &hello, int device) {
  const auto gpu = hello.is_object() ? hello.value("gpu", json::object()) : json::object();
  std::string problem = gpu.is_object() ? gpu.value("problem", std::string()) : std::string();
  return problem.empty() ? "no CUDA device " + std::to_string(device) : problem;
}

std::unique_ptr<worker::WorkerClient> startWorker(const EvaluatorSettings &settings, std::optional<int> device,
                                                  std::string &problem) {
  auto options = workerOptions(settings, problem);
  if (!options) return nullptr;
  options->device = device;
  auto client = std::make_unique<worker::WorkerClient>(*options);
  client->start();
  if (!client->waitUntilReady(settings.workerStartTimeout + std::chrono::seconds(5))) {
    const auto exit = client->lastExit();
    problem = "the GPU worker did not start" + (exit ? ": " + exit->description : std::string());
    return nullptr;
  }
  return client;
}

Evaluator::Evaluator(EvaluatorSettings settings) : settings_(std::move(settings)), compiler_(settings_.compiler) {}

Evaluator::~Evaluator() = default;

bool Evaluator::ensureWorker(std::string &problem) {
  if (!worker_) {
    auto o = workerOptions(settings_, problem);
    if (!o) return false;
    o->device = settings_.device;
    auto fresh = std::make_unique<worker::WorkerClient>(*o);
    std::lock_guard lock(workerMutex_);
    worker_ = std::move(fresh);
  }
  const auto state = worker_->state();
  if (state == worker::WorkerClient::State::Dead) worker_->restart();
  else if (state == worker::WorkerClient::State::Stopped) worker_->start();
  if (!worker_->waitUntilReady(settings_.workerStartTimeout + std::chrono::seconds(5))) {
    const auto exit = worker_->lastExit();
    problem = "the GPU worker did not start" + (exit ? ": " + exit->description + (exit->stderrTail.empty() ? "" : "; " + exit->stderrTail) : std::string());
    return false;
  }
  return true;
}

void Evaluator::cancel() {
  cancelRequested_ = true;
  std::lock_guard lock(workerMutex_);
  if (running_ && worker_ && worker_->pendingRequests() > 0) worker_->restart();
}

EvaluationResult Evaluator::evaluate(const Task &task, const std::string &source, const EvaluationOptions &options) {
  const auto started = std::chrono::steady_clock::now();
  cancelRequested_ = false;
  running_ = true;
  struct Running {
    std::atomic<bool> &flag;
    ~Running() { flag = false; }
  } runningGuard{running_};
  EvalProgress progress;
  auto step = [&](const std::string &stage, const std::string &config, double fraction, const std::string &line) {
    progress.stage = stage;
    progress.config = config;
    progress.fraction = std::max(progress.fraction, std::min(1.0, fraction));
    progress.text = line;
    if (options.onProgress) options.onProgress(line);
    if (options.onStep) options.onStep(progress);
    progress.samplesMs.clear();
  };
  EvaluationResult result;
  auto finish = [&]() -> EvaluationResult {
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    step("done", "", 1.0, std::string("done: ") + toString(result.outcome));
    return std::move(result);
  };
  // After a cancel: what has not finished says so, and the whole says "cancelled".
  auto finishCancelled = [&]() -> EvaluationResult {
    for (auto &co : result.configs)
      if (co.outcome == EvalOutcome::NotRun || co.outcome == EvalOutcome::Cancelled ||
          (co.outcome == EvalOutcome::RuntimeError && co.errorName == "worker-died")) {
        co.outcome = EvalOutcome::Cancelled;
        co.errorName.clear();
        co.message = "cancelled";
      }
    result.outcome = EvalOutcome::Cancelled;
    result.message = "cancelled by the user";
    return finish();
  };

  // Options that do not fit the task are the caller's mistake.
  std::vector<const SizeConfig *> configs;
  if (options.configs.empty()) {
    for (const auto &c : task.configs) configs.push_back(&c);
  } else {
    for (const auto &name : options.configs) {
      const auto *c = task.config(name);
      if (!c) {
        std::string names;
        for (const auto &k : task.configs) names += (names.empty() ? "" : ", ") + k.name;
        throw std::invalid_argument("task '" + task.name + "' has no size configuration '" + name +
                                    "' (its configurations: " + names + ")");
      }
      configs.push_back(c);
    }
  }
  const auto tunables = effectiveTunables(task, options.tunables);
  const auto seeds = options.seeds.empty() ? task.seeds : options.seeds;

  // The device decides the architecture, unless one is asked for. The worker says which
  // device it has (its hello): CUDA is never initialised in this process.
  if (!probed_) {
    probed_ = true;
    if (settings_.useDevice) {
      std::string problem;
      if (!ensureWorker(problem)) {
        deviceProblem_ = problem;
      } else {
        const json hello = worker_->hello();
        for (const auto &d : devicesInHello(hello))
          if (d.ordinal == settings_.device) {
            haveDevice_ = true;
            deviceName_ = d.name;
            deviceArch_ = d.arch;
          }
        if (!haveDevice_) deviceProblem_ = missingDeviceProblem(hello, settings_.device);
      }
    } else {
      deviceProblem_ = "no device use requested";
    }
  }
  result.arch = !options.arch.empty() ? options.arch : haveDevice_ ? deviceArch_ : "sm_90";
  if (haveDevice_) {
    result.device = deviceName_;
    result.deviceOrdinal = settings_.device;
  }

  const Launch &candidateLaunch = task.launch ? *task.launch : task.reference.launch;

  // Compile: the candidate first (its errors are what the user needs), then the reference.
  step("compile", "", 0.0, "compiling " + options.sourceName + " for " + result.arch);
  const auto request = requestFor(task, source, options.sourceName, result.arch, tunables);
  result.candidate = compiler_.compile(request);
  if (!result.candidate.ok) {
    result.outcome = EvalOutcome::CompileError;
    result.message = describeFailure(options.sourceName + " does not compile", result.candidate.diagnostics);
    return finish();
  }
  CompileRequest refRequest;
  try {
    refRequest.source = readFile(task.folder / task.reference.source);
  } catch (const std::exception &e) {
    result.outcome = EvalOutcome::Error;
    result.message = std::string("the task's reference: ") + e.what();
    return finish();
  }
  refRequest.sourceName = task.reference.source.string();
  refRequest.arch = result.arch;
  refRequest.expectedKernels = {task.reference.launch.kernel};
  const auto reference = compiler_.compile(refRequest);
  if (cancelled()) return finishCancelled();
  if (!reference.ok) {
    result.referenceDiagnostics = reference.diagnostics;
    result.outcome = EvalOutcome::Error;
    result.message = describeFailure("the task's reference " + refRequest.sourceName + " does not compile",
                                     reference.diagnostics);
    return finish();
  }

  // Launches and occupancy per configuration.
  const auto limits = archLimits(result.arch);
  const bool hostLauncher = result.candidate.form == SourceForm::HostLauncher;
  // A host launcher chooses its own launches: no occupancy from the manifest's.
  const KernelResources *resources = hostLauncher ? nullptr : findKernel(result.candidate, candidateLaunch.kernel);
  for (const auto *c : configs) {
    ConfigOutcome co;
    co.config = c->name;
    try {
      co.candidateLaunch = evaluateLaunch(candidateLaunch, *c, tunables);
      co.referenceLaunch = evaluateLaunch(task.reference.launch, *c, tunables);
    } catch (const std::invalid_argument &e) {
      co.outcome = EvalOutcome::Error;
      co.message = e.what();
    }
    if (limits && resources && co.outcome != EvalOutcome::Error)
      co.occupancy = computeOccupancy(*limits.limits, static_cast<int>(co.candidateLaunch.threadsPerBlock()),
                                      resources->registers,
                                      resources->sharedStaticBytes + co.candidateLaunch.sharedBytes);
    result.configs.push_back(std::move(co));
  }

  if (!haveDevice_) {
    for (auto &co : result.configs)
      if (co.outcome != EvalOutcome::Error) {
        co.outcome = EvalOutcome::NotRun;
        co.message = kNoDeviceMessage;
      }
    result.outcome = EvalOutcome::NotRun;
    result.message = std::string(kNoDeviceMessage) + (deviceProblem_.empty() ? "" : " (" + deviceProblem_ + ")");
    return finish();
  }

  std::string manifest;
  try {
    manifest = readFile(task.manifestPath);
  } catch (const std::exception &) {
    // The worker reads the folder itself.
  }
  const std::string refImage = base64Encode(reference.image);
  const std::string candImage = base64Encode(result.candidate.image);
  auto spec = [](const std::string &image, const Launch &l, const LaunchDims &d) {
    return json{{"cubin", image},          {"kernel", l.kernel},           {"grid", dimsJson(d.grid)},
                {"block", dimsJson(d.block)}, {"shared_bytes", d.sharedBytes}, {"args", l.args}};
  };
  auto candidateSpec = [&](const LaunchDims &d) {
    if (hostLauncher) return json{{"library", candImage}, {"args", candidateLaunch.args}};
    return spec(candImage, candidateLaunch, d);
  };
  // A worker that ran another candidate's host code is replaced first.
  auto freshWorkerForHostCode = [&] {
    if (!hostLauncher) return;
    const std::string key = result.candidate.cacheKey.empty() ? std::to_string(std::hash<std::string>{}(candImage))
                                                              : result.candidate.cacheKey;
    if (worker_ && workerLibraryGeneration_ == worker_->generation() && workerLibraryKey_ != key &&
        !workerLibraryKey_.empty())
      worker_->restart();
    workerLibraryKey_ = key;
  };
  auto noteWorkerLibrary = [&] {
    if (hostLauncher && worker_) workerLibraryGeneration_ = worker_->generation();
  };

  const double evalShare = options.time ? 0.5 : 0.9;  // of the progress bar after compiling
  const double perConfig = result.configs.empty() ? 0.0 : evalShare / static_cast<double>(result.configs.size());
  std::size_t configIndex = 0;
  bool stop = false;
  for (auto &co : result.configs) {
    const double configStart = 0.1 + perConfig * static_cast<double>(configIndex++);
    if (cancelled()) return finishCancelled();
    if (co.outcome == EvalOutcome::Error) {
      stop = true;
      continue;
    }
    if (stop) {
      co.outcome = EvalOutcome::NotRun;
      co.message = "not run: an earlier configuration failed";
      continue;
    }
    std::string problem;
    freshWorkerForHostCode();
    if (!ensureWorker(problem)) {
      co.outcome = EvalOutcome::Error;
      co.message = problem;
      stop = true;
      continue;
    }
    noteWorkerLibrary();
    result.sandbox = worker_->sandbox().state;
    json params = {{"task", task.folder.string()},
                   {"config", co.config},
                   {"seeds", seeds},
                   {"reference", spec(refImage, task.reference.launch, co.referenceLaunch)},
                   {"candidate", candidateSpec(co.candidateLaunch)}};
    if (!manifest.empty()) params["manifest"] = manifest;

    step("evaluate", co.config, configStart, "evaluating configuration " + co.config);
    auto promise = std::make_shared<std::promise<worker::Reply>>();
    auto future = promise->get_future();
    worker::RequestHandlers handlers;
    const std::size_t seedCount = seeds.size();
    handlers.onEvent = [&step, configStart, perConfig, seedCount](const worker::Event &e) {
      if (e.event != "progress") return;
      const auto &d = e.data;
      if (d.value("stage", "") == "seed") {
        const double done = static_cast<double>(d.value("done", 0ull));
        step("evaluate", d.value("config", std::string()),
             configStart + perConfig * (seedCount ? done / static_cast<double>(seedCount) : 1.0),
             "  " + d.value("config", std::string()) + " seed " + std::to_string(d.value("seed", 0ull)) + ": " +
                 (d.value("passed", false) ? "passed" : "FAILED"));
      }
    };
    handlers.onReply = [promise](const worker::Reply &r) { promise->set_value(r); };
    worker_->send("evaluate", params, handlers, options.timeLimit);
    if (cancelled()) worker_->restart();  // a cancel that came just before the send
    const auto reply = future.get();
    if (cancelled()) {
      co.outcome = EvalOutcome::Cancelled;
      return finishCancelled();
    }

    if (!reply.ok) {
      const auto &kind = reply.error.kind;
      if (kind == worker::error_kind::kTimeout) {
        co.outcome = EvalOutcome::Timeout;
        co.message = "timeout: the evaluation ran past its limit of " + formatLimit(options.timeLimit) +
                     " (a kernel that never returns?); the worker was stopped";
      } else if (kind == worker::error_kind::kWorkerDied) {
        co.outcome = EvalOutcome::RuntimeError;
        co.errorName = "worker-died";
        co.message = "the GPU worker died: " + reply.error.message;
      } else if (kind == "no-device") {
        co.outcome = EvalOutcome::NotRun;
        co.message = std::string(kNoDeviceMessage) + " (" + reply.error.message + ")";
      } else {
        co.outcome = EvalOutcome::Error;
        co.message = kind + ": " + reply.error.message;
      }
      if (co.outcome != EvalOutcome::NotRun) stop = true;
      // A killed or dead worker is replaced before the next request (ensureWorker).
      continue;
    }
    const auto &r = reply.result;
    const std::string verdict = r.value("verdict", "");
    for (const auto &s : r.value("seeds", json::array())) {
      SeedOutcome so;
      so.seed = s.value("seed", 0ull);
      so.passed = s.value("passed", false);
      so.summary = s.value("summary", "");
      so.unwritten = s.value("unwritten", 0ull);
      so.inputsModified = s.value("inputs_modified", false);
      so.race = s.value("race", false);
      so.detail = s;
      co.seeds.push_back(std::move(so));
    }
    co.reason = r.value("reason", "");
    co.errorName = r.value("error_name", "");
    if (verdict == "correct") {
      co.outcome = EvalOutcome::Correct;
      co.message = "correct on " + std::to_string(co.seeds.size()) + " seed(s)";
    } else if (verdict == "incorrect") {
      co.outcome = EvalOutcome::Incorrect;
      if (co.reason == "forbidden-library") co.message = r.value("forbidden_message", std::string("forbidden library"));
      else
        for (const auto &s : co.seeds)
          if (!s.passed) {
            co.message = "seed " + std::to_string(s.seed) + ": " + s.summary;
            break;
          }
    } else if (verdict == "load-error") {
      co.outcome = EvalOutcome::LoadError;
      co.message = co.reason;
      stop = true;
    } else {
      co.outcome = EvalOutcome::RuntimeError;
      co.message = r.value("reason", "runtime error");
      stop = true;
    }
    if (r.value("context_lost", false)) worker_->restart();  // it exits after this reply anyway
  }

  // Timing: only when every configuration is correct.
  bool allCorrect = !result.configs.empty();
  for (const auto &co : result.configs) allCorrect = allCorrect && co.outcome == EvalOutcome::Correct;
  if (options.time && allCorrect) {
    const double perTiming = result.configs.empty() ? 0.0 : 0.4 / static_cast<double>(result.configs.size());
    std::size_t timingIndex = 0;
    for (auto &co : result.configs) {
      const double timingStart = 0.6 + perTiming * static_cast<double>(timingIndex++);
      if (cancelled()) return finishCancelled();
      const auto *config = task.config(co.config);
      TimingOutcome t;
      std::string problem;
      freshWorkerForHostCode();
      if (!ensureWorker(problem)) {
        t.error = problem;
        co.timing = t;
        continue;
      }
      noteWorkerLibrary();
      json params = {{"task", task.folder.string()},
                     {"config", co.config},
                     {"seed", seeds.empty() ? 1 : seeds.back() + 1},  // inputs the evaluation did not use
                     {"time_cap_ms", options.timingCap.count()},
                     {"reference", spec(refImage, task.reference.launch, co.referenceLaunch)},
                     {"candidate", candidateSpec(co.candidateLaunch)}};
      if (!manifest.empty()) params["manifest"] = manifest;
      if (!options.timeReference) params["time_reference"] = false;
      // The task's cost for this configuration (the roofline check); absent when not given.
      auto cost = [&](const Expression &e) -> double {
        if (e.empty() || !config) return 0.0;
        try {
          return static_cast<double>(e.evaluate(config->values));
        } catch (const std::exception &) {
          return 0.0;
        }
      };
      params["flops"] = cost(task.flops);
      params["bytes"] = cost(task.bytes);
      step("time", co.config, timingStart, "timing configuration " + co.config);
      auto promise = std::make_shared<std::promise<worker::Reply>>();
      auto future = promise->get_future();
      worker::RequestHandlers handlers;
      const double cap = static_cast<double>(std::max<long long>(1, options.timingCap.count()));
      const auto timingStarted = std::chrono::steady_clock::now();
      handlers.onEvent = [&step, &progress, timingStart, perTiming, cap, timingStarted,
                          name = co.config](const worker::Event &e) {
        if (e.event != "progress" || e.data.value("stage", "") != "timing") return;
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - timingStarted).count();
        for (const auto &v : e.data.value("candidate_ms", json::array()))
          if (v.is_number()) progress.samplesMs.push_back(v.get<double>());
        step("time", name, timingStart + perTiming * std::min(1.0, ms / cap),
             "  " + name + ": " + std::to_string(e.data.value("samples", 0ull)) + " samples");
      };
      handlers.onReply = [promise](const worker::Reply &r) { promise->set_value(r); };
      worker_->send("time", params, handlers, options.timeLimit);
      if (cancelled()) worker_->restart();
      const auto reply = future.get();
      if (cancelled()) return finishCancelled();
      if (!reply.ok) {
        t.error = reply.error.kind + ": " + reply.error.message;
      } else {
        const auto &r = reply.result;
        t.detail = r;
        t.timer = r.value("timer", "");
        for (const auto &f : r.value("findings", json::array()))
          t.findings.emplace_back(f.value("reason", std::string()), f.value("message", std::string()));
        if (r.value("verdict", "") == "incorrect") {
          // Wrong outputs while timed, or no kernel at all: the candidate is incorrect.
          t.error = "incorrect while timed: " + r.value("reason_detail", r.value("reason", std::string()));
          co.outcome = EvalOutcome::Incorrect;
          co.reason = r.value("reason", std::string("timed-output-mismatch"));
          co.message = r.value("reason_detail", co.reason);
        } else if (r.value("verdict", "") != "timed") {
          t.error = r.value("verdict", std::string("error")) + ": " + r.value("reason", std::string());
          if (r.value("context_lost", false)) worker_->restart();
        } else {
          auto stats = [](const json &j) {
            SampleStats x;
            x.median = j.value("median_ms", 0.0);
            x.q1 = j.value("q1_ms", 0.0);
            x.q3 = j.value("q3_ms", 0.0);
            x.iqr = j.value("iqr_ms", 0.0);
            x.min = j.value("min_ms", 0.0);
            x.max = j.value("max_ms", 0.0);
            x.mean = j.value("mean_ms", 0.0);
            x.count = j.value("samples", std::size_t{0});
            x.relativeSpread = j.value("relative_spread", 0.0);
            x.medianUncertainty = j.value("median_uncertainty", 0.0);
            return x;
          };
          t.ok = true;
          t.candidate = stats(r.value("candidate", json::object()));
          t.referenceTimed = r.contains("reference") && r["reference"].is_object();
          if (t.referenceTimed) t.reference = stats(r["reference"]);
          t.speedup = r.contains("speedup") && r["speedup"].is_number() ? r["speedup"].get<double>() : 0.0;
          t.suspicious = r.value("suspicious", false);
          t.suspiciousReason = r.value("suspicious_reason", "");
          t.stopReason = r.value("stop_reason", "");
          t.throttledSamples = r.value("candidate", json::object()).value("throttled_samples", std::size_t{0});
        }
      }
      co.timing = t;
    }
  }

  // The overall outcome: the worst configuration's.
  const ConfigOutcome *worst = nullptr;
  for (const auto &co : result.configs)
    if (!worst || severityRank(co.outcome) > severityRank(worst->outcome)) worst = &co;
  if (!worst) {
    result.outcome = EvalOutcome::Error;
    result.message = "the task has no size configuration to run";
  } else if (worst->outcome == EvalOutcome::Correct) {
    result.outcome = EvalOutcome::Correct;
    result.message = "correct on " + std::to_string(result.configs.size()) + " configuration(s) × " +
                     std::to_string(seeds.size()) + " seed(s)";
  } else {
    result.outcome = worst->outcome;
    result.message = worst->config + ": " + (worst->errorName.empty() || worst->errorName == "worker-died" ? "" : worst->errorName + ": ") +
                     worst->message;
  }
  return finish();
}

EvaluationResult evaluate(const Task &task, const std::string &candidateSource, const EvaluationOptions &options,
                          EvaluatorSettings settings) {
  Evaluator evaluator(std::move(settings));
  return evaluator.evaluate(task, candidateSource, options);
}

}  // namespace kwb
