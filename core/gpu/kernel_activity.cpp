#include "core/gpu/kernel_activity.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <limits>

namespace kwb {

namespace {

// From cupti_activity.h / cupti_result.h (CUDA 12 and 13); declared here so no toolkit header
// is needed to build.
constexpr int kCuptiSuccess = 0;
constexpr int kKindConcurrentKernel = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
constexpr std::uint32_t kFlushForced = 1;  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
constexpr std::size_t kBufferBytes = std::size_t{4} << 20;
constexpr std::size_t kRecordAlignment = 8;

// The leading fields of CUpti_ActivityKernel10 (cupti_activity.h, packed, 8-byte aligned); the
// later fields are not read. The offsets are checked below against the header's layout.
#pragma pack(push, 1)
struct KernelRecordPrefix {
  std::int32_t kind;
  std::uint8_t cacheConfig;
  std::uint8_t sharedMemoryConfig;
  std::uint16_t registersPerThread;
  std::int32_t partitionedGlobalCacheRequested;
  std::int32_t partitionedGlobalCacheExecuted;
  std::uint64_t start;
  std::uint64_t end;
  std::uint64_t completed;
  std::uint32_t deviceId;
  std::uint32_t contextId;
  std::uint32_t streamId;
  std::int32_t grid[3];
  std::int32_t block[3];
  std::int32_t staticSharedMemory;
  std::int32_t dynamicSharedMemory;
  std::uint32_t localMemoryPerThread;
  std::uint32_t localMemoryTotal;
  std::uint32_t correlationId;
  std::int64_t gridId;
  const char *name;
};
#pragma pack(pop)
static_assert(offsetof(KernelRecordPrefix, start) == 16);
static_assert(offsetof(KernelRecordPrefix, streamId) == 48);
static_assert(offsetof(KernelRecordPrefix, correlationId) == 92);
static_assert(offsetof(KernelRecordPrefix, name) == 104);

}  // namespace

KernelSpan spanOf(const std::vector<KernelRecord> &records) {
  KernelSpan s;
  std::uint64_t first = std::numeric_limits<std::uint64_t>::max(), last = 0;
  for (const auto &r : records) {
    ++s.kernels;
    s.sumNs += r.durationNs();
    first = std::min(first, r.start);
    last = std::max(last, r.end);
  }
  if (s.kernels && last > first) s.spanNs = last - first;
  return s;
}

KernelActivity &KernelActivity::instance() {
  static KernelActivity *activity = new KernelActivity;  // never destroyed: CUPTI may call back late
  return *activity;
}

std::string KernelActivity::describe(int result) const {
  const char *text = nullptr;
  if (resultString_ && resultString_(result, &text) == kCuptiSuccess && text) return text;
  return "CUPTI error " + std::to_string(result);
}

bool KernelActivity::start() {
  std::lock_guard lock(mutex_);
  if (tried_) return active_;
  tried_ = true;
  if (!library_.open(cudaToolkitLibraryCandidates({"libcupti.so.13", "libcupti.so.12", "libcupti.so"},
                                                  {"extras/CUPTI/lib64", "lib64", "lib", "targets/x86_64-linux/lib"}))) {
    problem_ = "CUPTI is not available (libcupti " + library_.error() + ")";
    return false;
  }
  library_.keepLoaded();
  int (*registerCallbacks)(void (*)(std::uint8_t **, std::size_t *, std::size_t *),
                           void (*)(CUcontext, std::uint32_t, std::uint8_t *, std::size_t, std::size_t)) = nullptr;
  library_.resolve(resultString_, "cuptiGetResultString");
  library_.resolve(droppedRecords_, "cuptiActivityGetNumDroppedRecords");
  if (!library_.resolve(activityEnable_, "cuptiActivityEnable") || !library_.resolve(flushAll_, "cuptiActivityFlushAll") ||
      !library_.resolve(getNextRecord_, "cuptiActivityGetNextRecord") ||
      !library_.resolve(getStreamIdEx_, "cuptiGetStreamIdEx") ||
      !library_.resolve(registerCallbacks, "cuptiActivityRegisterCallbacks")) {
    problem_ = library_.path() + " lacks an activity API entry point (too old?)";
    return false;
  }
  if (int r = registerCallbacks(&KernelActivity::bufferRequested, &KernelActivity::bufferCompleted); r != kCuptiSuccess) {
    problem_ = "CUPTI refused the activity buffers: " + describe(r);
    return false;
  }
  if (int r = activityEnable_(kKindConcurrentKernel); r != kCuptiSuccess) {
    problem_ = "CUPTI cannot record kernels: " + describe(r) +
               (r == 39 ? " (another profiler is attached to this process)" : "");
    return false;
  }
  active_ = true;
  return true;
}

void KernelActivity::bufferRequested(std::uint8_t **buffer, std::size_t *size, std::size_t *maxRecords) {
  *buffer = static_cast<std::uint8_t *>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *maxRecords = 0;  // as many as fit
}

void KernelActivity::bufferCompleted(CUcontext context, std::uint32_t streamId, std::uint8_t *buffer,
                                     std::size_t /*size*/, std::size_t validSize) {
  auto &self = instance();
  std::vector<KernelRecord> found;
  void *record = nullptr;
  while (buffer && self.getNextRecord_(buffer, validSize, &record) == kCuptiSuccess) {
    const auto *k = static_cast<const KernelRecordPrefix *>(record);
    if (k->kind != kKindConcurrentKernel) continue;
    KernelRecord r;
    r.name = k->name ? k->name : "";
    r.start = k->start;
    r.end = k->end;
    r.streamId = k->streamId;
    r.correlationId = k->correlationId;
    found.push_back(std::move(r));
  }
  std::size_t dropped = 0;
  if (self.droppedRecords_) self.droppedRecords_(context, streamId, &dropped);
  std::free(buffer);
  std::lock_guard lock(self.mutex_);
  self.records_.insert(self.records_.end(), std::make_move_iterator(found.begin()),
                       std::make_move_iterator(found.end()));
  self.dropped_ += dropped;
}

std::vector<KernelRecord> KernelActivity::take() {
  if (!active_) return {};
  flushAll_(kFlushForced);  // delivers completed buffers through bufferCompleted, on this thread
  std::lock_guard lock(mutex_);
  std::vector<KernelRecord> out;
  out.swap(records_);
  std::sort(out.begin(), out.end(), [](const KernelRecord &a, const KernelRecord &b) { return a.start < b.start; });
  return out;
}

std::uint64_t KernelActivity::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

std::optional<std::uint32_t> KernelActivity::streamId(CUcontext context, CUstream stream) const {
  if (!active_) return std::nullopt;
  std::uint32_t id = 0;
  if (getStreamIdEx_(context, stream, 0, &id) != kCuptiSuccess) return std::nullopt;
  return id;
}

}  // namespace kwb
