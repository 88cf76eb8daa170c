#pragma once
// A Slurm allocation the workbench asks for itself (issue 22): `salloc --no-shell` for a pool of
// workers, one GPU each, so that every worker step (and every restart of one) runs inside it
// with `srun --jobid` at once, instead of each step waiting in the queue as a job of its own.
// Released (scancel) when destroyed; its time limit ends it if this process never gets there, and
// the next request from this host releases it sooner: its name carries the host, the PID
// namespace and the process.
// No Qt.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/worker/worker_launcher.h"

namespace kwb::worker {

// The start of the job names of the allocations this process asks for: "kwb-workers-HOST-NS"
// (NS: its PID namespace); a name then adds "-PID-N".
std::string slurmJobPrefix();

// How many workers a Slurm launcher stands for: gpus=N gives N (one GPU each); gpus=0 or none
// gives one.
int slurmWorkerCount(const WorkerLauncher &launcher);

// How long salloc may wait for the allocation: the launcher's wait=SECONDS, else 600 s.
std::chrono::seconds slurmAllocationWait(const WorkerLauncher &launcher);

class SlurmAllocation {
 public:
  struct Progress {
    std::function<void(const std::string &line)> onLine;  // what salloc says, as it says it
    std::function<bool()> cancelled;                       // true: give up (the pending job is cancelled)
  };
  // `salloc --no-shell --job-name=kwb-workers-HOST-NS-PID-N --ntasks=W [--gpus=W]` with the launcher's
  // partition, time, account, qos and constraint, for W = slurmWorkerCount(launcher). First, the
  // allocations left by this host's workbench processes that are gone (a crash, a kill) are
  // cancelled, each said through onLine. Null with
  // `problem` (salloc's own words, or the wait that ran out: a request still queued is cancelled).
  static std::unique_ptr<SlurmAllocation> request(const WorkerLauncher &launcher, std::string &problem,
                                                  const Progress &progress = {});
  ~SlurmAllocation();  // scancel of the job
  SlurmAllocation(const SlurmAllocation &) = delete;
  SlurmAllocation &operator=(const SlurmAllocation &) = delete;

  const std::string &jobId() const { return jobId_; }
  const std::string &name() const { return name_; }
  int workers() const { return workers_; }
  // The launcher with jobid= this allocation: its steps run inside it.
  WorkerLauncher inside(WorkerLauncher launcher) const;

 private:
  SlurmAllocation() = default;
  std::string jobId_, name_;
  int workers_ = 1;
};

}  // namespace kwb::worker
