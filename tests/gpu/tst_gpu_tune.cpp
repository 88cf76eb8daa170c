// On a machine with a GPU: the autotuner (core/tune) for real. The transpose task's nine
// tunable points are evaluated and timed; the best is a correct point with a time; points the
// tuner rejects are not correct; the points were compiled ahead while the GPU measured; and a
// second run measures nothing (every point from the cache) and picks the same best. A run on
// the softmax task with a budget below its space uses random sampling plus local search and
// stays within the budget. Skips, saying why, where there is no device.
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/gpu/device_info.h"
#include "core/task/manifest_parser.h"
#include "core/tune/tuner.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;
using kwb::test::kernelsDir;
using kwb::test::readFile;

namespace {

using kwb::test::outputDir;

}  // namespace

class TestGpuTune : public QObject {
  Q_OBJECT

  kwb::tune::TuneSettings settings_;

 private slots:
  void initTestCase() {
    const auto inventory = kwb::probeGpus();
    if (!inventory.hasDevices()) QSKIP(("no CUDA device: " + inventory.problem).c_str());
    const char *worker = std::getenv("KWB_WORKER");
    QVERIFY2(worker && *worker, "run through ctest: KWB_WORKER names kwb-worker");
    settings_.evaluator.workerPath = worker;
    const auto dir = outputDir() / "gpu-tune";
    fs::remove_all(dir);
    settings_.evaluator.compiler.cacheDirectory = dir / "compile-cache";
    settings_.cacheFile = dir / "tune.sqlite";
    settings_.configs = {"small"};
    settings_.timingCap = std::chrono::milliseconds(300);
  }

  void transposeExhaustiveThenCached() {
    const auto task = kwb::loadTask(kernelsDir() / "transpose");
    const std::string source = readFile(task.folder / task.starterSource());
    kwb::tune::Tuner tuner(settings_);
    const auto first = tuner.tune(task, source, "transpose.cu", [](const kwb::tune::TunedPoint &p, const kwb::tune::TuneReport &) {
      std::cerr << p.label << ": " << kwb::toString(p.result.outcome) << " " << p.result.objectiveMs.value_or(0) << " ms on "
                << p.result.device << (p.result.compileCacheHit ? " (compiled ahead)" : "") << "\n";
    });
    const std::string json = nlohmann::json(first).dump(1);
    QCOMPARE(first.stop, std::string("done"));
    QCOMPARE(first.strategy, kwb::tune::Strategy::Exhaustive);
    QCOMPARE(first.points.size(), std::size_t(9));
    QVERIFY2(first.best.has_value(), json.c_str());
    const auto &best = first.points[*first.best];
    QCOMPARE(best.result.outcome, kwb::Outcome::Correct);
    QVERIFY(*best.result.objectiveMs > 0);
    for (const auto &p : first.points) {
      if (p.result.objectiveMs) QVERIFY(*p.result.objectiveMs >= *best.result.objectiveMs);
      else QVERIFY2(p.result.outcome != kwb::Outcome::Correct, json.c_str());
      QVERIFY(!p.result.device.empty());
    }
    QVERIFY2(first.compiledAhead > 0, json.c_str());
    std::size_t hits = 0;
    for (const auto &p : first.points) hits += p.result.compileCacheHit ? 1 : 0;
    QVERIFY2(hits > 0, "no point found its compile done ahead");

    kwb::tune::Tuner again(settings_);
    const auto second = again.tune(task, source, "transpose.cu");
    // Correct, incorrect and compile-error points are kept; anything else is measured again.
    std::size_t kept = 0;
    for (const auto &p : first.points)
      kept += p.result.outcome == kwb::Outcome::Correct || p.result.outcome == kwb::Outcome::Incorrect ||
              p.result.outcome == kwb::Outcome::CompileError;
    QCOMPARE(second.cached, kept);
    QCOMPARE(second.measured, first.points.size() - kept);
    QVERIFY(second.best.has_value());
    QCOMPARE(second.points[*second.best].label, best.label);
  }

  void softmaxWithinABudget() {
    const auto task = kwb::loadTask(kernelsDir() / "softmax");
    auto s = settings_;
    s.budget = 3;  // the space has 4 points
    s.useCache = false;
    kwb::tune::Tuner tuner(s);
    const auto r = tuner.tune(task, readFile(task.folder / task.starterSource()), "softmax.cu");
    QCOMPARE(r.strategy, kwb::tune::Strategy::RandomLocal);
    QCOMPARE(r.points.size(), std::size_t(3));
    QVERIFY(r.best.has_value());
  }
};

QTEST_GUILESS_MAIN(TestGpuTune)
#include "tst_gpu_tune.moc"
