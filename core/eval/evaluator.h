#pragma once
// Evaluating one candidate for correctness, client side (no Qt): compile the candidate and the
// task's reference (kwb::Compiler), work out each configuration's launch, and send one
// `evaluate` request per configuration to a kwb-worker (core/worker/PROTOCOL.md), which runs
// both kernels on the GPU. Outcomes are explicit: compile error (never reaching the GPU), load
// error, runtime error (with the CUDA error name), timeout, incorrect (with where and how),
// correct, and "not run" where there is no CUDA device (the compile, resources and occupancy
// are still reported; never a fake number). With EvaluationOptions::time, each configuration of
// a correct candidate is then timed against the reference (`time`, PROTOCOL.md).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compile/compiler.h"
#include "core/compile/occupancy.h"
#include "core/eval/evaluation_result.h"
#include "core/eval/evaluation_steps.h"
#include "core/eval/sanitizer.h"
#include "core/eval/timing_statistics.h"
#include "core/eval/torch_reference.h"
#include "core/task/task.h"
#include "core/sandbox/worker_sandbox.h"
#include "core/worker/worker_client.h"

namespace kwb {

namespace worker {
class WorkerClient;
}


// Where an evaluation stands. fraction runs from 0 to 1 over compile, the configurations'
// correctness runs and their timing; it never goes backwards within one evaluate().
struct EvalProgress {
  std::string stage;   // "compile", "evaluate", "time", "done"
  std::string config;  // the configuration at work, when there is one
  double fraction = 0;
  std::string text;    // the same line onProgress gets
  // While timing: the candidate's sample times (ms, kernel time) measured since the previous
  // step, in order; empty otherwise.
  std::vector<double> samplesMs;
};

// kwb eval --sanitize (issue 15, gap 6): compute-sanitizer's tools over one correctness run.
struct SanitizeOptions {
  std::vector<SanitizerTool> tools = allSanitizerTools();
  std::string config;       // empty: the configuration whose tensors take the fewest bytes
  std::uint64_t seed = 0;   // 0: the task's first
  std::string arch;         // empty: the device's
  std::map<std::string, std::int64_t> tunables;
  std::string sourceName = "candidate.cu";
  // Per tool, for the one `evaluate` request under it (the tools slow kernels down 10-100x).
  std::chrono::milliseconds timeLimit{300000};
  std::function<void(const std::string &)> onProgress;  // one line per step; may be empty
};

// The configuration whose tensors take the fewest bytes (the first of equals); null when the
// task has none.
const SizeConfig *smallestConfiguration(const Task &task);

struct EvaluationOptions {
  std::string arch;                          // empty: the device's, else sm_90
  std::vector<std::string> configs;          // empty: all of the task's
  std::vector<std::uint64_t> seeds;          // empty: the task's, and a fresh one (freshSeed)
  // With the task's seeds, one more drawn at random per evaluation (issue 15): a candidate right
  // only for the declared seeds fails on it. EvaluationResult::freshSeed records it, and
  // `seeds = {it}` (kwb eval --seed N) repeats the run.
  bool freshSeed = true;
  std::map<std::string, std::int64_t> tunables;
  std::chrono::milliseconds timeLimit{60000};  // per worker request (one configuration, all seeds)
  std::string sourceName = "candidate.cu";
  std::function<void(const std::string &)> onProgress;  // one line per step; may be empty
  // Structured progress, for progress bars: called with each line above too. May be empty.
  std::function<void(const EvalProgress &)> onStep;
  bool time = false;                         // time each configuration once all are correct
  std::chrono::milliseconds timingCap{3000}; // sampling time cap per configuration
  // false: timing samples the candidate alone (no speedup): for ranking candidates against each
  // other, as the autotuner does, where a slow reference would cost more than the candidates.
  bool timeReference = true;
  // The timed samples' fresh inputs and re-checks (TimeRequest::permutationSeed): 0 draws one;
  // a result's timing.permutation_seed repeats that run.
  std::uint64_t permutationSeed = 0;
  // What candidates are checked against: "" (the task's CUDA reference where it has one, else its
  // PyTorch module), "cuda" or "pytorch" (kwb eval --reference).
  std::string reference;
  // With `time`, a task's PyTorch module is timed too (eagerly and through torch.compile) for
  // the speedups over PyTorch (ConfigOutcome::torch).
  bool timeTorch = true;
  bool timeTorchCompiled = true;
  // kwb eval --sanitize: after the evaluation (unless the candidate did not compile), the
  // sanitizer's tools (Evaluator::sanitize; its source name, architecture and tunables are this
  // evaluation's) into EvaluationResult::sanitize. Empty: not run.
  std::optional<SanitizeOptions> sanitize;
};

struct EvaluatorSettings {
  std::filesystem::path workerPath;  // empty: workerExecutable()
  CompilerOptions compiler;
  worker::SandboxPreference sandbox = worker::SandboxPreference::Auto;
  // Where the worker runs: this machine, a host over ssh, a Slurm step (--workers).
  worker::WorkerLauncher launcher;
  // Several hosts in one pool (--workers ssh://a,ssh://b): an EvaluatorPool puts every GPU of
  // each on its list (launcher is the first, for what runs one evaluator). Empty: launcher alone.
  std::vector<worker::WorkerLauncher> hosts;
  bool useDevice = true;  // false: compile only, as on a machine without a GPU
  std::string noDeviceReason;  // with useDevice false: why (the result says it); empty: "no device use requested"
  int device = 0;         // the CUDA device the worker uses
  std::chrono::milliseconds workerStartTimeout{30000};
  TorchSettings torch;  // the PyTorch reference process (core/eval/torch_reference.h)
};

// Where the workers run (--workers, parsed by parseWorkerLaunchers): the first as `launcher`, and
// with several, all of them as `hosts` (an EvaluatorPool puts every host's GPUs in one pool). An
// empty list: this machine.
void useWorkers(EvaluatorSettings &settings, const std::vector<worker::WorkerLauncher> &launchers);

// "the GPU worker [on ssh://HOST] did not start: how it ended (why it was stopped); its last stderr".
// Why a task checked against its PyTorch module cannot be evaluated (or sanitized) on a remote
// worker, and what to do instead: the module's outputs are made here and handed over as files.
std::string remoteTorchReferenceProblem(const Task &task, const worker::WorkerLauncher &launcher);
std::string workerStartProblem(const EvaluatorSettings &settings, const std::optional<worker::WorkerExit> &exit);

// "9.0" (a worker hello's compute_capability) → "sm_90"; "sm_90" when empty.
std::string archOfComputeCapability(std::string cc);

struct VisibleDevice {
  int ordinal = 0;
  std::string name;  // "NVIDIA H200"
  std::string arch;  // "sm_90"
  std::string pciBusId;
};
// The devices a worker's hello lists.
std::vector<VisibleDevice> devicesInHello(const nlohmann::json &hello);
// Why a hello lists no device `device`: the worker's own reason, else "no CUDA device N".
std::string missingDeviceProblem(const nlohmann::json &hello, int device);

// A worker started for `settings` (on `device` when given: its --device) and waited for; null
// with `problem` when none was found or it did not start. CUDA never starts in this process:
// the worker's hello says which devices it has.
std::unique_ptr<worker::WorkerClient> startWorker(const EvaluatorSettings &settings, std::optional<int> device,
                                                  std::string &problem);

// The options a worker for these settings starts with (its path: settings.workerPath, else
// workerExecutable(); sandbox; start timeout; no device), or nullopt with `problem` saying that
// no kwb-worker was found.
std::optional<worker::WorkerClientOptions> workerOptions(const EvaluatorSettings &settings, std::string &problem);

// The device an Evaluator's worker has, as its hello says (CUDA never starts in this process).
struct WorkerDevice {
  bool present = false;  // false: `problem` says why (no driver, no such device, no device use)
  int ordinal = -1;
  std::string name, arch, pciBusId;  // "NVIDIA H200", "sm_90", "0000:19:00.0"
  int driverVersion = 0;             // 13000 = 13.0
  std::string problem;
};

// Keeps a worker between evaluations (its reference outputs stay cached); replaces it after a
// crash, a lost context or a timeout. The same worker answers the other requests on its device
// (profile, ceilings: withWorker), so a GPU has one worker. Not thread-safe: one evaluate() or
// withWorker() at a time.
class Evaluator {
 public:
  explicit Evaluator(EvaluatorSettings settings = {});
  ~Evaluator();
  Evaluator(const Evaluator &) = delete;
  Evaluator &operator=(const Evaluator &) = delete;

