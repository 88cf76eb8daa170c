#include "core/eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <future>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/compile/diagnostics.h"
#include "core/eval/roofline.h"
#include "core/paths/install_paths.h"
#include "core/text/base64.h"
#include "core/worker/worker_client.h"

namespace kwb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Set while an evaluate() or withWorker() runs, so cancel() knows there is a request to end.
struct RunningFlag {
  // Nested (evaluate measuring the ceilings through withWorker): the outer one stays set.
  explicit RunningFlag(std::atomic<bool> &flag) : flag(flag), was(flag.exchange(true)) {}
  ~RunningFlag() { flag = was; }
  std::atomic<bool> &flag;
  bool was;
};

}  // namespace

namespace {

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

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

const WorkerDevice &Evaluator::device() {
  if (device_) return *device_;
  WorkerDevice d;
  d.ordinal = settings_.device;
  if (!settings_.useDevice) {
    d.problem = "no device use requested";
  } else if (std::string problem; !ensureWorker(problem)) {
    // A worker that did not start this time may start the next: asked again then.
    d.problem = problem;
    unstartedDevice_ = d;
    return unstartedDevice_;
  } else {
    const json hello = worker_->hello();
    for (const auto &v : devicesInHello(hello))
      if (v.ordinal == settings_.device) {
        d.present = true;
        d.name = v.name;
        d.arch = v.arch;
        d.pciBusId = v.pciBusId;
      }
    if (!d.present) d.problem = missingDeviceProblem(hello, settings_.device);
    d.driverVersion = hello.value("gpu", json::object()).value("driver_version", 0);
  }
  device_ = d;
  return *device_;
}

void Evaluator::freshWorkerFor(const std::string &hostLibraryKey) {
  const bool ranHostCode =
      worker_ && !workerLibraryKey_.empty() && workerLibraryGeneration_ == worker_->generation();
  if (ranHostCode && workerLibraryKey_ != hostLibraryKey) worker_->restart();
  workerLibraryKey_ = hostLibraryKey;
}

void Evaluator::noteWorkerLibrary(const std::string &hostLibraryKey) {
  if (!hostLibraryKey.empty() && worker_) workerLibraryGeneration_ = worker_->generation();
}

bool Evaluator::withWorker(const std::function<void(worker::WorkerClient &)> &request, std::string &problem,
                           const std::string &hostLibraryKey) {
  const RunningFlag running(running_);
  if (!readyWorker(problem, hostLibraryKey)) return false;
  request(*worker_);
  return true;
}

bool Evaluator::readyWorker(std::string &problem, const std::string &hostLibraryKey) {
  freshWorkerFor(hostLibraryKey);
  if (!ensureWorker(problem)) return false;
  noteWorkerLibrary(hostLibraryKey);
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
  const RunningFlag running(running_);
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
      if (co.outcome == Outcome::NotRun || co.outcome == Outcome::Cancelled ||
          (co.outcome == Outcome::RuntimeError && co.errorName == "worker-died")) {
        co.outcome = Outcome::Cancelled;
        co.errorName.clear();
        co.message = "cancelled";
      }
    result.outcome = Outcome::Cancelled;
    result.message = "cancelled by the user";
    return finish();
  };

  // Options that do not fit the task are the caller's mistake.
  const auto configs = resolveConfigurations(task, options.configs);
  const auto tunables = effectiveTunables(task, options.tunables);
  std::vector<std::uint64_t> seeds = options.seeds.empty() ? task.seeds : options.seeds;
  if (options.seeds.empty() && options.freshSeed) {
    // Above every seed a task declares by hand, below 2^31 (the seed is printed and typed back).
    std::random_device entropy;
    result.freshSeed = std::uniform_int_distribution<std::uint64_t>(std::uint64_t{1} << 20, (std::uint64_t{1} << 31) - 1)(entropy);
    seeds.push_back(result.freshSeed);
  }

  // The device decides the architecture, unless one is asked for.
  const WorkerDevice &gpu = device();
  result.arch = !options.arch.empty() ? options.arch : gpu.present ? gpu.arch : "sm_90";
  if (gpu.present) {
    result.device = gpu.name;
    result.deviceOrdinal = gpu.ordinal;
  }

  const Launch &candidateLaunch = task.launch ? *task.launch : task.reference.launch;

