#include "core/tune/tuner.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <list>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/compile/compiler.h"
#include "core/eval/evaluator_pool.h"
#include "core/task/source_file.h"
#include "core/text/content_hash.h"
#include "core/text/json_fields.h"
#include "core/tune/tune_cache.h"

using nlohmann::json;

namespace kwb::tune {

namespace {

// Outcomes that say something about the point itself and so are kept in the cache. Not-run,
// cancelled, timeouts and errors (a worker that did not start, a lost GPU) are measured again.
bool cacheable(Outcome outcome) {
  return outcome == Outcome::Correct || outcome == Outcome::Incorrect || outcome == Outcome::CompileError;
}

// Compiles points ahead of the evaluations on a few CPU threads; the compile cache on disk is
// what hands the result to the evaluator.
class CompileAhead {
 public:
  CompileAhead(const Task &task, const std::string &source, const std::string &sourceName, std::string arch,
               CompilerOptions options, std::size_t threads)
      : task_(task), source_(source), sourceName_(sourceName), arch_(std::move(arch)), compiler_(std::move(options)) {
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~CompileAhead() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      queue_.clear();
    }
    wake_.notify_all();
    for (auto &t : threads_) t.join();
  }
  // Queues the points not queued before.
  void want(const std::vector<Point> &points) {
    {
      std::lock_guard lock(mutex_);
      for (const auto &p : points)
        if (seen_.insert(p).second) queue_.push_back(p);
    }
    wake_.notify_all();
  }
  std::size_t compiled() const {
    std::lock_guard lock(mutex_);
    return compiled_;
  }

 private:
  void loop() {
    for (;;) {
      Point p;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        p = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        compiler_.compile(requestFor(task_, source_, sourceName_, arch_, p));
      } catch (const std::exception &) {
        // The evaluation reports it.
      }
      std::lock_guard lock(mutex_);
      ++compiled_;
    }
  }

