#include "core/worker/server/profile_command.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/eval/input_generator.h"
#include "core/gpu/cuda_driver.h"
#include "core/profile/cupti_profiler.h"
#include "core/profile/metric_catalog.h"
#include "core/profile/metric_sets.h"
#include "core/profile/profile_request.h"
#include "core/worker/server/device_context.h"
#include "core/worker/server/launch_spec.h"
#include "core/worker/server/worker_server.h"

namespace kwb::worker {

namespace {

using Clock = std::chrono::steady_clock;
namespace prof = kwb::profile;

CommandError bad(const std::string &what) { return CommandError(error_kind::kInvalidArgument, "profile: " + what); }

// The byte the candidate's outputs hold before each pass (NaN for floats), as in `time`.
constexpr unsigned char kPoison = 0xFF;
// A pass count CUPTI must reach well before this; more means the replay never completes.
constexpr std::size_t kMaxPasses = 256;

// The metrics a request asks for: "metrics" (names), else "set" (a set's name, resolved for the
// device's chip later: `setName` is set), else the default set.
std::vector<std::string> requestedMetrics(const prof::ProfileRequest &p, std::string &setName) {
  if (!p.metrics.empty()) {
    for (const auto &name : p.metrics)
      if (name.empty()) throw bad("'metrics' must hold metric names (non-empty strings)");
    return p.metrics;
  }
  const std::string set = p.set.empty() ? std::string("default") : p.set;
  if (auto s = prof::metricSet(set)) {
    setName = set;
    return *s;
  }
  throw bad("unknown metric set '" + set + "' (known: default, detailed)");
}


class ProfilingContext : DeviceContext {
 public:
  explicit ProfilingContext(std::optional<int> device) : DeviceContext(device) {}
  prof::ProfileReply profile(const prof::ProfileRequest &request, EventSink &sink);

