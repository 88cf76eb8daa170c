#pragma once
// A real one-node Slurm cluster for the remote-worker tests (issue 22): munged with a key made for
// it, slurmctld and slurmd (Debian's packages, or a bundle's copies on $PATH with their plugins in
// $KWB_SLURM_PLUGIN_DIR) in the foreground, a configuration written to a temporary folder (this
// host as the one node, partition `kwb`, process tracking without cgroups), on free loopback
// ports. The node has GPUs for Slurm to hand out, so that steps get a GPU each and their own
// CUDA_VISIBLE_DEVICES, as on a GPU cluster: kGpus device files that stand in for them (no CUDA
// device behind them), or as many as this machine has GPUs (/dev/nvidiaN), its real GPUs behind
// them. $SLURM_CONF points srun, squeue and scancel at it while it lives. Needs root (slurmd).
// No Qt.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kwb::test {

class OneNodeSlurm {
 public:
  enum class Gpus { StandIn, Machine };
  explicit OneNodeSlurm(Gpus gpus = Gpus::StandIn);
  ~OneNodeSlurm();
  OneNodeSlurm(const OneNodeSlurm &) = delete;
  OneNodeSlurm &operator=(const OneNodeSlurm &) = delete;

  const std::string &problem() const { return problem_; }  // empty when the node is idle and ready
  static constexpr const char *kPartition = "kwb";
  static constexpr int kGpus = 4;  // the stand-ins
  int gpus() const { return gpus_; }  // the node's: kGpus, or as many as this machine has
  // The jobs (not steps) in the queue: "JOBID NAME STATE" lines, from squeue.
  std::vector<std::string> jobs() const;
  // The job steps running now ("JOBID.STEPID"), from squeue.
  std::vector<std::string> steps() const;
  // scancel of one step; what scancel said when it failed.
  std::string cancel(const std::string &step) const;
  std::string logs() const;  // the daemons' logs, for a failure message

 private:
  std::filesystem::path folder_;
  std::string problem_;
  int gpus_ = 0;
  std::string squeue_, scancel_, sinfo_;
  pid_t munged_ = -1, controller_ = -1, node_ = -1;
  std::string previousConf_;
  bool hadConf_ = false;
};

}  // namespace kwb::test
