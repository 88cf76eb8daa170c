#pragma once
// The CUDA context a worker command runs in (the device's primary context), and how a failed
// CUDA call becomes a result: its error name, and whether the context is lost (a sticky error,
// after which the worker must be replaced). Shared by the evaluate and time commands.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu/cuda_driver.h"
#include "core/gpu/kernel_activity.h"
#include "core/worker/server/launch_spec.h"

namespace kwb::worker {

class EventSink;

struct CudaFailure {
  CUresult code = 0;
  std::string name;     // CUDA_ERROR_ILLEGAL_ADDRESS
  std::string message;  // "candidate launch: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access ...)"
  bool lost = false;
};

// A launch made ready: a kernel of a loaded CUBIN module, or a host launcher's entry point.
struct LoadedLaunch {
  const LaunchSpec *spec = nullptr;
  CUmodule module = nullptr;  // unloaded by DeviceContext::release
  CUfunction function = nullptr;
  int (*launcher)(void *const *, CUstream) = nullptr;  // kwb_launch; cudaError_t is an int
};

// Loading failed through no fault of the context: the module or library is bad.
struct LoadFailure {
  std::string name;     // CUDA_ERROR_INVALID_IMAGE, "dlopen", "no-entry-point"
  std::string message;
};

// What ran in one launch, from CUPTI's kernel records.
struct LaunchActivity {
  bool recorded = false;           // CUPTI was on: the figures below are real
  std::vector<KernelRecord> kernels;
  std::size_t otherStreams = 0;    // kernels on a stream other than the one handed to kwb_launch
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

  // Loads a launch (throws LoadFailure, or CudaFailure when the context is lost). A host
  // launcher's library is written to the private directory ($TMPDIR) and dlopen'd once per
  // distinct library for the worker's life (never unloaded: its static CUDA runtime keeps state).
  LoadedLaunch load(const LaunchSpec &spec, const std::string &who);
  void release(LoadedLaunch &launch);

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
  // Loads both; false after filling `result` with the load-error verdict (a bad module or
  // library is the candidate's or the reference's fault). A lost context still throws.
  // Fills `result` with the runtime-error verdict of `failure` at `stage`; when the context is
  // lost the worker exits (kContextLostExitStatus) right after this reply.
  void runtimeError(const CudaFailure &failure, const std::string &stage, nlohmann::json &result, EventSink &sink);
  bool loadBoth(LoadedPair &pair, const LaunchSpec &reference, const LaunchSpec &candidate, nlohmann::json &result);
  // Launches and waits for the GPU: a kernel on the null stream, or kwb_launch(params, stream_)
  // followed by a device-wide synchronisation (whatever streams it used). A failure throws
  // CudaFailure; kwb_launch returning an error throws one named "kwb_launch returned N".
  void run(const LoadedLaunch &launch, void **params, const std::string &who);
  // The same without waiting; the caller synchronises (timing records events around it).
  void enqueue(const LoadedLaunch &launch, void **params, const std::string &who);
  // After a run: the kernels CUPTI recorded since the previous call (empty when CUPTI is off).
  LaunchActivity activity();
  // Vendor libraries (kVendorLibraries) now loaded in this process that `allowed` does not
  // name, as "cublas (/usr/local/cuda/lib/libcublas.so.13)".
  std::vector<std::string> forbiddenLibrariesLoaded(const std::vector<std::string> &allowed) const;
  // The stream handed to host launchers (created with the context).
  CUstream launcherStream() const { return stream_; }

  CudaDriver driver_;
  CUstream stream_ = nullptr;
  std::optional<std::uint32_t> streamCuptiId_;
  std::map<std::size_t, void *> libraries_;  // content hash → dlopen handle
  int device_ = 0;
  CUdevice dev_ = 0;
  CUcontext context_ = nullptr;
  bool ready_ = false;
  bool contextLost_ = false;
};

}  // namespace kwb::worker
