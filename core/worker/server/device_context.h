#pragma once
// The CUDA context a worker command runs in (the device's primary context), and how a failed
// CUDA call becomes a result: its error name, and whether the context is lost (a sticky error,
// after which the worker must be replaced). Shared by the evaluate and time commands.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu/cuda_driver.h"
#include "core/gpu/kernel_activity.h"
#include "core/worker/commands.h"
#include "core/worker/server/host_launcher.h"
#include "core/worker/server/launch_spec.h"
#include "core/worker/server/worker_server.h"

namespace kwb::worker {

struct CudaFailure {
  CUresult code = 0;
  std::string name;     // CUDA_ERROR_ILLEGAL_ADDRESS
  std::string message;  // "candidate launch: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access ...)"
  bool lost = false;
};

// A launch made ready: a kernel of a loaded CUBIN module, or a host launcher's own process.
struct LoadedLaunch {
  const LaunchSpec *spec = nullptr;
  CUmodule module = nullptr;  // unloaded by DeviceContext::release
  CUfunction function = nullptr;
  HostLauncherProcess *host = nullptr;  // kwb_launch runs there (core/worker/server/host_launcher.h)
};

// Loading failed through no fault of the context: the module or library is bad.
struct LoadFailure {
  std::string name;     // CUDA_ERROR_INVALID_IMAGE, "dlopen", "no-entry-point"
  std::string message;
};

// A launch's kernel parameters, as cuLaunchKernel and kwb_launch take them: for each name of a
// launch's args, a pointer to the tensor's device pointer or to the scalar's 8-byte slot: a size's
// value (a long long), a parameter's bits in its dtype, low bytes first (scalarArguments in
// core/task/task.h: a 4-byte float or int is read from the slot's first bytes on this
// little-endian machine).
// Built once per launch spec and kept while launches use it (params points into the vectors).
struct KernelArguments {
  std::vector<CUdeviceptr> pointers;
  std::vector<long long> sizes;
  std::vector<void *> params;
  std::vector<HostArgument> host;  // the same, as a host launcher's process gets them

  // tensorPointer(name) is the device pointer of a tensor arg, or nullopt for a size, whose
  // value is sizes.at(name).
  template <typename TensorPointer>
  KernelArguments(const std::vector<std::string> &args, TensorPointer tensorPointer,
                  const std::map<std::string, std::int64_t> &sizeValues) {
    pointers.reserve(args.size());  // no reallocation: params point into these
    this->sizes.reserve(args.size());
    for (const auto &a : args) {
      if (const std::optional<CUdeviceptr> p = tensorPointer(a)) {
        pointers.push_back(*p);
        params.push_back(&pointers.back());
        host.push_back({true, *p, 0});
      } else {
        this->sizes.push_back(static_cast<long long>(sizeValues.at(a)));
        params.push_back(&this->sizes.back());
        host.push_back({false, 0, this->sizes.back()});
      }
    }
  }
  KernelArguments(const KernelArguments &) = delete;
  KernelArguments &operator=(const KernelArguments &) = delete;
  void **data() { return params.data(); }
};

// A tensorPointer for KernelArguments: the buffer `member` of the tensor that `index` maps a name
// to (tensors[index[name]].*member), nullopt for a name that is no tensor (a size).
template <typename Tensors, typename Member>
auto tensorBuffers(const std::map<std::string, std::size_t> &index, const Tensors &tensors, Member member) {
  return [&index, &tensors, member](const std::string &name) -> std::optional<CUdeviceptr> {
    const auto it = index.find(name);
    if (it == index.end()) return std::nullopt;
    return tensors[it->second].*member;
  };
}

// What ran in the worker's context since the last look, from CUPTI's kernel records (a host
// launcher's kernels run in its own process: CUPTI here does not see them).
struct LaunchActivity {
  bool recorded = false;  // CUPTI was on: the list is real
  std::vector<KernelRecord> kernels;
};

// The bytes to allocate for a tensor of `bytes`: a multiple of 2 MiB. A host launcher's process
// maps tensors through CUDA IPC, which shares the whole block an allocation was carved from; a
// smaller allocation could share its block with another (the reference's outputs). The CUDA
// programming guide's advice: share only 2 MiB-aligned sizes.
inline std::size_t sharedAllocationBytes(std::size_t bytes) {
  constexpr std::size_t kBlock = std::size_t{2} << 20;
  return (bytes + kBlock - 1) / kBlock * kBlock;
}

// Set in the environment of a worker started under compute-sanitizer (kwb eval --sanitize):
// tensors get allocations of their exact size, so memcheck sees a read one element past a
// tensor's end (inside a 2 MiB block it would be in bounds). That worker's verdicts only
// accompany the sanitizer's report; the evaluation proper keeps the 2 MiB blocks.
inline constexpr const char *kExactAllocationsVariable = "KWB_EXACT_ALLOCATIONS";

// A request's device memory and events (DeviceContext::allocate, createEvent), freed when the
// request ends, unless the context is lost: freeing would only fail.
struct DeviceAllocations {
  CudaDriver *driver = nullptr;
  const bool *lost = nullptr;
  std::vector<CUdeviceptr> buffers;
  std::vector<CUevent> events;
  DeviceAllocations() = default;
  DeviceAllocations(DeviceAllocations &&) = default;
  DeviceAllocations &operator=(DeviceAllocations &&) = delete;
  ~DeviceAllocations() {
    if (!driver || *lost) return;
    for (auto e : events) driver->cuEventDestroy(e);
    for (auto b : buffers) driver->cuMemFree(b);
  }
};

class DeviceContext {
 public:
  explicit DeviceContext(std::optional<int> device) : device_(device.value_or(0)) {}