  // Throws std::invalid_argument for options that do not fit the task (an unknown
  // configuration or tunable); every other problem is in the result.
  EvaluationResult evaluate(const Task &task, const std::string &candidateSource,
                            const EvaluationOptions &options = {});

  // Runs the candidate once (one configuration, one seed: an ordinary `evaluate` request) under
  // each of compute-sanitizer's tools, each in a fresh worker started under the tool inside the
  // usual sandbox, both kernels compiled with line information. Findings in the candidate's code
  // are told from the reference's and the workbench's own. Throws std::invalid_argument for an
  // unknown configuration; every other problem is in the result. cancel() stops it.
  SanitizeResult sanitize(const Task &task, const std::string &candidateSource, const SanitizeOptions &options = {});

  // From any thread: stops the evaluate() in progress as soon as it can. A worker request in
  // flight is ended by stopping that worker (a fresh one starts for the next evaluation); a
  // compile finishes first. evaluate() then returns Outcome::Cancelled, with what was
  // done so far. No effect when nothing runs.
  void cancel();

  // The device this evaluator's worker has (asked once, from its hello).
  const WorkerDevice &device();
  // Where its worker runs when remote: "gpu-box", "node7 · Slurm step 4242.3 · CUDA_VISIBLE_DEVICES=1";
  // empty for a local worker or none yet. Safe from any thread.
  std::string where() const;
  const EvaluatorSettings &settings() const { return settings_; }

