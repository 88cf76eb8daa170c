#include "core/eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <deque>
#include <future>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "core/compile/diagnostics.h"
#include "core/compile/toolkit_programs.h"
#include "core/eval/roofline.h"
#include "core/eval/sanitizer_status.h"
#include "core/paths/install_paths.h"
#include "core/task/source_file.h"
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

// The task's reference as a compile request, named `sourceName` in diagnostics and line
// information. Throws std::runtime_error when its file cannot be read.
CompileRequest referenceRequest(const Task &task, const std::string &arch, const std::string &sourceName) {
  CompileRequest r;
  r.source = readTaskFile(task, task.reference.source);
  r.sourceName = sourceName;
  r.arch = arch;
  r.expectedKernels = {task.reference.launch.kernel};
  for (const auto &c : task.configs)
    if (c.referenceLaunch && std::find(r.expectedKernels.begin(), r.expectedKernels.end(), c.referenceLaunch->kernel) ==
                                 r.expectedKernels.end())
      r.expectedKernels.push_back(c.referenceLaunch->kernel);
  r.defines = paramDefines(task);
  return r;
}

// Whether candidates are checked against the task's PyTorch module (else its CUDA reference).
// Throws std::invalid_argument for a choice the task cannot meet.
bool checksAgainstTorch(const Task &task, const std::string &choice) {
  if (choice.empty()) return !task.reference.hasCuda();
  if (choice == "cuda") {
    if (!task.reference.hasCuda())
      throw std::invalid_argument("task '" + task.name + "' has no CUDA reference (its reference is the PyTorch module " +
                                  task.reference.python.string() + ")");
    return false;
  }
  if (choice == "pytorch") {
    if (task.reference.python.empty())
      throw std::invalid_argument("task '" + task.name + "' has no PyTorch module ([reference] python in task.toml)");
    return true;
  }
  throw std::invalid_argument("unknown reference '" + choice + "'; expected cuda or pytorch");
}

// A request's reference given as the PyTorch module's outputs for `jobs`: the cached files linked
// (or copied) into the worker's private directory, where the worker reads and removes them.
// `placed` collects the paths, for removal after the reply.
worker::LaunchRequest givenOutputs(const TorchRun &run, const std::vector<TorchOutputJob> &jobs,
                                   const std::string &privateDir, std::vector<fs::path> &placed) {
  static std::atomic<unsigned long long> counter{0};
  worker::LaunchRequest r;
  for (const auto &job : jobs) {
    const auto it = run.outputs.find(torchJobKey(job));
    if (it == run.outputs.end()) throw std::runtime_error("no PyTorch reference outputs for " + torchJobKey(job));
    for (const auto &[tensor, file] : it->second) {
      const fs::path target = fs::path(privateDir) / ("kwb-reference-" + std::to_string(::getpid()) + "-" +
                                                      std::to_string(counter++) + ".bin");
      std::error_code ec;
      fs::create_hard_link(file, target, ec);
      if (ec) {
        ec.clear();
        fs::copy_file(file, target, fs::copy_options::overwrite_existing, ec);
      }
      if (ec) throw std::runtime_error("cannot place " + file.string() + " in the worker's directory: " + ec.message());
      placed.push_back(target);
      r.outputs.push_back({job.seed, tensor, target.string()});
    }
  }
  return r;
}

// The module's figures on a configuration, and the candidate's speedups over them.
TorchBaseline torchBaseline(const TorchTiming &t, double candidateMedianMs) {
  TorchBaseline b;
  b.eagerMs = t.eager.ok ? t.eager.medianMs : 0;
  b.compiledMs = t.compiled.ok ? t.compiled.medianMs : 0;
  b.eagerSamples = t.eager.samples;
  b.compiledSamples = t.compiled.samples;
  b.eagerSpread = t.eager.relativeSpread;
  b.compiledSpread = t.compiled.relativeSpread;
  b.compileSeconds = t.compiled.compileSeconds;
  b.timer = t.eager.timer;
  b.eagerError = t.eager.ok ? "" : t.eager.error;
  b.compiledError = t.compiled.ok ? "" : t.compiled.error;
  if (candidateMedianMs > 0) {
    b.speedupEager = b.eagerMs / candidateMedianMs;
    b.speedupCompiled = b.compiledMs / candidateMedianMs;
  }
  return b;
}

