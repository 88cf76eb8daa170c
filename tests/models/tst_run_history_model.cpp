// RunHistoryModel alone: a task's runs, newest first, as the History panel lists them; outcome in
// words and colour, the run's id and outcome as roles, and the row of a stored run.
#include <QAbstractItemModelTester>
#include <QBrush>
#include <QtTest>

#include "ui/models/outcome_style.h"
#include "ui/models/run_history_model.h"

using kwb::ui::EvaluationRun;
using kwb::ui::RunHistoryModel;

namespace {

EvaluationRun run(qint64 id, kwb::Outcome outcome, const QString &source, const QString &message) {
  EvaluationRun r;
  r.historyId = id;
  r.outcome = outcome;
  r.sourceName = source;
  r.message = message;
  r.startedAt = QStringLiteral("2026-12-02T01:00:0%1.000Z").arg(id);
  r.finishedAt = QStringLiteral("2026-12-02T01:00:0%1.500Z").arg(id);
  r.arch = QStringLiteral("sm_90");
  return r;
}

}  // namespace

class TestRunHistoryModel : public QObject {
  Q_OBJECT

 private slots:
  void listsRunsWithOutcomesInWords() {
    RunHistoryModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    model.setRuns({run(3, kwb::Outcome::CompileError, QStringLiteral("/t/softmax.cu"), QStringLiteral("softmax.cu:4: error")),
                   run(2, kwb::Outcome::Correct, QStringLiteral("/t/lineage/02-warp.cu"), QStringLiteral("correct on 3")),
                   run(1, kwb::Outcome::NotRun, QStringLiteral("/t/softmax.cu"), QStringLiteral("no CUDA device"))});
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), int(RunHistoryModel::ColumnCount));
    QCOMPARE(model.index(0, RunHistoryModel::OutcomeColumn).data().toString(), QStringLiteral("compile error"));
    QCOMPARE(model.index(0, 0).data(RunHistoryModel::OutcomeRole).toString(), QStringLiteral("compile-error"));
    QCOMPARE(model.index(1, RunHistoryModel::SourceColumn).data().toString(), QStringLiteral("02-warp.cu"));
    QCOMPARE(model.index(1, RunHistoryModel::SourceColumn).data(Qt::ToolTipRole).toString(),
             QStringLiteral("/t/lineage/02-warp.cu"));
    QCOMPARE(model.index(2, 0).data(RunHistoryModel::HistoryIdRole).toLongLong(), 1);
    // Colour by outcome: correct green, not run grey, failures red.
    const auto colour = [&](int row) {
      return model.index(row, RunHistoryModel::OutcomeColumn).data(Qt::ForegroundRole).value<QBrush>().color();
    };
    QCOMPARE(colour(1), kwb::ui::toneColour(kwb::ui::OutcomeTone::Good));
    QCOMPARE(colour(2), kwb::ui::toneColour(kwb::ui::OutcomeTone::Quiet));
    QCOMPARE(colour(0), kwb::ui::toneColour(kwb::ui::OutcomeTone::Bad));
    QCOMPARE(model.rowOf(2), 1);
    QCOMPARE(model.rowOf(99), -1);
    // A shorter list replaces it.
    model.setRuns({run(4, kwb::Outcome::Timeout, QStringLiteral("/t/x.cu"), QString())});
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0, RunHistoryModel::OutcomeColumn).data().toString(), QStringLiteral("timeout"));
  }
};

QTEST_MAIN(TestRunHistoryModel)
#include "tst_run_history_model.moc"
