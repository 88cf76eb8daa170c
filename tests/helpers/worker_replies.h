#pragma once
// For tests of the worker client: replies delivered on the client's I/O thread, collected so the
// test thread can wait for them (no sleeps); a request in flight when a remote worker dies.
#include <QTest>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/worker/worker_client.h"
#include "helpers/process_wait.h"

namespace kwb::test {

struct Replies {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::uint64_t, worker::Reply> byId;
  std::vector<worker::Reply> inOrder;

  worker::RequestHandlers handlers() {
    return {nullptr, [this](const worker::Reply &r) {
              std::lock_guard lock(mutex);
              inOrder.push_back(r);
              if (r.id) byId[*r.id] = r;
              changed.notify_all();
            }};
  }
  bool waitFor(std::size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return inOrder.size() >= count; });
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return inOrder.size();
  }
};

// Through a ready remote client: a ping (its time limit `timeout`, else the client's) its relay
// has taken in (the relay wrote something since: the request, to its worker stopped for that, or
// its own wake-up), then that worker killed with SIGKILL, the request in flight. Empty when it
// went so, else what did not.
inline std::string pingThenKillTheRemoteWorker(worker::WorkerClient &client, Replies &replies,
                                               std::optional<std::chrono::milliseconds> timeout = {}) {
  const auto relayHello = client.hello().value("relay", worker::Json::object());
  const pid_t remote = relayHello.value("worker_pid", -1), relay = relayHello.value("pid", -1);
  if (remote <= 0 || relay <= 0) return "no relay in the hello: " + client.hello().dump();
  if (::kill(remote, SIGSTOP) != 0) return std::string("SIGSTOP: ") + std::strerror(errno);
  const auto before = bytesWritten(relay);
  client.send("ping", worker::Json::object(), replies.handlers(), timeout);
  if (!QTest::qWaitFor([&] { return bytesWritten(relay) > before; }, 20000))
    return "the relay did not hand the request over within 20 s";
  if (::kill(remote, SIGKILL) != 0) return std::string("SIGKILL: ") + std::strerror(errno);
  return {};
}

}  // namespace kwb::test
