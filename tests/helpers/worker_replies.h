#pragma once
// For tests of the worker client: replies delivered on the client's I/O thread, collected so the
// test thread can wait for them (no sleeps).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "core/worker/worker_client.h"

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

}  // namespace kwb::test
