#pragma once
// A task's PyTorch reference ([reference] python = "reference.py", a module in KernelBench's
// format): run by a Python helper process (resources/python/kwb_torch_reference.py, protocol in
// its header) on the GPU, on the very inputs the worker generates (core/eval/input_generator.h,
// written to files here), so that its outputs can be the reference a candidate is checked
// against; and timed (L2 flushed, CUPTI kernel spans, adaptive samples) eagerly and through
// torch.compile, for the speedup over PyTorch.
//
// Inputs with Tensor::state are loaded into the module (its parameters, buffers or tensor
// attributes) before every forward instead of passed to it; forward gets Reference::forward's
// tensors and parameters; the module file is executed per configuration with
// Reference::moduleConstants set to its sizes, and Model is built per configuration where those
// or Reference::init name a size. The module keeps the mode its constructor left it (no eval(): KernelBench's own
// evaluation does not call it), so BatchNorm in training mode uses batch statistics.
//
// The outputs are cached per (manifest text, module text, init, module constants, forward and
// state mapping, configuration with its sizes, seed) under userCacheDir()/torch-reference/, as
// files of the tensor's bytes; the Evaluator copies them into
// the worker's private directory for each request (PROTOCOL.md, `reference.outputs`), where the
// worker reads and removes them before candidate code runs.
//
// The module is the task's own code, trusted like its manifest: it runs outside the worker's
// sandbox, in the user's Python. Candidates never run in that process.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/task/task.h"

namespace kwb {

struct TorchSettings {
  std::string python;              // the interpreter; empty: $KWB_PYTHON, else python3 on PATH
  std::filesystem::path script;    // empty: the bundled kwb_torch_reference.py
  std::filesystem::path cacheDir;  // empty: userCacheDir() / "torch-reference"
  int device = 0;                  // the CUDA device ordinal
  // Tests only: the module runs on the CPU (the helper's "device": "cpu"; no timings), so a
  // machine without a GPU can check state loading, forward's arguments and the repeat check.
  bool cpuForTests = false;
  std::chrono::milliseconds timeLimit{600000};  // the whole helper run
};

// One mode's figure (the helper's "eager" or "compile" entry).
struct TorchTimingFigure {
  bool ok = false;
  std::string error;  // why not ok ("torch.compile failed: ...")
  double medianMs = 0, q1Ms = 0, q3Ms = 0, minMs = 0, relativeSpread = 0;
  std::size_t samples = 0;
  std::string stopReason, timer, timerNote;
  double compileSeconds = 0;  // torch.compile's first call
};

struct TorchTiming {
  std::string config;
  TorchTimingFigure eager, compiled;
};

// One set of reference outputs: a configuration and a seed, with the inputs the worker's
// `evaluate` generates for it (generatorForSeed) or, for a `time` request, its first generators.
struct TorchOutputJob {
  const SizeConfig *config = nullptr;
  std::uint64_t seed = 1;
  bool firstGenerator = false;
};
// The name a job's outputs are kept under in TorchRun::outputs: "small/seed 4" (+ " first").
std::string torchJobKey(const TorchOutputJob &job);

struct TorchRunRequest {
  // Reference outputs wanted; cached ones are not recomputed.
  std::vector<TorchOutputJob> outputs;
  // Configurations to time the module on, with inputs from `timingSeed`'s first generators.
  std::vector<const SizeConfig *> timings;
  std::uint64_t timingSeed = 1;
  bool timeCompiled = true;  // also through torch.compile
  double timeCapMs = 3000;
  std::size_t minSamples = 10, maxSamples = 1000;
  double targetSpread = 0.01;
  // Run forward twice on each job's inputs (module state reloaded) and fail the run with kind
  // "nondeterministic" when an output differs by one bit: a reference whose output is random
  // (dropout in training mode, torch.rand in forward, nondeterministic atomics). Cached outputs
  // computed without it are computed again.
  bool repeatCheck = false;
  // Timings are cached too (the module does not change between candidates), per configuration,
  // seed, modes, interpreter and this device: its name ("NVIDIA H200"). Empty: not cached.
  std::string deviceName;
  std::function<void(const std::string &)> onProgress;  // one line per helper step
  std::function<bool()> cancelled;                      // polled; true ends the helper
};

struct TorchRun {
  bool ok = false;
  // The failure: "no-python", "no-script", "no-torch", "no-cuda", "module-load", "no-model",
  // "init-raised", "module-state" (a state tensor the module lacks, or of another shape or
  // dtype), "forward-raised", "wrong-output", "nondeterministic" (repeatCheck), "input-file",
  // "bad-spec", "timeout", "cancelled", "crashed" (no result line), "cache" (a file could not be
  // written).
  std::string kind, message, file, job, traceback;
  int line = 0;
  std::string python, torchVersion, device;  // as the helper reported them
  // torchJobKey(job) → output tensor name → the cached file of its bytes.
  std::map<std::string, std::map<std::string, std::filesystem::path>> outputs;
  std::vector<TorchTiming> timings;
  std::size_t cachedJobs = 0, computedJobs = 0, cachedTimings = 0;
  double seconds = 0;
  // "the PyTorch reference reference.py: forward raised at reference.py:12: RuntimeError: ..."
  std::string describe() const;
};

// A helper script the workbench ships (resources/python: kwb_torch_reference.py,
// kwb_kernelbench.py) in bundledPythonDir(); nullopt with `problem` saying where it was looked for.
std::optional<std::filesystem::path> bundledPythonScript(const std::string &name, std::string &problem);

// The interpreter the settings name, or $KWB_PYTHON, or python3 on PATH; nullopt with `problem`
// saying what was looked for.
std::optional<std::filesystem::path> findPython(const TorchSettings &settings, std::string &problem);

// The module's outputs for request.outputs (from the cache, computing what is missing) and its
// timings, in one helper run at most. Throws nothing: failures are in the result.
TorchRun runTorchReference(const Task &task, const TorchRunRequest &request, const TorchSettings &settings);

// The helper's own check of the interpreter: {"ok", "python", "torch", "cuda", "device",
// "compile"} or {"ok": false, "kind", "message"} as JSON text; `problem` when it did not run.
std::string probeTorch(const TorchSettings &settings, std::string &problem);

}  // namespace kwb
