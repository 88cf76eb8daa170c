#pragma once
// One worker per GPU. A worker that dies is replaced at once; what it was doing is not re-sent
// (its requests end "worker-died" or "timeout" and the caller decides). A device whose workers
// die `maxConsecutiveDeaths` times within `deathWindow` without completing a request in
// between is taken out of the pool, with a message saying why; reinstate() puts it back.
// Scheduling across GPUs is deliberately simple here: a named device, or the least busy one.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/worker/worker_client.h"

namespace kwb::worker {

struct WorkerPoolOptions {
  WorkerClientOptions worker;  // for every worker; `device` is set per worker
  int maxConsecutiveDeaths = 3;
  std::chrono::milliseconds deathWindow{60000};
};

struct PoolDeviceStatus {
  int device = 0;
  std::string state;        // "starting", "ready", "dead", "stopped" or "removed"
  std::string message;      // the last thing that happened to it, in words
  int recentDeaths = 0;     // consecutive deaths inside the window
  std::uint64_t starts = 0; // workers started for it so far
  std::size_t inFlight = 0;
  SandboxStatus sandbox;
};

struct PoolSubmission {
  bool accepted = false;  // false: nothing was sent and the handlers will not be called
  int device = -1;
  std::uint64_t id = 0;
  std::string error;      // why not accepted
};

class WorkerPool {
 public:
  static constexpr int kAnyDevice = -1;

  // `devices` are CUDA device indices; onMessage hears about deaths, restarts and removals.
  WorkerPool(std::vector<int> devices, WorkerPoolOptions options,
             std::function<void(const std::string &)> onMessage = {});
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  void start();
  // Until every device still in the pool has a ready worker (true) or the time is up.
  bool waitUntilReady(std::chrono::milliseconds timeout);

  // Sends to `device`, or with kAnyDevice to the ready device with the fewest requests in flight.
  PoolSubmission submit(int device, const std::string &cmd, Json params, RequestHandlers handlers,
                        std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  std::vector<PoolDeviceStatus> status() const;
  // Puts a removed device back and starts a fresh worker for it. False for an unknown device.
  bool reinstate(int device);
  // The serving kwb-worker process of a device (diagnostics and tests); -1 if none.
  pid_t workerProcessId(int device) const;

 private:
  struct Slot;
  Slot *find(int device) const;
  void workerExited(Slot &slot, const WorkerExit &exit);

  WorkerPoolOptions options_;
  std::function<void(const std::string &)> onMessage_;
  mutable std::mutex mutex_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace kwb::worker
