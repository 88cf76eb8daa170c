#pragma once
// The built-in autotuner: searches a task's tunable parameters for the fastest correct
// configuration of one candidate source. Each point is a full evaluation (correctness on the
// chosen size configurations and seeds, then timing against the reference) on the GPUs of an
// EvaluatorPool; incorrect points are rejected, never chosen. The objective is the geometric
// mean of the timed configurations' median kernel times (so no single size dominates). While
// the GPUs measure, CPU threads compile the points the search will propose next (the
// evaluator then finds them in the compile cache). Every result goes to a resumable cache
// (TuneCache) as it arrives. Without a GPU every point is compiled and its launch checked only,
// and the report says that nothing was measured. No Qt; run it off any GUI thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval/evaluator.h"
#include "core/tune/search.h"
#include "core/tune/search_space.h"

namespace kwb::tune {

// What one point's evaluation came to.
struct PointResult {
  Outcome outcome = Outcome::Error;
  std::string message;                  // one line
  std::optional<double> objectiveMs;    // correct and timed: the geometric mean of configMs
  std::map<std::string, double> configMs;  // median kernel time per timed configuration
  std::map<std::string, double> referenceMs;  // the reference's median per configuration, when it was timed
  double speedup = 0;                   // over the reference: the geometric mean over timed configurations (0: none)
  double relativeSpread = 0;            // the widest relative spread of those timings
  std::string device;                   // the GPU it ran on, empty when none
  int deviceOrdinal = -1;
  double seconds = 0;                   // the evaluation's wall time
  double compileSeconds = 0;            // the candidate's compile inside it (a cache hit is fast)
  bool compileCacheHit = false;
  int registers = -1;                   // of the candidate's kernel, when known
};
// The tuning cache's and `kwb tune --json`'s form of a point.
void to_json(nlohmann::json &j, const PointResult &v);
void from_json(const nlohmann::json &j, PointResult &v);

// From an evaluation with timing.
PointResult pointResultFrom(const EvaluationResult &r);

struct TunedPoint {
  std::size_t order = 0;  // 0, 1, ... in the order results arrived
  Point point;
  std::string label;      // "BX=32 BY=8"
  PointResult result;
  bool cached = false;    // from the cache: not measured in this run
};

struct TuneSettings {
  Strategy strategy = Strategy::Auto;
  std::uint64_t budget = 0;      // points to evaluate; 0: kDefaultBudget (exhaustive below it)
  std::uint64_t seed = 1;        // of the random sampling
  std::vector<std::string> configs;  // to check and time; empty: all of the task's
  std::vector<std::uint64_t> seeds;  // empty: the task's
  std::string arch;              // empty: the GPU's (sm_90 without one)
  std::chrono::milliseconds timingCap{1000};   // sampling time per configuration
  std::chrono::milliseconds timeLimit{60000};  // per worker request
  std::vector<int> gpus;         // empty: every visible GPU
  bool useDevice = true;         // false: compile and check launches only
  bool compileAhead = true;
  std::size_t compileThreads = 0;  // 0: the CPU count less one, at least one
  std::size_t lookahead = 8;       // points compiled ahead of the search
  bool useCache = true;
  std::filesystem::path cacheFile;  // empty: TuneCache::defaultPath()
  bool fresh = false;               // forget this context's cached points first
  EvaluatorSettings evaluator;      // worker path, sandbox, compiler options
};

struct TuneReport {
  std::string task, source;
  Strategy strategy = Strategy::Auto;  // resolved
  std::uint64_t spaceSize = 0, budget = 0;
  std::vector<TunedPoint> points;      // in arrival order
  std::optional<std::size_t> best;     // index into points
  // "done" (budget spent or space covered), "cancelled", "no-device" (compiled only), "error"
  std::string stop = "done";
  std::string message;
  std::vector<std::string> devices;    // the GPUs used
  std::string arch;
  std::string cacheFile;
  // measured: ran on a GPU in this run; cached: from the cache; rejected: ran or came from the
  // cache and cannot be ranked (incorrect, failed, untimed); compiledOnly: compiled and their
  // launches checked but not run (no GPU). Each point counts once among measured, cached and
  // compiledOnly.
  std::size_t measured = 0, cached = 0, rejected = 0, compiledOnly = 0;
  std::size_t compiledAhead = 0;       // compiles done ahead on CPU threads
  double seconds = 0;
};
void to_json(nlohmann::json &j, const TuneReport &v);

// A point being measured: `wait` blocks for up to the given time and says whether the result
// is ready; `get` then takes it (once).
struct InFlight {
  std::function<bool(std::chrono::milliseconds)> wait;
  std::function<PointResult()> get;
};
// A future's result, converted when taken.
template <class T, class Convert>
InFlight inFlight(std::future<T> future, Convert convert) {
  auto f = std::make_shared<std::future<T>>(std::move(future));
  return {[f](std::chrono::milliseconds d) { return f->wait_for(d) == std::future_status::ready; },
          [f, convert] { return convert(f->get()); }};
}

class Tuner {
 public:
  using OnPoint = std::function<void(const TunedPoint &, const TuneReport &)>;
  using Measure = std::function<InFlight(const Point &)>;

  explicit Tuner(TuneSettings settings = {});

  // Tunes `source` (named sourceName in messages) as a candidate of `task`. onPoint is called on
  // this thread for each result as it arrives. Throws std::invalid_argument for settings that do
  // not fit the task (an unknown configuration); kwb::StoreError when the cache cannot be opened.
  TuneReport tune(const Task &task, const std::string &source, const std::string &sourceName, const OnPoint &onPoint = {});

  // The search loop alone, over any measure (tune() runs it over the evaluator pool): at most
  // `inFlight` points measured at once; results cached under `cacheContext` (none when empty);
  // `beforeProposal` is called with the search before each round of proposals (compile-ahead).
  TuneReport search(const SearchSpace &space, const Measure &measure, std::size_t inFlight,
                    const std::string &cacheContext, const OnPoint &onPoint = {},
                    const std::function<void(const Search &)> &beforeProposal = {});

  // From any thread: stops proposing, cancels what runs; tune() returns with stop "cancelled".
  void cancel();

 private:
  TuneSettings settings_;
  bool compileOnly_ = false;  // no GPU: "not-run" results are expected, not a reason to stop
  std::atomic<bool> cancelled_{false};
  std::function<void()> cancelRunning_;  // set while tune() holds a pool
  std::mutex cancelMutex_;
};

// The cache context of a tuning run: a content hash over everything a measured point depends on.
std::string tuneContext(const Task &task, const std::string &source, const TuneSettings &settings,
                        const std::string &arch, const std::vector<std::string> &deviceNames);

}  // namespace kwb::tune
