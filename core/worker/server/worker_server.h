#pragma once
// The worker's side of the protocol: reads requests from one file descriptor, writes events and
// replies to another, one request at a time. Commands are registered by name, so the
// evaluation commands (load, evaluate, time) slot in next to the built-in ones.
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/worker/protocol.h"

namespace kwb::worker {

// Thrown by a command handler to answer with {"ok": false, "error": {"kind": kind, ...}}.
class CommandError : public std::runtime_error {
 public:
  CommandError(std::string kind, const std::string &message, Json details = Json::object())
      : std::runtime_error(message), kind_(std::move(kind)), details_(std::move(details)) {}
  const std::string &kind() const { return kind_; }
  const Json &details() const { return details_; }

 private:
  std::string kind_;
  Json details_;
};

class WorkerServer;

// Lets a running command stream events for its request: {"id": N, "event": name, ...data}.
class EventSink {
 public:
  EventSink(WorkerServer &server, std::uint64_t id) : server_(server), id_(id) {}
  void send(const std::string &event, Json data = Json::object());
  void progress(Json data) { send("progress", std::move(data)); }
  // After this request's reply the worker stops serving and run() returns `status` (a command
  // whose CUDA context is corrupt uses it: the client sees the worker exit and starts another).
  void stopAfterReply(int status);

 private:
  WorkerServer &server_;
  std::uint64_t id_;
};

// A command: the request's fields in, the reply's "result" out. Throw CommandError for a
// failure the caller should see; any other exception becomes kind "internal".
using CommandHandler = std::function<Json(const Request &, EventSink &)>;

struct WorkerServerConfig {
  std::optional<int> device;          // --device N: the only device this worker reports and uses
  std::string sandbox = "none";       // what the worker concluded about its sandbox
  std::string sandboxReason;          // why "none" (or notes on the sandbox it has)
  Json sandboxChecks = Json::object();  // the self-check behind it
  bool seccomp = false;               // the seccomp filter (sandbox_seccomp.h) is loaded
  std::string seccompReason;          // why not; or what it does
  std::vector<std::string> seccompDenied;  // what it refuses
  std::filesystem::path privateDir;   // the one writable directory (probe-sandbox writes there)
  std::size_t maxLineBytes = kMaxLineBytes;
};

class WorkerServer {
 public:
  // Reads requests from inFd and writes protocol lines to outFd (both stay owned by the caller).
  WorkerServer(int inFd, int outFd, WorkerServerConfig config);

  // Adds or replaces a command.
  void addCommand(const std::string &name, CommandHandler handler);
  // ping, devices, shutdown and probe-sandbox. `devices` is the device inventory as JSON
  // (already filtered for --device); it is also sent in hello.
  void addBuiltinCommands(Json devices);

  // Sends hello, then serves until `shutdown`, end of input or a write error. Returns the
  // process exit status to use (0 on shutdown or end of input).
  int run();
  // See EventSink::stopAfterReply.
  void stopAfterReply(int status) {
    stop_ = true;
    stopStatus_ = status;
  }

  // Writes one protocol line; thread-safe. False when the output is gone.
  bool writeLine(const std::string &line);

  Json hello() const;

 private:
  void handle(const DecodedLine &line);
  void reply(const Reply &reply);

  int in_, out_;
  WorkerServerConfig config_;
  Json devices_ = Json::object();
  std::map<std::string, CommandHandler> commands_;
  std::mutex writeMutex_;
  bool outputBroken_ = false;
  bool stop_ = false;
  int stopStatus_ = 0;
};

// For kwb-worker: makes sure nothing but protocol lines reaches the real stdout. Returns a
// private duplicate of fd 1 for the protocol, points fd 1 at stderr (so a stray printf from a
// library or a candidate lands in the log) and fd 0 at /dev/null after duplicating it too.
struct ProtocolFds {
  int in = -1, out = -1;
};
ProtocolFds takeOverStdio();

// When the protocol input is a socket (as WorkerClient makes it), a thread watches for the
// client closing it completely (the client process died) and ends the worker at once, even in
// the middle of a command that hangs. A graceful close (shutdown of the write side) is left to
// the read loop, which finishes the requests already sent and then exits.
void exitWhenClientVanishes(int inFd);

}  // namespace kwb::worker
