#include "core/worker/worker_launcher.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

#include "core/process/child_process.h"
#include "core/sandbox/sandbox.h"
#include "core/text/printable.h"

namespace kwb::worker {

namespace {

const char *kSlurmKeys[] = {"partition", "gpus", "time", "jobid", "worker", "account", "qos", "constraint", "wait"};

bool onlyOf(const std::string &value, const char *others) {
  return std::all_of(value.begin(), value.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (c != 0 && std::strchr(others, c));
  });
}

bool digits(const std::string &value) {
  return !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A whole number of digits only (no sign, no spaces) within [low, high].
bool wholeNumberIn(const std::string &value, long low, long high) {
  if (!digits(value) || value.size() > 9) return false;
  const long n = std::stol(value);
  return n >= low && n <= high;
}

// Slurm's time formats: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS,
// DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS, or UNLIMITED / INFINITE.
bool slurmTime(const std::string &value) {
  if (value == "UNLIMITED" || value == "INFINITE") return true;
  static const std::regex form(R"((\d{1,6}-)?\d{1,6}(:\d{1,2}){0,2})");
  return std::regex_match(value, form);
}

// An absolute path to a program: '/' first (never an option), and only characters a path of an
// installed program holds (no spaces, quotes, control characters or shell syntax).
bool programPath(const std::string &value) { return value.size() > 1 && value.front() == '/' && onlyOf(value, "/_.-+@%:=~"); }

// A name (partition, account, qos, user, host): never begins with '-', so never an option.
bool plainName(const std::string &value, const char *others) {
  return !value.empty() && value.front() != '-' && onlyOf(value, others);
}

// Why `value` will not do for the Slurm field `key` (the rule), or empty.
std::string slurmFieldRule(const std::string &key, const std::string &value) {
  if (key == "worker")
    return programPath(value) ? "" : "must be the absolute path of kwb-worker on the cluster's nodes "
                                     "(/opt/kwb/bin/kwb-worker: '/' first; letters, digits and / _ . - + @ % : = ~)";
  if (key == "gpus") return wholeNumberIn(value, 0, 4096) ? "" : "must be a number of GPUs, 0 to 4096";
  if (key == "wait") return wholeNumberIn(value, 1, 604800) ? "" : "must be a number of seconds, 1 to 604800 (a week)";
  if (key == "jobid") return wholeNumberIn(value, 1, 999999999) ? "" : "must be a job id: digits only (squeue's JOBID)";
  if (key == "time")
    return slurmTime(value) ? "" : "must be a time limit as srun takes it: MINUTES, HH:MM:SS, DAYS-HH[:MM[:SS]] or UNLIMITED";
  if (key == "constraint")
    return plainName(value, "_.-|&*[]():!")
               ? ""
               : "must be a feature expression: letters, digits and _ . - | & * [ ] ( ) : !, not beginning with '-'";
  return plainName(value, "_.-") ? "" : "must be a name of letters, digits and _ . -, not beginning with '-'";
}

// Why `host` ([USER@]HOST) will not do, or empty.
std::string sshHostRule(const std::string &host) {
  const auto at = host.find('@');
  const std::string user = at == std::string::npos ? std::string() : host.substr(0, at);
  const std::string name = at == std::string::npos ? host : host.substr(at + 1);
  if (at != std::string::npos && !plainName(user, "_.-"))
    return "the user must be letters, digits and _ . -, not beginning with '-'";
  if (!plainName(name, "_.-")) return "the host must be letters, digits and _ . -, not beginning with '-'";
  return {};
}

}  // namespace

std::string launcherProblem(const WorkerLauncher &launcher) {
  if (launcher.kind == WorkerLauncher::Kind::Ssh) {
    if (const auto rule = sshHostRule(launcher.host); !rule.empty())
      return "'" + printable(launcher.host, 200) + "' is not [USER@]HOST: " + rule;
    // 0 is the struct's "no port given": no -p, ssh's own choice (~/.ssh/config).
    if (launcher.port < 0 || launcher.port > 65535)
      return "port " + std::to_string(launcher.port) + " is not a port number (1 to 65535, or 0 for ssh's own choice)";
    if (!launcher.remoteWorker.empty() && !programPath(launcher.remoteWorker))
      return "the worker program '" + printable(launcher.remoteWorker, 200) + "' " + slurmFieldRule("worker", "");
  }
  if (launcher.kind == WorkerLauncher::Kind::Slurm) {
    for (const auto &[key, value] : launcher.slurm) {
      if (std::find(std::begin(kSlurmKeys), std::end(kSlurmKeys), key) == std::end(kSlurmKeys))
        return "'" + printable(key, 100) + "' is not a known key (partition, gpus, time, jobid, worker, account, qos, "
               "constraint, wait)";
      if (const auto rule = slurmFieldRule(key, value); !rule.empty())
        return key + "='" + printable(value, 200) + "': " + key + " " + rule;
    }
    if (!launcher.remoteWorker.empty() && !programPath(launcher.remoteWorker))
      return "worker='" + printable(launcher.remoteWorker, 200) + "': worker " + slurmFieldRule("worker", "");
  }
  return {};
}

std::string shellQuote(const std::string &argument) {
  if (!argument.empty() && argument.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                      "_-./=:,+@%") == std::string::npos)
    return argument;
  std::string out = "'";
  for (const char c : argument) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::optional<std::string> launcherProgram(const std::string &program) {
  std::string path = program;
  if (program.find('/') == std::string::npos) {
    const auto found = findOnPath(program);
    if (!found) return std::nullopt;
    path = found->string();
  }
  if (::access(path.c_str(), X_OK) != 0) return std::nullopt;
  return path;
}

std::string missingLauncherProgram(const WorkerLauncher &launcher, const std::string &program) {
  if (launcher.kind == WorkerLauncher::Kind::Slurm)
    return "'" + program + "' is not on PATH: workers through Slurm need its client commands on this machine " +
           "(Debian and Ubuntu: apt install slurm-client; or run the workbench on the cluster's login node)";
  return "'" + program + "' is not on PATH: workers over SSH need OpenSSH's client on this machine " +
         "(Debian and Ubuntu: apt install openssh-client)" +
         (std::getenv("KWB_SSH_COMMAND") ? " ($KWB_SSH_COMMAND names it)" : "");
}

std::string WorkerLauncher::describe() const {
  if (kind == Kind::Local) return "local";
  if (kind == Kind::Ssh) return "ssh://" + host + (port ? ":" + std::to_string(port) : std::string());
  std::string out = "slurm";
  std::string details;
  auto add = [&](const std::string &text) { details += (details.empty() ? "" : ", ") + text; };
  if (auto it = slurm.find("jobid"); it != slurm.end()) add("job " + it->second);
  if (auto it = slurm.find("partition"); it != slurm.end()) add("partition " + it->second);
  if (auto it = slurm.find("gpus"); it != slurm.end()) add(it->second + " GPUs");
  if (auto it = slurm.find("time"); it != slurm.end()) add("time " + it->second);
  return details.empty() ? out : out + " (" + details + ")";
}

std::string WorkerLauncher::spec() const {
  if (kind == Kind::Local) return "local";
  if (kind == Kind::Ssh)
    return "ssh://" + host + (port ? ":" + std::to_string(port) : std::string()) + remoteWorker;
  std::string out = "slurm:";
  bool first = true;
  for (const auto &[key, value] : slurm) out += (first ? "" : ",") + key + "=" + value, first = false;
  return out;
}

std::optional<std::vector<WorkerLauncher>> parseWorkerLaunchers(const std::string &spec, std::string &problem) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (std::size_t at = spec.find(','); at != std::string::npos; at = spec.find(',', at + 1)) {
    const std::string next = spec.substr(at + 1);
    const bool starts = next.rfind("ssh://", 0) == 0 || next.rfind("slurm:", 0) == 0 ||
                        (next.rfind("local", 0) == 0 && (next.size() == 5 || next[5] == ','));
    if (!starts) continue;
    parts.push_back(spec.substr(from, at - from));
    from = at + 1;
  }
  parts.push_back(spec.substr(from));
  std::vector<WorkerLauncher> out;
  for (const auto &part : parts) {
    if (parts.size() > 1 && part.empty()) {
      problem = "--workers " + printable(spec, 300) + ": an empty part between commas; expected hosts as ssh://a,ssh://b";
      return std::nullopt;
    }
    auto l = parseWorkerLauncher(part, problem);
    if (!l) return std::nullopt;
    if (parts.size() > 1 && l->kind == WorkerLauncher::Kind::Slurm) {
      problem = "--workers " + printable(spec, 300) + ": a Slurm launcher stands alone (its GPUs are steps of one "
                "allocation); list ssh:// hosts and local together, and use slurm:... on its own";
      return std::nullopt;
    }
    for (const auto &seen : out)
      if (seen.kind == l->kind && seen.host == l->host && seen.port == l->port) {
        problem = "--workers " + printable(spec, 300) + ": " + l->describe() + " is listed twice; each host once "
                  "(the pool uses every GPU a host's worker sees)";
        return std::nullopt;
      }
    out.push_back(std::move(*l));
  }
  return out;
}

