#include "core/profile/cupti_profiler.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "core/gpu/dynamic_library.h"

#if KWB_HAVE_CUPTI_HEADERS
// Types and constants only: every function is resolved with dlsym.
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#endif

namespace kwb::profile {

const char *const kInsufficientPrivilegesFix =
    "the NVIDIA driver lets only administrators read GPU performance counters; either run as root, or allow "
    "all users: put 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d/nvidia-profiling.conf, "
    "then rebuild the initramfs and reboot (see https://developer.nvidia.com/ERR_NVGPUCTRPERM)";

const char *toString(MetricType type) {
  switch (type) {
    case MetricType::Counter: return "counter";
    case MetricType::Ratio: return "ratio";
    case MetricType::Throughput: return "throughput";
  }
  return "counter";
}

#if KWB_HAVE_CUPTI_HEADERS

struct CuptiApi {
  DynamicLibrary library;
  decltype(&::cuptiGetResultString) getResultString = nullptr;
  // Host API
  decltype(&::cuptiProfilerHostGetSupportedChips) hostGetSupportedChips = nullptr;
  decltype(&::cuptiProfilerHostInitialize) hostInitialize = nullptr;
  decltype(&::cuptiProfilerHostDeinitialize) hostDeinitialize = nullptr;
  decltype(&::cuptiProfilerHostGetBaseMetrics) hostGetBaseMetrics = nullptr;
  decltype(&::cuptiProfilerHostGetSubMetrics) hostGetSubMetrics = nullptr;
  decltype(&::cuptiProfilerHostGetMetricProperties) hostGetMetricProperties = nullptr;
  decltype(&::cuptiProfilerHostConfigAddMetrics) hostConfigAddMetrics = nullptr;
  decltype(&::cuptiProfilerHostGetConfigImageSize) hostGetConfigImageSize = nullptr;
  decltype(&::cuptiProfilerHostGetConfigImage) hostGetConfigImage = nullptr;
  decltype(&::cuptiProfilerHostGetNumOfPasses) hostGetNumOfPasses = nullptr;
  decltype(&::cuptiProfilerHostEvaluateToGpuValues) hostEvaluateToGpuValues = nullptr;
  // Target side
  decltype(&::cuptiProfilerInitialize) profilerInitialize = nullptr;
  decltype(&::cuptiProfilerDeInitialize) profilerDeInitialize = nullptr;
  decltype(&::cuptiDeviceGetChipName) deviceGetChipName = nullptr;
  decltype(&::cuptiProfilerGetCounterAvailability) getCounterAvailability = nullptr;
  decltype(&::cuptiRangeProfilerEnable) rangeEnable = nullptr;
  decltype(&::cuptiRangeProfilerDisable) rangeDisable = nullptr;
  decltype(&::cuptiRangeProfilerGetCounterDataSize) rangeGetCounterDataSize = nullptr;
  decltype(&::cuptiRangeProfilerCounterDataImageInitialize) rangeCounterDataImageInitialize = nullptr;
  decltype(&::cuptiRangeProfilerSetConfig) rangeSetConfig = nullptr;
  decltype(&::cuptiRangeProfilerStart) rangeStart = nullptr;
  decltype(&::cuptiRangeProfilerStop) rangeStop = nullptr;
  decltype(&::cuptiRangeProfilerPushRange) rangePushRange = nullptr;
  decltype(&::cuptiRangeProfilerPopRange) rangePopRange = nullptr;
  decltype(&::cuptiRangeProfilerDecodeData) rangeDecodeData = nullptr;
  decltype(&::cuptiRangeProfilerGetCounterDataInfo) rangeGetCounterDataInfo = nullptr;
};

namespace {

std::vector<std::string> libcuptiCandidates(const std::vector<std::string> &searchDirs) {
  const std::vector<std::string> sonames = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  std::vector<std::string> out;
  if (searchDirs.empty()) {
    if (const char *env = std::getenv("KWB_CUPTI_LIBRARY"); env && *env) out.emplace_back(env);
    for (auto &c : cudaToolkitLibraryCandidates(sonames, {"extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib"}))
      out.push_back(std::move(c));
    return out;
  }
  // Only the folders given: paths, never bare sonames (which the loader would find elsewhere).
  for (const auto &dir : searchDirs)
    for (const auto &so : sonames) out.push_back((std::filesystem::path(dir) / so).string());
  return out;
}

std::string join(const std::vector<std::string> &parts, const char *separator) {
  std::string out;
  for (const auto &p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

}  // namespace

std::shared_ptr<const CuptiProfilerLibrary> CuptiProfilerLibrary::open(const std::vector<std::string> &searchDirs) {
  std::shared_ptr<CuptiProfilerLibrary> lib(new CuptiProfilerLibrary());
  lib->api_ = std::make_unique<CuptiApi>();
  CuptiApi &a = *lib->api_;
  const auto candidates = libcuptiCandidates(searchDirs);
  // CUPTI opens libnvperf_host.so (and _target) by soname: where the loader's path does not hold
  // the toolkit's folder, load them from libcupti's own folder first (kept, like NVRTC's builtins).
  bool opened = false;
  for (const auto &candidate : candidates) {
    const std::filesystem::path path(candidate);
    if (path.has_parent_path())
      for (const char *companion : {"libnvperf_host.so", "libnvperf_target.so"}) {
        DynamicLibrary preload;
        if (preload.open({(path.parent_path() / companion).string()})) preload.keepLoaded();
      }
    if (a.library.open({candidate})) {
      opened = true;
      break;
    }
  }
  if (!opened) a.library.open(candidates);  // fills error() with every name tried
  if (!opened)
    throw ProfileError("no-cupti", "libcupti (CUPTI, the CUDA profiling library) " + a.library.error() +
                                       (searchDirs.empty() ? "" : " in " + join(searchDirs, ", ")) +
                                       "; install the CUDA toolkit (12.6 or later) with CUPTI, or set CUDA_HOME "
                                       "to the toolkit's folder (or KWB_CUPTI_LIBRARY to libcupti.so's path)");
  // CUPTI keeps state and threads once used: never unloaded.
  a.library.keepLoaded();
  lib->path_ = a.library.path();
  std::vector<std::string> missing;
  auto need = [&](auto &fn, const char *name) {
    if (!a.library.resolve(fn, name)) missing.emplace_back(name);
  };
  need(a.getResultString, "cuptiGetResultString");
  need(a.hostGetSupportedChips, "cuptiProfilerHostGetSupportedChips");
  need(a.hostInitialize, "cuptiProfilerHostInitialize");
  need(a.hostDeinitialize, "cuptiProfilerHostDeinitialize");
  need(a.hostGetBaseMetrics, "cuptiProfilerHostGetBaseMetrics");
  need(a.hostGetSubMetrics, "cuptiProfilerHostGetSubMetrics");
  need(a.hostGetMetricProperties, "cuptiProfilerHostGetMetricProperties");
  need(a.hostConfigAddMetrics, "cuptiProfilerHostConfigAddMetrics");
  need(a.hostGetConfigImageSize, "cuptiProfilerHostGetConfigImageSize");
  need(a.hostGetConfigImage, "cuptiProfilerHostGetConfigImage");
  need(a.hostGetNumOfPasses, "cuptiProfilerHostGetNumOfPasses");
  need(a.hostEvaluateToGpuValues, "cuptiProfilerHostEvaluateToGpuValues");
  need(a.profilerInitialize, "cuptiProfilerInitialize");
  need(a.profilerDeInitialize, "cuptiProfilerDeInitialize");
  need(a.deviceGetChipName, "cuptiDeviceGetChipName");
  need(a.getCounterAvailability, "cuptiProfilerGetCounterAvailability");
  need(a.rangeEnable, "cuptiRangeProfilerEnable");
  need(a.rangeDisable, "cuptiRangeProfilerDisable");
  need(a.rangeGetCounterDataSize, "cuptiRangeProfilerGetCounterDataSize");
  need(a.rangeCounterDataImageInitialize, "cuptiRangeProfilerCounterDataImageInitialize");
  need(a.rangeSetConfig, "cuptiRangeProfilerSetConfig");
  need(a.rangeStart, "cuptiRangeProfilerStart");
  need(a.rangeStop, "cuptiRangeProfilerStop");
  need(a.rangePushRange, "cuptiRangeProfilerPushRange");
  need(a.rangePopRange, "cuptiRangeProfilerPopRange");
  need(a.rangeDecodeData, "cuptiRangeProfilerDecodeData");
  need(a.rangeGetCounterDataInfo, "cuptiRangeProfilerGetCounterDataInfo");
  if (!missing.empty())
    throw ProfileError("no-cupti", lib->path_ + " lacks the profiler entry points " + join(missing, ", ") +
                                       " (the Profiler Host and Range Profiler APIs came with CUDA 12.6); install a "
                                       "CUDA 12.6 or later toolkit's CUPTI or point CUDA_HOME at one");
  return lib;
}

CuptiProfilerLibrary::~CuptiProfilerLibrary() = default;

std::string CuptiProfilerLibrary::errorName(int code) const {
  const char *s = nullptr;
  if (api_ && api_->getResultString &&
      api_->getResultString(static_cast<CUptiResult>(code), &s) == CUPTI_SUCCESS && s && *s)
    return s;
  return "CUPTI error " + std::to_string(code);
}

void throwCuptiError(const CuptiProfilerLibrary &library, const std::string &call, int code) {
  std::string message = call + " failed: " + library.errorName(code) + " (" + std::to_string(code) + ")";
  switch (code) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      throw ProfileError("insufficient-privileges", message + "; " + kInsufficientPrivilegesFix, code);
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      throw ProfileError("profiler-busy",
                         message + "; another profiler (Nsight Compute, Nsight Systems, DCGM profiling, or another "
                                   "CUPTI client) is attached to this GPU or process: stop it and retry",
                         code);
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      throw ProfileError("unsupported",
                         message + "; CUPTI cannot profile this device in its current mode (MIG, vGPU, WSL, SLI, "
                                   "confidential computing, or a chip older than Turing)",
                         code);
    case CUPTI_ERROR_INVALID_CHIP_NAME: throw ProfileError("unknown-chip", message, code);
    default: throw ProfileError("cupti-error", message, code);
  }
}

std::vector<std::string> CuptiProfilerLibrary::supportedChips() const {
  CUpti_Profiler_Host_GetSupportedChips_Params p{CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
  if (auto r = api_->hostGetSupportedChips(&p); r != CUPTI_SUCCESS)
    throwCuptiError(*this, "cuptiProfilerHostGetSupportedChips", r);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < p.numChips; ++i)
    if (p.ppChipNames[i]) out.emplace_back(p.ppChipNames[i]);
  return out;
}

std::size_t CuptiProfilerLibrary::passes(const std::vector<std::uint8_t> &configImage) const {
  if (configImage.empty()) throw ProfileError("cupti-error", "counting passes: the config image is empty");
  std::vector<std::uint8_t> copy = configImage;  // the API takes a non-const pointer
  CUpti_Profiler_Host_GetNumOfPasses_Params p{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  p.configImageSize = copy.size();
  p.pConfigImage = copy.data();
  if (auto r = api_->hostGetNumOfPasses(&p); r != CUPTI_SUCCESS)
    throwCuptiError(*this, "cuptiProfilerHostGetNumOfPasses", r);
  return p.numOfPasses;
}

// ---- ProfilerHost

ProfilerHost::ProfilerHost(std::shared_ptr<const CuptiProfilerLibrary> library, const std::string &chip,
                           std::vector<std::uint8_t> counterAvailability)
    : library_(std::move(library)), chip_(chip), counterAvailability_(std::move(counterAvailability)) {
  const auto &a = library_->api();
  CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  p.pChipName = chip_.c_str();
  p.pCounterAvailabilityImage = counterAvailability_.empty() ? nullptr : counterAvailability_.data();
  if (auto r = a.hostInitialize(&p); r != CUPTI_SUCCESS) {
    const auto chips = library_->supportedChips();
    bool known = false;
    for (const auto &c : chips) known = known || c == chip_;
    if (!known)
      throw ProfileError("unknown-chip", "CUPTI (" + library_->path() + ") does not know the chip '" + chip_ +
                                             "'; supported chips: " + join(chips, ", ") +
                                             " (an H100 or H200 is GH100)",
                         r);
    throwCuptiError(*library_, "cuptiProfilerHostInitialize for chip '" + chip_ + "'", r);
  }
  object_ = p.pHostObject;
}

ProfilerHost::~ProfilerHost() {
  if (!object_) return;
  CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  p.pHostObject = static_cast<CUpti_Profiler_Host_Object *>(object_);
  library_->api().hostDeinitialize(&p);
}

namespace {
CUpti_MetricType cuptiType(MetricType t) {
  switch (t) {
    case MetricType::Counter: return CUPTI_METRIC_TYPE_COUNTER;
    case MetricType::Ratio: return CUPTI_METRIC_TYPE_RATIO;
    case MetricType::Throughput: return CUPTI_METRIC_TYPE_THROUGHPUT;
  }
  return CUPTI_METRIC_TYPE_COUNTER;
}
}  // namespace

std::vector<std::string> ProfilerHost::baseMetrics(MetricType type) const {
  CUpti_Profiler_Host_GetBaseMetrics_Params p{CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
  p.pHostObject = static_cast<CUpti_Profiler_Host_Object *>(object_);
  p.metricType = cuptiType(type);
  if (auto r = library_->api().hostGetBaseMetrics(&p); r != CUPTI_SUCCESS)
    throwCuptiError(*library_, "cuptiProfilerHostGetBaseMetrics", r);
  std::vector<std::string> out;
  out.reserve(p.numMetrics);
  for (std::size_t i = 0; i < p.numMetrics; ++i)
    if (p.ppMetricNames[i]) out.emplace_back(p.ppMetricNames[i]);
  return out;
}

std::vector<std::string> ProfilerHost::subMetrics(const std::string &baseMetric, MetricType type) const {
  CUpti_Profiler_Host_GetSubMetrics_Params p{CUpti_Profiler_Host_GetSubMetrics_Params_STRUCT_SIZE};
  p.pHostObject = static_cast<CUpti_Profiler_Host_Object *>(object_);
  p.metricType = cuptiType(type);
  p.pMetricName = baseMetric.c_str();
  std::vector<std::string> out;
  if (library_->api().hostGetSubMetrics(&p) != CUPTI_SUCCESS) return out;  // not of this type
  for (std::size_t i = 0; i < p.numOfSubmetrics; ++i)
    if (p.ppSubMetrics[i]) out.emplace_back(p.ppSubMetrics[i]);
  return out;
}

std::optional<MetricProperties> ProfilerHost::properties(const std::string &name) const {
  CUpti_Profiler_Host_GetMetricProperties_Params p{CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
  p.pHostObject = static_cast<CUpti_Profiler_Host_Object *>(object_);
  p.pMetricName = name.c_str();
  if (library_->api().hostGetMetricProperties(&p) != CUPTI_SUCCESS) return std::nullopt;
  MetricProperties m;
  m.name = name;
  m.description = p.pDescription ? p.pDescription : "";
  m.hardwareUnit = p.pHwUnit ? p.pHwUnit : "";
  m.dimensionUnit = p.pDimUnit ? p.pDimUnit : "";
  m.type = p.metricType == CUPTI_METRIC_TYPE_RATIO        ? MetricType::Ratio
           : p.metricType == CUPTI_METRIC_TYPE_THROUGHPUT ? MetricType::Throughput
                                                          : MetricType::Counter;
  return m;
}

void ProfilerHost::addMetrics(const std::vector<std::string> &names) {
  std::vector<const char *> ptrs;
  for (const auto &n : names) ptrs.push_back(n.c_str());
  CUpti_Profiler_Host_ConfigAddMetrics_Params p{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  p.pHostObject = static_cast<CUpti_Profiler_Host_Object *>(object_);
  p.ppMetricNames = ptrs.data();
  p.numMetrics = ptrs.size();
  if (auto r = library_->api().hostConfigAddMetrics(&p); r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_INVALID_PARAMETER || r == CUPTI_ERROR_INVALID_METRIC_NAME)
      throw ProfileError("unknown-metric",
                         "cuptiProfilerHostConfigAddMetrics refused the metrics " + join(names, ", ") + " for chip " +
                             chip_ + ": " + library_->errorName(r) + " (" + std::to_string(r) + ")",
                         r);
    throwCuptiError(*library_, "cuptiProfilerHostConfigAddMetrics", r);
  }
}

std::vector<std::uint8_t> ProfilerHost::configImage() const {
  const auto &a = library_->api();
  CUpti_Profiler_Host_GetConfigImageSize_Params s{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  s.pHostObject = static_cast<CUpti_Profiler_Host_Object *>(object_);
  if (auto r = a.hostGetConfigImageSize(&s); r != CUPTI_SUCCESS)
    throwCuptiError(*library_, "cuptiProfilerHostGetConfigImageSize", r);
  std::vector<std::uint8_t> image(s.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params g{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  g.pHostObject = s.pHostObject;
  g.configImageSize = image.size();
  g.pConfigImage = image.data();
  if (auto r = a.hostGetConfigImage(&g); r != CUPTI_SUCCESS)
    throwCuptiError(*library_, "cuptiProfilerHostGetConfigImage", r);
  if (image.empty()) throw ProfileError("cupti-error", "CUPTI returned an empty config image (no metrics added?)");
  return image;
}

std::vector<double> ProfilerHost::evaluate(const std::vector<std::uint8_t> &counterData, std::size_t rangeIndex,
                                           const std::vector<std::string> &metrics) const {
  std::vector<const char *> ptrs;
  for (const auto &n : metrics) ptrs.push_back(n.c_str());
  std::vector<double> values(metrics.size(), 0.0);
  CUpti_Profiler_Host_EvaluateToGpuValues_Params p{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  p.pHostObject = static_cast<CUpti_Profiler_Host_Object *>(object_);
  p.pCounterDataImage = counterData.data();
  p.counterDataImageSize = counterData.size();
  p.rangeIndex = rangeIndex;
  p.ppMetricNames = ptrs.data();
  p.numMetrics = ptrs.size();
  p.pMetricValues = values.data();
  if (auto r = library_->api().hostEvaluateToGpuValues(&p); r != CUPTI_SUCCESS)
    throwCuptiError(*library_, "cuptiProfilerHostEvaluateToGpuValues", r);
  return values;
}

// ---- RangeProfiler

RangeProfiler::RangeProfiler(std::shared_ptr<const CuptiProfilerLibrary> library, void *context, int ordinal)
    : library_(std::move(library)), context_(context) {
  const auto &a = library_->api();
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  if (auto r = a.profilerInitialize(&init); r != CUPTI_SUCCESS) throwCuptiError(*library_, "cuptiProfilerInitialize", r);
  initialized_ = true;
  try {
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<std::size_t>(ordinal);
    if (auto r = a.deviceGetChipName(&chip); r != CUPTI_SUCCESS)
      throwCuptiError(*library_, "cuptiDeviceGetChipName for device " + std::to_string(ordinal), r);
    chip_ = chip.pChipName ? chip.pChipName : "";

    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = static_cast<CUcontext>(context_);
    if (auto r = a.getCounterAvailability(&avail); r != CUPTI_SUCCESS)
      throwCuptiError(*library_, "cuptiProfilerGetCounterAvailability (size)", r);
    availability_.resize(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability_.data();
    if (auto r = a.getCounterAvailability(&avail); r != CUPTI_SUCCESS)
      throwCuptiError(*library_, "cuptiProfilerGetCounterAvailability", r);
    availability_.resize(avail.counterAvailabilityImageSize);
  } catch (...) {
    teardown();  // a constructor that throws gets no destructor
    throw;
  }
}

RangeProfiler::~RangeProfiler() { teardown(); }

void RangeProfiler::teardown() noexcept {
  const auto &a = library_->api();
  auto *object = static_cast<CUpti_RangeProfiler_Object *>(object_);
  if (object && pushed_) {
    CUpti_RangeProfiler_PopRange_Params p{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = object;
    a.rangePopRange(&p);
  }
  if (object && started_) {
    CUpti_RangeProfiler_Stop_Params p{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = object;
    a.rangeStop(&p);
  }
  if (object) {
    CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = object;
    a.rangeDisable(&p);
  }
  if (initialized_) {
    CUpti_Profiler_DeInitialize_Params p{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    a.profilerDeInitialize(&p);
  }
  pushed_ = started_ = initialized_ = false;
  object_ = nullptr;
}

void RangeProfiler::configure(const std::vector<std::uint8_t> &configImage, const std::vector<std::string> &metrics) {
  const auto &a = library_->api();
  if (!object_) {
    CUpti_RangeProfiler_Enable_Params e{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    e.ctx = static_cast<CUcontext>(context_);
    if (auto r = a.rangeEnable(&e); r != CUPTI_SUCCESS) throwCuptiError(*library_, "cuptiRangeProfilerEnable", r);
    object_ = e.pRangeProfilerObject;
  }
  auto *object = static_cast<CUpti_RangeProfiler_Object *>(object_);
  std::vector<const char *> ptrs;
  for (const auto &n : metrics) ptrs.push_back(n.c_str());
  CUpti_RangeProfiler_GetCounterDataSize_Params s{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  s.pRangeProfilerObject = object;
  s.pMetricNames = ptrs.data();
  s.numMetrics = ptrs.size();
  s.maxNumOfRanges = kMaxRanges;
  s.maxNumRangeTreeNodes = kMaxRanges;
  if (auto r = a.rangeGetCounterDataSize(&s); r != CUPTI_SUCCESS)
    throwCuptiError(*library_, "cuptiRangeProfilerGetCounterDataSize", r);
  counterData_.assign(s.counterDataSize, 0);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  ci.pRangeProfilerObject = object;
  ci.counterDataSize = counterData_.size();
  ci.pCounterData = counterData_.data();
  if (auto r = a.rangeCounterDataImageInitialize(&ci); r != CUPTI_SUCCESS)
    throwCuptiError(*library_, "cuptiRangeProfilerCounterDataImageInitialize", r);

  configImage_ = configImage;
  CUpti_RangeProfiler_SetConfig_Params c{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  c.pRangeProfilerObject = object;
  c.configSize = configImage_.size();
  c.pConfig = configImage_.data();
  c.counterDataImageSize = counterData_.size();
  c.pCounterDataImage = counterData_.data();
  // One range per kernel (auto ranges), as Nsight Compute measures: a user range pushed before
  // the launch also timed the launch's own overhead (a 256 us kernel read as 1.3 ms).
  c.range = CUPTI_AutoRange;
  c.replayMode = CUPTI_UserReplay;
  c.maxRangesPerPass = kMaxRanges;
  c.numNestingLevels = 1;
  c.minNestingLevel = 1;
  c.passIndex = 0;
  c.targetNestingLevel = 1;
  if (auto r = a.rangeSetConfig(&c); r != CUPTI_SUCCESS) throwCuptiError(*library_, "cuptiRangeProfilerSetConfig", r);
  passesRun_ = 0;
}

void RangeProfiler::beginPass(const std::string &) {
  const auto &a = library_->api();
  auto *object = static_cast<CUpti_RangeProfiler_Object *>(object_);
  if (!object) throw ProfileError("cupti-error", "RangeProfiler::beginPass before configure");
  CUpti_RangeProfiler_Start_Params s{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  s.pRangeProfilerObject = object;
  if (auto r = a.rangeStart(&s); r != CUPTI_SUCCESS) throwCuptiError(*library_, "cuptiRangeProfilerStart", r);
  started_ = true;
}

bool RangeProfiler::endPass() {
  const auto &a = library_->api();
  auto *object = static_cast<CUpti_RangeProfiler_Object *>(object_);
  CUpti_RangeProfiler_Stop_Params s{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  s.pRangeProfilerObject = object;
  started_ = false;
  if (auto r = a.rangeStop(&s); r != CUPTI_SUCCESS) throwCuptiError(*library_, "cuptiRangeProfilerStop", r);
  ++passesRun_;
  return s.isAllPassSubmitted != 0;
}

const std::vector<std::uint8_t> &RangeProfiler::decode() {
  const auto &a = library_->api();
  CUpti_RangeProfiler_DecodeData_Params d{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  d.pRangeProfilerObject = static_cast<CUpti_RangeProfiler_Object *>(object_);
  if (auto r = a.rangeDecodeData(&d); r != CUPTI_SUCCESS) throwCuptiError(*library_, "cuptiRangeProfilerDecodeData", r);
  dropped_ = d.numOfRangeDropped;
  CUpti_RangeProfiler_GetCounterDataInfo_Params i{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  i.pCounterDataImage = counterData_.data();
  i.counterDataImageSize = counterData_.size();
  if (auto r = a.rangeGetCounterDataInfo(&i); r != CUPTI_SUCCESS)
    throwCuptiError(*library_, "cuptiRangeProfilerGetCounterDataInfo", r);
  ranges_ = i.numTotalRanges;
  return counterData_;
}

#else  // !KWB_HAVE_CUPTI_HEADERS: the library opens nowhere and says why.

struct CuptiApi {};

namespace {
[[noreturn]] void noHeaders() {
  throw ProfileError("no-cupti",
                     "this build of Kernel Workbench has no CUPTI profiling support: CUPTI's headers "
                     "(cupti_profiler_host.h) were not found at configure time; install the CUDA toolkit (12.6 or "
                     "later) with CUPTI, set CUDA_HOME to it and reconfigure");
}
}  // namespace

std::shared_ptr<const CuptiProfilerLibrary> CuptiProfilerLibrary::open(const std::vector<std::string> &) { noHeaders(); }
CuptiProfilerLibrary::~CuptiProfilerLibrary() = default;
std::vector<std::string> CuptiProfilerLibrary::supportedChips() const { noHeaders(); }
std::string CuptiProfilerLibrary::errorName(int code) const { return "CUPTI error " + std::to_string(code); }
std::size_t CuptiProfilerLibrary::passes(const std::vector<std::uint8_t> &) const { noHeaders(); }
void throwCuptiError(const CuptiProfilerLibrary &, const std::string &call, int code) {
  throw ProfileError("cupti-error", call + " failed: CUPTI error " + std::to_string(code), code);
}
ProfilerHost::ProfilerHost(std::shared_ptr<const CuptiProfilerLibrary>, const std::string &, std::vector<std::uint8_t>) {
  noHeaders();
}
ProfilerHost::~ProfilerHost() = default;
std::vector<std::string> ProfilerHost::baseMetrics(MetricType) const { noHeaders(); }
std::vector<std::string> ProfilerHost::subMetrics(const std::string &, MetricType) const { noHeaders(); }
std::optional<MetricProperties> ProfilerHost::properties(const std::string &) const { noHeaders(); }
void ProfilerHost::addMetrics(const std::vector<std::string> &) { noHeaders(); }
std::vector<std::uint8_t> ProfilerHost::configImage() const { noHeaders(); }
std::vector<double> ProfilerHost::evaluate(const std::vector<std::uint8_t> &, std::size_t,
                                           const std::vector<std::string> &) const {
  noHeaders();
}
RangeProfiler::RangeProfiler(std::shared_ptr<const CuptiProfilerLibrary>, void *, int) { noHeaders(); }
RangeProfiler::~RangeProfiler() = default;
void RangeProfiler::teardown() noexcept {}
void RangeProfiler::configure(const std::vector<std::uint8_t> &, const std::vector<std::string> &) { noHeaders(); }
void RangeProfiler::beginPass(const std::string &) { noHeaders(); }
bool RangeProfiler::endPass() { noHeaders(); }
const std::vector<std::uint8_t> &RangeProfiler::decode() { noHeaders(); }

#endif

}  // namespace kwb::profile
