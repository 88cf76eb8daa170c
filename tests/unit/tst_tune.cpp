// The autotuner (core/tune): the search space, both search strategies, the search loop with
// results arriving out of order, the resumable cache in a real SQLite file, cancelling, and
// tune() on a bundled task without a GPU (every point compiled for real, nothing measured).
// The search is driven by an objective function given as data: what is under test is the search.
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <set>

#include "core/task/manifest_parser.h"
#include "core/tune/search.h"
#include "core/tune/search_space.h"
#include "core/tune/tune_cache.h"
#include "core/tune/tuner.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;
using kwb::tune::Coords;
using kwb::tune::Point;
using kwb::tune::PointResult;
using kwb::tune::Search;
using kwb::tune::SearchSpace;
using kwb::tune::Strategy;

namespace {

// Four tunables of 8 values each: 4096 points.
SearchSpace bigSpace() {
  std::vector<kwb::Tunable> dims;
  for (const char *name : {"A", "B", "C", "D"}) {
    kwb::Tunable t;
    t.name = name;
    for (int v = 0; v < 8; ++v) t.values.push_back(1LL << v);  // 1, 2, 4, ..., 128
    dims.push_back(t);
  }
  return SearchSpace(dims);
}

// A bowl over the log of the values with its floor at A=16 B=4 C=64 D=2, and a band of points
// (A = 128) that are "incorrect".
const Point kFloor = {{"A", 16}, {"B", 4}, {"C", 64}, {"D", 2}};
PointResult bowl(const Point &p) {
  PointResult r;
  if (p.at("A") == 128) {
    r.outcome = kwb::Outcome::Incorrect;
    r.message = "mismatch";
    return r;
  }
  double s = 1.0;
  for (const auto &[k, v] : p) {
    const double d = std::log2(static_cast<double>(v)) - std::log2(static_cast<double>(kFloor.at(k)));
    s += d * d;
  }
  r.outcome = kwb::Outcome::Correct;
  r.objectiveMs = s;
  r.configMs["only"] = s;
  return r;
}

kwb::tune::InFlight ready(PointResult r) {
  return {[](std::chrono::milliseconds) { return true; }, [r] { return r; }};
}

// Ready only after `polls` waits: results then arrive in another order than proposed.
kwb::tune::InFlight late(PointResult r, int polls) {
  auto left = std::make_shared<int>(polls);
  return {[left](std::chrono::milliseconds) { return (*left)-- <= 0; }, [r] { return r; }};
}

std::vector<std::string> labels(const kwb::tune::TuneReport &report) {
  std::vector<std::string> out;
  for (const auto &p : report.points) out.push_back(p.label);
  return out;
}

}  // namespace

class TestTune : public QObject {
  Q_OBJECT

  fs::path dir_;

