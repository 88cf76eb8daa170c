#pragma once
// Running a program (nvcc, cuobjdump) as a child process: its stdout and stderr captured
// together, in the order written, with a time limit. The child leads its own process group, so
// on expiry the whole tree it started (cicc, ptxas, gcc, ...) is killed, not only the child.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kwb {

struct ChildProcessRequest {
  std::vector<std::string> argv;  // argv[0] is the program's path
  std::filesystem::path workingDirectory;  // empty: the caller's
  std::vector<std::pair<std::string, std::string>> environment;  // set on top of the caller's
  // Untrusted input (a candidate's source): the child gets only the allow-listed environment
  // (core/process/environment.h), not the caller's whole environment with its API keys.
  bool untrusted = false;
  std::chrono::milliseconds timeout{120000};
  std::size_t outputLimit = 8u << 20;  // bytes kept; more is read and dropped
  // Called with each line of output (without its newline) as it arrives, from the calling
  // thread; a last line without a newline comes at the end. Optional.
  std::function<void(const std::string &line)> onLine;
  // Polled about every 100 ms: true kills the child's group (the result says `cancelled`).
  std::function<bool()> cancelled;
  // What the child started and left running when it exited by itself is killed with its group
  // (leftovers). False for a program that puts a process in the background on purpose (an ssh
  // master, through ControlPersist): a daemon's fork lives in the group until it calls setsid(),
  // and killing the group the moment the foreground exits could race it. On expiry or cancel the
  // group is killed all the same.
  bool killLeftovers = true;
};

struct ChildProcessResult {
  bool started = false;   // false: could not be started; startError says why
  std::string startError;
  bool timedOut = false;  // killed at the time limit
  bool cancelled = false; // killed because request.cancelled() said so
  int exitCode = -1;      // when it exited normally
  int signal = 0;         // the signal that ended it, if one did
  std::string output;     // stdout and stderr, interleaved
  bool outputTruncated = false;
  double seconds = 0.0;

  bool succeeded() const { return started && !timedOut && signal == 0 && exitCode == 0; }
};

// Thread-safe: several children may run at once from different threads.
ChildProcessResult runChildProcess(const ChildProcessRequest &request);

}  // namespace kwb
