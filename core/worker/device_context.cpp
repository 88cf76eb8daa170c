#include "core/worker/device_context.h"

#include "core/worker/worker_server.h"

namespace kwb::worker {

void DeviceContext::ensureDeviceContext() {
  if (ready_) return;
  if (!driver_.library.isOpen() && !driver_.load()) throw CommandError("no-device", driver_.problem());
  CUresult r = driver_.cuInit(0);
  if (r != cu::SUCCESS) throw CommandError("no-device", "cuInit failed: " + driver_.describe(r));
  r = driver_.cuDeviceGet(&dev_, device_);
  if (r != cu::SUCCESS)
    throw CommandError("no-device", "no CUDA device " + std::to_string(device_) + ": " + driver_.describe(r));
  r = driver_.cuDevicePrimaryCtxRetain(&context_, dev_);
  if (r != cu::SUCCESS) throw CommandError("no-device", "cannot create a CUDA context: " + driver_.describe(r));
  r = driver_.cuCtxSetCurrent(context_);
  if (r != cu::SUCCESS) throw CommandError("no-device", "cannot use the CUDA context: " + driver_.describe(r));
  ready_ = true;
}

CudaFailure DeviceContext::failure(CUresult r, const std::string &what) {
  CudaFailure f;
  f.code = r;
  const char *name = nullptr;
  if (driver_.cuGetErrorName) driver_.cuGetErrorName(r, &name);
  f.name = name ? name : "CUDA error " + std::to_string(r);
  f.message = what + ": " + driver_.describe(r);
  // A sticky error is returned by every later call: synchronising again tells.
  f.lost = r != cu::ERROR_OUT_OF_MEMORY && driver_.cuCtxSynchronize() != cu::SUCCESS;
  if (f.lost) contextLost_ = true;
  return f;
}

}  // namespace kwb::worker
