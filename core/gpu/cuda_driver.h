#pragma once
// The CUDA driver API, loaded at run time. Only the calls the engine uses are declared; their
// types and enum values match cuda.h (driver API, CUDA 12/13), so no toolkit header is needed.
#include <cstddef>
#include <string>

#include "core/gpu/dynamic_library.h"

namespace kwb {

using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUdeviceptr = unsigned long long;
// CUDA IPC: a memory allocation shared with another process (CU_IPC_HANDLE_SIZE bytes).
struct CUipcMemHandle {
  char reserved[64];
};

namespace cu {
inline constexpr CUresult SUCCESS = 0;
inline constexpr CUresult ERROR_NO_DEVICE = 100;
inline constexpr CUresult ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult ERROR_INSUFFICIENT_DRIVER = 35;
// CUdevice_attribute values
inline constexpr int ATTR_CLOCK_RATE = 13;
inline constexpr int ATTR_MULTIPROCESSOR_COUNT = 16;
inline constexpr int ATTR_MEMORY_CLOCK_RATE = 36;
inline constexpr int ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37;
inline constexpr int ATTR_L2_CACHE_SIZE = 38;
inline constexpr int LIMIT_PERSISTING_L2_CACHE_SIZE = 6;  // CU_LIMIT_PERSISTING_L2_CACHE_SIZE
inline constexpr int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int ATTR_COMPUTE_CAPABILITY_MINOR = 76;
// CUdevice_attribute values for occupancy
inline constexpr int ATTR_MAX_THREADS_PER_BLOCK = 1;
inline constexpr int ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr int ATTR_MAX_REGISTERS_PER_BLOCK = 12;
inline constexpr int ATTR_WARP_SIZE = 10;
inline constexpr int ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39;
inline constexpr int ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81;
inline constexpr int ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR = 82;
inline constexpr int ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
inline constexpr int ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR = 106;
inline constexpr int ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK = 111;
// CUfunction_attribute values
inline constexpr int FUNC_ATTR_MAX_THREADS_PER_BLOCK = 0;
inline constexpr int FUNC_ATTR_SHARED_SIZE_BYTES = 1;
inline constexpr int FUNC_ATTR_CONST_SIZE_BYTES = 2;
inline constexpr int FUNC_ATTR_LOCAL_SIZE_BYTES = 3;
inline constexpr int FUNC_ATTR_NUM_REGS = 4;
inline constexpr int FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
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
  // Contexts, modules and functions.
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;  // cuDevicePrimaryCtxRelease_v2
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, std::size_t) = nullptr;
  // Memory, launches and synchronisation (the worker's evaluate command).
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, std::size_t) = nullptr;                    // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;                                     // cuMemFree_v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, std::size_t) = nullptr;       // cuMemcpyHtoD_v2
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, std::size_t) = nullptr;            // cuMemcpyDtoH_v2
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, std::size_t) = nullptr;        // cuMemsetD8_v2
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **) = nullptr;
  // Events (the worker's time command): flags 0 = timing enabled; elapsed in milliseconds.
  CUresult (*cuEventCreate)(CUevent *, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;                                    // cuEventDestroy_v2
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent) = nullptr;
  // Streams (a host launcher is handed one); flags 1 = CU_STREAM_NON_BLOCKING.
  CUresult (*cuStreamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;                                  // cuStreamDestroy_v2
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, std::size_t) = nullptr;       // cuMemcpyDtoD_v2
  CUresult (*cuMemGetAddressRange)(CUdeviceptr *, std::size_t *, CUdeviceptr) = nullptr;  // _v2
  // IPC (a host launcher's own process maps the worker's tensors).
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr) = nullptr;
  CUresult (*cuIpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned) = nullptr;  // cuIpcOpenMemHandle_v2
  CUresult (*cuIpcCloseMemHandle)(CUdeviceptr) = nullptr;
  // What a candidate can leave in the L2 (timing resets it before every sample).
  CUresult (*cuCtxResetPersistingL2Cache)() = nullptr;
  CUresult (*cuCtxSetLimit)(int, std::size_t) = nullptr;

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
