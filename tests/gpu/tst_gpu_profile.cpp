// On a machine with a GPU: CUPTI metrics of the bundled softmax starter end to end
// (kwb::profile::profileCandidate → kwb-worker `profile`: range profiler, one replay per pass,
// host-API evaluation). The default set's values are sane (DRAM throughput and occupancy in
// (0, 100] %, hit rates in [0, 100] %, a positive duration) and the passes the worker ran equal
// the host API's count for the device's chip; the detailed set likewise; an unknown metric is
// refused by name with a suggestion and leaves the worker usable. Skips, saying why, where there
// is no device, or where the driver keeps GPU counters to administrators (with the fix).
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "core/eval/evaluator.h"
#include "core/gpu/device_info.h"
#include "core/profile/cupti_profiler.h"
#include "core/profile/metric_catalog.h"
#include "core/profile/metric_sets.h"
#include "core/profile/profiler.h"
#include "core/task/manifest_parser.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;
namespace prof = kwb::profile;

namespace {

using kwb::test::kernelsDir;
using kwb::test::readFile;

using kwb::test::outputDir;

std::map<std::string, double> valuesOf(const prof::ProfileResult &r) {
  std::map<std::string, double> out;
  for (const auto &m : r.metrics) out[m.name] = m.value;
  return out;
}

}  // namespace

class TestGpuProfile : public QObject {
  Q_OBJECT

  kwb::EvaluatorSettings settings_;
  kwb::Task softmax_;
  std::string starter_;

  prof::ProfileResult profile(const prof::ProfileOptions &o) {
    const auto r = prof::profileCandidate(softmax_, starter_, o, settings_);
    std::cerr << "softmax " << o.config << ": " << kwb::toString(r.outcome) << " " << r.reason << ": " << r.message << " ("
              << r.seconds << " s)\n"
              << nlohmann::json(r).dump(1) << "\n";
    return r;
  }

  // The passes the host API counts for a set on the device's chip.
  std::size_t hostPasses(const std::string &chip, const std::string &set) {
    prof::MetricCatalog catalog(prof::CuptiProfilerLibrary::open(), chip);
    return catalog.configure(*prof::metricSet(set, catalog)).passes;
  }

 private slots:
  void initTestCase() {
    const auto inventory = kwb::probeGpus();
    if (!inventory.hasDevices()) QSKIP(("no CUDA device: " + inventory.problem).c_str());
    const char *worker = std::getenv("KWB_WORKER");
    QVERIFY2(worker && *worker, "run through ctest: KWB_WORKER names kwb-worker");
    settings_.workerPath = worker;
    settings_.compiler.cacheDirectory = outputDir() / "gpu-profile-compile-cache";
    softmax_ = kwb::loadTask(kernelsDir() / "softmax");
    starter_ = readFile(softmax_.folder / softmax_.starterSource());
  }

