#pragma once
// CUPTI's profiling APIs (CUDA 12.6 and later; checked with CUDA 13.0), opened at run time with
// dlopen so nothing links libcupti or libcuda:
//   - the Profiler Host API (cupti_profiler_host.h): supported chips, a chip's metric catalogue,
//     metric properties, config images, pass counts and the evaluation of counter data into
//     metric values. It runs on the CPU alone: no GPU, no driver (checked on a machine with
//     neither: cuptiProfilerHostInitialize for "GH100" succeeds there).
//   - the Range Profiler (cupti_range_profiler.h, cupti_target.h, cupti_profiler_target.h):
//     collects the counters of a range of GPU work in a CUDA context, one pass at a time
//     (user replay: the caller re-runs the work for each pass).
// This header is the only interface to them; cupti_profiler.cpp is the one file that includes
// CUPTI's headers (found at configure time under the toolkit; without them the library opens
// but every call says kwbprofile was built without them).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kwb::profile {

// Why profiling did not happen, with a machine-readable reason:
//   "no-cupti"                 libcupti is missing or lacks the profiler entry points
//   "unknown-chip"             the host API does not know the chip
//   "unknown-metric"           a metric name is not in the chip's catalogue
//   "insufficient-privileges"  CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35): GPU counters are
//                              restricted to administrators
//   "profiler-busy"            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39) or a
//                              profiling session already open: another profiler is attached
//   "unsupported"              the device or its mode (MIG, vGPU, WSL, ...) cannot be profiled
//   "cupti-error"              any other CUPTI failure; the message names the call and error
class ProfileError : public std::runtime_error {
 public:
  ProfileError(std::string reason, const std::string &message, int cuptiCode = 0)
      : std::runtime_error(message), reason_(std::move(reason)), code_(cuptiCode) {}
  const std::string &reason() const { return reason_; }
  int cuptiCode() const { return code_; }

 private:
  std::string reason_;
  int code_ = 0;
};

// The fix for CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, in words.
extern const char *const kInsufficientPrivilegesFix;

enum class MetricType { Counter, Ratio, Throughput };
const char *toString(MetricType type);  // "counter", "ratio", "throughput"

struct MetricProperties {
  std::string name;
  std::string description;
  std::string hardwareUnit;   // "dram", "sm", "lts", ...
  std::string dimensionUnit;  // "percent", "nanosecond", "gpc_cyclewarp", "" (ratios)
  MetricType type = MetricType::Counter;
};

struct CuptiApi;  // the resolved entry points (cupti_profiler.cpp)

class CuptiProfilerLibrary {
 public:
  // Opens libcupti. With `searchDirs` empty: the loader's path, then $CUDA_HOME, $CUDA_PATH, the
  // toolkit found at build time and /usr/local/cuda (lib64, extras/CUPTI/lib64); with
  // `searchDirs` given, only libcupti.so* in those folders. $KWB_CUPTI_LIBRARY, when set, is
  // tried first. Throws ProfileError ("no-cupti") naming what was tried and the fix.
  static std::shared_ptr<const CuptiProfilerLibrary> open(const std::vector<std::string> &searchDirs = {});
  ~CuptiProfilerLibrary();
  CuptiProfilerLibrary(const CuptiProfilerLibrary &) = delete;
  CuptiProfilerLibrary &operator=(const CuptiProfilerLibrary &) = delete;

  const std::string &path() const { return path_; }
  // Chips the host API knows ("GV100" ... "GH100" ... "GB20B").
  std::vector<std::string> supportedChips() const;
  // "CUPTI_ERROR_INVALID_PARAMETER" for a CUptiResult; the number when CUPTI has no name.
  std::string errorName(int code) const;
  // Number of passes the config image needs (cuptiProfilerHostGetNumOfPasses).
  std::size_t passes(const std::vector<std::uint8_t> &configImage) const;

  const CuptiApi &api() const { return *api_; }

 private:
  CuptiProfilerLibrary() = default;
  std::unique_ptr<CuptiApi> api_;
  std::string path_;
};

// Throws ProfileError for a failed CUPTI call: classified by code (see ProfileError), the
// message "<call> failed: <CUPTI error name> (<number>)" plus the fix where one is known.
[[noreturn]] void throwCuptiError(const CuptiProfilerLibrary &library, const std::string &call, int code);

