#pragma once
// Drives one kwb-worker process: starts it (inside the sandbox), sends requests, delivers its
// events and replies, enforces a time limit per request and turns every way the process can
// end into replies that say what happened.
//
// Threading: every public method is thread-safe. One I/O thread per client owns the process:
// it spawns it (so the sandbox's die-with-parent is tied to a thread that lives as long as the
// client), writes requests, reads replies and stderr, and reaps the process. All callbacks run
// on that thread, one at a time, never under the client's lock: they may call send(), start()
// and restart(), but must not block on the client (waitUntilReady(), call()) or destroy it.
//
// Guarantees: every send() gets exactly one onReply, whatever happens: the worker's reply,
// "timeout" (the request ran past its limit: the worker's process group was killed),
// "worker-died" (it crashed, was killed from outside or exited; the message names the signal
// or exit status and quotes the last lines of its stderr), "start-failed", "not-running",
// "request-too-large", or "cancelled" (the client was destroyed first). Events for a request
// always come before its reply.
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/worker/protocol.h"
#include "core/worker/worker_launcher.h"
#include "core/sandbox/worker_sandbox.h"

namespace kwb::worker {

struct WorkerClientOptions {
  std::filesystem::path workerPath;          // the kwb-worker executable
  std::optional<int> device;                 // passed as --device N
  SandboxPreference sandbox = SandboxPreference::Auto;
  std::chrono::milliseconds requestTimeout{60000};  // default per-request limit
  std::chrono::milliseconds startTimeout{30000};    // spawn → hello → sandbox probe
  std::size_t stderrTailLines = 30;          // quoted when the worker dies
  bool verifySandbox = true;                 // run probe-sandbox after hello
  std::vector<std::pair<std::string, std::string>> environment;  // added to the worker's
  std::size_t maxLineBytes = kMaxLineBytes;
  // A tool the worker runs under, inside the same sandbox: its program and arguments, the worker's
  // command line following (compute-sanitizer, core/eval/sanitizer.h). Empty: none.
  std::vector<std::string> wrapper;
  // Where the worker runs (worker_launcher.h). Remote: `workerPath`, `sandbox`, `wrapper` and
  // `environment` are not used here; the far side's `kwb-worker --relay` makes and checks the
  // sandbox there, and its hello must match this program's version and protocol (handshake).
  WorkerLauncher launcher;
  // Remote: a compute-sanitizer tool ("memcheck", ...) the far side's worker runs under, with that
  // host's compute-sanitizer (`kwb-worker --relay --sanitize TOOL`); `wrapper` is the local form.
  std::string remoteTool;
  // Remote: how long a relay's "worker-died" reply waits for its ssh/srun to end (the reply stands
  // only when the relay ended on its own: PROTOCOL.md, "Remote workers"); then it is killed and
  // the request is a lost worker. Longer than Slurm's KillWait (30 s by default) plus srun's 2 s.
  std::chrono::milliseconds relayEndGrace{40000};
};

// How a worker process ended.
struct WorkerExit {
  std::uint64_t generation = 0;  // which start of the worker (1, 2, ...)
  pid_t pid = -1;
  int exitCode = -1;             // when it exited
  int signal = 0;                // the signal that ended it (decoded through bwrap/unshare)
  std::string signalName;        // "SIGKILL"
  std::string description;       // "killed by signal SIGKILL (Killed)", "exited with status 3"
  std::string cause;             // why the client killed it, when it did
  std::string stderrTail;        // its last stderr lines
  bool startFailed = false;      // it never became ready
  bool replaced = false;         // no longer the current worker: restart() or shutdown ended it
  // A remote worker under a tool: how the worker on the far side (the tool) ended, as its relay
  // said in its last line ("worker-exit"); farKnown false when it said nothing (the connection
  // dropped first). The fields above are then about the ssh or srun here.
  bool farKnown = false;
  int farExitCode = -1;          // when it exited
  std::string farSignal;         // "SIGSEGV" when a signal ended it
  std::string farDescription;    // "exited with status 0"
  std::string farCause;          // why its relay killed it, when it did
};

// The isolation the worker really has, as confirmed after start.
struct SandboxStatus {
  std::string state = "none";    // "bwrap", "unshare" or "none"
  bool verified = false;         // probe-sandbox confirmed: no network, nothing writable outside
  std::string reason;            // why "none"; or the mechanism's notes
  std::string privateDir;        // the worker's one writable directory
  Json probe;                    // the probe-sandbox result as the worker sent it
  bool seccomp = false;          // the worker says its seccomp filter is loaded (hello "seccomp")
  std::string seccompReason;     // hello "seccomp_reason": why not, or what it denies
  std::string host;              // a remote worker's host, as its relay names it; empty: this one
  std::string slurmStep;         // a worker in a Slurm job step: "JOBID.STEPID"; else empty
  std::string visibleDevices;    // a remote worker's CUDA_VISIBLE_DEVICES (Slurm sets it per step)
  std::string tool;              // a remote worker under a tool: the tool's program there
};

// What a remote worker's hello (its relay's) gets wrong for this client: another program or
// protocol version, or no relay at all; empty when it fits. Names both sides and what to install.
std::string handshakeProblem(const Json &hello, const WorkerLauncher &launcher);

struct RequestHandlers {
  std::function<void(const Event &)> onEvent;  // optional
  std::function<void(const Reply &)> onReply;  // called exactly once
};

struct WorkerListeners {
  std::function<void(const Json &hello)> onReady;    // hello received and sandbox checked
  std::function<void(const WorkerExit &)> onExit;     // a worker process ended (or never started)
  std::function<void(const std::string &)> onStderr;  // one line of the worker's stderr, or a
                                                      // protocol complaint about what it sent
};

class WorkerClient {
 public:
  enum class State { Stopped, Starting, Ready, Dead };
  static const char *stateName(State state);