  // Compile: the candidate first (its errors are what the user needs), then the reference.
  step("compile", "", 0.0, "compiling " + options.sourceName + " for " + result.arch);
  const auto request = requestFor(task, source, options.sourceName, result.arch, tunables);
  result.candidate = compiler_.compile(request);
  if (!result.candidate.ok) {
    result.outcome = Outcome::CompileError;
    result.message = describeFailure(options.sourceName + " does not compile", result.candidate.diagnostics);
    return finish();
  }
  CompileRequest refRequest;
  try {
    refRequest.source = readFile(task.folder / task.reference.source);
  } catch (const std::exception &e) {
    result.outcome = Outcome::Error;
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
    result.outcome = Outcome::Error;
    result.message = describeFailure("the task's reference " + refRequest.sourceName + " does not compile",
                                     reference.diagnostics);
    return finish();
  }

  // Launches and occupancy per configuration.
  result.configs = planLaunches(task, configs, tunables, result.candidate, result.arch);
  const bool hostLauncher = result.candidate.form == SourceForm::HostLauncher;

  if (!gpu.present) {
    for (auto &co : result.configs)
      if (co.outcome != Outcome::Error) {
        co.outcome = Outcome::NotRun;
        co.message = kNoDeviceMessage;
      }
    result.outcome = Outcome::NotRun;
    result.message = std::string(kNoDeviceMessage) + (gpu.problem.empty() ? "" : " (" + gpu.problem + ")");
    return finish();
  }

  // The roofline the timed medians are judged against: this device's measured ceilings, for the
  // task's data type. Cached per device; measured (about a second) before any candidate code runs.
  std::optional<DeviceCeilings> ceilings;
  if (options.time) {
    step("compile", "", 0.05, "this GPU's roofline ceilings (measured once, then cached)");
    std::string problem;
    ceilings = deviceCeilings(*this, problem);
    if (!ceilings && options.onProgress) options.onProgress("roofline ceilings not available: " + problem);
  }

  std::string manifest;
  try {
    manifest = readFile(task.manifestPath);
  } catch (const std::exception &) {
    // The worker reads the folder itself.
  }
  const std::string refImage = base64Encode(reference.image);
  const std::string candImage = base64Encode(result.candidate.image);
  auto candidateSpec = [&](const LaunchDims &d) {
    return hostLauncher ? hostLaunch(candImage, candidateLaunch) : kernelLaunch(candImage, candidateLaunch, d);
  };
  // A worker that ran another candidate's host code is replaced first (readyWorker).
  const std::string hostKey = hostLibraryKey(result.candidate, candImage);

  const double evalShare = options.time ? 0.5 : 0.9;  // of the progress bar after compiling
  const double perConfig = result.configs.empty() ? 0.0 : evalShare / static_cast<double>(result.configs.size());
  std::size_t configIndex = 0;
  bool stop = false;
  for (auto &co : result.configs) {
    const double configStart = 0.1 + perConfig * static_cast<double>(configIndex++);
    if (cancelled()) return finishCancelled();
    if (co.outcome == Outcome::Error) {
      stop = true;
      continue;
    }
    if (stop) {
      co.outcome = Outcome::NotRun;
      co.message = "not run: an earlier configuration failed";
      continue;
    }
    std::string problem;
    if (!readyWorker(problem, hostKey)) {
      co.outcome = Outcome::Error;
      co.message = problem;
      stop = true;
      continue;
    }
    result.sandbox = worker_->sandbox().state;
    worker::EvaluateRequest request;
    request.task = task.folder.string();
    request.manifest = manifest;
    request.config = co.config;
    request.seeds = seeds;
    request.reference = kernelLaunch(refImage, task.reference.launch, co.referenceLaunch);
    request.candidate = candidateSpec(co.candidateLaunch);

    step("evaluate", co.config, configStart, "evaluating configuration " + co.config);
    auto promise = std::make_shared<std::promise<worker::Reply>>();
    auto future = promise->get_future();
    worker::RequestHandlers handlers;
    const std::size_t seedCount = seeds.size();
    handlers.onEvent = [&step, configStart, perConfig, seedCount](const worker::Event &e) {
      const auto p = worker::readProgress<worker::EvaluateProgress>(e);
      if (!p || p->stage != "seed") return;
      step("evaluate", p->config,
           configStart + perConfig * (seedCount ? static_cast<double>(p->done) / static_cast<double>(seedCount) : 1.0),
           "  " + p->config + " seed " + std::to_string(p->seed) + ": " + (p->passed.value_or(false) ? "passed" : "FAILED"));
    };
    handlers.onReply = [promise](const worker::Reply &r) { promise->set_value(r); };
    worker_->send("evaluate", request, handlers, options.timeLimit);
    if (cancelled()) worker_->restart();  // a cancel that came just before the send
    const auto reply = future.get();
    if (cancelled()) {
      co.outcome = Outcome::Cancelled;
      return finishCancelled();
    }

    if (readEvaluateReply(reply, options.timeLimit, co)) stop = true;
    // A lost context: the worker exits after this reply; a killed or dead worker is replaced
    // before the next request (ensureWorker).
    if (lostContext(reply)) worker_->restart();
  }