// One profiler host object (cuptiProfilerHostInitialize) for one chip. Metrics added with
// addMetrics accumulate in its configuration; make a fresh object for another metric list.
class ProfilerHost {
 public:
  // `counterAvailability`: the device's image (RangeProfiler::counterAvailability), or empty
  // for the chip's full catalogue. Throws ProfileError ("unknown-chip" naming the supported
  // chips, "cupti-error").
  ProfilerHost(std::shared_ptr<const CuptiProfilerLibrary> library, const std::string &chip,
               std::vector<std::uint8_t> counterAvailability = {});
  ~ProfilerHost();
  ProfilerHost(const ProfilerHost &) = delete;
  ProfilerHost &operator=(const ProfilerHost &) = delete;

  const std::string &chip() const { return chip_; }
  const CuptiProfilerLibrary &library() const { return *library_; }
  // The chip's base metrics of one type ("dram__throughput", "gpu__time_duration", ...).
  std::vector<std::string> baseMetrics(MetricType type) const;
  // A base metric's sub-metric suffixes (".avg.pct_of_peak_sustained_elapsed", ".pct", ...);
  // empty when the metric is not of that type.
  std::vector<std::string> subMetrics(const std::string &baseMetric, MetricType type) const;
  // A metric's properties (a base name or a full name); nullopt when the chip does not know it.
  std::optional<MetricProperties> properties(const std::string &name) const;
  // cuptiProfilerHostConfigAddMetrics; throws ProfileError ("unknown-metric" when CUPTI refuses
  // the list: callers validate names first to say which one).
  void addMetrics(const std::vector<std::string> &names);
  // The configuration image of the metrics added so far (never empty on success).
  std::vector<std::uint8_t> configImage() const;
  // Metric values of one range of decoded counter data, in the order of `metrics`.
  std::vector<double> evaluate(const std::vector<std::uint8_t> &counterData, std::size_t rangeIndex,
                               const std::vector<std::string> &metrics) const;

 private:
  std::shared_ptr<const CuptiProfilerLibrary> library_;
  std::string chip_;
  std::vector<std::uint8_t> counterAvailability_;  // must outlive the host object
  void *object_ = nullptr;                         // CUpti_Profiler_Host_Object *
};

// The Range Profiler on one CUDA context (a CUcontext, passed as void * so this header needs no
// CUDA header), one range per kernel (auto ranges, at most kMaxRanges kernels per pass), user
// replay: for each pass the caller restores the work's inputs, then beginPass(), launches,
// synchronises, endPass(); until endPass() says all passes are submitted. Needs a GPU and the
// right to read its counters.
class RangeProfiler {
 public:
  static constexpr std::size_t kMaxRanges = 64;  // kernels one launch (a host launcher) may run
  // cuptiProfilerInitialize, then the chip of CUDA device `ordinal` (cuptiDeviceGetChipName)
  // and the counters the device in `context` (current, a CUcontext) can collect now
  // (cuptiProfilerGetCounterAvailability). Throws ProfileError classified by code
  // ("insufficient-privileges", "profiler-busy", "unsupported", ...).
  RangeProfiler(std::shared_ptr<const CuptiProfilerLibrary> library, void *context, int ordinal);
  ~RangeProfiler();  // stops, disables and deinitialises what was started
  RangeProfiler(const RangeProfiler &) = delete;
  RangeProfiler &operator=(const RangeProfiler &) = delete;

  const std::string &chip() const { return chip_; }
  const std::vector<std::uint8_t> &counterAvailability() const { return availability_; }

  // cuptiRangeProfilerEnable on the context, a counter data image for `metrics` (kMaxRanges
  // ranges), and cuptiRangeProfilerSetConfig with the config image (auto range, user replay).
  void configure(const std::vector<std::uint8_t> &configImage, const std::vector<std::string> &metrics);
  // cuptiRangeProfilerStart (the name is unused with auto ranges).
  void beginPass(const std::string &rangeName);
  // cuptiRangeProfilerStop (call after the work is synchronised); true once every pass is submitted.
  bool endPass();
  // cuptiRangeProfilerDecodeData; returns the counter data image and sets ranges().
  const std::vector<std::uint8_t> &decode();
  std::size_t ranges() const { return ranges_; }
  std::size_t rangesDropped() const { return dropped_; }
  std::size_t passesRun() const { return passesRun_; }

 private:
  void teardown() noexcept;  // pops, stops, disables and deinitialises what is open
  std::shared_ptr<const CuptiProfilerLibrary> library_;
  void *context_ = nullptr;
  void *object_ = nullptr;  // CUpti_RangeProfiler_Object *
  bool initialized_ = false;
  bool started_ = false;
  bool pushed_ = false;
  std::string chip_;
  std::vector<std::uint8_t> availability_;
  std::vector<std::uint8_t> configImage_;  // CUPTI keeps pointers into both
  std::vector<std::uint8_t> counterData_;
  std::size_t ranges_ = 0, dropped_ = 0, passesRun_ = 0;
};

}  // namespace kwb::profile
