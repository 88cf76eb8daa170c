#include "core/worker/server/evaluate_command.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/eval/compare.h"
#include "core/eval/evaluation_result.h"
#include "core/eval/input_generator.h"
#include "core/eval/poison.h"
#include "core/gpu/cuda_driver.h"
#include "core/task/manifest_parser.h"
#include "core/text/base64.h"
#include "core/worker/server/device_context.h"
#include "core/worker/server/launch_spec.h"
#include "core/worker/server/worker_server.h"

namespace kwb::worker {

namespace {

using Bytes = std::vector<std::byte>;

struct TensorInfo : TensorExtent {
  CUdeviceptr device = 0;
};

class EvaluateContext : DeviceContext {
 public:
  explicit EvaluateContext(std::optional<int> device) : DeviceContext(device) {
    std::random_device rd;
    salt_ = (std::uint64_t(rd()) << 32) ^ rd();
  }

  Json evaluate(const Request &request, EventSink &sink);

 private:
  std::uint64_t salt_ = 0;
  std::uint64_t runCounter_ = 0;
  // Reference outputs per (task, config, seed, reference module, launch): tensor name → bytes.
  std::map<std::string, std::map<std::string, Bytes>> referenceCache_;
  std::size_t referenceCacheBytes_ = 0;
  static constexpr std::size_t kReferenceCacheLimit = std::size_t{8} << 30;
  std::map<std::string, std::map<std::string, Bytes>> inputCache_;
  std::size_t inputCacheBytes_ = 0;
  static constexpr std::size_t kInputCacheLimit = std::size_t{4} << 30;

