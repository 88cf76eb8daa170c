#include "helpers/one_node_slurm.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "core/process/child_process.h"
#include "helpers/daemon_process.h"

namespace fs = std::filesystem;

namespace kwb::test {

namespace {

ChildProcessResult run(std::vector<std::string> argv, std::chrono::seconds timeout = std::chrono::seconds(20)) {
  ChildProcessRequest r;
  r.argv = std::move(argv);
  r.timeout = timeout;
  return runChildProcess(r);
}

std::string shortHostName() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string h = name;
  return h.substr(0, h.find('.'));
}

// This machine's GPUs as their device files, /dev/nvidia0, /dev/nvidia1, ... in number order.
std::vector<std::string> machineGpus() {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator("/dev", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("nvidia", 0) != 0 || name.size() == 6 || name.find_first_not_of("0123456789", 6) != std::string::npos)
      continue;
    found.emplace_back(std::stoi(name.substr(6)), e.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto &f : found) out.push_back(std::move(f.second));
  return out;
}

}  // namespace

OneNodeSlurm::OneNodeSlurm(Gpus gpus) {
  const std::string munged = installedProgram("munged", {"/usr/sbin/munged"});
  const std::string slurmctld = installedProgram("slurmctld", {"/usr/sbin/slurmctld"});
  const std::string slurmd = installedProgram("slurmd", {"/usr/sbin/slurmd"});
  const std::string slurmstepd = installedProgram("slurmstepd", {"/usr/sbin/slurmstepd"});
  squeue_ = installedProgram("squeue", {"/usr/bin/squeue"});
  scancel_ = installedProgram("scancel", {"/usr/bin/scancel"});
  sinfo_ = installedProgram("sinfo", {"/usr/bin/sinfo"});
  const std::string srun = installedProgram("srun", {"/usr/bin/srun"});
  const std::pair<const char *, const std::string *> needed[] = {
      {"munged", &munged}, {"slurmctld", &slurmctld}, {"slurmd", &slurmd}, {"slurmstepd", &slurmstepd},
      {"squeue", &squeue_}, {"scancel", &scancel_}, {"sinfo", &sinfo_}, {"srun", &srun}};
  for (const auto &[name, path] : needed)
    if (path->empty()) {
      problem_ = std::string(name) + " is not installed (Debian: apt install slurmctld slurmd slurm-client munge; " +
                 "packaging/install-deps.sh installs them)";
      return;
    }
  if (::geteuid() != 0) {
    problem_ = "a one-node Slurm cluster needs root here (slurmd starts the job steps)";
    return;
  }
  int count = kGpus;
  if (gpus == Gpus::Machine) {
    count = static_cast<int>(machineGpus().size());
    if (count == 0) {
      problem_ = "this machine has no GPU device files (/dev/nvidiaN) to give the Slurm node";
      return;
    }
  }
  char templ[] = "/tmp/kwb-slurm-XXXXXX";
  if (!::mkdtemp(templ)) {
    problem_ = "mkdtemp failed";
    return;
  }
  folder_ = templ;
  const std::string d = folder_.string();
  fs::create_directories(folder_ / "state");
  fs::create_directories(folder_ / "spool");
  {
    std::ofstream key(folder_ / "munge.key", std::ios::binary);
    std::random_device random;
    for (int i = 0; i < 1024; ++i) key.put(static_cast<char>(random() & 0xff));
  }
  ::chmod((folder_ / "munge.key").c_str(), 0400);
  // Slurm hands out GPUs by their device files (gres.conf): files gpu0..gpuN-1 here, character
  // devices with /dev/null's numbers. A step with --gpus=1 gets one, named in its
  // CUDA_VISIBLE_DEVICES. Without device cgroups (task/none) Slurm takes that number from the
  // file's name: gpuK stands for CUDA device K, also with this machine's GPUs behind them (whose
  // /dev/nvidiaN may carry the host's numbers, not CUDA's).
  for (int i = 0; i < count; ++i) {
    const auto file = folder_ / ("gpu" + std::to_string(i));
    if (::mknod(file.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0) {
      problem_ = "mknod " + file.string() + " failed: " + std::strerror(errno);
      return;
    }
  }
  gpus_ = count;
  {
    std::ofstream g(folder_ / "gres.conf");
    g << "Name=gpu File=" << d << (count == 1 ? "/gpu0" : "/gpu[0-" + std::to_string(count - 1) + "]") << "\n";
  }
  {
    // slurmd always loads a cgroup plugin, autodetected from /sys/fs/cgroup. With cgroup v2
    // there and no D-Bus system daemon (no systemd), cgroup/v2 cannot make its scope and ends
    // slurmd at startup (seen in Ubuntu 24.04 on a cgroup2-only kernel,
    // tests/gpu/emulate-device.sh; with cgroup2 mounted in a mount namespace it ends on
    // "Hybrid mode"). This cluster tracks processes without cgroups (proctrack/linuxproc,
    // task/none): cgroup/v1 loads without touching any.
    std::ofstream g(folder_ / "cgroup.conf");
    g << "CgroupPlugin=cgroup/v1\n";
  }
  const std::string socket = d + "/munge.sock";
  munged_ = startDaemon({munged, "-F", "-f", "--key-file=" + d + "/munge.key", "--socket=" + socket,
                         "--pid-file=" + d + "/munged.pid", "--seed-file=" + d + "/munged.seed",
                         "--log-file=" + d + "/munged.log"},
                        d + "/munged.out");
  const std::string host = shortHostName();
  {
    std::ofstream c(folder_ / "slurm.conf");
    // A bundle's Slurm (tests/gpu/pack-bundle.sh) loads its plugins from the bundle.
    const char *plugins = std::getenv("KWB_SLURM_PLUGIN_DIR");
    const std::string pluginDir = plugins && *plugins ? "PluginDir=" + std::string(plugins) + "\n" : "";
    c << "ClusterName=kwbtest\nSlurmctldHost=" << host << "(127.0.0.1)\nSlurmctldPort=" << freeLoopbackPort()
      << "\nSlurmdPort=" << freeLoopbackPort() << "\nAuthType=auth/munge\nAuthInfo=socket=" << socket
      << "\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\nStateSaveLocation=" << d
      << "/state\nSlurmdSpoolDir=" << d << "/spool\nSlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmdPidFile=" << d
      << "/slurmd.pid\nSlurmctldLogFile=" << d << "/slurmctld.log\nSlurmdLogFile=" << d << "/slurmd.log\n"
      << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
      << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nMpiDefault=none\nReturnToService=2\n"
      << pluginDir << "SlurmctldTimeout=30\nSlurmdTimeout=30\nKillWait=2\nGresTypes=gpu\n"
      // As many CPUs as a GPU node has for its GPUs (a worker step takes one), whatever this
      // machine has: config_overrides keeps the node up with fewer.
      << "SlurmdParameters=config_overrides\n"
      << "NodeName=" << host << " NodeAddr=127.0.0.1 CPUs=" << std::max(2L * gpus_, ::sysconf(_SC_NPROCESSORS_ONLN))
      << " Gres=gpu:" << gpus_ << " State=UNKNOWN\nPartitionName=" << kPartition << " Nodes=" << host
      << " Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64\n";
  }
  if (const char *old = std::getenv("SLURM_CONF")) {
    hadConf_ = true;
    previousConf_ = old;
  }
  ::setenv("SLURM_CONF", (d + "/slurm.conf").c_str(), 1);
  // munged first: the daemons authenticate through it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(socket)) {
    if (daemonExited(munged_) || std::chrono::steady_clock::now() > deadline) {
      munged_ = -1;
      problem_ = "munged did not start: " + readText(d + "/munged.out") + readText(d + "/munged.log");
      return;
    }
    ::poll(nullptr, 0, 20);
  }
  controller_ = startDaemon({slurmctld, "-D", "-i", "-f", d + "/slurm.conf"}, d + "/slurmctld.out");
  node_ = startDaemon({slurmd, "-D", "-d", slurmstepd, "-f", d + "/slurm.conf", "-N", host}, d + "/slurmd.out");
  // Ready when sinfo says the node is idle.
  for (;;) {
    const auto state = run({sinfo_, "-h", "-o", "%T"}, std::chrono::seconds(10));
    if (state.succeeded() && state.output.find("idle") != std::string::npos) break;
    if (daemonExited(controller_) || daemonExited(node_) || std::chrono::steady_clock::now() > deadline) {
      problem_ = "the Slurm node did not become idle within 30 s (sinfo: " + state.output + ")\n" + logs();
      // QTest cuts a failure's message at about 1 KB: the daemons' logs go to stderr whole.
      std::cerr << problem_ << "\n";
      return;
    }
    ::poll(nullptr, 0, 100);
  }
}

