#include "core/eval/evaluator_pool.h"

#include <exception>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/paths/install_paths.h"
#include "core/task/source_file.h"
#include "core/worker/worker_client.h"

namespace kwb {

std::vector<VisibleDevice> describeVisibleDevices(const EvaluatorSettings &settings, std::string &problem) {
  const auto client = startWorker(settings, std::nullopt, problem);
  if (!client) return {};
  const auto hello = client->hello();
  if (!hello.is_object()) {
    problem = "the GPU worker stopped before it said which devices it sees";
    return {};
  }
  auto out = devicesInHello(hello);
  // Through Slurm the step that looked saw its one GPU: the launcher gives as many workers as it
  // asks for, each a GPU like it (numbered by the pool).
  if (settings.launcher.kind == worker::WorkerLauncher::Kind::Slurm && !out.empty()) {
    const VisibleDevice like = out.front();
    out.clear();
    for (int i = 0; i < worker::slurmWorkerCount(settings.launcher); ++i) {
      out.push_back(like);
      out.back().ordinal = i;
    }
  }
  if (out.empty()) {
    const auto gpu = hello.value("gpu", nlohmann::json::object());
    problem = gpu.is_object() ? gpu.value("problem", std::string("no CUDA device")) : "no CUDA device";
  }
  return out;
}

std::vector<int> visibleDevices(const EvaluatorSettings &settings, std::string &problem) {
  std::vector<int> out;
  for (const auto &d : describeVisibleDevices(settings, problem)) out.push_back(d.ordinal);
  return out;
}

std::unique_ptr<EvaluatorPool> poolOfChosenDevices(EvaluatorPoolSettings settings, const std::vector<int> &gpus,
                                                   std::vector<VisibleDevice> &described, std::string &problem) {
  described.clear();
  if (settings.evaluator.hosts.size() > 1) {
    // Several hosts: the pool looks at each (its GPUs numbered host after host) and keeps those
    // chosen by that number.
    settings.devices = gpus;
    auto pool = std::make_unique<EvaluatorPool>(std::move(settings));
    described = pool->describedDevices();
    if (described.empty()) {
      problem = pool->problem().empty() ? "none of the chosen GPUs is visible" : pool->problem();
      return nullptr;
    }
    return pool;
  }
  const auto chosen = [&](int ordinal) { return gpus.empty() || std::find(gpus.begin(), gpus.end(), ordinal) != gpus.end(); };
  std::unique_ptr<EvaluatorPool> pool;
  EvaluatorSettings look = settings.evaluator;
  if (settings.evaluator.launcher.kind == worker::WorkerLauncher::Kind::Slurm) {
    // Its workers by number (the pool leaves out numbers beyond gpus=N), so that it looks at none.
    settings.devices = gpus;
    for (int i = 0; gpus.empty() && i < worker::slurmWorkerCount(settings.evaluator.launcher); ++i)
      settings.devices.push_back(i);
    pool = std::make_unique<EvaluatorPool>(std::move(settings));
    if (pool->devices().empty()) {
      problem = pool->problem().empty() ? "none of the chosen GPUs is visible" : pool->problem();
      return nullptr;
    }
    look = pool->evaluatorSettings();  // inside its allocation
  }
  for (const auto &d : describeVisibleDevices(look, problem))
    if (chosen(d.ordinal)) described.push_back(d);
  if (described.empty()) {
    if (problem.empty()) problem = "none of the chosen GPUs is visible";
    return nullptr;
  }
  // Through Slurm the look gave the workers 0..N-1, the pool's own among them, no others.
  if (pool) return pool;
  settings.devices.clear();
  for (const auto &d : described) settings.devices.push_back(d.ordinal);
  return std::make_unique<EvaluatorPool>(std::move(settings));
}

EvaluatorPool::EvaluatorPool(EvaluatorPoolSettings settings, std::function<void(const std::string &)> onMessage)
    : settings_(std::move(settings)), onMessage_(std::move(onMessage)) {
  auto &hosts = settings_.evaluator.hosts;
  if (hosts.size() == 1) settings_.evaluator.launcher = hosts.front();
  if (hosts.size() <= 1) {
    hosts.clear();
  } else {
    addHostDevices();
    for (auto &d : devices_) d->thread = std::thread([this, dev = d.get()] { run(*dev); });
    return;
  }
  auto &launcher = settings_.evaluator.launcher;
  stepDevices_ = launcher.kind == worker::WorkerLauncher::Kind::Slurm;
  if (stepDevices_ && !launcher.slurm.count("jobid")) {
    const int workers = worker::slurmWorkerCount(launcher);
    if (onMessage_)
      onMessage_("asking Slurm for " + std::to_string(workers) + " worker(s) of one GPU (salloc, " +
                 launcher.describe() + "; waiting up to " + std::to_string(worker::slurmAllocationWait(launcher).count()) +
                 " s)");
    worker::SlurmAllocation::Progress progress;
    progress.onLine = [this](const std::string &line) {
      if (onMessage_) onMessage_(line);
    };
    progress.cancelled = settings_.cancelled;
    allocation_ = worker::SlurmAllocation::request(launcher, problem_, progress);
    if (!allocation_) {
      if (onMessage_) onMessage_(problem_);
      return;
    }
    launcher = allocation_->inside(launcher);
  }
  std::vector<int> ordinals = settings_.devices;
  if (stepDevices_ && !ordinals.empty()) {
    // A choice of GPUs made by number: through Slurm only the workers asked for exist.
    const int workers = worker::slurmWorkerCount(launcher);
    const auto beyond = std::remove_if(ordinals.begin(), ordinals.end(), [&](int o) { return o < 0 || o >= workers; });
    if (beyond != ordinals.end() && onMessage_)
      onMessage_("GPUs numbered " + std::to_string(workers) + " and above left out: " + launcher.describe() + " has " +
                 std::to_string(workers) + " worker(s)");
    ordinals.erase(beyond, ordinals.end());
  }
  if (ordinals.empty() && settings_.devices.empty()) ordinals = visibleDevices(settings_.evaluator, problem_);
  if (ordinals.empty() && allocation_) {
    // No worker will run in it: given back, and nothing refers to it any more.
    allocation_.reset();
    launcher.slurm.erase("jobid");
  }
  std::sort(ordinals.begin(), ordinals.end());
  ordinals.erase(std::unique(ordinals.begin(), ordinals.end()), ordinals.end());
  renumbered_ = stepDevices_;
  for (int ordinal : ordinals) addDevice(ordinal, settings_.evaluator, {}, stepDevices_ ? 0 : ordinal);
  for (auto &d : devices_) d->thread = std::thread([this, dev = d.get()] { run(*dev); });
}

void EvaluatorPool::addDevice(int number, const EvaluatorSettings &base, const std::string &host, int hostDevice) {
  auto d = std::make_unique<Device>();
  d->ordinal = number;
  d->state.device = number;
  d->state.host = host;
  d->state.hostDevice = hostDevice;
  EvaluatorSettings s = base;
  s.hosts.clear();
  s.device = hostDevice;
  d->evaluator = std::make_unique<Evaluator>(s);
  devices_.push_back(std::move(d));
}

void EvaluatorPool::addHostDevices() {
  renumbered_ = true;
  const auto hosts = settings_.evaluator.hosts;
  // Every host asked at once: a slow or dead one does not hold up the others' answers.
  std::vector<std::future<std::pair<std::vector<VisibleDevice>, std::string>>> looks;
  for (const auto &host : hosts) {
    EvaluatorSettings s = settings_.evaluator;
    s.hosts.clear();
    s.launcher = host;
    looks.push_back(std::async(std::launch::async, [s] {
      std::string problem;
      auto seen = describeVisibleDevices(s, problem);
      return std::make_pair(std::move(seen), std::move(problem));
    }));
  }
  const auto chosen = [this](int number) {
    return settings_.devices.empty() ||
           std::find(settings_.devices.begin(), settings_.devices.end(), number) != settings_.devices.end();
  };
  int number = 0;
  std::string problems;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    auto [seen, problem] = looks[i].get();
    if (seen.empty()) {
      const std::string why = hosts[i].describe() + ": " + (problem.empty() ? "no CUDA device" : problem);
      problems += (problems.empty() ? "" : "; ") + why;
      if (onMessage_) onMessage_("left out of the pool: " + why);
      continue;
    }
    EvaluatorSettings s = settings_.evaluator;
    s.launcher = hosts[i];
    for (const auto &gpu : seen) {
      if (chosen(number)) {
        addDevice(number, s, hosts[i].describe(), gpu.ordinal);
        devices_.back()->described = gpu;
        devices_.back()->described.ordinal = number;
      }
      ++number;
    }
  }
  if (devices_.empty()) problem_ = problems.empty() ? "none of the chosen GPUs is visible" : problems;
}

