#pragma once
// The CUDA context a worker command runs in (the device's primary context), and how a failed
// CUDA call becomes a result: its error name, and whether the context is lost (a sticky error,
// after which the worker must be replaced). Shared by the evaluate and time commands.
#include <optional>
#include <string>

#include "core/gpu/cuda_driver.h"

namespace kwb::worker {

struct CudaFailure {
  CUresult code = 0;
  std::string name;     // CUDA_ERROR_ILLEGAL_ADDRESS
  std::string message;  // "candidate launch: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access ...)"
  bool lost = false;
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

  CudaDriver driver_;
  int device_ = 0;
  CUdevice dev_ = 0;
  CUcontext context_ = nullptr;
  bool ready_ = false;
  bool contextLost_ = false;
};

}  // namespace kwb::worker
