#pragma once
// A real one-node Slurm cluster for the remote-worker tests (issue 22): munged with a key made for
// it, slurmctld and slurmd (Debian's packages) in the foreground, a configuration written to a
// temporary folder (this host as the one node, partition `kwb`, no GPUs, process tracking without
// cgroups), on free loopback ports. $SLURM_CONF points srun, squeue and scancel at it while it
// lives. Needs root (slurmd). No Qt.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kwb::test {

class OneNodeSlurm {
 public:
  OneNodeSlurm();
  ~OneNodeSlurm();
  OneNodeSlurm(const OneNodeSlurm &) = delete;
  OneNodeSlurm &operator=(const OneNodeSlurm &) = delete;

  const std::string &problem() const { return problem_; }  // empty when the node is idle and ready
  static constexpr const char *kPartition = "kwb";
  // The job steps running now ("JOBID.STEPID"), from squeue.
  std::vector<std::string> steps() const;
  // scancel of one step; what scancel said when it failed.
  std::string cancel(const std::string &step) const;
  std::string logs() const;  // the daemons' logs, for a failure message

 private:
  std::filesystem::path folder_;
  std::string problem_;
  pid_t munged_ = -1, controller_ = -1, node_ = -1;
  std::string previousConf_;
  bool hadConf_ = false;
};

}  // namespace kwb::test
