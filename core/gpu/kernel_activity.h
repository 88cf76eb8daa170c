#pragma once
// Every kernel the process runs on the GPU, as CUPTI's activity API records it
// (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL): the kernel's own start and end on the GPU clock and
// the stream it ran on, whichever stream or thread launched it. The timing primary figure and
// the side-stream / no-kernel-ran checks of the worker come from here. CUPTI is opened with
// dlopen; where it is missing or refuses (another profiler attached, no permission) start()
// says why and callers fall back to CUDA events.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu/cuda_driver.h"
#include "core/gpu/dynamic_library.h"

namespace kwb {

struct KernelRecord {
  std::string name;            // the kernel's (mangled) name
  std::uint64_t start = 0;     // ns, GPU timestamps
  std::uint64_t end = 0;
  std::uint32_t streamId = 0;  // CUPTI's stream id; see KernelActivity::streamId
  std::uint32_t correlationId = 0;
  std::uint64_t durationNs() const { return end > start ? end - start : 0; }
};

// The span of a group of kernels: first start to last end (concurrent kernels count once),
// and the plain sum of their durations.
struct KernelSpan {
  std::size_t kernels = 0;
  std::uint64_t spanNs = 0;
  std::uint64_t sumNs = 0;
};
KernelSpan spanOf(const std::vector<KernelRecord> &records);

class KernelActivity {
 public:
  // CUPTI accepts one activity client per process: this is it.
  static KernelActivity &instance();

  // Opens CUPTI and enables kernel records; idempotent. False (and problem()) when unusable.
  bool start();
  bool active() const { return active_; }
  const std::string &problem() const { return problem_; }
  const std::string &libraryPath() const { return library_.path(); }

  // Flushes CUPTI's buffers and returns the kernels recorded since the last take(). Call after
  // the work is synchronised: records of unfinished kernels come later.
  std::vector<KernelRecord> take();
  // Records CUPTI had to drop for lack of buffer space since start (0 when none).
  std::uint64_t dropped() const;

  // CUPTI's id for a stream of a context (the one kernel records carry); nullopt on failure.
  std::optional<std::uint32_t> streamId(CUcontext context, CUstream stream) const;

 private:
  KernelActivity() = default;
  static void bufferRequested(std::uint8_t **buffer, std::size_t *size, std::size_t *maxRecords);
  static void bufferCompleted(CUcontext context, std::uint32_t streamId, std::uint8_t *buffer, std::size_t size,
                              std::size_t validSize);
  std::string describe(int result) const;

  DynamicLibrary library_;
  bool tried_ = false;
  bool active_ = false;
  std::string problem_;
  mutable std::mutex mutex_;
  std::vector<KernelRecord> records_;
  std::uint64_t dropped_ = 0;

  int (*activityEnable_)(int) = nullptr;
  int (*flushAll_)(std::uint32_t) = nullptr;
  int (*getNextRecord_)(std::uint8_t *, std::size_t, void **) = nullptr;
  int (*getStreamIdEx_)(CUcontext, CUstream, std::uint8_t, std::uint32_t *) = nullptr;
  int (*droppedRecords_)(CUcontext, std::uint32_t, std::size_t *) = nullptr;
  int (*resultString_)(int, const char **) = nullptr;
};

}  // namespace kwb