std::string launchersSpec(const std::vector<WorkerLauncher> &launchers) {
  std::string out;
  for (const auto &l : launchers) out += (out.empty() ? "" : ",") + l.spec();
  return out;
}

std::optional<WorkerLauncher> parseWorkerLauncher(const std::string &spec, std::string &problem) {
  const std::string expected =
      "expected local, ssh://[USER@]HOST[:PORT][/PATH/TO/kwb-worker] or "
      "slurm:partition=P,gpus=N,time=HH:MM:SS[,jobid=N][,worker=PATH][,wait=SECONDS]";
  // The spec is shown as typed, its control characters escaped.
  const std::string shown = "--workers " + printable(spec, 300) + ": ";
  WorkerLauncher l;
  if (spec.empty() || spec == "local") return l;
  if (spec.rfind("ssh://", 0) == 0) {
    l.kind = WorkerLauncher::Kind::Ssh;
    std::string rest = spec.substr(6);
    if (const auto slash = rest.find('/'); slash != std::string::npos) {
      l.remoteWorker = rest.substr(slash);
      rest = rest.substr(0, slash);
    }
    if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
      const std::string port = rest.substr(colon + 1);
      if (!wholeNumberIn(port, 1, 65535)) {
        problem = shown + "'" + printable(port, 100) + "' is not a port number (1 to 65535)";
        return std::nullopt;
      }
      l.port = std::stoi(port);
      rest = rest.substr(0, colon);
    }
    if (const auto rule = sshHostRule(rest); !rule.empty()) {
      problem = shown + "'" + printable(rest, 200) + "' is not a host name ([USER@]HOST: " + rule + "); " + expected;
      return std::nullopt;
    }
    l.host = rest;
    if (!l.remoteWorker.empty() && !programPath(l.remoteWorker)) {
      problem = shown + "the worker program '" + printable(l.remoteWorker, 200) + "' " + slurmFieldRule("worker", "");
      return std::nullopt;
    }
    return l;
  }
  if (spec.rfind("slurm", 0) == 0 && (spec.size() == 5 || spec[5] == ':')) {
    l.kind = WorkerLauncher::Kind::Slurm;
    std::istringstream fields(spec.size() > 6 ? spec.substr(6) : std::string());
    for (std::string field; std::getline(fields, field, ',');) {
      if (field.empty()) continue;
      const auto eq = field.find('=');
      const std::string key = field.substr(0, eq), value = eq == std::string::npos ? "" : field.substr(eq + 1);
      if (std::find(std::begin(kSlurmKeys), std::end(kSlurmKeys), key) == std::end(kSlurmKeys) || value.empty()) {
        problem = shown + "'" + printable(field, 200) + "' is not KEY=VALUE with a known key (partition, gpus, time, " +
                  "jobid, worker, account, qos, constraint, wait)";
        return std::nullopt;
      }
      // Each value reaches srun and salloc as an argument of its own (no shell), and is checked by
      // its kind: never an option of theirs, never a character they would read otherwise.
      if (const auto rule = slurmFieldRule(key, value); !rule.empty()) {
        problem = shown + key + "='" + printable(value, 200) + "': " + key + " " + rule;
        return std::nullopt;
      }
      l.slurm[key] = value;
    }
    if (auto it = l.slurm.find("worker"); it != l.slurm.end()) l.remoteWorker = it->second;
    return l;
  }
  problem = shown + expected;
  return std::nullopt;
}

