#pragma once
// Several GPUs: one Evaluator (so one sandboxed worker) per device, evaluations queued to the
// least loaded device still in the pool. A candidate and its reference are always timed on the
// same device (one evaluation runs on one device from start to end), and every result records
// the device it ran on.
//
// A device fails an evaluation when its worker cannot start, no longer reports its CUDA device,
// or dies (or hangs) on a candidate and then again on the task's own trusted reference (run as
// a probe after every worker death or timeout, so a candidate that crashes its worker does not
// count against the GPU). An evaluation the device failed is moved to another device when there
// is one. A device that fails `maxConsecutiveFailures` evaluations in a row is taken out, with a
// message; what was queued for it moves to the others. Thread-safe; no Qt.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/eval/evaluator.h"

namespace kwb {

struct EvaluatorPoolSettings {
  EvaluatorSettings evaluator;  // for every device; `device` is set per device
  std::vector<int> devices;     // CUDA ordinals; empty: every device the worker sees (CUDA_VISIBLE_DEVICES applies)
  int maxConsecutiveFailures = 3;
};

struct PoolDeviceState {
  int device = 0;
  bool removed = false;
  std::size_t queued = 0;     // waiting for this device
  bool busy = false;          // an evaluation is running on it
  std::size_t done = 0;       // evaluations finished on it
  std::string message;        // why it was removed, or the last thing that happened
};

// The devices a worker started without --device sees (its hello), or empty with `problem`.
std::vector<int> visibleDevices(const EvaluatorSettings &settings, std::string &problem);

// The same, with each device's name and architecture.
std::vector<VisibleDevice> describeVisibleDevices(const EvaluatorSettings &settings, std::string &problem);

class EvaluatorPool {
 public:
  explicit EvaluatorPool(EvaluatorPoolSettings settings, std::function<void(const std::string &)> onMessage = {});
  // Cancels what runs, fails what is queued ("cancelled"), and joins the device threads.
  ~EvaluatorPool();
  EvaluatorPool(const EvaluatorPool &) = delete;
  EvaluatorPool &operator=(const EvaluatorPool &) = delete;

  // Queues an evaluation on the least loaded device (fewest queued + running; ties to the
  // lowest ordinal). The result's deviceOrdinal says where it ran. With no device left, the
  // future holds an Error result saying so.
  std::future<EvaluationResult> submit(Task task, std::string source, EvaluationOptions options = {});

  // Queues other work on a device's evaluator (a profile, the ceilings: Evaluator::withWorker),
  // so each GPU keeps one worker: `device` (a CUDA ordinal), or the least loaded one when
  // negative. The future is false when no such device is left or it was taken out before the
  // work ran (work pinned to a device never moves to another); an exception work throws is the
  // future's.
  std::future<bool> submitWork(std::function<void(Evaluator &)> work, int device = -1);

  std::vector<PoolDeviceState> devices() const;
  // Evaluator::cancel() on every device's evaluator: what runs ends as cancelled. What is queued
  // still runs. Returns at once; safe from any thread.
  void cancelAll();
  const std::string &problem() const { return problem_; }  // why the pool has no device, if so

 private:
  struct Job {
    Task task;
    std::string source;
    EvaluationOptions options;
    std::promise<EvaluationResult> promise;
    std::vector<int> failedOn;  // the devices that failed it so far
    // Other work (submitWork) instead of an evaluation.
    std::function<void(Evaluator &)> work;
    std::promise<bool> workDone;
    bool pinned = false;  // work for one device: never moved to another
    bool retriedLost = false;  // run again on its device after a lost remote worker
  };
  // A job that will not run: an evaluation gets an Error result saying why, work a false.
  static void abandon(Job &job, Outcome outcome, const std::string &message);
  struct Device {
    int ordinal = 0;
    std::unique_ptr<Evaluator> evaluator;
    std::deque<Job> queue;
    PoolDeviceState state;
    int failures = 0;
    std::thread thread;
  };
  void run(Device &device);
  Device *leastLoadedLocked(const std::vector<int> &except = {});
  static bool deviceFailure(const EvaluationResult &result);
  static bool workerLost(const EvaluationResult &result);
  static bool workerTrouble(const EvaluationResult &result);
  // The task's reference, run as a candidate (first configuration and seed) on the device:
  // empty when the device works, else what went wrong.
  std::string probe(Device &device, const Task &task);

  EvaluatorPoolSettings settings_;
  std::function<void(const std::string &)> onMessage_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string problem_;
  std::vector<std::unique_ptr<Device>> devices_;
};

}  // namespace kwb