  // Runs `request` with this evaluator's worker ready (started or replaced if need be), between
  // evaluations. `hostLibraryKey`: the compile cache key of a host-launcher candidate the
  // request loads; empty for a request that loads no host code (a CUBIN, the ceilings). A
  // worker that ran other host code is replaced first: one candidate's host code never shares a
  // process with another's work. False with `problem` when no worker could be started.
  bool withWorker(const std::function<void(worker::WorkerClient &)> &request, std::string &problem,
                  const std::string &hostLibraryKey = {});

 private:
  bool ensureWorker(std::string &problem);
  // The worker, started or replaced if need be, for a request loading `hostLibraryKey`'s host
  // code (empty: none): freshWorkerFor, ensureWorker, noteWorkerLibrary.
  bool readyWorker(std::string &problem, const std::string &hostLibraryKey);
  // sanitize() without resetting a cancel (evaluate() runs it last).
  SanitizeResult runSanitizer(const Task &task, const std::string &candidateSource, const SanitizeOptions &options);
  // Before a request that loads host code: a worker that ran another library is replaced.
  void freshWorkerFor(const std::string &hostLibraryKey);
  void noteWorkerLibrary(const std::string &hostLibraryKey);

  bool cancelled() const { return cancelRequested_.load(); }

  EvaluatorSettings settings_;
  Compiler compiler_;
  std::unique_ptr<worker::WorkerClient> worker_;  // created and replaced under workerMutex_
  worker::WorkerClient *sanitizing_ = nullptr;     // sanitize()'s worker while one runs (workerMutex_)
  // The host-launcher library the current worker has loaded: a worker runs the host code of
  // one candidate only, so one candidate cannot tamper with another's results.
  std::string workerLibraryKey_;
  std::uint64_t workerLibraryGeneration_ = 0;
  mutable std::mutex workerMutex_;
  std::atomic<bool> running_{false};
  std::atomic<bool> cancelRequested_{false};
  std::optional<WorkerDevice> device_;  // asked once (once a worker started)
  WorkerDevice unstartedDevice_;        // the last answer while no worker would start
};

// One-shot convenience: a fresh Evaluator.
EvaluationResult evaluate(const Task &task, const std::string &candidateSource, const EvaluationOptions &options = {},
                          EvaluatorSettings settings = {});

}  // namespace kwb
