#pragma once
// For tests that watch processes they did not start (a remote worker on loopback): wait until one
// has ended, through pidfd_open and poll (no sleeps).
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace kwb::test {

inline bool waitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return errno == ESRCH;  // already gone
  pollfd p{static_cast<int>(fd), POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  ::close(static_cast<int>(fd));
  return ready == 1;
}

}  // namespace kwb::test
