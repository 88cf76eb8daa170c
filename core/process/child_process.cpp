#include "core/process/child_process.h"

#include "core/process/environment.h"
#include "core/process/exec_arguments.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

extern char **environ;

namespace kwb {

namespace {

using Clock = std::chrono::steady_clock;

// The caller's environment with `overrides` applied, as KEY=VALUE strings.
std::vector<std::string> childEnvironment(const std::vector<std::pair<std::string, std::string>> &overrides) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char **e = environ; e && *e; ++e) {
    std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    auto key = entry.substr(0, eq);
    if (vars.emplace(key, entry.substr(eq + 1)).second) order.push_back(key);
  }
  for (const auto &[key, value] : overrides) {
    if (vars.find(key) == vars.end()) order.push_back(key);
    vars[key] = value;
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto &key : order) out.push_back(key + "=" + vars[key]);
  return out;
}

int waitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

ChildProcessResult runChildProcess(const ChildProcessRequest &request) {
  ChildProcessResult result;
  const auto start = Clock::now();
  if (request.argv.empty()) {
    result.startError = "no program given";
    return result;
  }

  int fds[2];
  // Close-on-exec, so children started by other threads at the same time do not inherit the
  // write end and hold our end-of-file back; dup2 into the child clears the flag on 1 and 2.
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.startError = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  const int readEnd = fds[0], writeEnd = fds[1];

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, writeEnd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, writeEnd, STDERR_FILENO);
  if (!request.workingDirectory.empty())
    posix_spawn_file_actions_addchdir_np(&actions, request.workingDirectory.c_str());
  // A process group of its own (so the whole tree can be killed) and default signal handling.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigset_t noMask;
  sigemptyset(&noMask);
  // POSIX_SPAWN_SETSID: a session of its own, so no controlling terminal (no TIOCSTI into the
  // user's terminal); setsid() also makes it the leader of a new process group (pgid = pid),
  // which the kill-the-group logic below relies on. (SETPGROUP cannot be combined with it: a
  // session leader may not change its process group.)
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &noMask);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<std::string> argv = request.argv;
  std::vector<std::string> envp =
      request.untrusted ? allowListedEnvironment(request.environment) : childEnvironment(request.environment);
  auto argvPointers = execArguments(argv);
  auto envPointers = execArguments(envp);
  pid_t pid = -1;
  const int spawnError =
      ::posix_spawn(&pid, argv[0].c_str(), &actions, &attributes, argvPointers.data(), envPointers.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(writeEnd);
  if (spawnError != 0) {
    ::close(readEnd);
    result.startError = "cannot start " + argv[0] + ": " + std::strerror(spawnError);
    return result;
  }
  result.started = true;

  const auto deadline = start + request.timeout;
  // Whether the child has exited, leaving it a zombie: its pid, and so its process group's id,
  // stays reserved until the final waitpid, so killing the group below never hits a stranger.
  auto hasExited = [&] {
    siginfo_t info{};
    int r;
    while ((r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT)) < 0 && errno == EINTR) {
    }
    return r == 0 && info.si_pid == pid;
  };
  char buffer[65536];
  std::string partialLine;  // for onLine: what came after the last newline
  auto keep = [&](std::size_t n) {
    const std::size_t room = request.outputLimit > result.output.size() ? request.outputLimit - result.output.size() : 0;
    if (n > room) result.outputTruncated = true;
    result.output.append(buffer, std::min(room, n));
    if (!request.onLine) return;
    partialLine.append(buffer, n);
    std::size_t start = 0;
    for (std::size_t nl; (nl = partialLine.find('\n', start)) != std::string::npos; start = nl + 1)
      request.onLine(partialLine.substr(start, nl - start));
    partialLine.erase(0, start);
    if (partialLine.size() > request.outputLimit) partialLine.clear();  // no newline in sight: drop it
  };
  bool endOfOutput = false;
  while (!endOfOutput) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      result.timedOut = true;
      break;
    }
    if (request.cancelled && request.cancelled()) {
      result.cancelled = true;
      break;
    }
    pollfd p{.fd = readEnd, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 100)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) {
      // The child may be gone while something it left behind still holds the pipe open.
      if (hasExited()) break;
      continue;
    }
    const ssize_t n = ::read(readEnd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    if (n == 0) {
      endOfOutput = true;  // every writer (the child and anything it started) is gone
      break;
    }
    keep(static_cast<std::size_t>(n));
  }
  if (!endOfOutput && !result.timedOut) {
    // The child exited while poll() waited: what it wrote last may still sit in the pipe.
    ::fcntl(readEnd, F_SETFL, ::fcntl(readEnd, F_GETFL) | O_NONBLOCK);
    ssize_t n;
    while ((n = ::read(readEnd, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) keep(static_cast<std::size_t>(n));
  }
  if (request.onLine && !partialLine.empty()) request.onLine(partialLine);
  // A child that closed its output may still be running: give it until the deadline.
  while (!result.timedOut && !result.cancelled && !hasExited()) {
    if (Clock::now() >= deadline) {
      result.timedOut = true;
      break;
    }
    ::usleep(2000);
  }
  // Kill the whole group: on expiry nvcc and everything it started; otherwise only leftovers,
  // unless the caller keeps them (a daemon on its way out of the group).
  if (request.killLeftovers || result.timedOut || result.cancelled) ::kill(-pid, SIGKILL);
  ::close(readEnd);
  const int status = waitFor(pid);
  if (WIFEXITED(status)) result.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace kwb