OneNodeSlurm::~OneNodeSlurm() {
  if (controller_ > 0 && problem_.empty()) run({scancel_, "--partition=" + std::string(kPartition)});
  stopDaemon(node_);
  stopDaemon(controller_);
  stopDaemon(munged_);
  if (hadConf_) ::setenv("SLURM_CONF", previousConf_.c_str(), 1);
  else ::unsetenv("SLURM_CONF");
  std::error_code ec;
  if (!folder_.empty()) fs::remove_all(folder_, ec);
}

std::vector<std::string> OneNodeSlurm::steps() const {
  std::vector<std::string> out;
  const auto r = run({squeue_, "-h", "-s", "-o", "%i"});
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line.find('.') != std::string::npos && line.find("extern") == std::string::npos) out.push_back(line);
  return out;
}

std::vector<std::string> OneNodeSlurm::jobs() const {
  std::vector<std::string> out;
  const auto r = run({squeue_, "-h", "-o", "%i %j %T"});
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::string OneNodeSlurm::cancel(const std::string &step) const {
  const auto r = run({scancel_, step});
  return r.succeeded() ? std::string() : "scancel " + step + ": " + r.output;
}

std::string OneNodeSlurm::logs() const {
  std::string out;
  for (const char *f : {"slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"})
    out += std::string("--- ") + f + "\n" + readText(folder_ / f);
  return out;
}

}  // namespace kwb::test