  std::map<std::string, Bytes> &inputsFor(const std::string &key, const std::vector<TensorInfo> &tensors,
                                          std::uint64_t seed) {
    if (auto it = inputCache_.find(key); it != inputCache_.end()) return it->second;
    std::map<std::string, Bytes> inputs;
    std::size_t total = 0;
    for (const auto &t : tensors)
      if (t.tensor->role != TensorRole::Out) {
        inputs[t.tensor->name] = generateInput(*t.tensor, t.count, seed);
        total += t.bytes;
      }
    if (inputCacheBytes_ + total > kInputCacheLimit) {
      inputCache_.clear();
      inputCacheBytes_ = 0;
    }
    inputCacheBytes_ += total;
    return inputCache_.emplace(key, std::move(inputs)).first->second;
  }
};


Json dimsJson(const std::array<unsigned, 3> &d) { return Json::array({d[0], d[1], d[2]}); }

// compareOutputs()'s report in the form the reply carries (core/eval/evaluation_result.h).
ComparisonSummary summarize(const ComparisonReport &r) {
  ComparisonSummary c;
  c.passed = r.passed();
  c.checked = r.checked;
  c.mismatches = r.mismatches;
  for (const auto &m : r.firstMismatches) c.firstMismatches.push_back({m.index, m.coordinates, m.gotText, m.wantText});
  c.maxAbsError = r.maxAbsError;
  c.maxAbsErrorIndex = r.maxAbsErrorIndex;
  if (!std::isinf(r.maxRelError)) c.maxRelError = r.maxRelError;
  c.maxRelErrorIndex = r.maxRelErrorIndex;
  c.relativeL2Error = r.relativeL2Error;
  c.nanInGot = r.nanInGot;
  c.nanInReference = r.nanInReference;
  c.summary = r.summary;
  return c;
}

// Device buffers of one request, freed at its end (unless the context is gone).
struct Buffers {
  CudaDriver *driver = nullptr;
  std::vector<CUdeviceptr> held;
  const bool *lost = nullptr;  // the context is lost: freeing would only fail
  ~Buffers() {
    if (!driver || (lost && *lost)) return;
    for (auto p : held) driver->cuMemFree(p);
  }
};

struct Module {
  CudaDriver *driver = nullptr;
  CUmodule module = nullptr;
  const bool *lost = nullptr;
  ~Module() {
    if (module && !(lost && *lost)) driver->cuModuleUnload(module);
  }
};

Json EvaluateContext::evaluate(const Request &request, EventSink &sink) {
  const Json &p = request.params;
  auto bad = [](const std::string &what) { return CommandError(error_kind::kInvalidArgument, "evaluate: " + what); };
  const RequestTask requested = readRequestTask(p, "evaluate");
  const std::string &folder = requested.folder;
  const std::string &configName = requested.configName;
  const Task &task = requested.task;
  const SizeConfig *config = &requested.config();

  std::vector<std::uint64_t> seeds;
  if (p.contains("seeds")) {
    if (!p["seeds"].is_array()) throw bad("'seeds' must be a list of non-negative integers");
    for (const auto &s : p["seeds"]) {
      if (!s.is_number_unsigned()) throw bad("'seeds' must be a list of non-negative integers");
      seeds.push_back(s.get<std::uint64_t>());
    }
  } else {
    seeds = task.seeds;
  }
  if (seeds.empty()) throw bad("no seeds to run");
  const std::size_t maxReported = p.value("max_reported", std::size_t{10});

  const LaunchSpec reference = parseLaunchSpec(p.value("reference", Json()), "evaluate", "reference");
  const LaunchSpec candidate = parseLaunchSpec(p.value("candidate", Json()), "evaluate", "candidate");

  // Tensors: element counts and shapes for this configuration.
  std::map<std::string, std::size_t> tensorIndex;
  std::vector<TensorInfo> tensors;
  for (auto &e : tensorExtents(requested, {&reference, &candidate}, "evaluate", tensorIndex))
    tensors.push_back(TensorInfo{std::move(e)});

  if (contextLost_) throw CommandError("context-lost", "the CUDA context was lost earlier; restart the worker");
  ensureDeviceContext();

  Json result = {{"config", configName}, {"seeds", Json::array()}};
  result["reference_launch"] = {{"grid", dimsJson(reference.grid)}, {"block", dimsJson(reference.block)},
                                {"shared_bytes", reference.sharedBytes}};
  result["candidate_launch"] = {{"grid", dimsJson(candidate.grid)}, {"block", dimsJson(candidate.block)},
                                {"shared_bytes", candidate.sharedBytes}};
  auto failWith = [&](const CudaFailure &f, const std::string &stage) {
    runtimeError(f, stage, result, sink);
    return result;
  };

  Buffers buffers;
  buffers.driver = &driver_;
  buffers.lost = &contextLost_;
  LoadedPair loaded(*this);
  const LoadedLaunch &refLoaded = loaded.reference, &candLoaded = loaded.candidate;
  std::string stage = "load";
  try {
    // Modules. A CUBIN or library that does not load is the candidate's (or the reference's) fault.
    if (!loadBoth(loaded, reference, candidate, result)) return result;
    if (candidate.hostLauncher) result["candidate_launch"] = {{"host_launcher", true}};
    activity();  // drop records of earlier work

    stage = "allocate";
    for (auto &t : tensors) {
      if (t.bytes == 0) continue;
      CUresult r = driver_.cuMemAlloc(&t.device, t.bytes);
      if (r != cu::SUCCESS)
        throw failure(r, "allocating " + std::to_string(t.bytes) + " bytes for tensor '" + t.tensor->name + "'");
      buffers.held.push_back(t.device);
    }

    // Kernels the candidate's runs launched, and on which streams (CUPTI; empty when off).
    std::size_t candidateRuns = 0, runsWithoutKernel = 0, sideStreamKernels = 0;
    std::vector<std::string> forbidden;
    auto launch = [&](const LoadedLaunch &loaded, const std::string &who) {
      const LaunchSpec &spec = *loaded.spec;
      KernelArguments params(spec.args, tensorBuffers(tensorIndex, tensors, &TensorInfo::device), config->values);
      stage = who + " run";
      activity();
      run(loaded, params.data(), who);
      const auto ran = activity();
      if (who == "candidate") {
        ++candidateRuns;
        if (ran.recorded && ran.kernels.empty()) ++runsWithoutKernel;
        sideStreamKernels += ran.otherStreams;
        if (spec.hostLauncher && forbidden.empty()) forbidden = forbiddenLibrariesLoaded(task.allowedLibraries);
      }
    };
    auto upload = [&](const TensorInfo &t, const Bytes &bytes, const std::string &what) {
      if (t.bytes) check(driver_.cuMemcpyHtoD(t.device, bytes.data(), t.bytes), "copying " + what + " to the device");
    };
    auto download = [&](const TensorInfo &t, const std::string &what) {
      Bytes out(t.bytes);
      if (t.bytes) check(driver_.cuMemcpyDtoH(out.data(), t.device, t.bytes), "copying " + what + " back");
      return out;
    };

    std::hash<std::string> hasher;
    // The manifest's text is part of every key: the same folder edited gives other inputs.
    const std::string manifestHash = std::to_string(hasher(p.value("manifest", std::string())));
    const std::string inputKeyBase = folder + "\n" + manifestHash + "\n" + configName + "\n";
    const std::string refKey = folder + "\n" + manifestHash + "\n" + task.name + "\n" + configName + "\n" +
                               std::to_string(hasher(reference.image)) + "\n" + reference.kernel + "\n" +
                               dimsJson(reference.grid).dump() + dimsJson(reference.block).dump() +
                               std::to_string(reference.sharedBytes);

    bool allPassed = true;
    std::string firstFailure;
    for (std::size_t si = 0; si < seeds.size(); ++si) {
      const std::uint64_t seed = seeds[si];
      sink.progress({{"stage", "inputs"}, {"config", configName}, {"seed", seed}, {"done", si}, {"of", seeds.size()}});
      stage = "inputs";
      // Inputs (in and inout), generated once per (manifest, config, seed) for the worker's life.
      auto &inputs = inputsFor(inputKeyBase + std::to_string(seed), tensors, seed);

      // The reference, once per (config, seed, reference module).
      const std::string key = refKey + "\n" + std::to_string(seed);
      auto cached = referenceCache_.find(key);
      const bool fromCache = cached != referenceCache_.end();
      if (!fromCache) {
        for (const auto &t : tensors) {
          if (t.tensor->role == TensorRole::Out) {
            if (t.bytes) check(driver_.cuMemsetD8(t.device, 0, t.bytes), "clearing an output");
          } else {
            upload(t, inputs[t.tensor->name], "input '" + t.tensor->name + "'");
          }
        }
        try {
          launch(refLoaded, "reference");
        } catch (CudaFailure &f) {
          f.message = "the reference failed: " + f.message;
          throw;
        }
        std::map<std::string, Bytes> outputs;
        std::size_t total = 0;
        for (const auto &t : tensors)
          if (t.tensor->role != TensorRole::In) {
            outputs[t.tensor->name] = download(t, "reference output '" + t.tensor->name + "'");
            total += t.bytes;
          }
        if (referenceCacheBytes_ + total > kReferenceCacheLimit) {
          referenceCache_.clear();
          referenceCacheBytes_ = 0;
        }
        referenceCacheBytes_ += total;
        cached = referenceCache_.emplace(key, std::move(outputs)).first;
      }
      const auto &want = cached->second;

      // One candidate run: fresh inputs, fresh poison in the outputs; returns the outputs. The
      // race-check run's poison differs from the first run's at every element
      // (poisonPatternAfter), so an element counts as unwritten only if it holds the poison
      // after both runs (unwrittenInBothRuns): a value written by the kernel never does.
      std::map<std::string, PoisonPattern> patterns, patterns2;  // run 1's, run 2's
      auto runCandidate = [&](int run) {
        for (const auto &t : tensors) {
          if (t.tensor->role == TensorRole::Out) {
            const auto &name = t.tensor->name;
            const auto pattern = run == 1 ? poisonPattern(++runCounter_, salt_)
                                          : poisonPatternAfter(patterns.at(name), ++runCounter_, salt_);
            (run == 1 ? patterns : patterns2)[name] = pattern;
            Bytes poison(t.bytes);
            writePoison(poison, t.tensor->dtype, t.count, pattern, want.at(t.tensor->name));
            upload(t, poison, "poison for '" + t.tensor->name + "'");
          } else {
            upload(t, inputs[t.tensor->name], "input '" + t.tensor->name + "'");
          }
        }
        sink.progress({{"stage", run == 1 ? "candidate" : "race-check"}, {"config", configName}, {"seed", seed},
                       {"done", si}, {"of", seeds.size()}});
        launch(candLoaded, "candidate");
        std::map<std::string, Bytes> got;
        for (const auto &t : tensors)
          if (t.tensor->role != TensorRole::In) got[t.tensor->name] = download(t, "output '" + t.tensor->name + "'");
        return got;
      };

      const std::size_t emptyRunsBefore = runsWithoutKernel;
      auto run1 = runCandidate(1);
      SeedOutcome seedResult;
      seedResult.seed = seed;
      seedResult.referenceCached = fromCache;
      std::vector<OutputCheck> &outputs = seedResult.outputs;
      std::uint64_t unwrittenTotal = 0;
      bool compared = true;
      std::vector<std::string> summaries;
      for (const auto &t : tensors) {
        if (t.tensor->role == TensorRole::In) continue;
        const auto &name = t.tensor->name;
        OutputCheck o;
        o.tensor = name;
        const auto report = compareOutputs(run1[name], want.at(name), t.tensor->dtype, t.count,
                                           t.tensor->tolerance.value_or(Tolerance{}), t.shape, maxReported);
        o.comparison = summarize(report);
        compared = compared && report.passed();
        if (!report.passed()) summaries.push_back(name + ": " + report.summary);
        outputs.push_back(std::move(o));
      }
      // Inputs unmodified (role "in"; "inout" tensors are the kernel's to change).
      std::vector<std::string> modified;
      for (const auto &t : tensors) {
        if (t.tensor->role != TensorRole::In) continue;
        // run1 left the device inputs as the candidate had them.
        const auto back = download(t, "input '" + t.tensor->name + "'");
        if (!sameBits(back, inputs[t.tensor->name])) modified.push_back(t.tensor->name);
      }
      if (!modified.empty()) {
        std::string names;
        for (const auto &m : modified) names += (names.empty() ? "" : ", ") + m;
        summaries.push_back("the kernel modified its input(s): " + names);
      }
      // Race check: the same inputs, fresh poison, compare the two runs.
      auto run2 = runCandidate(2);
      bool race = false;
      std::uint64_t reused = 0;  // elements the first run wrote and the second left unwritten
      std::size_t oi = 0;
      for (const auto &t : tensors) {
        if (t.tensor->role == TensorRole::In) continue;
        const auto &name = t.tensor->name;
        const auto diff = differenceBeyondRounding(run1[name], run2[name], t.tensor->dtype, t.count,
                                                   t.tensor->tolerance.value_or(Tolerance{}), t.shape, maxReported);
        outputs[oi].race = RaceSummary{diff.race(), diff.differentBits, diff.beyondRounding, diff.maxAbsDifference,
                                       diff.summary};
        if (t.tensor->role == TensorRole::Out) {
          const auto unwritten = unwrittenInBothRuns(run1[name], patterns.at(name), run2[name], patterns2.at(name),
                                                     t.tensor->dtype, t.count, want.at(name), maxReported);
          unwrittenTotal += unwritten.count;
          outputs[oi].unwritten =
              UnwrittenSummary{unwritten.count, unwritten.firstIndices, describeUnwritten(unwritten, t.count, t.shape)};
          if (unwritten.count) summaries.push_back(name + ": " + describeUnwritten(unwritten, t.count, t.shape));
          // Output reused: the second run differs from the first and left its own poison where
          // the first one wrote (the kernel skipped work on a repeated call).
          if (diff.race()) {
            const auto second = unwrittenElements(run2[name], t.tensor->dtype, t.count, patterns2.at(name),
                                                  want.at(name), maxReported);
            if (second.count > unwritten.count) reused += second.count - unwritten.count;
          }
        }
        if (diff.race() && !reused) {
          race = true;
          summaries.push_back(name + ": two runs on the same inputs differ (race?): " + diff.summary);
        }
        ++oi;
      }
      if (reused)
        summaries.push_back(std::to_string(reused) +
                            " element(s) written by the first run were left unwritten by the second run on the same "
                            "inputs: the kernel reuses its output from a previous call");
      const bool noKernel = runsWithoutKernel > emptyRunsBefore;
      if (noKernel)
        summaries.insert(summaries.begin(), "no kernel ran on the GPU during a candidate run (a launch that failed "
                                            "silently, leaving whatever memory held?)");
      const bool passed = compared && unwrittenTotal == 0 && modified.empty() && !race && !reused && !noKernel;
      std::string summary;
      if (passed) {
        double maxAbs = 0;
        for (const auto &o : outputs)
          if (o.comparison) maxAbs = std::max(maxAbs, o.comparison->maxAbsError);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3g", maxAbs);
        summary = "all outputs match (max abs err " + std::string(buf) + ")";
      } else {
        for (const auto &s : summaries) summary += (summary.empty() ? "" : "; ") + s;
      }
      seedResult.passed = passed;
      seedResult.summary = summary;
      seedResult.unwritten = unwrittenTotal;
      seedResult.inputsModified = !modified.empty();
      seedResult.modifiedInputs = modified;
      seedResult.race = race;
      seedResult.outputReused = reused;
      seedResult.noKernelRan = noKernel;
      result["seeds"].push_back(seedResult);
      if (!passed && firstFailure.empty()) {
        // The reason names the most specific failure.
        if (!modified.empty()) firstFailure = "inputs-modified";
        else if (noKernel) firstFailure = "no-kernel-ran";
        else if (reused) firstFailure = "output-reused";
        else if (unwrittenTotal) firstFailure = "unwritten";
        else if (!compared) firstFailure = "mismatch";
        else firstFailure = "race";
      }
      allPassed = allPassed && passed;
      sink.progress({{"stage", "seed"}, {"config", configName}, {"seed", seed}, {"done", si + 1},
                     {"of", seeds.size()}, {"passed", passed}});
    }
    if (!forbidden.empty()) {
      std::string names;
      for (const auto &f : forbidden) names += (names.empty() ? "" : ", ") + f;
      allPassed = false;
      firstFailure = "forbidden-library";
      result["forbidden_libraries"] = forbidden;
      result["forbidden_message"] = "the candidate loaded vendor libraries the task does not allow: " + names +
                                    " (allow them with allow_libraries in task.toml)";
    }
    result["verdict"] = allPassed ? "correct" : "incorrect";
    if (!allPassed) result["reason"] = firstFailure;
    result["kernel_records"] = KernelActivity::instance().active();
    result["candidate_runs"] = candidateRuns;
    result["side_stream_kernels"] = sideStreamKernels;
    result["context_lost"] = false;
    return result;
  } catch (const CudaFailure &f) {
    return failWith(f, stage);
  }
}

}  // namespace

void addEvaluateCommand(WorkerServer &server, std::optional<int> device) {
  addDeviceCommand(server, "evaluate", device, &EvaluateContext::evaluate);
}

}  // namespace kwb::worker
