#include "core/gpu/cuda_driver.h"

#include <cstdlib>

namespace kwb {

bool CudaDriver::load() {
  std::vector<std::string> candidates{"libcuda.so.1", "libcuda.so"};
  if (const char *env = std::getenv("KWB_CUDA_DRIVER_LIBRARY"); env && *env) candidates = {env};
  if (!library.open(candidates)) {
    problem_ = "no CUDA driver: libcuda " + library.error();
    return false;
  }
  bool ok = library.resolve(cuInit, "cuInit") &&
            library.resolve(cuDriverGetVersion, "cuDriverGetVersion") &&
            library.resolve(cuDeviceGetCount, "cuDeviceGetCount") &&
            library.resolve(cuDeviceGet, "cuDeviceGet") &&
            library.resolve(cuDeviceGetName, "cuDeviceGetName") &&
            library.resolve(cuDeviceTotalMem, "cuDeviceTotalMem_v2") &&
            library.resolve(cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
            library.resolve(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId") &&
            library.resolve(cuGetErrorName, "cuGetErrorName") &&
            library.resolve(cuGetErrorString, "cuGetErrorString") &&
            library.resolve(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
            library.resolve(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") &&
            library.resolve(cuCtxSetCurrent, "cuCtxSetCurrent") &&
            library.resolve(cuModuleLoadData, "cuModuleLoadData") &&
            library.resolve(cuModuleUnload, "cuModuleUnload") &&
            library.resolve(cuModuleGetFunction, "cuModuleGetFunction") &&
            library.resolve(cuFuncGetAttribute, "cuFuncGetAttribute") &&
            library.resolve(cuFuncSetAttribute, "cuFuncSetAttribute") &&
            library.resolve(cuOccupancyMaxActiveBlocksPerMultiprocessor,
                            "cuOccupancyMaxActiveBlocksPerMultiprocessor") &&
            library.resolve(cuCtxSynchronize, "cuCtxSynchronize") &&
            library.resolve(cuMemAlloc, "cuMemAlloc_v2") && library.resolve(cuMemFree, "cuMemFree_v2") &&
            library.resolve(cuMemcpyHtoD, "cuMemcpyHtoD_v2") && library.resolve(cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
            library.resolve(cuMemsetD8, "cuMemsetD8_v2") && library.resolve(cuLaunchKernel, "cuLaunchKernel") &&
            library.resolve(cuEventCreate, "cuEventCreate") &&
            library.resolve(cuEventDestroy, "cuEventDestroy_v2") &&
            library.resolve(cuEventRecord, "cuEventRecord") &&
            library.resolve(cuEventSynchronize, "cuEventSynchronize") &&
            library.resolve(cuEventElapsedTime, "cuEventElapsedTime") &&
            library.resolve(cuStreamCreate, "cuStreamCreate") &&
            library.resolve(cuStreamDestroy, "cuStreamDestroy_v2") &&
            library.resolve(cuStreamSynchronize, "cuStreamSynchronize") &&
            library.resolve(cuMemcpyDtoD, "cuMemcpyDtoD_v2") &&
            library.resolve(cuMemGetAddressRange, "cuMemGetAddressRange_v2") &&
            library.resolve(cuIpcGetMemHandle, "cuIpcGetMemHandle") &&
            library.resolve(cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2") &&
            library.resolve(cuIpcCloseMemHandle, "cuIpcCloseMemHandle") &&
            library.resolve(cuCtxResetPersistingL2Cache, "cuCtxResetPersistingL2Cache") &&
            library.resolve(cuCtxSetLimit, "cuCtxSetLimit");
  if (!ok) {
    problem_ = "no CUDA driver: " + library.path() + " lacks a driver API entry point (too old?)";
    return false;
  }
  return true;
}

std::string CudaDriver::describe(CUresult r) const {
  const char *name = nullptr;
  const char *text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(r);
  if (text) out += std::string(" (") + text + ")";
  return out;
}

}  // namespace kwb