std::string EvaluatorPool::nameOf(const Device &device) {
  const std::string gpu = "GPU " + std::to_string(device.ordinal);
  if (device.state.host.empty()) return gpu;
  return gpu + " (" + device.state.host + ", its GPU " + std::to_string(device.state.hostDevice) + ")";
}

EvaluatorPool::~EvaluatorPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto &d : devices_) {
      for (auto &job : d->queue) abandon(job, Outcome::Cancelled, "cancelled: the evaluation pool was shut down");
      d->queue.clear();
      d->evaluator->cancel();
    }
  }
  wake_.notify_all();
  for (auto &d : devices_)
    if (d->thread.joinable()) d->thread.join();
}

EvaluatorPool::Device *EvaluatorPool::leastLoadedLocked(const std::vector<int> &except) {
  Device *best = nullptr;
  std::size_t bestLoad = 0;
  for (auto &d : devices_) {
    if (d->state.removed || std::find(except.begin(), except.end(), d->ordinal) != except.end()) continue;
    const std::size_t load = d->queue.size() + (d->state.busy ? 1 : 0);
    if (!best || load < bestLoad) {
      best = d.get();
      bestLoad = load;
    }
  }
  return best;
}

void EvaluatorPool::abandon(Job &job, Outcome outcome, const std::string &message) {
  if (job.work) {
    job.workDone.set_value(false);
    return;
  }
  EvaluationResult r;
  r.outcome = outcome;
  r.message = message;
  job.promise.set_value(std::move(r));
}

