#include "core/worker/server/evaluate_command.h"

#include <algorithm>
#include <array>
#include <chrono>
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

Json dimsJson(const std::array<unsigned, 3> &d) { return Json::array({d[0], d[1], d[2]}); }

LaunchShape shapeOf(const LaunchSpec &spec) {
  LaunchShape shape;
  shape.hostLauncher = spec.hostLauncher;
  if (spec.hostLauncher) return shape;
  shape.grid.assign(spec.grid.begin(), spec.grid.end());
  shape.block.assign(spec.block.begin(), spec.block.end());
  shape.sharedBytes = spec.sharedBytes;
  return shape;
}

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

// What one seed's checks found, judged (pure): whether the seed passed, its one-line summary
// and, for a failure, the most specific reason.
struct SeedFindings {
  bool compared = true;                 // every output within tolerance
  std::vector<std::string> problems;    // in words, in the order found
  std::vector<std::string> modified;    // `in` tensors the candidate changed
  std::uint64_t unwritten = 0;          // elements holding the poison after both runs
  bool race = false;
  std::uint64_t reused = 0;             // written by the first run, left by the second
  bool noKernel = false;                // CUPTI saw no kernel during a candidate run
};

void judgeSeed(const SeedFindings &f, SeedOutcome &seed) {
  seed.passed = f.compared && f.unwritten == 0 && f.modified.empty() && !f.race && !f.reused && !f.noKernel;
  seed.unwritten = f.unwritten;
  seed.inputsModified = !f.modified.empty();
  seed.modifiedInputs = f.modified;
  seed.race = f.race;
  seed.outputReused = f.reused;
  seed.noKernelRan = f.noKernel;
  if (seed.passed) {
    double maxAbs = 0;
    for (const auto &o : seed.outputs)
      if (o.comparison) maxAbs = std::max(maxAbs, o.comparison->maxAbsError);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", maxAbs);
    seed.summary = "all outputs match (max abs err " + std::string(buf) + ")";
    return;
  }
  std::vector<std::string> problems = f.problems;
  if (f.noKernel)
    problems.insert(problems.begin(), "no kernel ran on the GPU during a candidate run (a launch that failed "
                                      "silently, leaving whatever memory held?)");
  seed.summary.clear();
  for (const auto &p : problems) seed.summary += (seed.summary.empty() ? "" : "; ") + p;
}

// The reason of a failed seed: the most specific failure.
std::string failureReason(const SeedOutcome &seed) {
  if (seed.inputsModified) return "inputs-modified";
  if (seed.noKernelRan) return "no-kernel-ran";
  if (seed.outputReused) return "output-reused";
  if (seed.unwritten) return "unwritten";
  for (const auto &o : seed.outputs)
    if (o.comparison && !o.comparison->passed) return "mismatch";
  return "race";
}

