// WorkbenchContext alone: views added once are told of the open task, the selected candidate
// and the pinned baseline; a candidate or baseline of another task is dropped (and said so) when
// the task changes; a destroyed view is skipped.
#include <memory>

#include <QSignalSpy>
#include <QtTest>

#include "ui/workbench_context.h"

using kwb::ui::CandidateSelection;
using kwb::ui::WorkbenchContext;
using kwb::ui::WorkbenchView;

namespace {

struct Recorder : QObject, WorkbenchView {
  int tasks = 0, selections = 0, baselines = 0;
  QString lastRun;
  void onTaskChanged(const WorkbenchContext &) override { ++tasks; }
  void onSelectionChanged(const WorkbenchContext &c) override {
    ++selections;
    lastRun = c.selection() ? c.selection()->run.sourceName : QString();
  }
  void onBaselineChanged(const WorkbenchContext &) override { ++baselines; }
};

CandidateSelection runOf(const QString &task, const QString &source) {
  CandidateSelection s;
  s.run.taskFolder = task;
  s.run.sourceName = source;
  return s;
}

}  // namespace

class TestWorkbenchContext : public QObject {
  Q_OBJECT

 private slots:
  void viewsFollowTaskSelectionAndBaseline() {
    WorkbenchContext context;
    Recorder a;
    auto b = std::make_unique<Recorder>();
    context.addView(&a);
    context.addView(&a);  // once only
    context.addView(b.get());
    QSignalSpy selectionSpy(&context, &WorkbenchContext::selectionChanged);

    context.setTask(QStringLiteral("/k/softmax"), QStringLiteral("softmax"));
    QCOMPARE(a.tasks, 1);
    QCOMPARE(b->tasks, 1);
    context.setTask(QStringLiteral("/k/softmax"), QStringLiteral("softmax"));  // no change, no news
    QCOMPARE(a.tasks, 1);

    context.select(runOf(QStringLiteral("/k/softmax"), QStringLiteral("softmax.cu")));
    QCOMPARE(a.selections, 1);
    QCOMPARE(a.lastRun, QStringLiteral("softmax.cu"));
    context.pinBaseline(runOf(QStringLiteral("/k/softmax"), QStringLiteral("01-naive.cu")));
    QCOMPARE(a.baselines, 1);
    QCOMPARE(context.baseline()->run.sourceName, QStringLiteral("01-naive.cu"));

    // Another task: the selection and the baseline of the old one go, and the views hear it.
    b.reset();  // a destroyed view is skipped
    context.setTask(QStringLiteral("/k/sgemm"), QStringLiteral("sgemm"));
    QCOMPARE(a.tasks, 2);
    QVERIFY(!context.selection().has_value());
    QVERIFY(!context.baseline().has_value());
    QCOMPARE(a.selections, 2);
    QCOMPARE(a.lastRun, QString());
    QCOMPARE(a.baselines, 2);
    QCOMPARE(selectionSpy.count(), 2);

    context.removeView(&a);
    context.select(runOf(QStringLiteral("/k/sgemm"), QStringLiteral("sgemm.cu")));
    QCOMPARE(a.selections, 2);
    QCOMPARE(selectionSpy.count(), 3);
  }
};

QTEST_MAIN(TestWorkbenchContext)
#include "tst_workbench_context.moc"
