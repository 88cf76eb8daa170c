#include "core/worker/slurm_allocation.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <vector>

#include "core/process/child_process.h"
#include "core/text/printable.h"

namespace kwb::worker {

namespace {

std::string value(const WorkerLauncher &launcher, const char *key) {
  const auto it = launcher.slurm.find(key);
  return it == launcher.slurm.end() ? std::string() : it->second;
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "host";
  std::string out = name;
  if (const auto dot = out.find('.'); dot != std::string::npos) out.resize(dot);
  return out;
}

// This process's PID namespace (the number in /proc/self/ns/pid's "pid:[N]"); "0" when unknown.
// Containers that share a host name (--uts=host) have PID namespaces of their own: a PID is only
// known to be gone within the same one.
std::string pidNamespace() {
  char link[64] = {};
  const ssize_t n = ::readlink("/proc/self/ns/pid", link, sizeof link - 1);
  const std::string text(link, n > 0 ? static_cast<std::size_t>(n) : 0);
  const auto open = text.find('['), close = text.find(']');
  return open == std::string::npos || close == std::string::npos || close <= open + 1 ? "0"
                                                                                        : text.substr(open + 1, close - open - 1);
}

std::string userName() {
  if (const passwd *pw = ::getpwuid(::getuid()); pw && pw->pw_name) return pw->pw_name;
  return std::to_string(::getuid());
}

// scancel of `job` (an id), or of every job of this user with `name`: what scancel said when it failed.
std::string cancelJob(const std::string &job, const std::string &name) {
  const auto program = launcherProgram("scancel");
  if (!program) return "'scancel' is not on PATH";
  ChildProcessRequest r;
  r.argv = {*program};
  if (!job.empty()) r.argv.push_back(job);
  else r.argv.insert(r.argv.end(), {"--name=" + name, "--user=" + userName()});
  r.timeout = std::chrono::seconds(30);
  const auto run = runChildProcess(r);
  return run.succeeded() ? std::string() : run.output.empty() ? "scancel failed" : run.output;
}

// The allocations this host's workbench processes asked for (slurmJobPrefix()-PID-N) whose
// process is gone: a crash or a kill left them held until their time limit. Each is cancelled;
// what was done, a line each.
std::vector<std::string> releaseOrphans() {
  std::vector<std::string> said;
  const auto program = launcherProgram("squeue");
  if (!program) return said;
  ChildProcessRequest r;
  r.argv = {*program, "--noheader", "--user=" + userName(), "--format=%i %j"};
  r.timeout = std::chrono::seconds(30);
  const auto run = runChildProcess(r);
  if (!run.succeeded()) return said;
  // PREFIX "-" PID "-" N, read from the end: a host name may hold '-' itself.
  const auto numberAtEnd = [](std::string &s) -> long {
    const auto dash = s.rfind('-');
    if (dash == std::string::npos || dash + 1 == s.size() || s.find_first_not_of("0123456789", dash + 1) != std::string::npos)
      return -1;
    const long n = std::atol(s.c_str() + dash + 1);
    s.resize(dash);
    return n;
  };
  const std::string prefix = slurmJobPrefix();
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, name;
    if (!(fields >> id >> name)) continue;
    std::string rest = name;
    if (numberAtEnd(rest) < 0) continue;
    const long pid = numberAtEnd(rest);
    if (rest != prefix) continue;
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string failed = cancelJob(id, name);
    said.push_back(failed.empty() ? "released Slurm job " + id + " (" + name + "): the process that asked for it is gone"
                                  : "could not release Slurm job " + id + " (" + name + ") left by a process that is gone: " +
                                        failed);
  }
  return said;
}

}  // namespace

std::string slurmJobPrefix() { return "kwb-workers-" + hostName() + "-" + pidNamespace(); }

int slurmWorkerCount(const WorkerLauncher &launcher) {
  const int gpus = std::atoi(value(launcher, "gpus").c_str());
  return gpus > 0 ? gpus : 1;
}

std::chrono::seconds slurmAllocationWait(const WorkerLauncher &launcher) {
  const long wait = std::atol(value(launcher, "wait").c_str());
  return std::chrono::seconds(wait > 0 ? wait : 600);
}

WorkerLauncher SlurmAllocation::inside(WorkerLauncher launcher) const {
  launcher.slurm["jobid"] = jobId_;
  return launcher;
}

std::unique_ptr<SlurmAllocation> SlurmAllocation::request(const WorkerLauncher &launcher, std::string &problem,
                                                          const Progress &progress) {
  static std::atomic<int> sequence{0};
  std::unique_ptr<SlurmAllocation> a(new SlurmAllocation);
  a->workers_ = slurmWorkerCount(launcher);
  a->name_ = slurmJobPrefix() + "-" + std::to_string(::getpid()) + "-" + std::to_string(++sequence);
  if (const auto why = launcherProblem(launcher); !why.empty()) {
    problem = "--workers: " + why;
    return nullptr;
  }
  const auto program = launcherProgram("salloc");
  if (!program) {
    problem = missingLauncherProgram(launcher, "salloc");
    return nullptr;
  }
  for (const auto &line : releaseOrphans())
    if (progress.onLine) progress.onLine(line);
  ChildProcessRequest r;
  r.argv = {*program, "--no-shell", "--job-name=" + a->name_, "--ntasks=" + std::to_string(a->workers_)};
  // GPUs exactly when the steps ask for one each (remoteWorkerCommand: unless gpus=0).
  if (value(launcher, "gpus") != "0") r.argv.push_back("--gpus=" + std::to_string(a->workers_));
  for (const char *key : {"partition", "time", "account", "qos", "constraint"})
    if (const std::string v = value(launcher, key); !v.empty()) r.argv.push_back("--" + std::string(key) + "=" + v);
  const auto wait = slurmAllocationWait(launcher);
  r.timeout = wait;
  const std::regex granted(R"(Granted job allocation (\d+))"), pending(R"((?:Pending job allocation|job) (\d+))");
  std::string seen;  // the job's id as soon as salloc names it
  r.onLine = [&](const std::string &line) {
    std::smatch m;
    if (std::regex_search(line, m, granted) || std::regex_search(line, m, pending)) seen = m[1];
    if (progress.onLine) progress.onLine(line);
  };
  r.cancelled = progress.cancelled;
  const auto run = runChildProcess(r);
  std::smatch m;
  if (run.succeeded() && std::regex_search(run.output, m, granted)) {
    a->jobId_ = m[1];
    return a;
  }
  // Not granted: a request still queued must not be granted later and hold GPUs for nothing.
  cancelJob(seen, a->name_);
  const std::string said = withoutLineEnds(run.output);
  if (!run.started) problem = "salloc did not start: " + run.startError;
  else if (run.timedOut)
    problem = "Slurm did not grant " + std::to_string(a->workers_) + " worker(s) within " + std::to_string(wait.count()) +
              " s (the request was cancelled; wait=SECONDS in --workers waits longer)";
  else if (run.cancelled) problem = "cancelled while waiting for a Slurm allocation";
  else problem = "salloc refused the allocation" + (said.empty() ? std::string() : ": " + said);
  return nullptr;
}

SlurmAllocation::~SlurmAllocation() { cancelJob(jobId_, name_); }

}  // namespace kwb::worker