std::string joined(const std::vector<std::string> &names) {
  std::string out;
  for (const auto &n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The request's verdict from its seeds and the libraries loaded (pure).
void evaluateVerdict(const std::vector<std::string> &forbidden, EvaluateReply &reply) {
  std::string firstFailure;
  for (const auto &seed : reply.seeds)
    if (!seed.passed) {
      firstFailure = failureReason(seed);
      break;
    }
  if (!forbidden.empty()) {
    firstFailure = "forbidden-library";
    reply.forbiddenLibraries = forbidden;
    reply.forbiddenMessage = "the candidate loaded vendor libraries the task does not allow: " + joined(forbidden) +
                             " (allow them with allow_libraries in task.toml)";
  }
  reply.verdict = firstFailure.empty() ? "correct" : "incorrect";
  reply.reason = firstFailure;
}

using TensorBytes = std::map<std::string, Bytes>;

// Tensors' bytes kept for the worker's life under a limit: an entry that would pass it first
// empties the cache.
class TensorCache {
 public:
  explicit TensorCache(std::size_t limit) : limit_(limit) {}
  TensorBytes *find(const std::string &key) {
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  TensorBytes &insert(const std::string &key, TensorBytes value) {
    std::size_t bytes = 0;
    for (const auto &[name, data] : value) bytes += data.size();
    if (bytes_ + bytes > limit_) {
      entries_.clear();
      bytes_ = 0;
    }
    bytes_ += bytes;
    return entries_.insert_or_assign(key, std::move(value)).first->second;
  }

 private:
  std::size_t limit_;
  std::map<std::string, TensorBytes> entries_;
  std::size_t bytes_ = 0;
};

// One evaluate request: what it asks for, checked, and its state while it runs.
struct EvaluateRun {
  RequestTask requested;
  std::vector<std::uint64_t> seeds;
  std::size_t maxReported = 10;
  LaunchSpec reference, candidate;
  std::map<std::string, std::size_t> tensorIndex;
  std::vector<TensorInfo> tensors;
  std::string inputKeyBase, referenceKey;  // the caches' keys, less the seed
  // A reference given as outputs (a PyTorch module's): seed → its outputs, read before anything ran.
  std::map<std::uint64_t, std::map<std::string, std::vector<std::byte>>> given;
  // While it runs.
  std::string stage = "load";
  std::size_t candidateRuns = 0, runsWithoutKernel = 0;
  std::vector<std::string> forbidden;
  // One seed's poison patterns per `out` tensor, of the first and of the race-check run.
  std::map<std::string, PoisonPattern> patterns, patterns2;

  const SizeConfig &config() const { return requested.config(); }
};

class EvaluateContext : DeviceContext {
 public:
  explicit EvaluateContext(std::optional<int> device) : DeviceContext(device) {
    std::random_device rd;
    salt_ = (std::uint64_t(rd()) << 32) ^ rd();
  }

  EvaluateReply evaluate(const EvaluateRequest &request, EventSink &sink);

 private:
  // The steps, in order.
  static EvaluateRun readRequest(const EvaluateRequest &request);
  void allocate(EvaluateRun &run, DeviceAllocations &buffers);
  SeedOutcome checkSeed(EvaluateRun &run, const LoadedPair &loaded, std::size_t seedIndex, EventSink &sink);
  // Within a seed.
  const TensorBytes &referenceOutputs(EvaluateRun &run, const LoadedLaunch &reference, std::uint64_t seed,
                                      TensorBytes &inputs, bool &fromCache);
  TensorBytes runCandidate(EvaluateRun &run, const LoadedLaunch &candidate, int attempt, TensorBytes &inputs,
                           const TensorBytes &want);
  void launch(EvaluateRun &run, const LoadedLaunch &loaded, const std::string &who);
  void upload(const TensorInfo &t, const Bytes &bytes, const std::string &what);
  Bytes download(const TensorInfo &t, const std::string &what);
  TensorBytes &inputsFor(const std::string &key, const std::vector<TensorInfo> &tensors, std::uint64_t seed);

  std::uint64_t salt_ = 0;
  std::uint64_t runCounter_ = 0;
  // Reference outputs per (task, config, seed, reference module, launch): tensor name → bytes.
  TensorCache referenceCache_{std::size_t{8} << 30};
  // Generated inputs per (manifest, config, seed).
  TensorCache inputCache_{std::size_t{4} << 30};
};

EvaluateRun EvaluateContext::readRequest(const EvaluateRequest &request) {
  auto bad = [](const std::string &what) { return CommandError(error_kind::kInvalidArgument, "evaluate: " + what); };
  EvaluateRun run{readRequestTask(request, "evaluate")};
  run.seeds = request.seeds.empty() ? run.requested.task.seeds : request.seeds;
  if (run.seeds.empty()) throw bad("no seeds to run");
  run.maxReported = static_cast<std::size_t>(request.maxReported);
  run.reference = launchSpec(request.reference, "evaluate", "reference");
  run.candidate = launchSpec(request.candidate, "evaluate", "candidate");
  run.candidate.allowedLibraries = run.requested.task.allowedLibraries;
  // Tensors: element counts and shapes for this configuration.
  for (auto &e : tensorExtents(run.requested, {&run.reference, &run.candidate}, "evaluate", run.tensorIndex))
    run.tensors.push_back(TensorInfo{std::move(e)});
  // The manifest's text is part of every key: the same folder edited gives other inputs.
  std::hash<std::string> hasher;
  const auto &folder = run.requested.folder;
  const auto &configName = run.requested.configName;
  const std::string manifestHash = std::to_string(hasher(run.requested.manifestText));
  run.inputKeyBase = folder + "\n" + manifestHash + "\n" + configName + "\n";
  run.referenceKey = folder + "\n" + manifestHash + "\n" + run.requested.task.name + "\n" + configName + "\n" +
                     std::to_string(hasher(run.reference.image)) + "\n" + run.reference.kernel + "\n" +
                     dimsJson(run.reference.grid).dump() + dimsJson(run.reference.block).dump() +
                     std::to_string(run.reference.sharedBytes);
  return run;
}

TensorBytes &EvaluateContext::inputsFor(const std::string &key, const std::vector<TensorInfo> &tensors,
                                        std::uint64_t seed) {
  if (auto *cached = inputCache_.find(key)) return *cached;
  TensorBytes inputs;
  for (const auto &t : tensors)
    if (t.tensor->role != TensorRole::Out) inputs[t.tensor->name] = generateInput(*t.tensor, t.shape, seed);
  return inputCache_.insert(key, std::move(inputs));
}

void EvaluateContext::allocate(EvaluateRun &run, DeviceAllocations &buffers) {
  run.stage = "allocate";
  for (auto &t : run.tensors)
    if (t.bytes) t.device = DeviceContext::allocate(buffers, t.bytes, "tensor '" + t.tensor->name + "'");
}

void EvaluateContext::upload(const TensorInfo &t, const Bytes &bytes, const std::string &what) {
  if (t.bytes) check(driver_.cuMemcpyHtoD(t.device, bytes.data(), t.bytes), "copying " + what + " to the device");
}

Bytes EvaluateContext::download(const TensorInfo &t, const std::string &what) {
  Bytes out(t.bytes);
  if (t.bytes) check(driver_.cuMemcpyDtoH(out.data(), t.device, t.bytes), "copying " + what + " back");
  return out;
}

// One launch, and what was seen of the candidate's: the kernels CUPTI recorded (none: a silent
// failure), the vendor libraries a host launcher's process loaded.
void EvaluateContext::launch(EvaluateRun &run, const LoadedLaunch &loaded, const std::string &who) {
  const LaunchSpec &spec = *loaded.spec;
  KernelArguments params(spec.args, tensorBuffers(run.tensorIndex, run.tensors, &TensorInfo::device),
                         scalarArguments(run.requested.task, run.config()));
  run.stage = who + " run";
  activity();
  DeviceContext::run(loaded, params, who);
  const auto ran = activity();
  if (who != "candidate") return;
  ++run.candidateRuns;
  // A host launcher's kernels run in its own process, out of CUPTI's sight here.
  if (ran.recorded && !loaded.host && ran.kernels.empty()) ++run.runsWithoutKernel;
  if (loaded.host && run.forbidden.empty())
    run.forbidden = forbiddenLibrariesLoaded(loaded, run.requested.task.allowedLibraries);
}

// The reference's outputs for the seed: computed once per (config, seed, reference module) and
// kept for the worker's life.
const TensorBytes &EvaluateContext::referenceOutputs(EvaluateRun &run, const LoadedLaunch &reference,
                                                     std::uint64_t seed, TensorBytes &inputs, bool &fromCache) {
  if (run.reference.outputsOnly()) {
    fromCache = false;
    return run.given.at(seed);
  }
  const std::string key = run.referenceKey + "\n" + std::to_string(seed);
  const auto *cached = referenceCache_.find(key);
  fromCache = cached != nullptr;
  if (cached) return *cached;
  for (const auto &t : run.tensors) {
    if (t.tensor->role == TensorRole::Out) {
      if (t.bytes) check(driver_.cuMemsetD8(t.device, 0, t.bytes), "clearing an output");
    } else {
      upload(t, inputs[t.tensor->name], "input '" + t.tensor->name + "'");
    }
  }
  try {
    launch(run, reference, "reference");
  } catch (CudaFailure &f) {
    f.message = "the reference failed: " + f.message;
    throw;
  }
  TensorBytes outputs;
  for (const auto &t : run.tensors)
    if (t.tensor->role != TensorRole::In)
      outputs[t.tensor->name] = download(t, "reference output '" + t.tensor->name + "'");
  return referenceCache_.insert(key, std::move(outputs));
}

// One candidate run (attempt 1, or 2 for the race check): fresh inputs, fresh poison in the
// outputs; returns the outputs. The race-check run's poison differs from the first run's at
// every element (poisonPatternAfter), so an element counts as unwritten only if it holds the
// poison after both runs (unwrittenInBothRuns): a value written by the kernel never does.
TensorBytes EvaluateContext::runCandidate(EvaluateRun &run, const LoadedLaunch &candidate, int attempt,
                                          TensorBytes &inputs, const TensorBytes &want) {
  for (const auto &t : run.tensors) {
    if (t.tensor->role == TensorRole::Out) {
      const auto &name = t.tensor->name;
      const auto pattern = attempt == 1 ? poisonPattern(++runCounter_, salt_)
                                        : poisonPatternAfter(run.patterns.at(name), ++runCounter_, salt_);
      (attempt == 1 ? run.patterns : run.patterns2)[name] = pattern;
      Bytes poison(t.bytes);
      writePoison(poison, t.tensor->dtype, t.count, pattern, want.at(name));
      upload(t, poison, "poison for '" + name + "'");
    } else {
      upload(t, inputs[t.tensor->name], "input '" + t.tensor->name + "'");
    }
  }
  launch(run, candidate, "candidate");
  TensorBytes got;
  for (const auto &t : run.tensors)
    if (t.tensor->role != TensorRole::In) got[t.tensor->name] = download(t, "output '" + t.tensor->name + "'");
  return got;
}

// One seed: inputs, the reference's outputs, the candidate twice, and every check.
SeedOutcome EvaluateContext::checkSeed(EvaluateRun &run, const LoadedPair &loaded, std::size_t seedIndex,
                                       EventSink &sink) {
  const std::uint64_t seed = run.seeds[seedIndex];
  const std::string &configName = run.requested.configName;
  auto progress = [&](const char *stage) {
    sink.progress(EvaluateProgress{stage, configName, seed, seedIndex, run.seeds.size(), std::nullopt});
  };
  progress("inputs");
  run.stage = "inputs";
  // Inputs (in and inout), generated once per (manifest, config, seed) for the worker's life.
  auto &inputs = inputsFor(run.inputKeyBase + std::to_string(seed), run.tensors, seed);
  SeedOutcome outcome;
  outcome.seed = seed;
  const TensorBytes &want = referenceOutputs(run, loaded.reference, seed, inputs, outcome.referenceCached);

  SeedFindings found;
  const std::size_t emptyRunsBefore = run.runsWithoutKernel;
  progress("candidate");
  auto run1 = runCandidate(run, loaded.candidate, 1, inputs, want);
  std::vector<OutputCheck> &outputs = outcome.outputs;
  for (const auto &t : run.tensors) {
    if (t.tensor->role == TensorRole::In) continue;
    const auto &name = t.tensor->name;
    OutputCheck o;
    o.tensor = name;
    const auto report = compareOutputs(run1[name], want.at(name), t.tensor->dtype, t.count,
                                       t.tensor->tolerance.value_or(Tolerance{}), t.shape, run.maxReported);
    o.comparison = summarize(report);
    found.compared = found.compared && report.passed();
    if (!report.passed()) found.problems.push_back(name + ": " + report.summary);
    outputs.push_back(std::move(o));
  }
  // Inputs unmodified (role "in"; "inout" tensors are the kernel's to change). The first run
  // left the device inputs as the candidate had them.
  for (const auto &t : run.tensors) {
    if (t.tensor->role != TensorRole::In) continue;
    if (!sameBits(download(t, "input '" + t.tensor->name + "'"), inputs[t.tensor->name]))
      found.modified.push_back(t.tensor->name);
  }
  if (!found.modified.empty()) found.problems.push_back("the kernel modified its input(s): " + joined(found.modified));

  // Race check: the same inputs, fresh poison, compare the two runs.
  progress("race-check");
  auto run2 = runCandidate(run, loaded.candidate, 2, inputs, want);
  std::size_t oi = 0;
  for (const auto &t : run.tensors) {
    if (t.tensor->role == TensorRole::In) continue;
    const auto &name = t.tensor->name;
    const auto diff = differenceBeyondRounding(run1[name], run2[name], t.tensor->dtype, t.count,
                                               t.tensor->tolerance.value_or(Tolerance{}), t.shape, run.maxReported);
    outputs[oi].race =
        RaceSummary{diff.race(), diff.differentBits, diff.beyondRounding, diff.maxAbsDifference, diff.summary};
    if (t.tensor->role == TensorRole::Out) {
      const auto unwritten = unwrittenInBothRuns(run1[name], run.patterns.at(name), run2[name],
                                                 run.patterns2.at(name), t.tensor->dtype, t.count, want.at(name),
                                                 run.maxReported);
      found.unwritten += unwritten.count;
      outputs[oi].unwritten =
          UnwrittenSummary{unwritten.count, unwritten.firstIndices, describeUnwritten(unwritten, t.count, t.shape)};
      if (unwritten.count) found.problems.push_back(name + ": " + describeUnwritten(unwritten, t.count, t.shape));
      // Output reused: the second run differs from the first and left its own poison where
      // the first one wrote (the kernel skipped work on a repeated call).
      if (diff.race()) {
        const auto second = unwrittenElements(run2[name], t.tensor->dtype, t.count, run.patterns2.at(name),
                                              want.at(name), run.maxReported);
        if (second.count > unwritten.count) found.reused += second.count - unwritten.count;
      }
    }
    if (diff.race() && !found.reused) {
      found.race = true;
      found.problems.push_back(name + ": two runs on the same inputs differ (race?): " + diff.summary);
    }
    ++oi;
  }
  if (found.reused)
    found.problems.push_back(std::to_string(found.reused) +
                             " element(s) written by the first run were left unwritten by the second run on the "
                             "same inputs: the kernel reuses its output from a previous call");
  found.noKernel = run.runsWithoutKernel > emptyRunsBefore;
  judgeSeed(found, outcome);
  return outcome;
}

EvaluateReply EvaluateContext::evaluate(const EvaluateRequest &request, EventSink &sink) {
  const auto started = std::chrono::steady_clock::now();
  EvaluateRun run = readRequest(request);
  if (run.reference.outputsOnly()) run.given = readGivenOutputs(run.reference, run.tensors, run.seeds, "evaluate");
  requireContext();

  EvaluateReply reply;
  reply.config = run.requested.configName;
  reply.referenceLaunch = shapeOf(run.reference);
  reply.candidateLaunch = shapeOf(run.candidate);
  DeviceAllocations buffers;
  LoadedPair loaded(*this);
  try {
    // Modules. A CUBIN or library that does not load is the candidate's (or the reference's) fault.
    if (!loadBoth(loaded, run.reference, run.candidate, reply)) return reply;
    activity();  // drop records of earlier work
    allocate(run, buffers);
    for (std::size_t si = 0; si < run.seeds.size(); ++si) {
      reply.seeds.push_back(checkSeed(run, loaded, si, sink));
      sink.progress(
          EvaluateProgress{"seed", reply.config, run.seeds[si], si + 1, run.seeds.size(), reply.seeds.back().passed});
    }
    evaluateVerdict(run.forbidden, reply);
    reply.kernelRecords = KernelActivity::instance().active();
    reply.candidateRuns = run.candidateRuns;
    completeReply(reply, started);
    return reply;
  } catch (const CudaFailure &f) {
    runtimeError(f, run.stage, reply, sink);
    return reply;
  }
}
}  // namespace

void addEvaluateCommand(WorkerServer &server, std::optional<int> device) {
  addDeviceCommand(server, "evaluate", device, &EvaluateContext::evaluate);
}

}  // namespace kwb::worker