 private slots:
  void initTestCase() {
    dir_ = fs::path(KWB_TEST_OUTPUT_DIR) / "tune";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  void spaceAddressesEveryPoint() {
    const auto space = bigSpace();
    QCOMPARE(space.size(), std::uint64_t(4096));
    std::set<std::string> seen;
    for (std::uint64_t i = 0; i < space.size(); ++i) {
      const auto c = space.at(i);
      QCOMPARE(space.index(c), i);
      const auto back = space.coords(space.point(c));
      QVERIFY(back.has_value());
      QCOMPARE(*back, c);
      seen.insert(space.describe(c));
    }
    QCOMPARE(seen.size(), std::size_t(4096));
    QCOMPARE(space.describe(space.at(0)), std::string("A=1 B=1 C=1 D=1"));
    QCOMPARE(space.describe(space.at(1)), std::string("A=1 B=1 C=1 D=2"));  // the last tunable varies fastest
    // Corners have one neighbour per tunable, inner points two.
    QCOMPARE(space.neighbours(space.at(0)).size(), std::size_t(4));
    QCOMPARE(space.neighbours(Coords{3, 3, 3, 3}).size(), std::size_t(8));
    QVERIFY(!space.coords({{"A", 3}, {"B", 1}, {"C", 1}, {"D", 1}}));  // 3 is not a listed value
    QVERIFY(!space.coords({{"A", 1}, {"B", 1}, {"C", 1}}));            // D missing
    const SearchSpace none({});
    QCOMPARE(none.size(), std::uint64_t(1));
    QCOMPARE(none.describe(none.at(0)), std::string("(no tunables)"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, SearchSpace({kwb::Tunable{"X", {}}}));
  }

  void autoIsExhaustiveWhenTheBudgetCoversTheSpace() {
    std::vector<kwb::Tunable> dims = {{"X", {1, 2, 3}}, {"Y", {10, 20}}};
    const SearchSpace space(dims);
    Search s(space, Strategy::Auto, 0, 1);
    QCOMPARE(s.strategy(), Strategy::Exhaustive);
    QCOMPARE(s.budget(), std::uint64_t(6));
    QCOMPARE(s.lookahead(3).size(), std::size_t(3));
    std::set<std::uint64_t> seen;
    while (auto c = s.next()) {
      QVERIFY(seen.insert(space.index(*c)).second);
      s.report(*c, 1.0);
    }
    QCOMPARE(seen.size(), std::size_t(6));
    QVERIFY(s.done());
    QVERIFY(s.lookahead(3).empty());
    // A budget below the space's size switches Auto to random sampling plus local search.
    Search small(space, Strategy::Auto, 4, 1);
    QCOMPARE(small.strategy(), Strategy::RandomLocal);
    QCOMPARE(small.budget(), std::uint64_t(4));
  }

  void randomLocalFindsTheFloorWithinItsBudget() {
    const auto space = bigSpace();
    kwb::tune::TuneSettings settings;
    settings.budget = 64;
    settings.seed = 7;
    kwb::tune::Tuner tuner(settings);
    const auto report = tuner.search(space, [](const Point &p) { return ready(bowl(p)); }, 1, std::string());
    QCOMPARE(report.strategy, Strategy::RandomLocal);
    QCOMPARE(report.points.size(), std::size_t(64));  // exactly the budget, 1.6% of the space
    std::set<std::string> distinct;
    for (const auto &p : report.points) distinct.insert(p.label);
    QCOMPARE(distinct.size(), std::size_t(64));  // never the same point twice
    QVERIFY(report.best.has_value());
    QCOMPARE(report.points[*report.best].point, kFloor);
    QCOMPARE(*report.points[*report.best].result.objectiveMs, 1.0);
    for (const auto &p : report.points)
      if (p.point.at("A") == 128) QCOMPARE(p.result.outcome, kwb::Outcome::Incorrect);
    QCOMPARE(report.measured, std::size_t(64));
    QVERIFY(report.rejected <= report.points.size());
    QCOMPARE(report.stop, std::string("done"));

    // The same seed walks the same way; another seed another way.
    kwb::tune::Tuner again(settings);
    QCOMPARE(labels(again.search(space, [](const Point &p) { return ready(bowl(p)); }, 1, std::string())), labels(report));
    settings.seed = 8;
    kwb::tune::Tuner other(settings);
    QVERIFY(labels(other.search(space, [](const Point &p) { return ready(bowl(p)); }, 1, std::string())) != labels(report));
  }

  void rejectedPointsAreNeverBest() {
    // Every point but one is incorrect: that one is best, whatever the others would score.
    std::vector<kwb::Tunable> dims = {{"X", {1, 2, 3, 4}}};
    const SearchSpace space(dims);
    kwb::tune::Tuner tuner;
    const auto report = tuner.search(space, [](const Point &p) {
      PointResult r;
      if (p.at("X") == 3) {
        r.outcome = kwb::Outcome::Correct;
        r.objectiveMs = 100.0;
      } else {
        r.outcome = p.at("X") == 1 ? kwb::Outcome::CompileError : kwb::Outcome::Incorrect;
      }
      return ready(r);
    }, 2, std::string());
    QCOMPARE(report.points.size(), std::size_t(4));
    QVERIFY(report.best.has_value());
    QCOMPARE(report.points[*report.best].point.at("X"), std::int64_t(3));
    QCOMPARE(report.rejected, std::size_t(3));
  }

  void resultsArrivingOutOfOrderAreAllCounted() {
    const auto space = bigSpace();
    kwb::tune::TuneSettings settings;
    settings.budget = 48;
    kwb::tune::Tuner tuner(settings);
    int n = 0;
    std::vector<std::string> proposed;
    const auto report = tuner.search(space, [&](const Point &p) {
      proposed.push_back(SearchSpace(bigSpace().dims()).describe(*bigSpace().coords(p)));
      return late(bowl(p), (n++ % 3) * 2);  // 0, 2, 4 polls: later proposals often finish first
    }, 4, std::string());
    QCOMPARE(report.points.size(), std::size_t(48));
    QVERIFY(labels(report) != proposed);  // arrival order differs from proposal order
    std::set<std::string> a(proposed.begin(), proposed.end());
    const auto got = labels(report);
    QCOMPARE(std::set<std::string>(got.begin(), got.end()), a);
    QCOMPARE(report.points[*report.best].point, kFloor);
  }

  void theCacheResumesARun() {
    const auto space = bigSpace();
    kwb::tune::TuneSettings settings;
    settings.budget = 40;
    settings.cacheFile = dir_ / "resume.sqlite";
    int measured = 0;
    auto measure = [&](const Point &p) {
      ++measured;
      return ready(bowl(p));
    };
    // A first run stopped after 15 results (as Ctrl+C or a crash would).
    {
      kwb::tune::Tuner tuner(settings);
      const auto first = tuner.search(space, measure, 1, "ctx-1", [&](const kwb::tune::TunedPoint &, const kwb::tune::TuneReport &r) {
        if (r.points.size() == 15) tuner.cancel();
      });
      QCOMPARE(first.stop, std::string("cancelled"));
      QCOMPARE(first.points.size(), std::size_t(15));
    }
    QCOMPARE(kwb::tune::TuneCache(settings.cacheFile).count("ctx-1"), std::size_t(15));
    // Resumed: the 15 come from the file, 25 more are measured, and the walk is the one an
    // uninterrupted run takes.
    measured = 0;
    kwb::tune::Tuner resumed(settings);
    const auto second = resumed.search(space, measure, 1, "ctx-1");
    QCOMPARE(second.points.size(), std::size_t(40));
    QCOMPARE(second.cached, std::size_t(15));
    QCOMPARE(second.measured, std::size_t(25));
    QCOMPARE(measured, 25);
    settings.useCache = false;
    kwb::tune::Tuner plain(settings);
    QCOMPARE(labels(plain.search(space, measure, 1, "ctx-1")), labels(second));
    // Run again: nothing is measured. Another context shares nothing. --fresh measures again.
    settings.useCache = true;
    measured = 0;
    kwb::tune::Tuner third(settings);
    const auto t = third.search(space, measure, 1, "ctx-1");
    QCOMPARE(measured, 0);
    QCOMPARE(t.cached, std::size_t(40));
    QCOMPARE(t.points[*t.best].point, second.points[*second.best].point);
    kwb::tune::Tuner otherContext(settings);
    otherContext.search(space, measure, 1, "ctx-2");
    QCOMPARE(measured, 40);
    settings.fresh = true;
    measured = 0;
    kwb::tune::Tuner fresh(settings);
    fresh.search(space, measure, 1, "ctx-1");
    QCOMPARE(measured, 40);
  }

  void notRunAndErrorsAreNotCached() {
    kwb::tune::TuneSettings settings;
    settings.cacheFile = dir_ / "outcomes.sqlite";
    std::vector<kwb::Tunable> dims = {{"X", {1, 2, 3, 4, 5}}};
    const SearchSpace space(dims);
    const kwb::Outcome outcomes[] = {kwb::Outcome::Correct, kwb::Outcome::Incorrect, kwb::Outcome::CompileError, kwb::Outcome::Timeout, kwb::Outcome::Error};
    kwb::tune::Tuner tuner(settings);
    tuner.search(space, [&](const Point &p) {
      PointResult r;
      r.outcome = outcomes[p.at("X") - 1];
      if (r.outcome == kwb::Outcome::Correct) r.objectiveMs = 2.0;
      return ready(r);
    }, 1, "ctx");
    kwb::tune::TuneCache cache(settings.cacheFile);
    QCOMPARE(cache.count("ctx"), std::size_t(3));
    QVERIFY(cache.find("ctx", "X=1").has_value());
    QCOMPARE(cache.find("ctx", "X=1")->get<PointResult>().objectiveMs.value_or(0), 2.0);
    QVERIFY(!cache.find("ctx", "X=4").has_value());
    QVERIFY(!cache.find("ctx", "X=5").has_value());
  }

  void aLostGpuStopsTheRun() {
    // "not-run" from the pool means no GPU is left: the run stops and says why.
    std::vector<kwb::Tunable> dims = {{"X", {1, 2, 3, 4, 5, 6}}};
    const SearchSpace space(dims);
    kwb::tune::Tuner tuner;
    const auto report = tuner.search(space, [](const Point &p) {
      PointResult r;
      r.outcome = p.at("X") < 3 ? kwb::Outcome::Correct : kwb::Outcome::NotRun;
      r.objectiveMs = p.at("X") < 3 ? std::optional<double>(1.0) : std::nullopt;
      r.message = "no CUDA device left in the pool";
      return ready(r);
    }, 1, std::string());
    QCOMPARE(report.stop, std::string("no-device"));
    QCOMPARE(report.points.size(), std::size_t(3));
    QCOMPARE(report.message, std::string("no CUDA device left in the pool"));
  }

  void withoutAGpuEveryPointIsCompiled() {
    // The real transpose task and its starter: 3 x 3 tunable values, compiled by NVRTC.
    const auto task = kwb::loadTask(kwb::test::kernelsDir() / "transpose");
    kwb::tune::TuneSettings settings;
    settings.useDevice = false;
    settings.configs = {"small"};
    settings.evaluator.compiler.cacheDirectory = dir_ / "compile-cache";
    kwb::tune::Tuner tuner(settings);
    int calls = 0;
    const auto report = tuner.tune(task, kwb::test::readFile(task.folder / task.starterSource()), "transpose.cu",
                                   [&](const kwb::tune::TunedPoint &, const kwb::tune::TuneReport &) { ++calls; });
    for (const auto &p : report.points) {
      QVERIFY2(p.result.outcome == kwb::Outcome::NotRun, (p.label + ": " + kwb::toString(p.result.outcome) + ": " + p.result.message).c_str());
      QVERIFY(p.result.registers > 0);
    }
    QCOMPARE(report.strategy, Strategy::Exhaustive);
    QCOMPARE(report.points.size(), std::size_t(9));
    QCOMPARE(calls, 9);
    QCOMPARE(report.stop, std::string("no-device"));
    QVERIFY2(report.message.find("nothing was measured") != std::string::npos, report.message.c_str());
    QVERIFY(!report.best.has_value());
    // Compiled but not run: neither measured nor rejected.
    QCOMPARE(report.compiledOnly, std::size_t(9));
    QCOMPARE(report.measured, std::size_t(0));
    QCOMPARE(report.rejected, std::size_t(0));
    const nlohmann::json j = report;
    QCOMPARE(j["compiled_only"].get<std::size_t>(), std::size_t(9));
    QCOMPARE(j["points"].size(), std::size_t(9));
    QVERIFY(j["best"].is_null());
    // Cancelled before tune() (the window's Stop while the run was still being prepared, as
    // while waiting for a Slurm allocation): it returns cancelled, nothing evaluated; the next
    // tune() starts afresh.
    kwb::tune::Tuner early(settings);
    early.cancel();
    const auto cancelled = early.tune(task, kwb::test::readFile(task.folder / task.starterSource()), "transpose.cu");
    QCOMPARE(cancelled.stop, std::string("cancelled"));
    QCOMPARE(cancelled.points.size(), std::size_t(0));
    QCOMPARE(early.tune(task, kwb::test::readFile(task.folder / task.starterSource()), "transpose.cu").points.size(),
             std::size_t(9));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, [&] {
      kwb::tune::TuneSettings bad = settings;
      bad.configs = {"nope"};
      kwb::tune::Tuner(bad).tune(task, "", "x.cu");
    }());
  }
};

QTEST_GUILESS_MAIN(TestTune)
#include "tst_tune.moc"