std::vector<std::string> sshCommand() {
  std::vector<std::string> out;
  if (const char *env = std::getenv("KWB_SSH_COMMAND"); env && *env) {
    std::istringstream words(env);
    for (std::string w; words >> w;) out.push_back(w);
  }
  if (out.empty()) out.push_back("ssh");
  return out;
}

std::string sshControlDirectory() {
  std::string dir;
  if (const char *runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime) dir = std::string(runtime) + "/kwb-ssh";
  // A runtime folder too deep for ssh's socket path (ssh would refuse to share: "too long for
  // Unix domain socket") gives way to the short one.
  if (dir.empty() || dir.size() > kSshControlDirectoryMax) dir = "/tmp/kwb-ssh-" + std::to_string(::getuid());
  ::mkdir(dir.c_str(), 0700);
  struct stat st {};
  // Ours and private, or not used: another user's folder would let them reach our connections.
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077))
    return {};
  return dir;
}

namespace {

// ssh's options for reaching the launcher's host, up to the host name: the user's ssh command,
// no terminal, no prompts, keep-alives, the shared connection's path.
std::vector<std::string> sshOptions(const WorkerLauncher &launcher, const std::string &control, const char *master) {
  auto argv = sshCommand();
  argv.insert(argv.end(), {"-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3",
                           "-o", "ConnectTimeout=20"});
  if (!control.empty())
    argv.insert(argv.end(), {"-o", std::string("ControlMaster=") + master, "-o", "ControlPath=" + control + "/%C"});
  if (launcher.port) argv.insert(argv.end(), {"-p", std::to_string(launcher.port)});
  return argv;
}

// Removes the shared connections' sockets in our private `control` folder that nothing answers
// any more: a master killed without its cleanup (SIGKILL, the OOM killer) leaves its socket, and
// a new master for that host would then refuse to share ("ControlSocket ... already exists,
// disabling multiplexing") while it logs in all the same. Only names of ssh's %C form (40 hex
// digits): a master that is starting binds a temporary name first and links it when it listens,
// so a %C name always was a listening socket, and refusing now means its master is gone.
void removeStaleControlSockets(const std::string &control) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(control, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != 40 || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isxdigit(c); }))
      continue;
    const std::string path = it->path().string();
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path) continue;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    // Non-blocking: a live master whose queue is full makes a blocking connect wait, forever.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return;
    const bool refused =
        ::connect(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) != 0 && errno == ECONNREFUSED;
    ::close(fd);
    // The same socket still (not one a master of another process has just put there).
    struct stat again {};
    if (refused && ::lstat(path.c_str(), &again) == 0 && again.st_dev == st.st_dev && again.st_ino == st.st_ino)
      ::unlink(path.c_str());
  }
}

}  // namespace

