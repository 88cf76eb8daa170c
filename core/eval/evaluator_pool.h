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
//
// Through Slurm (issue 22) a device is a worker step with one GPU of its own: `gpus=N` gives N
// of them, numbered 0..N-1 by the pool (each step's worker sees its GPU as CUDA device 0). Unless
// the launcher names an allocation (jobid=), the pool asks for one (salloc, N GPUs) before its
// first worker starts and releases it when destroyed.
//
// Several hosts (issue 49: EvaluatorSettings::hosts, --workers ssh://a,ssh://b): each host's
// worker is asked which GPUs it sees (all hosts at once), and every one joins the pool, numbered
// 0..N-1 host after host; a host that answers with no GPU, or not at all, is left out with a
// message. A host lost mid-batch (its connection dropped, its sshd gone) fails what runs there as
// a lost worker: that evaluation and what was queued there move to the other hosts' GPUs, and
// each evaluation has one result, counted once on the GPU that gave it.
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
#include "core/worker/slurm_allocation.h"

namespace kwb {

struct EvaluatorPoolSettings {
  EvaluatorSettings evaluator;  // for every device; `device` is set per device
  std::vector<int> devices;     // CUDA ordinals; empty: every device the worker sees (CUDA_VISIBLE_DEVICES applies)
  int maxConsecutiveFailures = 3;
  // Polled while the pool waits for a Slurm allocation (salloc): true gives up (the pool then has
  // no device and says so). Optional.
  std::function<bool()> cancelled;
};

struct PoolDeviceState {
  int device = 0;             // the pool's number for it (a CUDA ordinal on one host)
  std::string host;           // several hosts: its host's launcher ("ssh://gpu-a"); empty: one host
  int hostDevice = 0;         // its CUDA ordinal on that host
  bool removed = false;
  std::size_t queued = 0;     // waiting for this device
  bool busy = false;          // an evaluation is running on it
  std::size_t done = 0;       // evaluations finished on it (one that failed here and moved counts where it ended)
  std::string message;        // why it was removed, or the last thing that happened
  std::string where;          // a remote worker: its host, Slurm step and CUDA_VISIBLE_DEVICES; empty: local
  std::size_t movedAway = 0;  // evaluations that failed here and went to another GPU (or ran again)
  std::size_t lostWorkers = 0;  // of those, lost workers (a dropped connection, a cancelled step)
};

// Several hosts: one line's worth per host, from its GPUs' states (the GPUs dock).
struct PoolHostState {
  std::string host;           // its launcher ("ssh://gpu-a")
  int gpus = 0, gpusLeft = 0; // in the pool; not taken out
  std::size_t busy = 0, queued = 0, done = 0, movedAway = 0, lostWorkers = 0;
};
// In the order the hosts' GPUs come; empty for a pool of one host.
std::vector<PoolHostState> poolHosts(const std::vector<PoolDeviceState> &devices);
// "ssh://gpu-a: 2 GPUs · 1 busy · 14 done · 3 moved away or run again (2 lost workers) · shared connection up
// (set up in 182 ms, reused 15 times)"; the connection part from ensureSshMaster's record.
std::string describePoolHost(const PoolHostState &host, const worker::SshConnectionStats &connection);

// The devices a worker started without --device sees (its hello), or empty with `problem`.
std::vector<int> visibleDevices(const EvaluatorSettings &settings, std::string &problem);

// The same, with each device's name and architecture. Through Slurm: the launcher's N workers
// (gpus=N), numbered 0..N-1, each like the GPU one step saw.
std::vector<VisibleDevice> describeVisibleDevices(const EvaluatorSettings &settings, std::string &problem);

class EvaluatorPool;

// A pool on the GPUs chosen by number (`gpus`; empty: every one the launcher gives), and what they
// are (`described`: name, architecture). Through Slurm the allocation is asked for first and the
// GPUs are looked at inside it: a look of its own would queue as a job of its own. Null, with
// `problem`, when none of them is there (or the allocation was refused, not granted in time, or
// given up through `settings.cancelled`).
std::unique_ptr<EvaluatorPool> poolOfChosenDevices(EvaluatorPoolSettings settings, const std::vector<int> &gpus,
                                                   std::vector<VisibleDevice> &described, std::string &problem);

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
  // Several hosts: what each GPU in the pool is (name, architecture), numbered by the pool; empty
  // for a pool of one host (describeVisibleDevices says that).
  std::vector<VisibleDevice> describedDevices() const;
  // The Slurm allocation the pool asked for (its job id), or empty.
  std::string allocation() const;
  // Its devices' evaluator settings: where their workers run (through Slurm: inside the pool's
  // allocation), for an evaluator of the same kind outside the pool (device 0 of a step).
  const EvaluatorSettings &evaluatorSettings() const { return settings_.evaluator; }
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
    VisibleDevice described;  // several hosts: what its host's worker said of it
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

  // The device's `where` from its evaluator's worker, after a job.
  void noteWhere(Device &device);
  // Several hosts: every host's GPUs as devices, numbered host after host.
  void addHostDevices();
  void addDevice(int number, const EvaluatorSettings &settings, const std::string &host, int hostDevice);
  static std::string nameOf(const Device &device);  // "GPU 2", "GPU 2 (ssh://b, its GPU 0)"

  EvaluatorPoolSettings settings_;
  std::function<void(const std::string &)> onMessage_;
  // Released after the devices' workers stopped (members go in reverse order).
  std::unique_ptr<worker::SlurmAllocation> allocation_;
  bool stepDevices_ = false;  // Slurm: every device is CUDA device 0 of its own step
  bool renumbered_ = false;   // results carry the pool's number (Slurm steps, several hosts)
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string problem_;
  std::vector<std::unique_ptr<Device>> devices_;
};

}  // namespace kwb
