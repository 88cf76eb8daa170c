#pragma once
// Starting a long-lived child that speaks a line protocol on stdin/stdout (the worker, the compile
// service): stdin a socket (so the child sees the caller vanish), stdout a pipe, stderr a pipe or a
// given file; a session of its own (no controlling terminal, so nothing inside can push input into
// the user's terminal; its process group is killed as a whole), default signal dispositions and
// no signal mask; no other descriptor of the caller. The caller's ends are close-on-exec.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kwb {

struct ProtocolChild {
  pid_t pid = -1;
  int in = -1;   // the caller's end of the child's stdin
  int out = -1;  // the child's stdout
  int err = -1;  // the child's stderr (-1 when it went to stderrFd)
  std::string error;  // why it could not be started (pid -1, no descriptors open)
};

// argv[0] is a path; env is KEY=VALUE; stderrFd >= 0: the child's stderr (the caller keeps and
// closes its own copy).
ProtocolChild spawnProtocolChild(std::vector<std::string> argv, std::vector<std::string> env,
                                 const std::filesystem::path &workingDirectory, int stderrFd = -1);

}  // namespace kwb
