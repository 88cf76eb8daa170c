#pragma once
// For tests that watch processes they did not start (a remote worker on loopback): wait until one
// has ended, through pidfd_open and poll (no sleeps); what one has written so far.
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>

namespace kwb::test {

inline bool waitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return errno == ESRCH;  // already gone
  pollfd p{static_cast<int>(fd), POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  ::close(static_cast<int>(fd));
  return ready == 1;
}

// What a process has written so far (wchar in /proc/PID/io); -1 when it cannot be read.
inline long long bytesWritten(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  for (std::string key; in >> key;) {
    long long value = -1;
    in >> value;
    if (key == "wchar:") return value;
  }
  return -1;
}

}  // namespace kwb::test
