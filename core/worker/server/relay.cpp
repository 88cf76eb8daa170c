#include "core/worker/server/relay.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <mutex>

#include "core/compile/toolkit_programs.h"
#include "core/eval/sanitizer.h"
#include "core/worker/server/line_io.h"
#include "core/worker/worker_client.h"
#include "core/worker/worker_launcher.h"

namespace kwb::worker {

namespace {

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

std::string environment(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

// "JOBID.STEPID" inside a Slurm job step, else empty.
std::string slurmStep() {
  const std::string job = environment("SLURM_JOB_ID"), step = environment("SLURM_STEP_ID");
  return job.empty() ? std::string() : step.empty() ? job : job + "." + step;
}

// The "worker-exit" event: how the worker here ended (under a tool: how the tool did).
Json exitEvent(const std::optional<WorkerExit> &e) {
  Json data = {{"description", e ? e->description : "ended (its exit status is unknown)"}};
  data["exit_code"] = e && !e->signal && e->exitCode >= 0 ? Json(e->exitCode) : Json(nullptr);
  data["signal"] = e && e->signal ? Json(e->signalName) : Json(nullptr);
  data["cause"] = e ? e->cause : std::string();
  return data;
}

// Whether the far end still reads what this relay writes on `fd`: ssh killed (a time limit, a
// cancel) or the network gone, sshd closes the session's pipes.
bool stillConnected(int fd) {
  pollfd p{fd, 0, 0};
  return ::poll(&p, 1, 0) >= 0 && !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
}

}  // namespace

int runRelay(std::optional<int> device, const std::string &tool) {
  // A write to a connection that has gone is an error to handle, not the end of this process
  // (which would leave its worker running here).
  ::signal(SIGPIPE, SIG_IGN);
  // stdout carries the protocol only: a private copy of it, and fd 1 pointed at stderr.
  const int protocolOut = ::dup(1);
  ::dup2(2, 1);
  const std::string host = hostName();
  std::mutex writeMutex;
  auto write = [&](const std::string &line) {
    std::lock_guard lock(writeMutex);
    writeAll(protocolOut, line);
  };
  int ended[2];
  if (::pipe2(ended, O_CLOEXEC) != 0) {
    std::cerr << "kwb-worker --relay: " << std::strerror(errno) << "\n";
    return 3;
  }

  std::error_code ec;
  WorkerClientOptions options;
  options.workerPath = std::filesystem::read_symlink("/proc/self/exe", ec);
  options.device = device;
  // The client on the other side keeps each request's time limit: it closes the connection,
  // and this relay stops the worker.
  options.requestTimeout = std::chrono::hours(24 * 7);
  std::filesystem::path toolProgram;
  if (!tool.empty()) {
    const auto parsed = parseSanitizerTool(tool);
    if (!parsed) {
      std::cerr << "kwb-worker --relay on " << host << ": unknown tool '" << tool
                << "' (memcheck, racecheck, initcheck or synccheck)\n";
      return kRelayExitNoTool;
    }
    toolProgram = findComputeSanitizer();
    if (toolProgram.empty()) {
      std::cerr << "kwb-worker --relay on " << host << ": compute-sanitizer not found on " << host << " (looked in "
                << toolkitProgramSearchPlaces()
                << "); install the CUDA toolkit there, or set KWB_COMPUTE_SANITIZER in that host's environment "
                   "(for ssh: ~/.ssh/environment with PermitUserEnvironment, or a wrapper script named in --workers)\n";
      return kRelayExitNoTool;
    }
    // As Evaluator::sanitize runs a local worker under it (core/eval/sanitizer.h).
    options.wrapper = sanitizerCommand(toolProgram, *parsed);
    options.environment = sanitizerWorkerEnvironment(toolProgram);
    // The tool loads and instruments before the worker says hello.
    options.startTimeout = std::max<std::chrono::milliseconds>(options.startTimeout, kRelayToolStartTimeout);
  }
  WorkerListeners listeners;
  listeners.onStderr = [](const std::string &line) { std::cerr << line << "\n"; };
  std::atomic<bool> workerEnded{false};
  listeners.onExit = [&](const WorkerExit &e) {
    if (e.replaced) return;
    std::cerr << "kwb-worker --relay on " << host << ": the worker " << e.description
              << (e.cause.empty() ? "" : " (" + e.cause + ")") << "\n";
    workerEnded = true;
    [[maybe_unused]] const auto n = ::write(ended[1], "x", 1);
  };
  WorkerClient client(options, listeners);
  client.start();
  if (!client.waitUntilReady(options.startTimeout + std::chrono::seconds(5))) {
    const auto exit = client.lastExit();
    std::cerr << "kwb-worker --relay on " << host << ": the worker did not start"
              << (exit ? ": " + exit->description + (exit->stderrTail.empty() ? "" : "; " + exit->stderrTail) : "")
              << "\n";
    return 3;
  }
  Json hello = client.hello();
  hello.erase("event");
  const SandboxStatus sandbox = client.sandbox();
  hello["relay"] = {{"host", host},
                    {"pid", static_cast<long long>(::getpid())},
                    {"worker_pid", static_cast<long long>(client.workerProcessId())},
                    {"sandbox", sandbox.state},
                    {"verified", sandbox.verified},
                    {"reason", sandbox.reason},
                    {"private_dir", sandbox.privateDir},
                    {"probe", sandbox.probe},
                    {"slurm_step", slurmStep()},
                    {"cuda_visible_devices", environment("CUDA_VISIBLE_DEVICES")}};
  if (!toolProgram.empty()) hello["relay"]["tool"] = toolProgram.string();
  write(encodeEvent({std::nullopt, "hello", hello}));

  LineDecoder decoder;
  std::vector<DecodedLine> lines;
  char buffer[1 << 16];
  auto handle = [&](const DecodedLine &line) {
    auto parsed = requestFromLine(line);
    if (auto *refusal = std::get_if<Reply>(&parsed)) {
      write(encodeReply(*refusal));
      return;
    }
    const auto request = std::get<Request>(std::move(parsed));
    RequestHandlers handlers;
    const std::uint64_t outer = request.id;
    handlers.onEvent = [&write, outer](const Event &e) { write(encodeEvent({outer, e.event, e.data})); };
    handlers.onReply = [&write, outer, &host](const Reply &r) {
      Reply copy = r;
      copy.id = outer;
      if (!copy.ok && copy.error.kind == error_kind::kNotRunning) {
        // The worker here had ended before this request reached it: nothing of the request's
        // doing; for the workbench a lost worker (it runs the request again on a fresh one).
        copy.error.kind = error_kind::kWorkerLost;
        copy.error.message = "the worker on " + host + " had ended before the request reached it (" + copy.error.message + ")";
      }
      write(encodeReply(copy));
    };
    client.send(request.cmd, request.params, std::move(handlers));
  };
  for (;;) {
    pollfd fds[2] = {{0, POLLIN, 0}, {ended[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      client.stop(std::string("kwb-worker --relay could not wait for input: ") + std::strerror(errno));
      break;
    }
    if (fds[1].revents) break;  // the worker ended: its replies are written; the client restarts us
    if (!fds[0].revents) continue;
    const ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {  // the connection closed: nobody waits for what runs
      if (auto rest = decoder.finish()) handle(*rest);
      const std::string closed = "the workbench closed the connection to " + host;
      if (toolProgram.empty() || !stillConnected(protocolOut)) {
        client.stop(closed);
        return 0;
      }
      // Under a tool, the client finishing (its half of the connection closed, the other still
      // read): the worker's input closed, it exits, the tool writes its summary. The connection
      // dropping meanwhile (the client gave up waiting) stops the worker at once.
      auto finished = std::async(std::launch::async, [&client] { return client.finish(kRelayToolFinishGrace); });
      bool stopped = false;
      while (finished.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready)
        if (!stopped && !stillConnected(protocolOut)) {
          stopped = true;
          client.stop(closed);
        }
      write(encodeEvent({std::nullopt, "worker-exit", exitEvent(finished.get())}));
      return 0;
    }
    lines.clear();
    decoder.feed(std::string_view(buffer, static_cast<std::size_t>(n)), lines);
    for (const auto &l : lines) handle(l);
  }
  if (!toolProgram.empty()) write(encodeEvent({std::nullopt, "worker-exit", exitEvent(client.lastExit())}));
  return workerEnded ? kRelayExitWorkerEnded : 0;
}

}  // namespace kwb::worker