std::future<bool> EvaluatorPool::submitWork(std::function<void(Evaluator &)> work, int device) {
  Job job;
  job.work = std::move(work);
  job.pinned = device >= 0;
  auto future = job.workDone.get_future();
  {
    std::lock_guard lock(mutex_);
    Device *d = nullptr;
    if (!stopping_) {
      if (device < 0) {
        d = leastLoadedLocked();
      } else {
        for (auto &candidate : devices_)
          if (candidate->ordinal == device && !candidate->state.removed) d = candidate.get();
      }
    }
    if (!d) {
      job.workDone.set_value(false);
      return future;
    }
    d->queue.push_back(std::move(job));
    d->state.queued = d->queue.size();
  }
  wake_.notify_all();
  return future;
}

std::future<EvaluationResult> EvaluatorPool::submit(Task task, std::string source, EvaluationOptions options) {
  Job job{std::move(task), std::move(source), std::move(options), {}};
  auto future = job.promise.get_future();
  {
    std::lock_guard lock(mutex_);
    Device *d = stopping_ ? nullptr : leastLoadedLocked();
    if (!d) {
      EvaluationResult r;
      r.outcome = Outcome::Error;
      r.message = "no GPU left in the evaluation pool" + (problem_.empty() ? std::string() : " (" + problem_ + ")");
      job.promise.set_value(std::move(r));
      return future;
    }
    d->queue.push_back(std::move(job));
    d->state.queued = d->queue.size();
  }
  wake_.notify_all();
  return future;
}

std::vector<PoolDeviceState> EvaluatorPool::devices() const {
  std::lock_guard lock(mutex_);
  std::vector<PoolDeviceState> out;
  for (const auto &d : devices_) {
    out.push_back(d->state);
    out.back().queued = d->queue.size();
  }
  return out;
}

std::vector<VisibleDevice> EvaluatorPool::describedDevices() const {
  std::lock_guard lock(mutex_);
  std::vector<VisibleDevice> out;
  for (const auto &d : devices_)
    if (!d->state.removed && !d->described.name.empty()) out.push_back(d->described);
  return out;
}

std::string EvaluatorPool::allocation() const { return allocation_ ? allocation_->jobId() : std::string(); }

void EvaluatorPool::noteWhere(Device &device) {
  const std::string where = device.evaluator->where();
  std::lock_guard lock(mutex_);
  device.state.where = where;
}

void EvaluatorPool::cancelAll() {
  std::lock_guard lock(mutex_);
  for (auto &d : devices_) d->evaluator->cancel();
}

bool EvaluatorPool::workerLost(const EvaluationResult &r) {
  for (const auto &c : r.configs)
    if (c.errorName == "worker-lost") return true;
  return false;
}