  const Task &task_;
  const std::string &source_;
  const std::string &sourceName_;
  std::string arch_;
  Compiler compiler_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Point> queue_;
  std::set<Point> seen_;
  std::size_t compiled_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

namespace {

using json_fields::field;
using json_fields::omitEmpty;

constexpr auto kPointResultFields = std::tuple{
    field("outcome", &PointResult::outcome),
    field("message", &PointResult::message),
    omitEmpty("objective_ms", &PointResult::objectiveMs),
    field("config_ms", &PointResult::configMs),
    omitEmpty("reference_ms", &PointResult::referenceMs),
    field("speedup", &PointResult::speedup),
    field("relative_spread", &PointResult::relativeSpread),
    field("device", &PointResult::device),
    field("device_ordinal", &PointResult::deviceOrdinal),
    field("seconds", &PointResult::seconds),
    field("compile_seconds", &PointResult::compileSeconds),
    field("compile_cache_hit", &PointResult::compileCacheHit),
    field("registers", &PointResult::registers)};

}  // namespace

void to_json(json &j, const PointResult &v) {
  json_fields::writeFields(j, v, kPointResultFields);
  if (v.registers < 0) j.erase("registers");  // unknown
}

void from_json(const json &j, PointResult &v) { json_fields::readFields(j, v, kPointResultFields); }

PointResult pointResultFrom(const EvaluationResult &r) {
  PointResult p;
  p.outcome = r.outcome;
  p.message = r.message;
  p.device = r.device;
  p.deviceOrdinal = r.deviceOrdinal;
  p.seconds = r.seconds;
  p.compileSeconds = r.candidate.seconds;
  p.compileCacheHit = r.candidate.cacheHit;
  if (!r.candidate.kernels.empty()) p.registers = r.candidate.kernels.front().registers;
  if (r.outcome != Outcome::Correct) return p;
  double logSum = 0, speedupLogSum = 0;
  int speedups = 0;
  bool allTimed = !r.configs.empty();
  for (const auto &c : r.configs) {
    if (!c.timing || !c.timing->ok || !(c.timing->candidate.median > 0)) {
      allTimed = false;
      if (c.timing && !c.timing->ok) p.message = c.config + ": not timed: " + c.timing->error;
      continue;
    }
    p.configMs[c.config] = c.timing->candidate.median;
    logSum += std::log(c.timing->candidate.median);
    if (c.timing->speedup > 0) {
      speedupLogSum += std::log(c.timing->speedup);
      ++speedups;
    }
    p.relativeSpread = std::max(p.relativeSpread, c.timing->candidate.relativeSpread);
    if (c.timing->referenceTimed && c.timing->reference.median > 0) p.referenceMs[c.config] = c.timing->reference.median;
  }
  if (speedups > 0) p.speedup = std::exp(speedupLogSum / speedups);
  if (allTimed) {
    p.objectiveMs = std::exp(logSum / static_cast<double>(p.configMs.size()));
  } else {
    // Correct but without a time for every configuration: it cannot be ranked.
    p.outcome = Outcome::Error;
    if (p.message.empty() || p.message == r.message) p.message = "correct, but not every configuration was timed";
  }
  return p;
}

void to_json(json &out, const TuneReport &v) {
  json pts = json::array();
  for (const auto &p : v.points) {
    json j = p.result;
    j["order"] = p.order;
    j["point"] = p.point;
    j["label"] = p.label;
    j["cached"] = p.cached;
    pts.push_back(std::move(j));
  }
  json j = {{"task", v.task},         {"source", v.source},     {"strategy", toString(v.strategy)},
            {"space_size", v.spaceSize}, {"budget", v.budget},  {"stop", v.stop},
            {"message", v.message},   {"devices", v.devices},   {"arch", v.arch},
            {"cache_file", v.cacheFile}, {"measured", v.measured}, {"cached", v.cached},
            {"rejected", v.rejected}, {"compiled_only", v.compiledOnly}, {"compiled_ahead", v.compiledAhead}, {"seconds", v.seconds},
            {"points", pts}};
  if (v.best) {
    j["best"] = pts[*v.best];
  } else {
    j["best"] = nullptr;
  }
  out = std::move(j);
}

std::string tuneContext(const Task &task, const std::string &source, const TuneSettings &settings,
                        const std::string &arch, const std::vector<std::string> &deviceNames) {
  std::string manifest;
  try {
    manifest = readManifestText(task.manifestPath);
  } catch (const std::exception &) {
  }
  std::vector<std::string> configs = settings.configs;
  if (configs.empty())
    for (const auto &c : task.configs) configs.push_back(c.name);
  auto devices = deviceNames;
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  const json key = {{"format", 1},
                    {"objective", "geomean-median-kernel-ms"},
                    {"manifest", manifest},
                    {"source", source},
                    {"configs", configs},
                    {"seeds", settings.seeds.empty() ? task.seeds : settings.seeds},
                    {"timing_cap_ms", settings.timingCap.count()},
                    {"arch", arch},
                    {"devices", devices}};
  return contentHash(key.dump());
}

Tuner::Tuner(TuneSettings settings) : settings_(std::move(settings)) {}

void Tuner::cancel() {
  cancelled_ = true;
  std::lock_guard lock(cancelMutex_);
  if (cancelRunning_) cancelRunning_();
}

TuneReport Tuner::search(const SearchSpace &space, const Measure &measure, std::size_t inFlight,
                         const std::string &cacheContext, const OnPoint &onPoint,
                         const std::function<void(const Search &)> &beforeProposal) {
  const auto start = std::chrono::steady_clock::now();
  TuneReport report;
  report.spaceSize = space.size();
  Search search(space, settings_.strategy, settings_.budget, settings_.seed);
  report.strategy = search.strategy();
  report.budget = search.budget();

  std::unique_ptr<TuneCache> cache;
  if (!cacheContext.empty() && settings_.useCache) {
    cache = std::make_unique<TuneCache>(settings_.cacheFile.empty() ? TuneCache::defaultPath() : settings_.cacheFile);
    if (settings_.fresh) cache->clear(cacheContext);
    report.cacheFile = cache->path().string();
  }

  struct Flight {
    Coords coords;
    InFlight point;
  };
  std::list<Flight> flights;
  bool stopping = false;

  auto record = [&](const Coords &c, PointResult r, bool cached) {
    TunedPoint tp;
    tp.order = report.points.size();
    tp.point = space.point(c);
    tp.label = space.describe(c);
    tp.result = std::move(r);
    tp.cached = cached;
    const bool scored = tp.result.outcome == Outcome::Correct && tp.result.objectiveMs.has_value();
    search.report(c, scored ? tp.result.objectiveMs : std::nullopt);
    if (tp.result.outcome == Outcome::NotRun)
      ++report.compiledOnly;  // nothing ran: neither measured nor rejected
    else if (cached)
      ++report.cached;
    else
      ++report.measured;
    if (!scored && tp.result.outcome != Outcome::NotRun) ++report.rejected;
    if (scored && (!report.best || *tp.result.objectiveMs < *report.points[*report.best].result.objectiveMs))
      report.best = tp.order;
    if (cache && !cached && cacheable(tp.result.outcome)) cache->store(cacheContext, tp.label, json(tp.result));
    report.points.push_back(std::move(tp));
    if (onPoint) onPoint(report.points.back(), report);
    // No GPU, or the pool lost every GPU: nothing more can be measured.
    const auto &outcome = report.points.back().result.outcome;
    if (!compileOnly_ && (outcome == Outcome::NotRun || outcome == Outcome::Cancelled)) {
      stopping = true;
      report.stop = outcome == Outcome::NotRun ? "no-device" : "cancelled";
      report.message = report.points.back().result.message;
    }
  };

  for (;;) {
    if (cancelled_ && !stopping) {
      stopping = true;
      report.stop = "cancelled";
      report.message = "cancelled";
    }
    if (!stopping) {
      if (beforeProposal) beforeProposal(search);
      while (flights.size() < std::max<std::size_t>(1, inFlight)) {
        const auto c = search.next();
        if (!c) break;
        if (cache) {
          if (auto hit = cache->find(cacheContext, space.describe(*c))) {
            // A cached point that does not read (an older or damaged entry) is measured again.
            std::optional<PointResult> cachedPoint;
            try {
              cachedPoint = hit->get<PointResult>();
            } catch (const json::exception &) {
            }
            if (cachedPoint) {
              record(*c, *cachedPoint, true);
              if (stopping) break;
              continue;
            }
          }
        }
        flights.push_back({*c, measure(space.point(*c))});
      }
    }
    // Nothing in flight after proposing: the search has nothing more to propose (or we stop).
    if (flights.empty()) break;
    // Wait for any point in flight to finish.
    bool progressed = false;
    while (!progressed) {
      for (auto it = flights.begin(); it != flights.end();) {
        if (it->point.wait(std::chrono::milliseconds(0))) {
          PointResult r;
          try {
            r = it->point.get();
          } catch (const std::exception &e) {
            r.outcome = Outcome::Error;
            r.message = e.what();
          }
          record(it->coords, std::move(r), false);
          it = flights.erase(it);
          progressed = true;
        } else {
          ++it;
        }
      }
      if (!progressed && !flights.empty()) {
        // A cancelled pool still runs what was queued: cancel again until nothing is left.
        if (cancelled_) {
          std::lock_guard lock(cancelMutex_);
          if (cancelRunning_) cancelRunning_();
        }
        flights.front().point.wait(std::chrono::milliseconds(5));
      }
    }
  }
  if (report.stop == "done" && report.points.empty()) report.message = "nothing to evaluate";
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

TuneReport Tuner::tune(const Task &task, const std::string &source, const std::string &sourceName,
                       const OnPoint &onPoint) {
  for (const auto &name : settings_.configs)
    if (!task.config(name)) throw std::invalid_argument("task '" + task.name + "' has no size configuration '" + name + "'");
  // A cancel() that came before tune() (while the caller prepared) holds; it is forgotten as
  // tune() returns, so that the next tune() starts afresh.
  struct Forget {
    std::atomic<bool> &flag;
    ~Forget() { flag = false; }
  } forget{cancelled_};
  const SearchSpace space(task.tunables);

  EvaluationOptions options;
  options.configs = settings_.configs;
  options.seeds = settings_.seeds;
  options.arch = settings_.arch;
  options.time = true;
  options.timeReference = false;  // points are ranked against each other: the reference is not timed
  options.timeTorch = false;      // nor is the task's PyTorch module
  options.timingCap = settings_.timingCap;
  options.timeLimit = settings_.timeLimit;
  options.sourceName = sourceName;

  // The GPUs, their names (for the cache) and their architecture (for compiling ahead).
  std::unique_ptr<EvaluatorPool> pool;
  std::vector<std::string> deviceNames;
  std::string arch = settings_.arch;
  std::string noDevice;
  if (settings_.useDevice) {
    EvaluatorPoolSettings ps;
    ps.evaluator = settings_.evaluator;
    ps.cancelled = [this] { return cancelled_.load(); };  // while it waits for a Slurm allocation
    std::vector<VisibleDevice> chosen;
    pool = poolOfChosenDevices(ps, settings_.gpus, chosen, noDevice);
    for (const auto &d : chosen) {
      deviceNames.push_back(d.name);
      if (arch.empty()) arch = d.arch;
    }
  }
  if (arch.empty()) arch = "sm_90";
  options.arch = arch;

  TuneReport report;
  if (pool) {
    {
      std::lock_guard lock(cancelMutex_);
      cancelRunning_ = [p = pool.get()] { p->cancelAll(); };
    }
    std::unique_ptr<CompileAhead> ahead;
    if (settings_.compileAhead) {
      std::size_t threads = settings_.compileThreads;
      if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency()) > 1 ? std::thread::hardware_concurrency() - 1 : 1;
      ahead = std::make_unique<CompileAhead>(task, source, sourceName, arch, settings_.evaluator.compiler, threads);
    }
    const auto devices = pool->devices().size();
    // The reference is timed until one point comes back with its time (the first few, as the
    // GPUs take points at once): points rank against each other, and the experience memory gets
    // each point's speedup over the reference from that one time (core/memory/case_sources.h).
    auto haveReference = std::make_shared<std::atomic<bool>>(false);
    const Measure measure = [&, haveReference](const Point &p) {
      EvaluationOptions o = options;
      o.tunables = p;
      o.timeReference = !haveReference->load();
      return inFlight(pool->submit(task, source, o), [haveReference](const EvaluationResult &r) {
        auto point = pointResultFrom(r);
        if (!point.referenceMs.empty()) haveReference->store(true);
        return point;
      });
    };
    report = search(space, measure, devices + 1, tuneContext(task, source, settings_, arch, deviceNames), onPoint,
                    [&](const Search &s) {
                      if (!ahead) return;
                      std::vector<Point> pts;
                      for (const auto &c : s.lookahead(settings_.lookahead)) pts.push_back(space.point(c));
                      ahead->want(pts);
                    });
    if (ahead) report.compiledAhead = ahead->compiled();
    {
      std::lock_guard lock(cancelMutex_);
      cancelRunning_ = nullptr;
    }
    report.devices = deviceNames;
  } else {
    // No GPU: compile each point and check its launches; nothing is measured or cached.
    EvaluatorSettings es = settings_.evaluator;
    es.useDevice = false;
    Evaluator evaluator(es);
    const Measure measure = [&](const Point &p) {
      EvaluationOptions o = options;
      o.tunables = p;
      o.time = false;
      std::promise<PointResult> promise;
      try {
        promise.set_value(pointResultFrom(evaluator.evaluate(task, source, o)));
      } catch (const std::exception &e) {
        PointResult r;
        r.message = e.what();
        promise.set_value(r);
      }
      return inFlight(promise.get_future(), [](const PointResult &r) { return r; });
    };
    compileOnly_ = true;
    report = search(space, measure, 1, std::string(), onPoint);
    compileOnly_ = false;
    if (report.stop != "cancelled") {
      report.stop = "no-device";
      report.message = "no CUDA device (" + (noDevice.empty() ? std::string("not asked to use one") : noDevice) +
                       "): every point compiled and its launch checked; nothing was measured";
    }
  }
  report.task = task.name;
  report.source = sourceName;
  report.arch = arch;
  return report;
}

}  // namespace kwb::tune