 protected:
  // Loads the driver and makes the device's primary context current, once; throws CommandError
  // of kind "no-device" saying what failed.
  void ensureDeviceContext();
  CudaFailure failure(CUresult r, const std::string &what);
  void check(CUresult r, const std::string &what) {
    if (r != cu::SUCCESS) throw failure(r, what);
  }

  // `bytes` of device memory for `what` ("tensor 'x'"), held by `into`: sharedAllocationBytes
  // of them, since any buffer may be shared with a host launcher's process. Throws CudaFailure
  // ("allocating N bytes for tensor 'x'").
  CUdeviceptr allocate(DeviceAllocations &into, std::size_t bytes, const std::string &what);
  CUevent createEvent(DeviceAllocations &into);
  // Loads a launch (throws LoadFailure, or CudaFailure when the context is lost). A host
  // launcher's library is written to the private directory ($TMPDIR) and opened by a process of
  // its own (HostLauncherProcess), one per distinct library, kept while it works.
  LoadedLaunch load(const LaunchSpec &spec, const std::string &who);
  // Unloads a module; a host launcher's process unmaps the request's buffers.
  void release(LoadedLaunch &launch);
  // Releases the launch and ends its host launcher's process (its work on the GPU ends with it).
  void end(LoadedLaunch &launch);
  // Ends every host launcher's process that no loaded launch uses, whichever command started it:
  // an earlier candidate's process, stopped but with GPU work it left queued, never runs beside
  // what is timed next.
  static void endIdleLaunchers();

  // A request's reference and candidate, loaded together and released when it ends.
  struct LoadedPair {
    explicit LoadedPair(DeviceContext &context) : context(&context) {}
    ~LoadedPair() {
      context->release(reference);
      context->release(candidate);
    }
    LoadedPair(const LoadedPair &) = delete;
    LoadedPair &operator=(const LoadedPair &) = delete;
    DeviceContext *context;
    LoadedLaunch reference, candidate;
  };
  // Loads both; false after filling `reply` with the load-error verdict (a bad module or
  // library is the candidate's or the reference's fault). A lost context still throws.
  bool loadBoth(LoadedPair &pair, const LaunchSpec &reference, const LaunchSpec &candidate, ReplyVerdict &reply);
  // What every successful reply ends with: the context is fine, and the request's wall time.
  static void completeReply(ReplyVerdict &reply, std::chrono::steady_clock::time_point started);
  // Fills `reply` with the load-error verdict of a module or library that did not load.
  static void loadError(const LoadFailure &failure, ReplyVerdict &reply);
  // Fills `reply` with the runtime-error verdict of `failure` at `stage`; when the context is
  // lost the worker exits (kContextLostExitStatus) right after this reply.
  void runtimeError(const CudaFailure &failure, const std::string &stage, ReplyVerdict &reply, EventSink &sink);
  // The context is usable: throws CommandError "context-lost" when an earlier request lost it,
  // else makes it current (ensureDeviceContext).
  void requireContext();
  // Launches and waits for the GPU: a kernel on the null stream, or kwb_launch in the host
  // launcher's process (which synchronises its whole context). A failure throws CudaFailure;
  // kwb_launch returning an error throws one named "kwb_launch returned N". Returns the seconds
  // on the worker's clock from the launch to the end (a host launcher's time; `repeat` calls).
  double run(const LoadedLaunch &launch, KernelArguments &args, const std::string &who, std::size_t repeat = 1);
  // A kernel launched without waiting; the caller synchronises (timing records events around
  // it). A host launcher runs to its end (run).
  void enqueue(const LoadedLaunch &launch, KernelArguments &args, const std::string &who);
  // After a run: the kernels CUPTI recorded since the previous call (empty when CUPTI is off).
  LaunchActivity activity();
  // Vendor libraries (kVendorLibraries) loaded in a host launcher's process that `allowed` does
  // not name, as "cublas (/usr/local/cuda/lib/libcublas.so.13)".
  std::vector<std::string> forbiddenLibrariesLoaded(const LoadedLaunch &launch,
                                                    const std::vector<std::string> &allowed) const;

  CudaDriver driver_;
  int device_ = 0;
  CUdevice dev_ = 0;
  CUcontext context_ = nullptr;
  bool ready_ = false;
  bool contextLost_ = false;
};

// A request's typed form (core/worker/commands.h); a field of the wrong type is the client's
// mistake: CommandError invalid-argument "<command>: field '<key>': <what>".
template <typename Typed>
Typed readRequest(const Request &request, const std::string &command) {
  Typed typed;
  try {
    request.params.get_to(typed);
  } catch (const nlohmann::json::exception &e) {
    throw CommandError(error_kind::kInvalidArgument, command + ": " + describeJsonError(e));
  }
  return typed;
}

// Registers `command` on the server, answered by `answer` of a Context (a DeviceContext) made
// once for the process's life: a lost context is never torn down, the worker exits instead.
// The request is read into its typed form and the typed reply written back.
template <typename Context, typename TypedRequest, typename TypedReply>
void addDeviceCommand(WorkerServer &server, const std::string &command, std::optional<int> device,
                      TypedReply (Context::*answer)(const TypedRequest &, EventSink &)) {
  auto *context = new Context(device);
  server.addCommand(command, [context, answer, command](const Request &request, EventSink &sink) {
    return nlohmann::json((context->*answer)(readRequest<TypedRequest>(request, command), sink));
  });
}

}  // namespace kwb::worker
