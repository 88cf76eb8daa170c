#pragma once
// For the test helpers that run real servers (sshd, slurmctld, slurmd): a program started in a
// session of its own, its output to a log file, stdin /dev/null; stopped with its process group.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/sandbox/sandbox.h"

namespace kwb::test {

// The child's pid, or -1. Everything the child touches is made before fork (the caller may have
// threads).
inline pid_t startDaemon(const std::vector<std::string> &argv, const std::string &logPath) {
  std::vector<char *> args;
  for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    const int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// True when the child has exited (reaped); false while it runs.
inline bool daemonExited(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

// A port of 127.0.0.1 free a moment ago (bound, read, closed), for a server's configuration.
inline int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &length) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

// A log or key file's text; empty when it cannot be read.
inline std::string readText(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Where Debian puts `name` (the first of `usual` that can be run), else the first on $PATH (a
// bundle's copy on the GPU machine); empty when neither has it.
inline std::string installedProgram(const char *name, std::initializer_list<const char *> usual) {
  for (const char *p : usual)
    if (::access(p, X_OK) == 0) return p;
  if (const auto found = kwb::findOnPath(name)) return found->string();
  return {};
}

inline void stopDaemon(pid_t pid) {
  if (pid <= 0) return;
  ::kill(-pid, SIGTERM);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace kwb::test