  void defaultSetIsSane() {
    prof::ProfileOptions o;
    o.config = "h200";  // 256 MiB in and out: far beyond L2, so DRAM is busy
    o.set = "default";
    const auto r = profile(o);
    if (r.outcome == kwb::Outcome::NotProfiled && r.reason == "insufficient-privileges")
      QSKIP(("GPU counters are restricted to administrators here: " + r.message).c_str());
    QCOMPARE(r.outcome, kwb::Outcome::Profiled);
    QVERIFY(!r.chip.empty());
    QVERIFY(!r.device.empty());
    QCOMPARE(r.passes, hostPasses(r.chip, "default"));
    QCOMPARE(r.passesRun, r.passes);
    if (r.chip == "GH100") QCOMPARE(r.passes, prof::kDefaultSetPassesGH100);
    QCOMPARE(r.metrics.size(), prof::defaultMetricSet().size());
    for (std::size_t i = 0; i < r.metrics.size(); ++i) {
      QCOMPARE(r.metrics[i].name, prof::defaultMetricSet()[i]);
      QVERIFY(!r.metrics[i].label.empty());
    }
    const auto v = valuesOf(r);
    const double dram = v.at("dram__throughput.avg.pct_of_peak_sustained_elapsed");
    const double occupancy = v.at("sm__warps_active.avg.pct_of_peak_sustained_active");
    const double duration = v.at("gpu__time_duration.sum");
    const double l1 = v.at("l1tex__t_sector_hit_rate.pct");
    const double l2 = v.at("lts__t_sector_hit_rate.pct");
    QVERIFY2(dram > 0 && dram <= 100, qPrintable(QString("DRAM throughput %1 %").arg(dram)));
    QVERIFY2(occupancy > 0 && occupancy <= 100, qPrintable(QString("occupancy %1 %").arg(occupancy)));
    QVERIFY2(duration > 0, qPrintable(QString("duration %1 ns").arg(duration)));
    QVERIFY2(l1 >= 0 && l1 <= 100, qPrintable(QString("L1 hit rate %1 %").arg(l1)));
    QVERIFY2(l2 >= 0 && l2 <= 100, qPrintable(QString("L2 hit rate %1 %").arg(l2)));
    // 512 MiB moved: at most ~5 TB/s on today's GPUs, so no less than ~100 us.
    QVERIFY2(duration > 50'000, qPrintable(QString("duration %1 ns is too short for 512 MiB").arg(duration)));
  }

  // The profiler's values against figures it did not make (the issue 15 audit: a build whose
  // profiler read 17% DRAM and 1307 us passed the range checks above where ncu read 85% and
  // 256 us). The softmax starter at h200 moves at least 2 x 256 MiB (x read, y written; it reads x
  // more than once). (1) Its duration against the timed median of the same kernel (CUPTI's
  // activity records, another path through the driver): within 25% (one profiled launch against
  // a median; the profiler's replay flushes nothing between passes). (2) The DRAM bytes: at least
  // the 512 MiB the kernel must move, at most four times that. (3) The DRAM throughput percentage
  // against bytes / duration / the device's theoretical bandwidth (memory clock x bus width from
  // the driver): within 15% of each other. ncu's reading of the same kernel on the H200 is recorded
  // beside the test's output in tests/gpu/results/ (2026-12-02: see the issue 15 note).
  void defaultValuesAgreeWithTheTimerAndTheArithmetic() {
    prof::ProfileOptions o;
    o.config = "h200";
    o.metrics = {"gpu__time_duration.sum", "dram__bytes.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed"};
    const auto r = profile(o);
    if (r.outcome == kwb::Outcome::NotProfiled && r.reason == "insufficient-privileges")
      QSKIP(("GPU counters are restricted to administrators here: " + r.message).c_str());
    QCOMPARE(r.outcome, kwb::Outcome::Profiled);
    const auto v = valuesOf(r);
    const double durationMs = v.at("gpu__time_duration.sum") / 1e6;
    const double dramBytes = v.at("dram__bytes.sum");
    const double dramPct = v.at("dram__throughput.avg.pct_of_peak_sustained_elapsed");

    kwb::Evaluator evaluator(settings_);
    kwb::EvaluationOptions eo;
    eo.configs = {"h200"};
    eo.time = true;
    eo.timingCap = std::chrono::milliseconds(500);
    const auto timed = evaluator.evaluate(softmax_, starter_, eo);
    QVERIFY2(timed.outcome == kwb::Outcome::Correct && timed.configs.at(0).timing && timed.configs[0].timing->ok,
             timed.message.c_str());
    const double medianMs = timed.configs[0].timing->candidate.median;

    const auto inventory = kwb::probeGpus();
    const double peak = inventory.devices.at(0).peakBandwidthBytesPerSecond();
    const double mustMove = 2.0 * 4 * 8192 * 8192;
    const double arithmeticPct = 100.0 * dramBytes / (durationMs / 1e3) / peak;
    std::cerr << "softmax h200: profiler " << durationMs << " ms, " << dramBytes / 1048576.0 << " MiB from DRAM, "
              << dramPct << " % of peak; timed median " << medianMs << " ms; bytes / duration / "
              << peak / 1e9 << " GB/s = " << arithmeticPct << " %\n";
    QVERIFY2(std::abs(durationMs - medianMs) <= 0.25 * medianMs,
             qPrintable(QString("profiled %1 ms against the timed median %2 ms").arg(durationMs).arg(medianMs)));
    QVERIFY2(dramBytes >= mustMove && dramBytes <= 4 * mustMove,
             qPrintable(QString("%1 bytes from DRAM; the kernel must move %2").arg(dramBytes).arg(mustMove)));
    QVERIFY2(std::abs(dramPct - arithmeticPct) <= 0.15 * arithmeticPct,
             qPrintable(QString("DRAM throughput %1 % against %2 % from bytes / duration / peak").arg(dramPct).arg(arithmeticPct)));
  }

  void detailedSetMatchesHostPasses() {
    prof::ProfileOptions o;
    o.config = "small";
    o.set = "detailed";
    const auto r = profile(o);
    if (r.outcome == kwb::Outcome::NotProfiled && r.reason == "insufficient-privileges")
      QSKIP(("GPU counters are restricted to administrators here: " + r.message).c_str());
    QCOMPARE(r.outcome, kwb::Outcome::Profiled);
    QCOMPARE(r.passes, hostPasses(r.chip, "detailed"));
    QCOMPARE(r.passesRun, r.passes);
    if (r.chip == "GH100") QCOMPARE(r.passes, prof::kDetailedSetPassesGH100);
    const auto v = valuesOf(r);
    const double sm = v.at("sm__throughput.avg.pct_of_peak_sustained_elapsed");
    QVERIFY2(sm > 0 && sm <= 100, qPrintable(QString("SM throughput %1 %").arg(sm)));
    double stalled = 0;
    std::size_t reasons = 0;
    for (const auto &reason : prof::warpStallReasons()) {
      const auto it = v.find("smsp__warps_issue_stalled_" + reason + ".avg.per_cycle_active");
      if (it == v.end()) continue;  // not on this chip (gmma is Hopper's)
      ++reasons;
      QVERIFY2(it->second >= 0, reason.c_str());
      stalled += it->second;
    }
    QVERIFY2(reasons >= 15, "few warp stall reasons were profiled");
    if (r.chip == "GH100") QCOMPARE(reasons, prof::warpStallReasons().size());
    QVERIFY2(stalled > 0, "no warp was ever stalled");
  }

  void unknownMetricIsNamed() {
    prof::ProfileOptions o;
    o.config = "small";
    o.metrics = {"gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsd"};
    const auto r = profile(o);
    QCOMPARE(r.outcome, kwb::Outcome::Error);
    QCOMPARE(QString::fromStdString(r.reason), QString("invalid-argument"));
    QVERIFY2(r.message.find("'dram__throughput.avg.pct_of_peak_sustained_elapsd'") != std::string::npos, r.message.c_str());
    QVERIFY2(r.message.find("did you mean 'dram__throughput.avg.pct_of_peak_sustained_elapsed'") != std::string::npos,
             r.message.c_str());
    // The next request profiles normally.
    o.metrics = {"gpu__time_duration.sum"};
    const auto again = profile(o);
    if (again.outcome == kwb::Outcome::NotProfiled && again.reason == "insufficient-privileges") QSKIP("counters restricted");
    QCOMPARE(again.outcome, kwb::Outcome::Profiled);
    QCOMPARE(again.passes, std::size_t{1});
    QVERIFY(valuesOf(again).at("gpu__time_duration.sum") > 0);
  }
};

QTEST_GUILESS_MAIN(TestGpuProfile)
#include "tst_gpu_profile.moc"
