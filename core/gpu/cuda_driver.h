#pragma once
// The CUDA driver API, loaded at run time. Only the calls the engine uses are declared; their
// types and enum values match cuda.h (driver API, CUDA 12/13), so no toolkit header is needed.
#include <cstddef>
#include <string>

#include "core/gpu/dynamic_library.h"

namespace kwb {

using CUresult = int;
using CUdevice = int;

namespace cu {
inline constexpr CUresult SUCCESS = 0;
inline constexpr CUresult ERROR_NO_DEVICE = 100;
inline constexpr CUresult ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult ERROR_INSUFFICIENT_DRIVER = 35;
// CUdevice_attribute values
inline constexpr int ATTR_CLOCK_RATE = 13;
inline constexpr int ATTR_MULTIPROCESSOR_COUNT = 16;
inline constexpr int ATTR_MEMORY_CLOCK_RATE = 36;
inline constexpr int ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37;
inline constexpr int ATTR_L2_CACHE_SIZE = 38;
inline constexpr int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int ATTR_COMPUTE_CAPABILITY_MINOR = 76;
}  // namespace cu

struct CudaDriver {
  DynamicLibrary library;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int *) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(std::size_t *, CUdevice) = nullptr;  // cuDeviceTotalMem_v2
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;

  // Loads libcuda (or $KWB_CUDA_DRIVER_LIBRARY when set) and resolves every entry point.
  // Returns false with problem() set when the library or a symbol is missing.
  bool load();
  const std::string &problem() const { return problem_; }
  // "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"; numeric when unknown.
  std::string describe(CUresult r) const;

 private:
  std::string problem_;
};

}  // namespace kwb