void removePlaced(std::vector<fs::path> &placed) {
  std::error_code ec;
  for (const auto &p : placed) fs::remove(p, ec);
  placed.clear();
}

}  // namespace

std::optional<worker::WorkerClientOptions> workerOptions(const EvaluatorSettings &settings, std::string &problem) {
  worker::WorkerClientOptions o;
  o.launcher = settings.launcher;
  if (settings.launcher.remote()) {
    // The far side's kwb-worker; the first connection may also wait for a password-less login.
    o.startTimeout = std::max(settings.workerStartTimeout, std::chrono::milliseconds(60000));
    return o;
  }
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

std::string workerStartProblem(const EvaluatorSettings &settings, const std::optional<worker::WorkerExit> &exit) {
  std::string out = "the GPU worker" +
                    (settings.launcher.remote() ? " on " + settings.launcher.describe() : std::string()) + " did not start";
  if (!exit) return out;
  out += ": " + exit->description;
  if (!exit->cause.empty()) out += " (" + exit->cause + ")";
  if (!exit->stderrTail.empty()) out += "; " + exit->stderrTail;
  // The far side's shell: 127, no such program; ssh itself: 255, no connection or no login.
  if (settings.launcher.kind == worker::WorkerLauncher::Kind::Ssh && exit->exitCode == 255)
    out += " (ssh could not connect or log in: try `ssh " + settings.launcher.host +
           " true`; a key or agent is needed, never a password prompt)";
  else if (settings.launcher.remote() && exit->exitCode == 127)
    out += " (no kwb-worker there: install Kernel Workbench on that host, or name its kwb-worker in --workers)";
  return out;
}

std::string remoteTorchReferenceProblem(const Task &task, const worker::WorkerLauncher &launcher) {
  const std::string module = task.reference.python.empty() ? "" : " (" + task.reference.python.filename().string() + ")";
  return "task '" + task.name + "' is checked against its PyTorch module" + module + ", which workers on " +
         launcher.describe() +
         " cannot use: the module's outputs are computed by this machine's Python and GPU and given to the worker as "
         "files in its private folder, which is on " + launcher.describe() +
         "; the Python there is not used. What to do: " +
         (task.reference.hasCuda() ? "check against the task's CUDA reference (kwb eval --reference cuda, the default "
                                     "where a task has one), or "
                                   : "give the task a CUDA reference ([reference] source in task.toml), or ") +
         "evaluate on a GPU of this machine (--workers local; Settings > GPU > Workers: local)";
}

void useWorkers(EvaluatorSettings &settings, const std::vector<worker::WorkerLauncher> &launchers) {
  settings.launcher = launchers.empty() ? worker::WorkerLauncher{} : launchers.front();
  settings.hosts = launchers.size() > 1 ? launchers : std::vector<worker::WorkerLauncher>{};
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

namespace {

// Why code compiled here by CUDA `toolkitVersion` ("13.0") cannot load under the driver of
// `driverVersion` (cuDriverGetVersion: 12080 = 12.8) on `where`: a driver older than the toolkit's
// major version (a minor version behind is fine: CUDA's minor-version compatibility). Empty when it
// loads, or when either version is unknown.
std::string driverProblem(int driverVersion, const std::string &toolkitVersion, const std::string &where) {
  const int toolkitMajor = std::atoi(toolkitVersion.c_str());
  if (driverVersion <= 0 || toolkitMajor <= 0 || driverVersion / 1000 >= toolkitMajor) return {};
  const std::string driver = std::to_string(driverVersion / 1000) + "." + std::to_string(driverVersion % 1000 / 10);
  return "the CUDA driver on " + where + " supports CUDA " + driver + "; the code was compiled here by CUDA " +
         toolkitVersion + ", which needs a driver for CUDA " + std::to_string(toolkitMajor) +
         " or newer: update the driver there, or compile here with a CUDA " + std::to_string(driverVersion / 1000) +
         " toolkit";
}

}  // namespace

std::unique_ptr<worker::WorkerClient> startWorker(const EvaluatorSettings &settings, std::optional<int> device,
                                                  std::string &problem) {
  auto options = workerOptions(settings, problem);
  if (!options) return nullptr;
  options->device = device;
  if (const auto down = worker::ensureSshMaster(settings.launcher); !down.empty()) {
    problem = "the GPU worker on " + settings.launcher.describe() + " did not start: " + down;
    return nullptr;
  }
  auto client = std::make_unique<worker::WorkerClient>(*options);
  client->start();
  if (!client->waitUntilReady(settings.workerStartTimeout + std::chrono::seconds(5))) {
    const auto exit = client->lastExit();
    problem = workerStartProblem(settings, exit);
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
  if (state == worker::WorkerClient::State::Dead || state == worker::WorkerClient::State::Stopped) {
    if (const auto down = worker::ensureSshMaster(settings_.launcher); !down.empty()) {
      problem = "the GPU worker on " + settings_.launcher.describe() + " did not start: " + down;
      return false;
    }
  }
  if (state == worker::WorkerClient::State::Dead) worker_->restart();
  else if (state == worker::WorkerClient::State::Stopped) worker_->start();
  if (!worker_->waitUntilReady(settings_.workerStartTimeout + std::chrono::seconds(5))) {
    const auto exit = worker_->lastExit();
    problem = workerStartProblem(settings_, exit);
    return false;
  }
  return true;
}

std::string Evaluator::where() const {
  std::lock_guard lock(workerMutex_);
  if (!worker_ || !settings_.launcher.remote()) return {};
  const auto s = worker_->sandbox();
  std::string out = s.host;
  if (!s.slurmStep.empty()) out += " · Slurm step " + s.slurmStep;
  if (!s.visibleDevices.empty()) out += " · CUDA_VISIBLE_DEVICES=" + s.visibleDevices;
  return out;
}

const WorkerDevice &Evaluator::device() {
  if (device_) return *device_;
  WorkerDevice d;
  d.ordinal = settings_.device;
  if (!settings_.useDevice) {
    d.problem = settings_.noDeviceReason.empty() ? "no device use requested" : settings_.noDeviceReason;
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
  if (sanitizing_) sanitizing_->stop("cancelled by the user");
}

EvaluationResult Evaluator::evaluate(const Task &task, const std::string &source, const EvaluationOptions &options) {
  const auto started = std::chrono::steady_clock::now();
  cancelRequested_ = false;
  const RunningFlag running(running_);
  EvalProgress progress;
  // With the sanitizer asked for, the evaluation takes the first 60% of the progress bar.
  const double share = options.sanitize ? 0.6 : 1.0;
  auto step = [&](const std::string &stage, const std::string &config, double fraction, const std::string &line) {
    progress.stage = stage;
    progress.config = config;
    const bool own = stage == "sanitize" || stage == "done";
    progress.fraction = std::max(progress.fraction, std::min(1.0, own ? fraction : fraction * share));
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
  checkConstraints(task, configs, tunables);  // before anything is compiled
  const bool torchReference = checksAgainstTorch(task, options.reference);
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

  // Compile: the candidate first (its errors are what the user needs), then the reference.
  step("compile", "", 0.0, "compiling " + options.sourceName + " for " + result.arch);
  const auto request = requestFor(task, source, options.sourceName, result.arch, tunables);
  result.candidate = compiler_.compile(request);
  if (!result.candidate.ok) {
    result.outcome = Outcome::CompileError;
    result.message = describeFailure(options.sourceName + " does not compile", result.candidate.diagnostics);
    return finish();
  }
  // Refused before the reference is compiled or any request runs there (remoteTorchReferenceProblem).
  if (torchReference && settings_.launcher.remote()) {
    result.outcome = Outcome::Error;
    result.message = remoteTorchReferenceProblem(task, settings_.launcher);
    return finish();
  }
  // Code this machine's toolkit made must load under the driver where it runs (issue 22: a
  // remote GPU host's may be older), checked before anything runs there.
  if (gpu.present) {
    const std::string where = settings_.launcher.remote() ? settings_.launcher.describe() : "this machine";
    if (const std::string p = driverProblem(gpu.driverVersion, result.candidate.toolkitVersion, where); !p.empty()) {
      result.outcome = Outcome::Error;
      result.message = p;
      return finish();
    }
  }
  result.reference = torchReference ? "pytorch" : "cuda";
  CompileResult reference;
  if (!torchReference) {
    CompileRequest refRequest;
    try {
      refRequest = referenceRequest(task, result.arch, task.reference.source.string());
    } catch (const std::exception &e) {
      result.outcome = Outcome::Error;
      result.message = std::string("the task's reference: ") + e.what();
      return finish();
    }
    reference = compiler_.compile(refRequest);
    if (cancelled()) return finishCancelled();
    if (!reference.ok) {
      result.referenceDiagnostics = reference.diagnostics;
      result.outcome = Outcome::Error;
      result.message = describeFailure("the task's reference " + refRequest.sourceName + " does not compile",
                                       reference.diagnostics);
      return finish();
    }
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
    if (options.sanitize) {
      result.sanitize.emplace();
      result.sanitize->problem = result.message;
    }
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

  // A PyTorch reference: its outputs for every configuration and seed (and the timing seed's),
  // computed now (or found in the cache) before any candidate runs.
  const std::uint64_t timingSeed = seeds.empty() ? 1 : seeds.back() + 1;  // inputs the evaluation did not use
  TorchRun torchRun;
  if (torchReference) {
    TorchRunRequest r;
    for (const auto *c : configs) {
      for (const auto seed : seeds) r.outputs.push_back({c, seed, false});
      if (options.time) r.outputs.push_back({c, timingSeed, true});
    }
    // Forward twice on the same inputs, the same bits or the evaluation ends ("nondeterministic":
    // dropout in training mode, random calls, atomics): once per cached output, not per candidate.
    r.repeatCheck = true;
    r.onProgress = [&](const std::string &line) { step("compile", "", 0.08, "  PyTorch reference: " + line); };
    r.cancelled = [this] { return cancelled(); };
    step("compile", "", 0.06, "the PyTorch reference " + task.reference.python.string() + ": outputs for " +
                                   std::to_string(r.outputs.size()) + " configuration/seed pair(s)");
    torchRun = runTorchReference(task, r, settings_.torch);
    if (cancelled()) return finishCancelled();
    result.torchVersion = torchRun.torchVersion;
    if (!torchRun.ok) {
      result.outcome = Outcome::Error;
      result.message = torchRun.describe();
      return finish();
    }
    step("compile", "", 0.1, "  PyTorch reference: " + std::to_string(torchRun.cachedJobs) + " cached, " +
                                 std::to_string(torchRun.computedJobs) + " computed (" + torchRun.device + ", torch " +
                                 torchRun.torchVersion + ")");
  }
  std::vector<fs::path> placed;  // given outputs in the worker's directory, removed after each reply
  auto torchSpec = [&](const std::vector<TorchOutputJob> &jobs) {
    return givenOutputs(torchRun, jobs, worker_->sandbox().privateDir, placed);
  };

  std::string manifest;
  try {
    manifest = readManifestText(task.manifestPath);
  } catch (const std::exception &) {
    // The worker reads the folder itself.
  }
  const std::string refImage = base64Encode(reference.image);
  const std::string candImage = base64Encode(result.candidate.image);
  // Each configuration's launches: its own where it has one, else the task's.
  auto candidateSpec = [&](const ConfigOutcome &co) {
    const Launch &launch = task.candidateLaunch(*task.config(co.config));
    return hostLauncher ? hostLaunch(candImage, launch) : kernelLaunch(candImage, launch, co.candidateLaunch);
  };
  auto referenceSpec = [&](const ConfigOutcome &co) {
    return kernelLaunch(refImage, task.referenceLaunch(*task.config(co.config)), co.referenceLaunch);
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
    if (torchReference) {
      std::vector<TorchOutputJob> jobs;
      for (const auto seed : seeds) jobs.push_back({task.config(co.config), seed, false});
      request.reference = torchSpec(jobs);
    } else {
      request.reference = referenceSpec(co);
    }
    request.candidate = candidateSpec(co);

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
    removePlaced(placed);
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
      request.seed = timingSeed;
      request.timeCapMs = static_cast<double>(options.timingCap.count());
      request.reference = torchReference ? torchSpec({{config, timingSeed, true}}) : referenceSpec(co);
      request.candidate = candidateSpec(co);
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
      removePlaced(placed);
      if (cancelled()) return finishCancelled();
      t = readTimeReply(reply, co);
      if (!t.ok && lostContext(reply)) worker_->restart();
      co.timing = t;
      if (co.errorName == "worker-lost") break;  // the evaluation is incomplete: the others are not timed
    }
  }

  // The PyTorch module timed on the configurations the candidate was timed on: the speedups
  // over PyTorch eager and torch.compile (same inputs: the timing seed's first generators).
  const bool timeTorch = options.time && options.timeTorch && !task.reference.python.empty() && allCorrect && !cancelled();
  if (timeTorch && settings_.launcher.remote()) {
    result.torchProblem = "PyTorch not timed: it would run on this machine's GPU, the candidate ran on " +
                          settings_.launcher.describe();
  } else if (timeTorch) {
    TorchRunRequest r;
    for (const auto &co : result.configs)
      if (co.timing && co.timing->ok) r.timings.push_back(task.config(co.config));
    r.timingSeed = timingSeed;
    r.timeCompiled = options.timeTorchCompiled;
    r.deviceName = result.device;
    r.timeCapMs = static_cast<double>(options.timingCap.count());
    r.onProgress = [&](const std::string &line) { step("time", "", 0.98, "  PyTorch: " + line); };
    r.cancelled = [this] { return cancelled(); };
    if (!r.timings.empty()) {
      step("time", "", 0.97, "timing the PyTorch module " + task.reference.python.string() +
                                 (r.timeCompiled ? " (eager and torch.compile)" : " (eager)"));
      const TorchRun timed = runTorchReference(task, r, settings_.torch);
      if (cancelled()) return finishCancelled();
      if (!timed.ok) result.torchProblem = timed.describe();
      if (result.torchVersion.empty()) result.torchVersion = timed.torchVersion;
      for (const auto &t : timed.timings)
        for (auto &co : result.configs)
          if (co.config == t.config && co.timing) co.torch = torchBaseline(t, co.timing->candidate.median);
    }
  }

  // The overall outcome: the worst configuration's.
  const Verdict whole = verdict(result.configs, seeds.size());
  result.outcome = whole.outcome;
  result.message = whole.message;

  // The sanitizer also explains a wrong result or a crash (a race, a read out of bounds).
  if (options.sanitize && !cancelled() && result.outcome == Outcome::Timeout) {
    // Four tools at a slower pace would only hit the limit again, each.
    result.sanitize.emplace();
    result.sanitize->problem = "not sanitized: the candidate did not finish within the time limit";
  } else if (options.sanitize && !cancelled()) {
    SanitizeOptions s = *options.sanitize;
    s.sourceName = options.sourceName;
    s.arch = result.arch;
    s.tunables = options.tunables;
    const double perTool = 0.4 / static_cast<double>(std::max<std::size_t>(1, s.tools.size()));
    std::size_t toolsStarted = 0;
    s.onProgress = [&, callerProgress = options.sanitize->onProgress](const std::string &line) {
      if (callerProgress) callerProgress(line);
      if (line.rfind("sanitizing with", 0) == 0) ++toolsStarted;
      step("sanitize", s.config, 0.6 + perTool * static_cast<double>(toolsStarted ? toolsStarted - 1 : 0), line);
    };
    result.sanitize = runSanitizer(task, source, s);
    if (cancelled()) return finishCancelled();
  }
  return finish();
}

// ---- kwb eval --sanitize ----------------------------------------------------------------------

const SizeConfig *smallestConfiguration(const Task &task) {
  const SizeConfig *best = nullptr;
  long double bestBytes = 0;
  for (const auto &config : task.configs) {
    long double bytes = 0;
    for (const auto &t : task.tensors) {
      long double elements = 1;
      try {
        for (const auto &e : t.shape) elements *= static_cast<long double>(e.evaluate(config.values));
      } catch (const std::exception &) {
        elements = 0;  // a shape that does not evaluate: the evaluation says so
      }
      bytes += elements * static_cast<long double>(dtypeSize(t.dtype));
    }
    if (!best || bytes < bestBytes) {
      best = &config;
      bestBytes = bytes;
    }
  }
  return best;
}

SanitizeResult Evaluator::sanitize(const Task &task, const std::string &source, const SanitizeOptions &options) {
  cancelRequested_ = false;
  const RunningFlag running(running_);
  return runSanitizer(task, source, options);
}

SanitizeResult Evaluator::runSanitizer(const Task &task, const std::string &source, const SanitizeOptions &options) {
  const auto started = std::chrono::steady_clock::now();
  SanitizeResult out;
  auto done = [&]() -> SanitizeResult {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return std::move(out);
  };
  auto say = [&](const std::string &line) {
    if (options.onProgress) options.onProgress(line);
  };
  const SizeConfig *config = options.config.empty() ? smallestConfiguration(task) : task.config(options.config);
  if (!config) {
    if (!options.config.empty()) resolveConfigurations(task, {options.config});  // throws, naming the task's
    out.problem = "the task has no size configuration";
    return done();
  }
  const auto tunables = effectiveTunables(task, options.tunables);
  checkConstraints(task, {config}, tunables);
  out.config = config->name;
  out.seed = options.seed ? options.seed : task.seeds.empty() ? 1 : task.seeds.front();
  // A remote worker runs under its own host's compute-sanitizer (kwb-worker --relay --sanitize).
  const bool remote = settings_.launcher.remote();
  const bool torchReference = !task.reference.hasCuda();
  if (remote && torchReference) {
    out.problem = "not sanitized: " + remoteTorchReferenceProblem(task, settings_.launcher);
    return done();
  }
  const auto program = remote ? fs::path() : findComputeSanitizer();
  if (!remote && program.empty()) {
    out.problem = "compute-sanitizer not found (looked in " + toolkitProgramSearchPlaces() +
                  "; it comes with the CUDA toolkit; KWB_COMPUTE_SANITIZER names it)";
    return done();
  }
  out.program = program.string();
  const WorkerDevice &gpu = device();
  if (!gpu.present) {
    out.problem = std::string(kNoDeviceMessage) + (gpu.problem.empty() ? "" : " (" + gpu.problem + ")");
    return done();
  }
  const std::string arch = !options.arch.empty() ? options.arch : gpu.arch;

  // Both compiled with line information; the reference under a name of its own, so a finding's
  // file tells whose code it is in even when the candidate is a copy of the reference.
  say("compiling " + options.sourceName + " for " + arch + " with line information");
  // (Line information is on in every compile request by default.)
  const auto candidate = compiler_.compile(requestFor(task, source, options.sourceName, arch, tunables));
  if (!candidate.ok) {
    out.problem = describeFailure(options.sourceName + " does not compile", candidate.diagnostics);
    return done();
  }
  // A task whose reference is a PyTorch module: its outputs for the seed, given to each tool's worker.
  TorchRun torchRun;
  CompileRequest refRequest;
  CompileResult reference;
  if (torchReference) {
    TorchRunRequest r;
    r.outputs.push_back({config, out.seed, false});
    r.onProgress = [&](const std::string &line) { say("  PyTorch reference: " + line); };
    r.cancelled = [this] { return cancelled(); };
    torchRun = runTorchReference(task, r, settings_.torch);
    if (!torchRun.ok) {
      out.problem = torchRun.describe();
      return done();
    }
  } else {
    try {
      refRequest = referenceRequest(task, arch, "kwb-task-reference/" + task.reference.source.filename().string());
    } catch (const std::exception &e) {
      out.problem = std::string("the task's reference: ") + e.what();
      return done();
    }
    reference = compiler_.compile(refRequest);
    if (!reference.ok) {
      out.problem = describeFailure("the task's reference does not compile", reference.diagnostics);
      return done();
    }
  }
  const auto plan = planLaunches(task, {config}, tunables, candidate, arch);
  if (plan.empty() || plan.front().outcome == Outcome::Error) {
    out.problem = plan.empty() ? "no launch" : plan.front().message;
    return done();
  }
  const bool hostLauncher = candidate.form == SourceForm::HostLauncher;
  worker::EvaluateRequest evaluate;
  evaluate.task = task.folder.string();
  try {
    evaluate.manifest = readManifestText(task.manifestPath);
  } catch (const std::exception &) {
    // The worker reads the folder itself.
  }
  evaluate.config = config->name;
  evaluate.seeds = {out.seed};
  if (!torchReference)
    evaluate.reference = kernelLaunch(base64Encode(reference.image), task.referenceLaunch(*config), plan.front().referenceLaunch);
  const Launch &candidateLaunch = task.candidateLaunch(*config);
  const std::string candImage = base64Encode(candidate.image);
  evaluate.candidate = hostLauncher ? hostLaunch(candImage, candidateLaunch)
                                    : kernelLaunch(candImage, candidateLaunch, plan.front().candidateLaunch);

  SanitizerAttribution attribution;
  attribution.candidateFile = options.sourceName;
  attribution.referenceFile = refRequest.sourceName;
  attribution.hostLauncher = hostLauncher;
  for (const auto &k : candidate.kernels) attribution.candidateKernels.push_back(k.name);
  for (const auto &k : reference.kernels) attribution.referenceKernels.push_back(k.name);

  std::string problem;
  auto base = workerOptions(settings_, problem);
  if (!base) {
    out.problem = problem;
    return done();
  }
  base->device = settings_.device;
  // The tool loads and instruments before the worker says hello.
  // Remote: the relay's own wait for it, and the connection's start, come first.
  base->startTimeout = std::max<std::chrono::milliseconds>(
      base->startTimeout, remote ? std::chrono::seconds(worker::kRelayToolStartTimeout + worker::kRelayToolClientMargin)
                                 : std::chrono::seconds(120));
  for (const auto tool : options.tools) {
    if (cancelled()) {
      out.problem = "cancelled";
      break;
    }
    const auto toolStarted = std::chrono::steady_clock::now();
    say(std::string("sanitizing with ") + sanitizerToolName(tool) + ": " + config->name + ", seed " + std::to_string(out.seed));
    auto lines = std::make_shared<std::vector<std::string>>();
    auto linesMutex = std::make_shared<std::mutex>();
    worker::WorkerListeners listeners;
    auto workerLines = std::make_shared<std::deque<std::string>>();
    listeners.onStderr = [lines, workerLines, linesMutex](const std::string &line) {
      std::lock_guard lock(*linesMutex);
      if (line.rfind(kSanitizerLinePrefix, 0) == 0) {
        if (lines->size() < 200000) lines->push_back(line);
      } else {
        workerLines->push_back(line);  // the worker's own words, for when the run goes wrong
        if (workerLines->size() > 30) workerLines->pop_front();
      }
    };
    auto o = *base;
    if (remote) {
      o.remoteTool = sanitizerToolName(tool);  // the relay does what follows there
    } else {
      o.wrapper = sanitizerCommand(program, tool);
      for (auto &variable : sanitizerWorkerEnvironment(program)) o.environment.push_back(std::move(variable));
    }
    auto client = std::make_unique<worker::WorkerClient>(o, listeners);
    {
      // Published together with the check, so a cancel() either sees this worker or was seen here.
      std::lock_guard lock(workerMutex_);
      if (cancelled()) {
        out.problem = "cancelled";
        break;
      }
      sanitizing_ = client.get();
    }
    std::string evaluation, runProblem;
    client->start();
    if (!client->waitUntilReady(o.startTimeout + std::chrono::seconds(5))) {
      const auto exit = client->lastExit();
      runProblem = "the worker did not start under compute-sanitizer" +
                   (remote ? " on " + settings_.launcher.describe() : std::string()) +
                   (exit ? ": " + exit->description + (exit->stderrTail.empty() ? "" : "; " + exit->stderrTail) : "");
    } else if (!cancelled()) {
      if (remote) out.program = client->sandbox().tool + " on " + settings_.launcher.describe();
      std::vector<fs::path> placed;
      if (torchReference) evaluate.reference = givenOutputs(torchRun, {{config, out.seed, false}}, client->sandbox().privateDir, placed);
      const auto reply = client->call("evaluate", evaluate, options.timeLimit);
      removePlaced(placed);
      ConfigOutcome co = plan.front();
      readEvaluateReply(reply, options.timeLimit, co);
      evaluation = std::string(toString(co.outcome)) + (co.message.empty() ? "" : ": " + co.message);
    }
    // Its report ends when the worker does: the input closed, the tool writes its summary.
    const auto exit = client->finish(remote ? std::chrono::seconds(worker::kRelayToolFinishGrace + worker::kRelayToolClientMargin)
                                            : std::chrono::seconds(60));
    {
      std::lock_guard lock(workerMutex_);
      sanitizing_ = nullptr;
    }
    client.reset();  // joins its I/O thread: no listener runs any more
    auto r = parseSanitizerReport(tool, *lines, attribution);
    r.workerLog.assign(workerLines->begin(), workerLines->end());
    r.evaluation = evaluation;
    r.problem = runProblem;
    // Remote: the tool's own end, as its relay said; the ssh's or srun's status says nothing of it.
    const int exitStatus = !remote ? (exit && !exit->signal ? exit->exitCode : -1)
                                   : (exit && exit->farKnown && exit->farSignal.empty() ? exit->farExitCode : -1);
    holdToExitStatus(r, exitStatus);
    // A summary line proves nothing (candidate code can print one, then kill the tool): the tool
    // must have ended on its own.
    // How the worker under the tool ended, in words: remote, as its relay said.
    const std::string ended =
        !exit ? std::string()
        : !remote || !exit->farKnown
            ? exit->description + (exit->cause.empty() ? "" : " after " + exit->cause)
            : exit->farDescription + (exit->farCause.empty() ? "" : " after " + exit->farCause);
    if (r.problem.empty() && exitStatus < 0)
      r.problem = "compute-sanitizer did not end on its own" +
                  (!exit ? std::string()
                   : !remote || exit->farKnown
                       ? (remote ? " on " + settings_.launcher.describe() : std::string()) + ": the worker " + ended
                       : ": the connection to " + settings_.launcher.describe() + " ended before its relay said how the tool ended (" +
                             ended + ")");
    if (r.problem.empty() && cancelled()) r.problem = "cancelled";
    // Short: the worker's own last words are in workerLog, the tool's in log.
    if (r.problem.empty() && !r.completed)
      r.problem = std::string(r.started ? "compute-sanitizer printed no summary" : "compute-sanitizer said nothing") +
                  (exit ? ": the worker " + ended : "") +
                  (evaluation.rfind("timeout", 0) == 0 ? " (the run under it reached its time limit)" : "");
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - toolStarted).count();
    say(std::string("  ") + sanitizerToolName(tool) + ": " +
        (!r.problem.empty() ? r.problem
                            : std::to_string(r.candidateErrors()) + " error(s) in the candidate's code") +
        " (" + std::to_string(static_cast<int>(r.seconds + 0.5)) + " s)");
    out.reports.push_back(std::move(r));
  }
  return done();
}

EvaluationResult evaluate(const Task &task, const std::string &candidateSource, const EvaluationOptions &options,
                          EvaluatorSettings settings) {
  Evaluator evaluator(std::move(settings));
  return evaluator.evaluate(task, candidateSource, options);
}

}  // namespace kwb