  explicit WorkerClient(WorkerClientOptions options, WorkerListeners listeners = {});
  // Kills the worker if requests are in flight (they end "cancelled"); otherwise closes its
  // input and gives it a moment to exit on its own. Returns once the process is reaped.
  ~WorkerClient();
  WorkerClient(const WorkerClient &) = delete;
  WorkerClient &operator=(const WorkerClient &) = delete;

  // Starts a worker unless one is starting or running. Returns at once.
  void start();
  // Kills the current worker, if any (its requests end "worker-died"), and starts a fresh one.
  void restart();
  // Waits until the worker is ready (true) or has ended / failed to start (false).
  bool waitUntilReady(std::chrono::milliseconds timeout);
  // Ends the current worker the gentle way and waits for it: its input is closed, so it exits on
  // its own (a tool it runs under writes its last words); killed after `grace`. No new worker
  // starts. Returns how it ended (nullopt when none ever started). Not from a callback.
  std::optional<WorkerExit> finish(std::chrono::milliseconds grace);
  // Kills the current worker (its requests end "worker-died") without starting another.
  void stop(const std::string &cause);

  // Sends a request; `params` are the request's fields besides "id" and "cmd". Requests sent
  // while the worker starts wait until it is ready; their time limit starts when written.
  std::uint64_t send(const std::string &cmd, Json params, RequestHandlers handlers,
                     std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // send() and wait for the reply. Not from a callback.
  Reply call(const std::string &cmd, Json params = Json::object(),
             std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  State state() const;
  Json hello() const;                  // the current worker's hello (null before it)
  SandboxStatus sandbox() const;       // as confirmed for the current worker
  std::optional<WorkerExit> lastExit() const;
  std::uint64_t generation() const;    // how many workers were started
  std::size_t pendingRequests() const;
  pid_t processId() const;             // the child: bwrap, unshare or kwb-worker itself
  // The kwb-worker process that serves, as this machine's pid namespace numbers it (inside a
  // sandbox it is a grandchild); -1 when not running.
  pid_t workerProcessId() const;

 private:
  struct Process;
  struct Pending;
  using Calls = std::vector<std::function<void()>>;

  void run();
  void spawnLocked(const SandboxSupport &support, Calls &calls);
  void spawnRemoteLocked(std::unique_ptr<Process> p, Calls &calls);
  void startChildLocked(std::unique_ptr<Process> p, const std::vector<std::string> &argv,
                        const std::vector<std::string> &env, Calls &calls);
  void failStartLocked(Process &p, const std::string &why, Calls &calls);
  void killLocked(Process &p, const std::string &cause);
  void checkDeadlinesLocked(Calls &calls);
  void readOutputLocked(Process &p, Calls &calls);
  void readStderrLocked(Process &p, Calls &calls);
  void writeInputLocked(Process &p);
  void handleLineLocked(Process &p, const DecodedLine &line, Calls &calls);
  void handleHelloLocked(Process &p, const Event &hello, Calls &calls);
  void handleProbeReplyLocked(Process &p, const Reply &reply, Calls &calls);
  void becomeReadyLocked(Process &p, Calls &calls);
  void reapLocked(Process &p, Calls &calls);
  void failLocked(std::uint64_t id, ErrorInfo error, Calls &calls);
  void failHeldLocked(const ErrorInfo &error, Calls &calls);
  void writeRequestLocked(Process &p, Pending &request);
  void complainLocked(const std::string &text, Calls &calls);
  void wake();

  WorkerClientOptions options_;
  WorkerListeners listeners_;
  mutable std::mutex mutex_;
  std::condition_variable readyChanged_;
  State state_ = State::Stopped;
  bool wantStart_ = false;
  bool stopping_ = false;
  std::uint64_t nextId_ = 0;
  std::uint64_t generation_ = 0;
  std::unique_ptr<Process> current_;
  std::vector<std::unique_ptr<Process>> dying_;
  std::map<std::uint64_t, std::unique_ptr<Pending>> pending_;
  std::deque<std::uint64_t> held_;  // sent before the worker was ready
  Calls deferred_;                  // callbacks queued by other threads
  Json hello_;
  SandboxStatus sandbox_;
  std::optional<WorkerExit> lastExit_;
  int wakeRead_ = -1, wakeWrite_ = -1;
  std::thread::id ioThreadId_;
  std::thread ioThread_;
};

// "SIGKILL" for 9; "signal 70" for a number without a name.
std::string signalName(int signal);

}  // namespace kwb::worker