  // Timing: only when every configuration is correct.
  bool allCorrect = !result.configs.empty();
  for (const auto &co : result.configs) allCorrect = allCorrect && co.outcome == Outcome::Correct;
  if (options.time && allCorrect) {
    const double perTiming = result.configs.empty() ? 0.0 : 0.4 / static_cast<double>(result.configs.size());
    std::size_t timingIndex = 0;
    for (auto &co : result.configs) {
      const double timingStart = 0.6 + perTiming * static_cast<double>(timingIndex++);
      if (cancelled()) return finishCancelled();
      const auto *config = task.config(co.config);
      TimingOutcome t;
      std::string problem;
      if (!readyWorker(problem, hostKey)) {
        t.error = problem;
        co.timing = t;
        continue;
      }
      worker::TimeRequest request;
      request.task = task.folder.string();
      request.manifest = manifest;
      request.config = co.config;
      request.seed = seeds.empty() ? 1 : seeds.back() + 1;  // inputs the evaluation did not use
      request.timeCapMs = static_cast<double>(options.timingCap.count());
      request.reference = kernelLaunch(refImage, task.reference.launch, co.referenceLaunch);
      request.candidate = candidateSpec(co.candidateLaunch);
      request.timeReference = options.timeReference;
      request.permutationSeed = options.permutationSeed;
      // The task's cost for this configuration (the roofline check); absent when not given.
      auto cost = [&](const Expression &e) -> double {
        if (e.empty() || !config) return 0.0;
        try {
          return static_cast<double>(e.evaluate(config->values));
        } catch (const std::exception &) {
          return 0.0;
        }
      };
      request.flops = cost(task.flops);
      request.bytes = cost(task.bytes);
      if (ceilings) {
        request.compute = computeCeiling(task);
        request.ceilingBytesPerS = ceilings->copyBytesPerS;
        request.ceilingFlopsPerS = computeCeilingRate(*ceilings, request.compute);
      }
      step("time", co.config, timingStart, "timing configuration " + co.config);
      auto promise = std::make_shared<std::promise<worker::Reply>>();
      auto future = promise->get_future();
      worker::RequestHandlers handlers;
      const double cap = static_cast<double>(std::max<long long>(1, options.timingCap.count()));
      const auto timingStarted = std::chrono::steady_clock::now();
      handlers.onEvent = [&step, &progress, timingStart, perTiming, cap, timingStarted,
                          name = co.config](const worker::Event &e) {
        const auto p = worker::readProgress<worker::TimingProgress>(e);
        if (!p || p->stage != "timing") return;
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - timingStarted).count();
        progress.samplesMs.insert(progress.samplesMs.end(), p->candidateMs.begin(), p->candidateMs.end());
        step("time", name, timingStart + perTiming * std::min(1.0, ms / cap),
             "  " + name + ": " + std::to_string(p->samples) + " samples");
      };
      handlers.onReply = [promise](const worker::Reply &r) { promise->set_value(r); };
      worker_->send("time", request, handlers, options.timeLimit);
      if (cancelled()) worker_->restart();
      const auto reply = future.get();
      if (cancelled()) return finishCancelled();
      t = readTimeReply(reply, co);
      if (!t.ok && lostContext(reply)) worker_->restart();
      co.timing = t;
    }
  }

  // The overall outcome: the worst configuration's.
  const Verdict whole = verdict(result.configs, seeds.size());
  result.outcome = whole.outcome;
  result.message = whole.message;
  return finish();
}

EvaluationResult evaluate(const Task &task, const std::string &candidateSource, const EvaluationOptions &options,
                          EvaluatorSettings settings) {
  Evaluator evaluator(std::move(settings));
  return evaluator.evaluate(task, candidateSource, options);
}

}  // namespace kwb
