// The one GPU gate (issue 48, 3): what each action is told in each state the window can be in.
#include <QtTest>

#include "ui/services/gpu_gate.h"

using kwb::ui::GpuAction;
using kwb::ui::GpuState;
using kwb::ui::gpuVerdict;

class TestGpuGate : public QObject {
  Q_OBJECT

 private slots:
  void nothingWithoutATask() {
    for (GpuAction a : {GpuAction::Run, GpuAction::Tune, GpuAction::Optimize, GpuAction::Profile,
                        GpuAction::BuildLineage, GpuAction::Deoptimize, GpuAction::TryCard, GpuAction::ResumeSession}) {
      const auto v = gpuVerdict(a, GpuState{});
      QVERIFY(!v.allowed);
      QVERIFY2(v.why.startsWith(QStringLiteral("Open a task first")), qPrintable(v.why));
    }
    GpuState s;
    s.taskOpen = true;
    QVERIFY(!gpuVerdict(GpuAction::Run, s).allowed);  // no kernel to run
    QVERIFY(gpuVerdict(GpuAction::BuildLineage, s).allowed);  // the task's own lineage: no editor needed
  }

  void compileOnlySaysWhatItCannot() {
    GpuState s;
    s.taskOpen = s.kernelToRun = s.probed = true;
    s.noGpuWhy = QStringLiteral("no CUDA driver: libcuda is not installed");
    const auto profile = gpuVerdict(GpuAction::Profile, s);
    QVERIFY(!profile.allowed);
    QVERIFY2(profile.why.contains(QStringLiteral("counters")) && profile.why.contains(s.noGpuWhy), qPrintable(profile.why));
    const auto build = gpuVerdict(GpuAction::BuildLineage, s);
    QVERIFY(!build.allowed);
    QVERIFY2(build.why.contains(QStringLiteral("read-only")), qPrintable(build.why));
    for (GpuAction a : {GpuAction::Run, GpuAction::Tune, GpuAction::Optimize, GpuAction::Deoptimize, GpuAction::TryCard}) {
      const auto v = gpuVerdict(a, s);
      QVERIFY(v.allowed);
      QVERIFY2(v.why.contains(QStringLiteral("nothing timed")), qPrintable(v.why));
    }
    // Before the probe answers nothing is refused for want of a GPU.
    s.probed = false;
    QVERIFY(gpuVerdict(GpuAction::Profile, s).allowed);
  }

  void oneJobAtATime() {
    GpuState s;
    s.taskOpen = s.kernelToRun = s.probed = s.gpu = true;
    QVERIFY(gpuVerdict(GpuAction::Profile, s).allowed);
    QVERIFY(gpuVerdict(GpuAction::Profile, s).why.isEmpty());
    s.session = true;
    for (GpuAction a : {GpuAction::Run, GpuAction::Tune, GpuAction::Optimize, GpuAction::Profile, GpuAction::BuildLineage,
                        GpuAction::Deoptimize, GpuAction::TryCard, GpuAction::ResumeSession}) {
      const auto v = gpuVerdict(a, s);
      QVERIFY(!v.allowed);
      QVERIFY2(v.why.contains(QStringLiteral("an agent session is running")) && v.why.contains(QStringLiteral("timing")),
               qPrintable(v.why));
    }
    // A run in progress blocks the next; with no GPU nothing is timed, and the words say only that it runs.
    s.session = false;
    s.gpu = false;
    s.evaluating = true;
    const auto v = gpuVerdict(GpuAction::Run, s);
    QVERIFY(!v.allowed);
    QCOMPARE(v.why, QStringLiteral("Wait, or stop it: a run is in progress"));
  }
};

QTEST_GUILESS_MAIN(TestGpuGate)
#include "tst_gpu_gate.moc"
