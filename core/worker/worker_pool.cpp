#include "core/worker/worker_pool.h"

#include <algorithm>

namespace kwb::worker {

using Clock = std::chrono::steady_clock;

struct WorkerPool::Slot {
  int device = 0;
  std::unique_ptr<WorkerClient> client;
  // Guarded by the pool's mutex:
  std::deque<Clock::time_point> deaths;  // since the last completed request
  bool removed = false;
  std::string message;
  std::size_t inFlight = 0;
};

WorkerPool::WorkerPool(std::vector<int> devices, WorkerPoolOptions options,
                       std::function<void(const std::string &)> onMessage)
    : options_(std::move(options)), onMessage_(std::move(onMessage)) {
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  for (const int device : devices) {
    auto slot = std::make_unique<Slot>();
    slot->device = device;
    auto clientOptions = options_.worker;
    clientOptions.device = device;
    Slot *raw = slot.get();
    WorkerListeners listeners;
    listeners.onExit = [this, raw](const WorkerExit &exit) { workerExited(*raw, exit); };
    slot->client = std::make_unique<WorkerClient>(std::move(clientOptions), std::move(listeners));
    slots_.push_back(std::move(slot));
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  // Destroyed here, while the pool's members are alive for callbacks still running.
  for (auto &slot : slots_) slot->client.reset();
}

void WorkerPool::start() {
  for (auto &slot : slots_) slot->client->start();
}

bool WorkerPool::waitUntilReady(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (auto &slot : slots_) {
    {
      std::lock_guard lock(mutex_);
      if (slot->removed) continue;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!slot->client->waitUntilReady(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return true;
}

WorkerPool::Slot *WorkerPool::find(int device) const {
  for (const auto &slot : slots_)
    if (slot->device == device) return slot.get();
  return nullptr;
}

PoolSubmission WorkerPool::submit(int device, const std::string &cmd, Json params, RequestHandlers handlers,
                                  std::optional<std::chrono::milliseconds> timeout) {
  PoolSubmission s;
  Slot *slot = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (slots_.empty()) {
      s.error = "the worker pool has no devices";
      return s;
    }
    if (device == kAnyDevice) {
      // Ready workers first, then the least busy.
      std::size_t best = 0;
      bool bestReady = false;
      for (const auto &candidate : slots_) {
        if (candidate->removed) continue;
        const bool ready = candidate->client->state() == WorkerClient::State::Ready;
        if (!slot || (ready && !bestReady) || (ready == bestReady && candidate->inFlight < best)) {
          slot = candidate.get();
          best = candidate->inFlight;
          bestReady = ready;
        }
      }
      if (!slot) {
        s.error = "every device was taken out of the pool:";
        for (const auto &candidate : slots_) s.error += " " + candidate->message;
        return s;
      }
    } else {
      slot = find(device);
      if (!slot) {
        s.error = "device " + std::to_string(device) + " is not in the worker pool";
        return s;
      }
      if (slot->removed) {
        s.error = slot->message;
        return s;
      }
    }
    ++slot->inFlight;
  }
  auto onReply = [this, slot, inner = std::move(handlers.onReply)](const Reply &reply) {
    {
      std::lock_guard lock(mutex_);
      --slot->inFlight;
      if (reply.ok) slot->deaths.clear();  // it completed work: not a run of deaths
    }
    if (inner) inner(reply);
  };
  s.accepted = true;
  s.device = slot->device;
  s.id = slot->client->send(cmd, std::move(params), {std::move(handlers.onEvent), std::move(onReply)}, timeout);
  return s;
}

void WorkerPool::workerExited(Slot &slot, const WorkerExit &exit) {
  if (exit.replaced) return;  // restart() or shutdown: not a death
  std::string message;
  WorkerClient *restart = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || slot.removed) return;
    const auto now = Clock::now();
    slot.deaths.push_back(now);
    while (!slot.deaths.empty() && now - slot.deaths.front() > options_.deathWindow) slot.deaths.pop_front();
    const auto deaths = static_cast<int>(slot.deaths.size());
    const std::string what = "the worker for device " + std::to_string(slot.device) + " " + exit.description +
                             (exit.cause.empty() ? "" : " after " + exit.cause);
    if (deaths >= options_.maxConsecutiveDeaths) {
      slot.removed = true;
      const auto window = std::chrono::duration_cast<std::chrono::seconds>(options_.deathWindow).count();
      message = "device " + std::to_string(slot.device) + " taken out of the worker pool: its worker died " +
                std::to_string(deaths) + " times within " + std::to_string(window) +
                " s without completing a request (last: " + what + ")";
    } else {
      // Taken under the lock: once the pool is stopping, slot.client may be mid-destruction
      // (then restart() sees the client stopping and does nothing).
      restart = slot.client.get();
      message = what + "; starting a new one";
    }
    slot.message = message;
  }
  if (restart) restart->restart();
  if (onMessage_) onMessage_(message);
}

std::vector<PoolDeviceStatus> WorkerPool::status() const {
  std::vector<PoolDeviceStatus> out;
  for (const auto &slot : slots_) {
    PoolDeviceStatus s;
    s.device = slot->device;
    s.starts = slot->client->generation();
    s.sandbox = slot->client->sandbox();
    const auto state = slot->client->state();
    std::lock_guard lock(mutex_);
    s.state = slot->removed ? "removed" : WorkerClient::stateName(state);
    s.message = slot->message;
    s.recentDeaths = static_cast<int>(slot->deaths.size());
    s.inFlight = slot->inFlight;
    out.push_back(std::move(s));
  }
  return out;
}

bool WorkerPool::reinstate(int device) {
  Slot *slot = find(device);
  if (!slot) return false;
  {
    std::lock_guard lock(mutex_);
    slot->removed = false;
    slot->deaths.clear();
    slot->message = "device " + std::to_string(device) + " put back into the worker pool";
  }
  slot->client->restart();
  return true;
}

pid_t WorkerPool::workerProcessId(int device) const {
  const Slot *slot = find(device);
  return slot ? slot->client->workerProcessId() : -1;
}

}  // namespace kwb::worker
