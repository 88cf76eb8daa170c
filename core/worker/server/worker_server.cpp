#include "core/worker/server/worker_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

#include "core/sandbox/lockdown.h"
#include "kwb/version.h"

namespace kwb::worker {

void EventSink::send(const std::string &event, Json data) {
  Event e;
  e.id = id_;
  e.event = event;
  e.data = std::move(data);
  server_.writeLine(encodeEvent(e));
}

void EventSink::stopAfterReply(int status) { server_.stopAfterReply(status); }

WorkerServer::WorkerServer(int inFd, int outFd, WorkerServerConfig config)
    : in_(inFd), out_(outFd), config_(std::move(config)) {}

void WorkerServer::addCommand(const std::string &name, CommandHandler handler) {
  commands_[name] = std::move(handler);
}

void WorkerServer::addBuiltinCommands(Json devices) {
  devices_ = std::move(devices);
  addCommand("ping", [](const Request &request, EventSink &) { return request.params; });
  addCommand("devices", [this](const Request &, EventSink &) { return devices_; });
  addCommand("shutdown", [this](const Request &, EventSink &) {
    stop_ = true;
    return Json::object();
  });
  addCommand("probe-sandbox", [this](const Request &request, EventSink &) {
    try {
      return runSandboxProbe(request.params, config_.privateDir);
    } catch (const std::invalid_argument &e) {
      throw CommandError(error_kind::kInvalidArgument, std::string("probe-sandbox: ") + e.what());
    }
  });
}

Json WorkerServer::hello() const {
  Json commands = Json::array();
  for (const auto &[name, handler] : commands_) commands.push_back(name);
  Json j = {{"event", "hello"},
            {"protocol", kProtocolVersion},
            {"worker", kVersion},
            {"pid", static_cast<long long>(::getpid())},
            {"device", config_.device ? Json(*config_.device) : Json(nullptr)},
            {"sandbox", config_.sandbox},
            {"sandbox_reason", config_.sandboxReason},
            {"sandbox_checks", config_.sandboxChecks},
            {"seccomp", config_.seccomp},
            {"seccomp_reason", config_.seccompReason},
            {"seccomp_denied", config_.seccompDenied},
            {"commands", commands},
            {"max_line_bytes", config_.maxLineBytes}};
  if (devices_.is_object()) {
    j["devices"] = devices_.value("devices", Json::array());
    j["gpu"] = devices_;
    j["gpu"].erase("devices");
  } else {
    j["devices"] = Json::array();
  }
  return j;
}

bool WorkerServer::writeLine(const std::string &line) {
  std::lock_guard lock(writeMutex_);
  if (outputBroken_) return false;
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(out_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      outputBroken_ = true;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

void WorkerServer::reply(const Reply &r) {
  std::string line = encodeReply(r);
  if (line.size() > config_.maxLineBytes + 1) {
    line = encodeReply(Reply::failure(
        r.id, {error_kind::kLineTooLong,
               "the reply would be " + std::to_string(line.size() - 1) + " bytes, over the limit of " +
                   std::to_string(config_.maxLineBytes),
               {}}));
  }
  writeLine(line);
}

void WorkerServer::handle(const DecodedLine &line) {
  auto parsed = requestFromLine(line);
  if (auto *refusal = std::get_if<Reply>(&parsed)) {
    reply(*refusal);
    return;
  }
  const auto &request = std::get<Request>(parsed);
  const auto command = commands_.find(request.cmd);
  if (command == commands_.end()) {
    std::string known;
    for (const auto &[name, handler] : commands_) known += (known.empty() ? "" : ", ") + name;
    reply(Reply::failure(request.id, {error_kind::kUnknownCommand,
                                      "unknown command '" + request.cmd + "'; known commands: " + known, {}}));
    return;
  }
  EventSink sink(*this, request.id);
  try {
    reply(Reply::success(request.id, command->second(request, sink)));
  } catch (const CommandError &e) {
    reply(Reply::failure(request.id, {e.kind(), e.what(), e.details()}));
  } catch (const std::exception &e) {
    reply(Reply::failure(request.id, {error_kind::kInternal, request.cmd + " failed: " + e.what(), {}}));
  }
}

int WorkerServer::run() {
  if (!writeLine(encodeLine(hello()))) return 1;
  LineDecoder decoder(config_.maxLineBytes);
  std::vector<DecodedLine> lines;
  std::string buffer(1 << 16, '\0');
  while (!stop_ && !outputBroken_) {
    const ssize_t n = ::read(in_, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      std::cerr << "kwb-worker: reading requests failed: " << std::strerror(errno) << "\n";
      return 1;
    }
    if (n == 0) {
      if (auto last = decoder.finish()) handle(*last);
      return 0;  // the client closed our input: it is done with us
    }
    lines.clear();
    decoder.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)), lines);
    for (const auto &line : lines) {
      handle(line);
      if (stop_ || outputBroken_) break;
    }
  }
  return outputBroken_ ? 1 : stopStatus_;
}

ProtocolFds takeOverStdio() {
  // A client that goes away must not kill us with SIGPIPE: writes fail and we exit instead.
  ::signal(SIGPIPE, SIG_IGN);
  ProtocolFds fds;
  fds.in = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  fds.out = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devNull >= 0) {
    ::dup2(devNull, STDIN_FILENO);
    ::close(devNull);
  }
  return fds;
}

void exitWhenClientVanishes(int inFd) {
  struct stat st{};
  if (::fstat(inFd, &st) != 0 || !S_ISSOCK(st.st_mode)) return;  // a pipe reports hang-up too early
  std::thread([inFd] {
    for (;;) {
      pollfd p{inFd, 0, 0};  // no events asked: only hang-up and errors are reported
      const int ready = ::poll(&p, 1, -1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0 || (p.revents & (POLLHUP | POLLERR | POLLNVAL))) {
        static const char message[] = "kwb-worker: the client is gone; exiting\n";
        [[maybe_unused]] const auto n = ::write(STDERR_FILENO, message, sizeof message - 1);
        ::_exit(0);
      }
    }
  }).detach();
}

}  // namespace kwb::worker
