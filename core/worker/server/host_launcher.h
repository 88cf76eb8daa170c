#pragma once
// A host launcher's code runs in a process of its own, never in the worker.
//
// The worker holds the reply channel, the reference's outputs, the poison and the verdict; a
// candidate's host code (a shared library exporting kwb_launch, with static constructors and
// threads of its own) could write forged replies on that channel or read those buffers if it ran
// there. So the worker starts `kwb-worker --host-launcher` for each distinct library: a child in
// the same sandbox (namespaces, seccomp filter) that opens the library, makes its own CUDA
// context on the same device, and on each request maps the worker's tensor buffers through CUDA
// IPC handles, calls kwb_launch and synchronises its whole context (every stream the candidate
// used). It talks to the worker over two pipes of its own; its stdout goes to the worker's
// stderr. The worker only ever shares the buffers the candidate's arguments name (allocated in
// 2 MiB multiples: IPC shares a whole block). The worker is not dumpable, so the child cannot
// open /proc/<worker>/fd or /mem. The child runs in a process group of its own that is stopped
// (SIGSTOP) whenever it is not answering a request, and killed as a group.
//
// What the child says is untrusted: the worker reads its lines with a length limit and an exact
// grammar, and a child that breaks it is killed and the launch is a runtime error. The time of a
// host-launcher launch is the worker's own clock from the request to the child's answer: host
// work, copies and every stream count. (A child could answer before its GPU work ends; the
// outputs of the first and last timed sample are still checked, and the work would still delay
// the next request.)
//
// Child protocol, one line each way (ASCII):
//   child:  "ready"  |  "error NAME MESSAGE"             once, after loading
//   worker: "launch REPEAT N ARG..."  ARG = "p:HEX" (a 64-byte CUDA IPC memory handle) | "s:INT"
//   child:  "done STATUS"  (0, or kwb_launch's cudaError_t)  |  "failed NAME MESSAGE" (CUDA)
//   worker: "release"  (unmap every buffer)    child: "done 0"
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/gpu/cuda_driver.h"

namespace kwb::worker {

// One kernel argument as the child gets it.
struct HostArgument {
  bool pointer = false;
  CUdeviceptr device = 0;  // an allocation's base (the worker's tensors are)
  long long value = 0;     // a size
};

// What one request to the child came to.
struct HostLaunchResult {
  enum class Status { Done, LaunchError, CudaFailed, Died, Protocol } status = Status::Done;
  int code = 0;          // kwb_launch's return (LaunchError)
  std::string name;      // CUDA error name, "host-launcher-died", "host-launcher-protocol"
  std::string message;   // in words
  double seconds = 0;    // the worker's clock, request to answer
};

class HostLauncherProcess {
 public:
  // Starts the child for the library at `libraryPath` on CUDA device `device` and waits for its
  // first line. An empty path starts a clean child with no candidate code: its launches run one
  // empty kernel of its own (the round trip a host launcher's time includes but does not owe). nullptr with `name`/`problem` set when it cannot start, the library does not
  // load or lacks kwb_launch (the names LoadFailure uses: "dlopen", "no-entry-point", ...).
  // `executable` is kwb-worker (itself, unless a test says otherwise). The child fences off the
  // vendor libraries `allowedLibraries` does not name before it opens the library
  // (core/sandbox/library_fence.h); fence() then says how.
  static std::unique_ptr<HostLauncherProcess> start(const std::string &libraryPath, int device, std::string &name,
                                                    std::string &problem,
                                                    const std::string &executable = "/proc/self/exe",
                                                    const std::vector<std::string> &allowedLibraries = {});
  // The same for a library's bytes: written to the private directory ($TMPDIR) first.
  static std::unique_ptr<HostLauncherProcess> startWithImage(const std::string &image, int device, std::string &name,
                                                             std::string &problem,
                                                             const std::vector<std::string> &allowedLibraries);
  // "landlock ABI 7: 3 library files fenced off", or why there is no fence.
  const std::string &fence() const { return fence_; }
  ~HostLauncherProcess();
  HostLauncherProcess(const HostLauncherProcess &) = delete;
  HostLauncherProcess &operator=(const HostLauncherProcess &) = delete;

  // kwb_launch(args, stream) `repeat` times, then the child's context synchronised. `driver`
  // makes the IPC handles of the pointers (in the worker's current context).
  HostLaunchResult launch(CudaDriver &driver, const std::vector<HostArgument> &args, std::size_t repeat = 1);
  // Unmaps every buffer in the child (before the worker frees them).
  void release();
  bool alive() const { return pid_ > 0; }
  // Set while a request's launch uses it (DeviceContext::load/release): not evicted then.
  bool inUse = false;
  pid_t pid() const { return pid_; }
  // The shared libraries the child has mapped (from /proc/PID/maps).
  std::vector<std::string> loadedLibraries() const;

 private:
  HostLauncherProcess() = default;
  HostLaunchResult exchange(const std::string &line);
  bool readLine(std::string &line);
  void kill();
  // Kills the process and its group and waits for it; its wait status (0 when none was running).
  int reap();
  void stop();

  pid_t pid_ = -1;
  int toChild_ = -1, fromChild_ = -1;
  std::string fence_;
  std::string buffer_;
  bool mapped_ = false;  // buffers may be mapped in the child
  // Each buffer's IPC handle, made once until release(): a handle made again for the same
  // allocation need not be the same bytes, and the child maps each distinct handle anew.
  std::map<CUdeviceptr, std::string> handles_;
};

// The child's side: `kwb-worker --host-launcher LIBRARY --device N` (LIBRARY "-": the clean
// child) with the request pipe on fd 3 and the answer pipe on fd 4. Returns the process's exit
// status.
int runHostLauncherChild(const std::string &libraryPath, int device, const std::vector<std::string> &allowedLibraries);

}  // namespace kwb::worker