bool EvaluatorPool::deviceFailure(const EvaluationResult &r) {
  if (r.outcome == Outcome::NotRun && r.message.rfind(kNoDeviceMessage, 0) == 0) return true;
  if (workerLost(r)) return true;  // a remote worker's connection or step: never the candidate's doing
  return r.outcome == Outcome::Error && ((r.message.rfind("the GPU worker", 0) == 0 && r.message.find(" did not start") != std::string::npos) ||
                                             r.message.find("kwb-worker) was not found") != std::string::npos);
}

bool EvaluatorPool::workerTrouble(const EvaluationResult &r) {
  if (r.outcome == Outcome::Timeout) return true;
  for (const auto &c : r.configs)
    if (c.outcome == Outcome::Timeout || c.errorName == "worker-died") return true;
  return false;
}

std::string EvaluatorPool::probe(Device &device, const Task &task) {
  if (task.configs.empty() || task.seeds.empty() || !task.reference.hasCuda()) return {};
  Task reference = task;
  useReferenceLaunches(reference);
  reference.tunables.clear();
  std::string referenceSource;
  try {
    referenceSource = readTaskFile(task, task.reference.source);
  } catch (const SourceFileError &) {
    return {};  // nothing to probe with: the candidate's result stands on its own
  }
  EvaluationOptions o;
  o.configs = {task.configs.front().name};
  o.seeds = {task.seeds.front()};  // explicit: no fresh seed
  o.sourceName = task.reference.source.string();
  EvaluationResult r;
  try {
    r = device.evaluator->evaluate(reference, referenceSource, o);
  } catch (const std::exception &e) {
    return e.what();
  }
  if (r.outcome == Outcome::Correct || r.outcome == Outcome::Cancelled) return {};
  return "the task's own reference then failed too (" + std::string(toString(r.outcome)) + ": " + r.message + ")";
}

void EvaluatorPool::run(Device &device) {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !device.queue.empty(); });
      if (stopping_) return;
      job = std::move(device.queue.front());
      device.queue.pop_front();
      device.state.busy = true;
    }
    if (job.work) {
      std::exception_ptr failed;
      try {
        job.work(*device.evaluator);
      } catch (...) {
        failed = std::current_exception();  // the caller's; the device goes on
      }
      {
        std::lock_guard lock(mutex_);
        device.state.busy = false;
      }
      noteWhere(device);
      if (failed) job.workDone.set_exception(failed);
      else job.workDone.set_value(true);
      continue;
    }
    EvaluationResult result;
    try {
      result = device.evaluator->evaluate(job.task, job.source, job.options);
    } catch (const std::exception &e) {
      result.outcome = Outcome::Error;
      result.message = e.what();
    }
    if (renumbered_ && result.deviceOrdinal >= 0) result.deviceOrdinal = device.ordinal;  // the pool's number
    noteWhere(device);
    // A worker that died or hung: the candidate's doing, unless the reference fails there too.
    // (A cancelled evaluation says nothing about the device: no probe, no failure.)
    bool stopping = false;
    {
      std::lock_guard lock(mutex_);
      stopping = stopping_;
    }
    std::string failure;
    if (result.outcome == Outcome::Cancelled || stopping) {
    } else if (deviceFailure(result)) {
      failure = result.message;
    } else if (workerTrouble(result)) {
      if (const std::string p = probe(device, job.task); !p.empty()) failure = result.message + "; " + p;
    }
    std::string message;
    bool moved = false;
    {
      std::lock_guard lock(mutex_);
      device.state.busy = false;
      if (!failure.empty()) {
        ++device.failures;
        device.state.message = nameOf(device) + ": " + failure;
        if (device.failures >= settings_.maxConsecutiveFailures && !device.state.removed) {
          device.state.removed = true;
          device.state.message = nameOf(device) + " taken out of the pool after " +
                                 std::to_string(device.failures) + " failures in a row: " + failure;
          message = device.state.message;
          // What waited for it goes to the others, or fails when there is none.
          for (auto &j : device.queue) {
            Device *other = j.pinned ? nullptr : leastLoadedLocked();
            if (other) other->queue.push_back(std::move(j));
            else abandon(j, Outcome::Error, "no GPU left in the evaluation pool (" + message + ")");
          }
          device.queue.clear();
        }
        // The evaluation itself gets another device, while there is one that has not failed it;
        // a host that lost its worker or could not start one is passed over while another host
        // has a GPU (its other GPUs would most likely fail the same way).
        job.failedOn.push_back(device.ordinal);
        std::vector<int> except = job.failedOn;
        const bool hostLost = !device.state.host.empty() && (workerLost(result) || deviceFailure(result));
        if (hostLost) {
          for (const auto &d : devices_)
            if (d->state.host == device.state.host) except.push_back(d->ordinal);
          // What waits on that host's GPUs goes to the other hosts now, not after each of its
          // GPUs has failed it in turn.
          for (auto &d : devices_) {
            if (d->state.host != device.state.host) continue;
            std::deque<Job> keep;
            for (auto &j : d->queue) {
              Device *elsewhere = j.pinned || stopping_ ? nullptr : leastLoadedLocked(except);
              if (elsewhere) elsewhere->queue.push_back(std::move(j));
              else keep.push_back(std::move(j));
            }
            d->queue = std::move(keep);
          }
        }
        Device *other = stopping_ ? nullptr : leastLoadedLocked(except);
        if (!other && !stopping_) other = leastLoadedLocked(job.failedOn);
        if (!stopping_ && (other || (workerLost(result) && !job.retriedLost && !device.state.removed))) {
          ++device.state.movedAway;
          if (workerLost(result)) ++device.state.lostWorkers;
        }
        if (!stopping_) {
          if (other) {
            if (!device.state.removed) device.state.message += " (moved to " + nameOf(*other) + ")";
            other->queue.push_back(std::move(job));
            moved = true;
          } else if (workerLost(result) && !job.retriedLost && !device.state.removed) {
            // A lost remote worker (a dropped connection, a preempted step) with no other device:
            // once more here, on a fresh worker (a new connection or step).
            device.state.message += " (run again here on a fresh worker)";
            job.retriedLost = true;
            device.queue.push_front(std::move(job));
            moved = true;
          }
        }
      } else {
        device.failures = 0;
      }
      if (!moved) ++device.state.done;  // one result, counted once: where it was given
    }
    if (!message.empty() && onMessage_) onMessage_(message);  // before the result, which callers wait on
    if (!moved) job.promise.set_value(std::move(result));
    if (!message.empty() || moved) wake_.notify_all();
    std::lock_guard lock(mutex_);
    if (device.state.removed) return;
  }
}