 private:
  std::shared_ptr<const prof::CuptiProfilerLibrary> library_;
  std::string libraryProblem_, libraryReason_;
  bool libraryTried_ = false;
  std::unique_ptr<prof::MetricCatalog> catalog_;  // for the device's chip, made once
};

prof::ProfileReply ProfilingContext::profile(const prof::ProfileRequest &p, EventSink &sink) {
  const auto started = Clock::now();
  const RequestTask requested = readRequestTask(p, "profile");
  const SizeConfig *config = &requested.config();
  const std::uint64_t seed = p.seed;
  std::string setName;
  auto metrics = requestedMetrics(p, setName);
  LaunchSpec candidate = launchSpec(p.candidate, "profile", "candidate");
  candidate.allowedLibraries = requested.task.allowedLibraries;

  struct TensorBuf : TensorExtent {
    CUdeviceptr buf = 0, pristine = 0;
  };
  std::map<std::string, std::size_t> tensorIndex;
  std::vector<TensorBuf> tensors;
  for (auto &e : tensorExtents(requested, {&candidate}, "profile", tensorIndex)) tensors.push_back(TensorBuf{std::move(e)});

  requireContext();

  char name[256] = {};
  if (driver_.cuDeviceGetName(name, sizeof name, dev_) != cu::SUCCESS) name[0] = 0;
  prof::ProfileReply result;
  result.config = requested.configName;
  result.seed = seed;
  result.device = name;
  result.deviceOrdinal = device_;
  result.metricsRequested = metrics;
  std::string stage = "load";
  DeviceAllocations buffers;
  LoadedLaunch loaded;
  struct Release {
    std::function<void()> release;
    ~Release() { release(); }
  } releaseGuard{[this, &loaded] { release(loaded); }};
  try {
    try {
      loaded = load(candidate, "candidate");
    } catch (const LoadFailure &f) {
      loadError(f, result);
      return result;
    }

    stage = "allocate";
    for (auto &t : tensors) {
      if (!t.bytes) continue;
      const std::string what = "tensor '" + t.tensor->name + "'";
      t.buf = allocate(buffers, t.bytes, what);
      if (t.tensor->role == TensorRole::InOut) t.pristine = allocate(buffers, t.bytes, what + " (pristine copy)");
    }
    stage = "inputs";
    for (auto &t : tensors) {
      if (!t.bytes || t.tensor->role == TensorRole::Out) continue;
      const auto host = generateInput(*t.tensor, t.shape, seed);
      const CUdeviceptr target = t.tensor->role == TensorRole::In ? t.buf : t.pristine;
      check(driver_.cuMemcpyHtoD(target, host.data(), t.bytes), "copying input '" + t.tensor->name + "'");
    }
    KernelArguments params(candidate.args, tensorBuffers(tensorIndex, tensors, &TensorBuf::buf),
                           scalarArguments(requested.task, *config));
    // Every launch sees the same memory: inout tensors restored, outputs poisoned.
    auto prepare = [&] {
      stage = "prepare";
      for (const auto &t : tensors) {
        if (!t.bytes) continue;
        if (t.tensor->role == TensorRole::InOut)
          check(driver_.cuMemcpyDtoD(t.buf, t.pristine, t.bytes), "restoring '" + t.tensor->name + "'");
        else if (t.tensor->role == TensorRole::Out)
          check(driver_.cuMemsetD8(t.buf, kPoison, t.bytes), "poisoning '" + t.tensor->name + "'");
      }
      check(driver_.cuCtxSynchronize(), "preparing a pass");
    };

    // One launch before profiling: a launch that fails is the candidate's runtime error, not a
    // profiling problem; and its kernels are named.
    prepare();
    activity();
    stage = "candidate run";
    run(loaded, params, "candidate");
    const auto ran = activity();
    for (const auto &k : ran.kernels) result.candidateKernels.push_back(k.name);

    // Profiling: any ProfileError is the reply's "not-profiled" verdict.
    sink.progress({{"stage", "profile"}, {"config", requested.configName}});
    try {
      if (loaded.host)
        throw prof::ProfileError("host-launcher",
                                 "a host launcher runs in a process of its own, where the worker's profiler cannot "
                                 "see its kernels; profile the kernel as device code (a __global__ function launched "
                                 "from task.toml's [launch], without kwb_launch)");
      if (!libraryTried_) {
        libraryTried_ = true;
        try {
          library_ = prof::CuptiProfilerLibrary::open();
        } catch (const prof::ProfileError &e) {
          libraryReason_ = e.reason();
          libraryProblem_ = e.what();
        }
      }
      if (!library_) throw prof::ProfileError(libraryReason_, libraryProblem_);
      result.cupti = library_->path();
      stage = "profiler set-up";
      prof::RangeProfiler profiler(library_, context_, device_);
      result.chip = profiler.chip();
      if (!catalog_ || catalog_->chip() != profiler.chip())
        catalog_ = std::make_unique<prof::MetricCatalog>(library_, profiler.chip(), profiler.counterAvailability());
      if (!setName.empty()) {
        metrics = *prof::metricSet(setName, *catalog_);
        result.set = setName;
        result.metricsRequested = metrics;
      }
      try {
        catalog_->validate(metrics);
      } catch (const prof::ProfileError &e) {
        throw bad(e.what());  // a request mistake: ok false, invalid-argument
      }
      prof::ProfilerHost host(library_, profiler.chip(), profiler.counterAvailability());
      host.addMetrics(metrics);
      const auto image = host.configImage();
      const std::size_t passes = library_->passes(image);
      result.passes = passes;
      profiler.configure(image, metrics);
      bool done = false;
      while (!done) {
        if (profiler.passesRun() >= std::max(kMaxPasses, 2 * passes))
          throw prof::ProfileError("cupti-error", "CUPTI asked for more than " + std::to_string(profiler.passesRun()) +
                                                      " passes (" + std::to_string(passes) + " expected)");
        prepare();
        stage = "profile pass " + std::to_string(profiler.passesRun() + 1);
        profiler.beginPass("candidate");
        enqueue(loaded, params, "candidate");
        check(driver_.cuCtxSynchronize(), "candidate kernel '" + candidate.kernel + "' (profiled)");
        done = profiler.endPass();
        sink.progress({{"stage", "profile"}, {"pass", profiler.passesRun()}, {"of", passes}});
      }
      activity();  // the profiled launches' records are not wanted
      stage = "decode";
      const auto &data = profiler.decode();
      result.passesRun = profiler.passesRun();
      result.ranges = profiler.ranges();
      result.rangesDropped = profiler.rangesDropped();
      if (profiler.ranges() < 1)
        throw prof::ProfileError("cupti-error", "CUPTI decoded no range: nothing was profiled (did the kernel run?)");
      // One range per kernel the launch ran: sums add up, rates and percentages are weighted by
      // each kernel's duration when it is among the metrics (else averaged).
      std::vector<std::vector<double>> perRange;
      for (std::size_t r = 0; r < profiler.ranges(); ++r) perRange.push_back(host.evaluate(data, r, metrics));
      const auto values = prof::combineRanges(metrics, perRange);
      for (std::size_t i = 0; i < metrics.size(); ++i) {
        const auto display = prof::metricDisplay(metrics[i], catalog_.get());
        result.metrics.push_back({metrics[i], display.label, display.unit, values[i]});
      }
      result.verdict = "profiled";
    } catch (const prof::ProfileError &e) {
      activity();
      result.verdict = "not-profiled";
      result.reason = e.reason();
      result.reasonDetail = e.what();
      result.cuptiError = e.cuptiCode();
    }
    completeReply(result, started);
    return result;
  } catch (const CudaFailure &f) {
    runtimeError(f, stage, result, sink);
    return result;
  }
}

}  // namespace

void addProfileCommand(WorkerServer &server, std::optional<int> device) {
  addDeviceCommand(server, "profile", device, &ProfilingContext::profile);
}

}  // namespace kwb::worker
