// The Profiler panel (issue 5). Live: sample times added in batches draw as they come. Metrics:
// a profile recorded on an H200 shown as a table and bars; the previous profile of the task is
// the baseline until one is pinned, and the deltas follow; counters that cannot be read give a
// banner with the reason. Roofline: the sgemm lineage's eight steps as timed on an H200 (the
// committed suite results) under that H200's measured ceilings, the expert selected, its gap in
// words. The real ProfileService on this machine answers "not run" without a GPU; and the
// window's Profile action opens the dock. Writes the README's pictures of the panel.
#include "isolated_home.h"

#include <fstream>
#include <memory>

#include <QDockWidget>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QComboBox>
#include <QtTest>
#include <QPushButton>

#include <nlohmann/json.hpp>

#include "ui/main_window.h"
#include "window_parts.h"
#include "ui/views/log_panel.h"
#include "ui/views/work_area.h"
#include "ui/services/profile_service.h"
#include "ui/models/profile_metrics_model.h"
#include "ui/views/profiler_panel.h"

using kwb::ui::ProfilerPanel;
using kwb::ui::ProfileRow;

namespace {

nlohmann::json readJson(const QString &path) {
  std::ifstream in(path.toStdString());
  return nlohmann::json::parse(in);
}

ProfileRow profileOf(const nlohmann::json &j, const QString &sourceName) {
  ProfileRow r = kwb::ui::toProfileRow(j.get<kwb::profile::ProfileResult>());
  r.set = r.passes > 2 ? QStringLiteral("detailed") : QStringLiteral("default");
  r.sourceName = sourceName;
  r.taskFolder = QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax");
  return r;
}

ProfileRow recordedProfile() {
  return profileOf(readJson(QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/profile/softmax-h200-default.json")),
                   QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax/softmax.cu"));
}

// The H200's ceilings as tst_gpu_ceilings measured them (tests/gpu/results, 2026-11-30).
kwb::DeviceCeilings h200() {
  kwb::DeviceCeilings c;
  c.device = "NVIDIA H200";
  c.copyBytesPerS = 4232.66e9;
  c.fp32FlopsPerS = 64.5974e12;
  c.tensorFlopsPerS = 641.098e12;
  return c;
}

// The sgemm lineage at 4096^3 as the suite timed it on an H200 (tests/bench/results).
QList<kwb::ui::RooflinePoint> sgemmLineage() {
  const auto j = readJson(QStringLiteral(KWB_SOURCE_DIR "/tests/bench/results/2026-11-30-h200x2-4f2635c-lineage-sgemm.json"));
  QList<kwb::ui::RooflinePoint> out;
  const double n = 4096;
  for (const auto &s : j["steps"])
    for (const auto &c : s["configs"])
      if (c["config"] == "h200" && c.contains("median_ms")) {
        kwb::ui::RooflinePoint p;
        p.label = QStringLiteral("%1. %2").arg(s["index"].get<int>()).arg(QString::fromStdString(s["title"].get<std::string>()));
        p.flops = 2 * n * n * n;
        p.bytes = 4 * 3 * n * n;
        p.seconds = c["median_ms"].get<double>() * 1e-3;
        out << p;
      }
  return out;
}

}  // namespace

class TestProfilerPanel : public QObject {
  Q_OBJECT

  std::unique_ptr<IsolatedHome> home_;

 private slots:
  void initTestCase() {
    home_ = std::make_unique<IsolatedHome>();
    QVERIFY(home_->isValid());
  }

  void liveSamplesAccumulate() {
    ProfilerPanel panel;
    panel.beginLive(QStringLiteral("Run"));
    QList<double> batch;
    for (int i = 0; i < 30; ++i) batch << 0.25 + 0.001 * i;
    for (int k = 0; k < 10; ++k) panel.addSamples(batch);
    QCOMPARE(panel.liveSamples(), 300);
    panel.addSamples({});
    QCOMPARE(panel.liveSamples(), 300);
    panel.beginLive(QStringLiteral("Tuning"));
    QCOMPARE(panel.liveSamples(), 0);
    QVERIFY(panel.liveGroups().isEmpty());
  }

  // A run's configurations each get a series; a small one beside a large one (sgemm on an H200:
  // 0.06 ms and 26.8 ms) turns the time axis logarithmic, and a new run starts linear again.
  void liveSeriesPerConfiguration() {
    ProfilerPanel panel;
    panel.resize(900, 360);
    panel.show();
    panel.beginLive(QStringLiteral("Run"));
    panel.addSamples({0.061, 0.060, 0.062}, QStringLiteral("small"));
    QCOMPARE(panel.liveGroups(), QStringList{QStringLiteral("small")});
    QVERIFY(!panel.liveLogScale());
    panel.addSamples({0.071, 0.070}, QStringLiteral("odd"));
    QVERIFY(!panel.liveLogScale());
    panel.addSamples({26.84, 26.86}, QStringLiteral("h200"));
    panel.addSamples({26.85}, QStringLiteral("h200"));
    QCOMPARE(panel.liveGroups(), (QStringList{QStringLiteral("small"), QStringLiteral("odd"), QStringLiteral("h200")}));
    QCOMPARE(panel.liveSamples(), 8);
    QVERIFY(panel.liveLogScale());
    QCoreApplication::processEvents();
    QVERIFY(panel.grab().save(QStringLiteral(KWB_TEST_OUTPUT_DIR "/profiler-live-log.png")));
    panel.beginLive(QStringLiteral("Run"));
    QVERIFY(!panel.liveLogScale());
    panel.addSamples({0.25, 0.26}, QStringLiteral("h200"));
    QVERIFY(!panel.liveLogScale());
    QCOMPARE(panel.liveGroups(), QStringList{QStringLiteral("h200")});
  }

  void metricsAndBaselines() {
    ProfilerPanel panel;
    panel.resize(900, 360);
    panel.show();
    const ProfileRow first = recordedProfile();
    panel.showProfile(first);
    QCOMPARE(panel.metricsModel()->rowCount(), 5);
    QCOMPARE(panel.metricsModel()->index(1, 0).data().toString(), QStringLiteral("DRAM throughput"));
    QCOMPARE(panel.metricsModel()->index(1, 1).data().toString(), QStringLiteral("84.47 %"));
    QVERIFY(panel.deltaText(QStringLiteral("dram__throughput.avg.pct_of_peak_sustained_elapsed")).isEmpty());
    QVERIFY2(panel.metricsSummary().contains(QStringLiteral("2 replay pass(es)")), qPrintable(panel.metricsSummary()));
    // A second profile of the task (values made up for the arithmetic): the first is its baseline.
    ProfileRow second = first;
    second.sourceName = QStringLiteral("05-registers.cu");
    second.metrics[1].value = 2 * first.metrics[1].value;  // DRAM throughput doubled
    second.metrics[2].value = first.metrics[2].value / 2;  // occupancy halved
    panel.showProfile(second);
    QCOMPARE(panel.deltaText(QStringLiteral("dram__throughput.avg.pct_of_peak_sustained_elapsed")), QStringLiteral("+100.0%"));
    QCOMPARE(panel.deltaText(QStringLiteral("sm__warps_active.avg.pct_of_peak_sustained_active")), QStringLiteral("-50.0%"));
    QVERIFY(panel.metricsSummary().contains(QStringLiteral("(the previous profile)")));
    // Pinned: it stays the baseline whatever comes next.
    panel.pinBaseline();
    panel.showProfile(first);
    QCOMPARE(panel.deltaText(QStringLiteral("dram__throughput.avg.pct_of_peak_sustained_elapsed")), QStringLiteral("-50.0%"));
    panel.showProfile(first);
    QCOMPARE(panel.deltaText(QStringLiteral("dram__throughput.avg.pct_of_peak_sustained_elapsed")), QStringLiteral("-50.0%"));
    QVERIFY(panel.metricsSummary().contains(QStringLiteral("(pinned)")));
    QVERIFY(panel.bannerText().isEmpty());
    // Counters out of reach: a banner says why, and what still works.
    ProfileRow refused;
    refused.outcome = kwb::Outcome::NotProfiled;
    refused.reason = QStringLiteral("insufficient-privileges");
    refused.message = QStringLiteral("GPU performance counters are restricted to administrators");
    panel.showProfile(refused);
    QVERIFY2(panel.bannerText().contains(QStringLiteral("insufficient-privileges")), qPrintable(panel.bannerText()));
    QVERIFY(panel.bannerText().contains(QStringLiteral("Timing and everything else still work")));
  }

  // Real H200 profiles (detailed set) of two softmax lineage files: step 4 shown against its
  // lineage parent, step 3, with the stall breakdown; the README's picture.
  void realLineageStepAgainstItsParent() {
    const auto j = readJson(QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/profile/softmax-h200-lineage-detailed.json"));
    const QString lineage = QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax/lineage/");
    auto step = [&](const std::string &file) {
      for (const auto &s : j["steps"])
        if (s["source"] == file) return profileOf(s, lineage + QString::fromStdString(file));
      return ProfileRow{};
    };
    ProfilerPanel panel;
    panel.resize(1100, 460);
    panel.show();
    panel.tabs()->setCurrentIndex(1);
    panel.showProfile(step("03-online.cu"));
    panel.showProfile(step("04-float4.cu"));
    QVERIFY2(panel.metricsSummary().contains(QStringLiteral("baseline 03-online.cu (the lineage parent)")),
             qPrintable(panel.metricsSummary()));
    QVERIFY2(panel.metricsSummary().contains(QStringLiteral("h200 · detailed set on NVIDIA H200 (GH100), 14 replay pass(es)")),
             qPrintable(panel.metricsSummary()));
    QCOMPARE(panel.metricsModel()->index(0, 1).data().toString(), QStringLiteral("198.7 µs"));
    QCOMPARE(panel.metricsModel()->index(0, 2).data().toString(), QStringLiteral("205.0 µs"));
    QVERIFY(panel.metricsModel()->rowCount() >= 20);  // 6 + the stall reasons the chip has
    // 198.7 us against 205.0 us.
    QCOMPARE(panel.deltaText(QStringLiteral("gpu__time_duration.sum")), QStringLiteral("-3.1%"));
    QCoreApplication::processEvents();  // the charts lay out their text on the next event round
    const QString png = QStringLiteral(KWB_TEST_OUTPUT_DIR "/profiler-metrics.png");
    QVERIFY(panel.grab().save(png));
    qInfo("screenshots: %s", qPrintable(png));
  }

  void lineageParentIsTheDefaultBaseline() {
    ProfilerPanel panel;
    const QString lineage = QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax/lineage/");
    ProfileRow step1 = recordedProfile(), starter = recordedProfile(), step2 = recordedProfile();
    step1.sourceName = lineage + QStringLiteral("01-naive.cu");
    step2.sourceName = lineage + QStringLiteral("02-warp-shuffle.cu");
    step2.metrics[1].value = 2 * step1.metrics[1].value;
    starter.metrics[1].value = 4 * step1.metrics[1].value;
    panel.showProfile(step1);
    panel.showProfile(starter);  // not a lineage step: the previous profile is its baseline
    QVERIFY(panel.metricsSummary().contains(QStringLiteral("baseline 01-naive.cu (the previous profile)")));
    panel.showProfile(step2);    // step 2's parent is step 1, not the starter profiled just before
    QVERIFY2(panel.metricsSummary().contains(QStringLiteral("baseline 01-naive.cu (the lineage parent)")),
             qPrintable(panel.metricsSummary()));
    QCOMPARE(panel.deltaText(QStringLiteral("dram__throughput.avg.pct_of_peak_sustained_elapsed")), QStringLiteral("+100.0%"));
  }

  void runsBecomeRooflinePoints() {
    // A timed run's result as the history stores it, read back through from_json.
    kwb::ui::EvaluationRun run;
    run.sourceName = QStringLiteral("/k/sgemm/lineage/08-double-buffer.cu");
    run.result = kwb::parseEvaluationResult(R"({"configs": [
      {"config": "small", "timing": {"ok": true, "candidate": {"median_ms": 0.0601}, "roofline": {"flops": 268435456, "bytes": 3145728}}},
      {"config": "odd", "timing": {"ok": false, "error": "not timed"}},
      {"config": "h200", "timing": {"ok": true, "candidate": {"median_ms": 3.068}, "roofline": {"flops": 137438953472, "bytes": 201326592}}}]})");
    const auto points = kwb::ui::rooflinePointsOf(run);
    QCOMPARE(points.size(), 2);
    QCOMPARE(points[1].label, QStringLiteral("08-double-buffer.cu · h200"));
    QCOMPARE(points[1].seconds, 3.068e-3);
    QCOMPARE(points[1].flops, 137438953472.0);
    run.result.reset();  // a history listing's row: nothing to place
    QVERIFY(kwb::ui::rooflinePointsOf(run).isEmpty());
  }

  void rooflineOfTheSgemmLineage() {
    ProfilerPanel panel;
    panel.resize(900, 420);
    panel.show();
    panel.tabs()->setCurrentIndex(2);
    panel.setCeilingsProblem(QStringLiteral("being measured"));
    QVERIFY(panel.rooflineWords().contains(QStringLiteral("No ceilings")));
    panel.setCeilings(h200());
    const auto points = sgemmLineage();
    QCOMPARE(points.size(), 8);
    panel.setRooflinePoints(points, 7);
    QCOMPARE(panel.rooflinePointCount(), 8);
    // 2*4096^3 in 3.068 ms = 44.8 TFLOP/s under a 64.6 TFLOP/s f32 roof.
    QVERIFY2(panel.rooflineWords().startsWith(QStringLiteral("8. double buffering: at 69% of the f32 compute bound; 1.4x headroom")),
             qPrintable(panel.rooflineWords()));
    QCoreApplication::processEvents();
    const QString png = QStringLiteral(KWB_TEST_OUTPUT_DIR "/profiler-roofline.png");
    QVERIFY(panel.grab().save(png));
    qInfo("screenshots: %s", qPrintable(png));
  }

  void realServiceWithoutAGpu() {
    kwb::ui::ProfileService service;
    QSignalSpy finished(&service, &kwb::ui::ProfileService::finished);
    kwb::ui::ProfileRequest r;
    r.taskFolder = QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax");
    QFile f(r.taskFolder + QStringLiteral("/softmax.cu"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    r.source = QString::fromUtf8(f.readAll());
    r.sourceName = QStringLiteral("softmax.cu");
    QVERIFY(service.profile(r));
    QVERIFY(!service.profile(r));  // one at a time
    QVERIFY(finished.wait(60000));
    const auto row = finished.first().first().value<ProfileRow>();
    // Here: no GPU ("not-run"); on a GPU machine: profiled, or not-profiled with a reason.
    QVERIFY2(row.outcome == kwb::Outcome::NotRun || row.outcome == kwb::Outcome::Profiled ||
                 row.outcome == kwb::Outcome::NotProfiled,
             qPrintable(QLatin1String(kwb::toString(row.outcome)) + QStringLiteral(": ") + row.message));
    ProfilerPanel panel;
    panel.showProfile(row);
    if (row.outcome != kwb::Outcome::Profiled) QVERIFY(!panel.bannerText().isEmpty());
  }

  void windowProfileAction() {
    kwb::ui::MainWindow window(home_->path(QStringLiteral("workspace/prof.kwb")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(!window.profileCurrent());  // no task
    QVERIFY(window.openTask(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax")));
    if (!window.isGpuProbeFinished()) QVERIFY(QSignalSpy(&window, &kwb::ui::MainWindow::gpuProbeFinished).wait(60000));
    if (window.gpuStatusText().contains(QStringLiteral("compile-only"))) {
      // No GPU: the action and the panel's button are off, saying why; asked anyway, it refuses so.
      QVERIFY(!window.actions().profile->isEnabled());
      QVERIFY(!window.profilerPanel()->profileButton()->isEnabled());
      QVERIFY2(window.actions().profile->toolTip().contains(QStringLiteral("Profiling reads the GPU's counters")),
               qPrintable(window.actions().profile->toolTip()));
      QVERIFY2(window.profilerPanel()->profileButton()->toolTip() == window.actions().profile->toolTip(),
               qPrintable(window.profilerPanel()->profileButton()->toolTip()));
      QVERIFY(!window.profileCurrent());
      QVERIFY2(window.log()->text().contains(QStringLiteral("Not profiled: Profiling reads the GPU's counters")),
               qPrintable(window.log()->text()));
      QVERIFY(!partOf<kwb::ui::ProfileService>(window)->isRunning());
      // The configuration chosen in the panel survives reopening the task.
      QVERIFY(window.profilerPanel()->selectConfiguration(QStringLiteral("h200")));
      QVERIFY(window.openTask(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax")));
      QCOMPARE(window.profilerPanel()->profileConfig(), QStringLiteral("h200"));
      return;
    }
    QSignalSpy finished(partOf<kwb::ui::ProfileService>(window), &kwb::ui::ProfileService::finished);
    window.actions().profile->trigger();
    QVERIFY(window.workArea()->current() == kwb::ui::WorkArea::Page::Profiler);
    QVERIFY(!window.actions().profile->isEnabled());
    QVERIFY(finished.wait(60000));
    QVERIFY(window.actions().profile->isEnabled());
    QCOMPARE(finished.last().first().value<ProfileRow>().config, QStringLiteral("small"));  // the first
    // The configuration chosen in the panel is the one profiled, and it survives reopening the task.
    auto *combo = window.profilerPanel()->configCombo();
    QCOMPARE(combo->count(), 3);
    QVERIFY(window.profilerPanel()->selectConfiguration(QStringLiteral("h200")));
    QVERIFY(!window.profilerPanel()->selectConfiguration(QStringLiteral("huge")));
    QVERIFY(window.openTask(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax")));
    QCOMPARE(window.profilerPanel()->profileConfig(), QStringLiteral("h200"));
    QVERIFY(window.profileCurrent());
    QVERIFY(finished.wait(60000));
    QCOMPARE(finished.last().first().value<ProfileRow>().config, QStringLiteral("h200"));
  }
};

QTEST_MAIN(TestProfilerPanel)
#include "tst_profiler_panel.moc"