std::vector<PoolHostState> poolHosts(const std::vector<PoolDeviceState> &devices) {
  std::vector<PoolHostState> out;
  for (const auto &d : devices) {
    if (d.host.empty()) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const PoolHostState &h) { return h.host == d.host; });
    if (it == out.end()) {
      out.push_back({});
      out.back().host = d.host;
      it = out.end() - 1;
    }
    ++it->gpus;
    if (!d.removed) ++it->gpusLeft;
    it->busy += d.busy ? 1 : 0;
    it->queued += d.queued;
    it->done += d.done;
    it->movedAway += d.movedAway;
    it->lostWorkers += d.lostWorkers;
  }
  return out;
}

std::string describePoolHost(const PoolHostState &host, const worker::SshConnectionStats &connection) {
  auto count = [](std::size_t n, const char *one, const char *many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  std::string out = host.host + ": " + count(static_cast<std::size_t>(host.gpus), "GPU", "GPUs");
  if (host.gpusLeft < host.gpus) out += " (" + std::to_string(host.gpus - host.gpusLeft) + " taken out)";
  if (host.busy) out += " · " + std::to_string(host.busy) + " busy";
  if (host.queued) out += " · " + std::to_string(host.queued) + " queued";
  out += " · " + std::to_string(host.done) + " done";
  if (host.movedAway)
    out += " · " + std::to_string(host.movedAway) + " moved away or run again" +
           (host.lostWorkers ? " (" + count(host.lostWorkers, "lost worker", "lost workers") + ")" : std::string());
  if (!connection.asked) return out;
  if (!connection.up) return out + " · shared connection down: " + connection.problem;
  out += " · shared connection up (";
  if (connection.started == 0) {
    out += "already up, set up by another process";
  } else {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.0f ms", connection.lastSetupMs);
    out += std::string("set up in ") + ms;
    if (connection.started > 1) out += ", " + count(static_cast<std::size_t>(connection.started), "start", "starts");
  }
  return out + ", reused " + count(static_cast<std::size_t>(connection.reused), "time", "times") + ")";
}

}  // namespace kwb