namespace {

std::mutex statsMutex;
std::map<std::string, SshConnectionStats> &connectionStats() {
  static std::map<std::string, SshConnectionStats> stats;
  return stats;
}

}  // namespace

SshConnectionStats sshConnectionStats(const std::string &launcherDescription) {
  std::lock_guard lock(statsMutex);
  const auto it = connectionStats().find(launcherDescription);
  return it == connectionStats().end() ? SshConnectionStats{} : it->second;
}

std::string ensureSshMaster(const WorkerLauncher &launcher) {
  if (launcher.kind != WorkerLauncher::Kind::Ssh) return {};
  if (const auto why = launcherProblem(launcher); !why.empty()) return "--workers: " + why;
  const std::string control = sshControlDirectory();
  if (control.empty()) return {};
  const auto started = std::chrono::steady_clock::now();
  auto note = [&](bool up, bool reused, const std::string &problem) {
    std::lock_guard lock(statsMutex);
    auto &s = connectionStats()[launcher.describe()];
    s.asked = true;
    s.up = up;
    s.problem = problem;
    if (reused) {
      ++s.reused;
    } else {
      if (up) ++s.started;
      s.lastSetupMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    }
  };
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<std::mutex>> perHost;
  std::mutex *hostMutex;
  {
    std::lock_guard lock(mutex);
    auto &m = perHost[launcher.host + ":" + std::to_string(launcher.port)];
    if (!m) m = std::make_unique<std::mutex>();
    hostMutex = m.get();
  }
  std::lock_guard hostLock(*hostMutex);
  auto resolved = [](std::vector<std::string> argv) {
    if (const auto found = launcherProgram(argv.front())) argv.front() = *found;
    return argv;
  };
  ChildProcessRequest check;
  check.argv = resolved(sshOptions(launcher, control, "no"));
  check.argv.insert(check.argv.end(), {"-O", "check", "--", launcher.host});
  check.timeout = std::chrono::seconds(10);
  if (runChildProcess(check).succeeded()) {
    note(true, true, {});
    return {};
  }
  removeStaleControlSockets(control);
  // The master runs `true` on the far side through itself: with ControlPersist, ssh moves the
  // master into the background (out of this process group, in a session of its own) and runs the
  // command as its first client, so it returns only once the master answers. (With -N -f it
  // returned as the master forked, before it left the group.) Where the master cannot take its
  // socket's name, ssh runs `true` unshared and ends: nothing is left behind. Its standard
  // streams go to /dev/null and a file, through a shell, so nothing waits on them.
  auto master = resolved(sshOptions(launcher, control, "yes"));
  master.insert(master.end(), {"-o", "ControlPersist=120", "--", launcher.host, "true"});
  static std::atomic<unsigned> starts{0};
  const std::string errors =
      control + "/master-" + std::to_string(::getpid()) + "-" + std::to_string(++starts) + ".err";
  std::string line = "exec";
  for (const auto &a : master) line += " " + shellQuote(a);
  line += " </dev/null >/dev/null 2>" + shellQuote(errors);
  ChildProcessRequest start;
  start.argv = {"/bin/sh", "-c", line};
  start.timeout = std::chrono::seconds(40);
  start.killLeftovers = false;  // the master, on its way out of the group
  const auto run = runChildProcess(start);
  std::ifstream in(errors);
  std::stringstream said;
  said << in.rdbuf();
  ::unlink(errors.c_str());
  const std::string text = withoutLineEnds(said.str());
  if (!run.started) {
    const std::string problem = "could not start ssh for " + launcher.host + ": " + run.startError;
    note(false, false, problem);
    return problem;
  }
  // ssh's own failures (no connection, no login) exit 255; any other status is the far side's
  // `true` (a host that forces another command on every login), after logging in.
  if (!run.timedOut && run.signal == 0 && run.exitCode != 255) {
    // Logged in; "up" only when the master answers where the workers will look for it. When it
    // does not, each worker still logs in on its own (ssh falls back), so nothing is refused:
    // the per-host line says the connection is down, and why (ssh's own words first).
    const auto answered = runChildProcess(check);
    if (answered.succeeded()) {
      note(true, false, {});
    } else {
      std::string why = !text.empty() ? text : withoutLineEnds(answered.output);
      if (run.exitCode != 0) why += (why.empty() ? "" : "; ") + std::string("`true` there exited with status ") +
                                    std::to_string(run.exitCode);
      note(false, false,
           "ssh logged in to " + launcher.host + " but its shared connection does not answer in " + control +
               (why.empty() ? std::string() : " (" + why + ")") + "; each worker logs in on its own");
    }
    return {};
  }
  const std::string problem = "ssh could not connect to " + launcher.host + (run.timedOut ? " within 40 s" : "") +
                              (text.empty() ? std::string() : ": " + text);
  note(false, false, problem);
  return problem;
}

