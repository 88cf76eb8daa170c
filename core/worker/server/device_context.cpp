#include "core/worker/server/device_context.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string_view>

#include <iostream>

#include "core/task/task.h"
#include "core/worker/server/evaluate_command.h"  // kContextLostExitStatus
#include "core/worker/server/worker_server.h"

namespace kwb::worker {

void DeviceContext::ensureDeviceContext() {
  if (ready_) return;
  if (!driver_.library.isOpen() && !driver_.load()) throw CommandError("no-device", driver_.problem());
  // Kernel records from the first launch on; CUPTI is optional (KWB_NO_CUPTI=1 turns it off).
  const char *noCupti = std::getenv("KWB_NO_CUPTI");
  if (!(noCupti && *noCupti && std::string(noCupti) != "0")) KernelActivity::instance().start();
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

CUdeviceptr DeviceContext::allocate(DeviceAllocations &into, std::size_t bytes, const std::string &what) {
  into.driver = &driver_;
  into.lost = &contextLost_;
  CUdeviceptr ptr = 0;
  static const bool exact = [] {
    const char *v = std::getenv(kExactAllocationsVariable);
    return v && std::string_view(v) == "1";
  }();
  const std::size_t size = exact ? std::max<std::size_t>(bytes, 1) : sharedAllocationBytes(bytes);
  check(driver_.cuMemAlloc(&ptr, size), "allocating " + std::to_string(bytes) + " bytes for " + what);
  into.buffers.push_back(ptr);
  return ptr;
}

CUevent DeviceContext::createEvent(DeviceAllocations &into) {
  into.driver = &driver_;
  into.lost = &contextLost_;
  CUevent event = nullptr;
  check(driver_.cuEventCreate(&event, 0), "creating an event");
  into.events.push_back(event);
  return event;
}

namespace {

// Every command's host launcher processes (commands run one at a time), by library content hash.
std::map<std::size_t, std::unique_ptr<HostLauncherProcess>> &hostProcesses() {
  static std::map<std::size_t, std::unique_ptr<HostLauncherProcess>> processes;
  return processes;
}

}  // namespace

void DeviceContext::endIdleLaunchers() {
  std::erase_if(hostProcesses(), [](const auto &entry) { return !entry.second->inUse; });
}

void DeviceContext::end(LoadedLaunch &launch) {
  HostLauncherProcess *process = launch.host;
  release(launch);
  if (process) std::erase_if(hostProcesses(), [&](const auto &entry) { return entry.second.get() == process; });
}

LoadedLaunch DeviceContext::load(const LaunchSpec &spec, const std::string &who) {
  LoadedLaunch l;
  l.spec = &spec;
  if (!spec.hostLauncher) {
    CUresult r = driver_.cuModuleLoadData(&l.module, spec.image.data());
    if (r != cu::SUCCESS) {
      auto f = failure(r, "loading the " + who + " module");
      if (f.lost) throw f;
      throw LoadFailure{f.name, f.message};
    }
    r = driver_.cuModuleGetFunction(&l.function, l.module, spec.kernel.c_str());
    if (r != cu::SUCCESS) {
      const auto name = failure(r, "").name;
      release(l);
      throw LoadFailure{name, "the " + who + " module has no kernel '" + spec.kernel + "' (extern \"C\" __global__)"};
    }
    if (spec.sharedBytes > 48 * 1024)
      driver_.cuFuncSetAttribute(l.function, cu::FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(spec.sharedBytes));
    return l;
  }
  // A host launcher: a process of its own per distinct library, kept while it works.
  std::string allowed;
  for (const auto &name : spec.allowedLibraries) allowed += name + ",";
  const std::size_t key = std::hash<std::string>{}(spec.image) ^ (std::hash<std::string>{}(allowed) << 1);
  auto &processes = hostProcesses();
  if (auto it = processes.find(key); it != processes.end() && it->second->alive()) {
    l.host = it->second.get();
    l.host->inUse = true;
    return l;
  }
  processes.erase(key);
  // Earlier candidates' processes are not needed again; one a launch of this request uses stays.
  if (processes.size() >= 2)
    std::erase_if(processes, [](const auto &entry) { return !entry.second->inUse; });
  // The candidate's static constructors run there, inside the sandbox.
  std::string name, problem;
  auto process = HostLauncherProcess::startWithImage(spec.image, device_, name, problem, spec.allowedLibraries);
  if (!process) throw LoadFailure{name, "the " + who + " library: " + problem};
  l.host = process.get();
  l.host->inUse = true;
  processes[key] = std::move(process);
  return l;
}

void DeviceContext::runtimeError(const CudaFailure &f, const std::string &stage, ReplyVerdict &reply,
                                 EventSink &sink) {
  reply.verdict = "runtime-error";
  reply.errorName = f.name;
  reply.stage = stage;
  reply.reason = f.message;
  reply.contextLost = f.lost;
  if (f.lost) {
    std::cerr << "kwb-worker: the CUDA context is lost (" << f.name << "); exiting after the reply\n";
    sink.stopAfterReply(kContextLostExitStatus);
  }
}

bool DeviceContext::loadBoth(LoadedPair &pair, const LaunchSpec &reference, const LaunchSpec &candidate,
                             ReplyVerdict &reply) {
  try {
    if (!reference.outputsOnly()) pair.reference = load(reference, "reference");
    pair.candidate = load(candidate, "candidate");
    return true;
  } catch (const LoadFailure &f) {
    loadError(f, reply);
    return false;
  }
}

void DeviceContext::completeReply(ReplyVerdict &reply, std::chrono::steady_clock::time_point started) {
  reply.contextLost = false;
  reply.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

void DeviceContext::loadError(const LoadFailure &failure, ReplyVerdict &reply) {
  reply.verdict = "load-error";
  reply.errorName = failure.name;
  reply.reason = failure.message;
  reply.stage = "load";
  reply.contextLost = false;
}

void DeviceContext::requireContext() {
  if (contextLost_) throw CommandError("context-lost", "the CUDA context was lost earlier; restart the worker");
  ensureDeviceContext();
}

void DeviceContext::release(LoadedLaunch &launch) {
  if (launch.module && !contextLost_) driver_.cuModuleUnload(launch.module);
  launch.module = nullptr;
  if (launch.host) {
    launch.host->release();
    launch.host->inUse = false;
  }
  launch.host = nullptr;
}

double DeviceContext::run(const LoadedLaunch &launch, KernelArguments &args, const std::string &who,
                          std::size_t repeat) {
  const LaunchSpec &spec = *launch.spec;
  if (launch.host) {
    const auto r = launch.host->launch(driver_, args.host, repeat);
    if (r.status == HostLaunchResult::Status::Done) return r.seconds;
    CudaFailure f;  // the worker's own context is untouched
    f.name = r.name;
    f.message = who + " kwb_launch: " + r.message;
    throw f;
  }
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < repeat; ++i) enqueue(launch, args, who);
  check(driver_.cuCtxSynchronize(), who + " kernel '" + spec.kernel + "'");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

void DeviceContext::enqueue(const LoadedLaunch &launch, KernelArguments &args, const std::string &who) {
  if (launch.host) {
    run(launch, args, who);
    return;
  }
  const LaunchSpec &spec = *launch.spec;
  check(driver_.cuLaunchKernel(launch.function, spec.grid[0], spec.grid[1], spec.grid[2], spec.block[0],
                               spec.block[1], spec.block[2], spec.sharedBytes, nullptr, args.data(), nullptr),
        "launching " + who + " kernel '" + spec.kernel + "'");
}

LaunchActivity DeviceContext::activity() {
  LaunchActivity a;
  auto &cupti = KernelActivity::instance();
  if (!cupti.active()) return a;
  a.recorded = true;
  a.kernels = cupti.take();
  return a;
}

std::vector<std::string> DeviceContext::forbiddenLibrariesLoaded(const LoadedLaunch &launch,
                                                                  const std::vector<std::string> &allowed) const {
  std::vector<std::string> out;
  if (!launch.host) return out;  // device code loads no library
  const auto permitted = withLibraryDependencies(allowed);
  for (const auto &path : launch.host->loadedLibraries()) {
    const auto name = vendorLibraryOf(path);
    if (!name.empty() && std::find(permitted.begin(), permitted.end(), name) == permitted.end())
      out.push_back(name + " (" + path + ")");
  }
  return out;
}

}  // namespace kwb::worker
