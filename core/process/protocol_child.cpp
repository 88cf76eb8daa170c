#include "core/process/protocol_child.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/process/exec_arguments.h"

namespace kwb {

ProtocolChild spawnProtocolChild(std::vector<std::string> argv, std::vector<std::string> env,
                                 const std::filesystem::path &workingDirectory, int stderrFd) {
  ProtocolChild child;
  int input[2], output[2], errors[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input) != 0) {
    child.error = std::string("socketpair: ") + std::strerror(errno);
    return child;
  }
  if (::pipe2(output, O_CLOEXEC) != 0 || (stderrFd < 0 && ::pipe2(errors, O_CLOEXEC) != 0)) {
    child.error = std::string("pipe: ") + std::strerror(errno);
    for (int fd : {input[0], input[1], output[0], output[1]})
      if (fd >= 0) ::close(fd);
    return child;
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_adddup2(&actions, input[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, stderrFd >= 0 ? stderrFd : errors[1], STDERR_FILENO);
  // Nothing else of ours (databases, sockets, other children's pipes) reaches the child.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawn_file_actions_addchdir_np(&actions, workingDirectory.c_str());
  sigset_t defaults, noMask;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU})
    sigaddset(&defaults, s);
  sigemptyset(&noMask);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &noMask);
  // POSIX_SPAWN_SETSID also makes it the leader of a new process group (pgid = pid).
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  auto argvPointers = execArguments(argv);
  auto envPointers = execArguments(env);
  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attributes, argvPointers.data(), envPointers.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(input[1]);
  ::close(output[1]);
  if (errors[1] >= 0) ::close(errors[1]);
  if (error != 0) {
    for (int fd : {input[0], output[0], errors[0]})
      if (fd >= 0) ::close(fd);
    child.error = "cannot run " + argv[0] + ": " + std::strerror(error);
    return child;
  }
  child.pid = pid;
  child.in = input[0];
  child.out = output[0];
  child.err = errors[0];
  return child;
}

}  // namespace kwb