std::vector<std::string> remoteWorkerCommand(const WorkerLauncher &launcher,
                                             const std::vector<std::string> &workerArguments) {
  const std::string program = launcher.remoteWorker.empty() ? "kwb-worker" : launcher.remoteWorker;
  std::vector<std::string> argv;
  if (launcher.kind == WorkerLauncher::Kind::Ssh) {
    // No terminal, never a password prompt (a key or an agent, or a clear failure), keep-alives
    // so a dropped connection is noticed within a minute, through the host's shared connection
    // (ensureSshMaster) when there is one, else a connection of its own.
    argv = sshOptions(launcher, sshControlDirectory(), "no");
    argv.push_back("--");
    argv.push_back(launcher.host);
    // ssh hands the far side one command line for its shell.
    std::string remote = shellQuote(program);
    for (const auto &a : workerArguments) remote += " " + shellQuote(a);
    argv.push_back(remote);
    return argv;
  }
  if (launcher.kind == WorkerLauncher::Kind::Slurm) {
    argv = {"srun", "--nodes=1", "--ntasks=1", "--unbuffered", "--quiet", "--kill-on-bad-exit=1",
            "--job-name=kwb-worker"};
    auto opt = [&](const char *key, const std::string &flag) {
      if (auto it = launcher.slurm.find(key); it != launcher.slurm.end()) argv.push_back(flag + "=" + it->second);
    };
    opt("jobid", "--jobid");
    // Inside an allocation: only the step's own CPUs and GPU (else the first step takes every
    // CPU of its node and the next waits for it to end).
    if (launcher.slurm.count("jobid")) argv.push_back("--exact");
    opt("partition", "--partition");
    opt("account", "--account");
    opt("qos", "--qos");
    opt("constraint", "--constraint");
    opt("time", "--time");
    // One GPU per worker step (gpus=0: a cluster without GPUs, compile-only work and tests).
    if (auto it = launcher.slurm.find("gpus"); it == launcher.slurm.end() || it->second != "0")
      argv.push_back("--gpus=1");
    // Options end here: whatever follows is the program and its arguments.
    argv.push_back("--");
    argv.push_back(program);
    argv.insert(argv.end(), workerArguments.begin(), workerArguments.end());
    return argv;
  }
  return {};
}

}  // namespace kwb::worker
