// TunePointsModel alone: a column per tunable, then outcome, time, GPU and where the figure came
// from; rows appended in batches; the best point marked; points compiled but not run say so.
#include <cmath>

#include <QAbstractItemModelTester>
#include <QFont>
#include <QtTest>

#include "ui/models/tune_points_model.h"

using kwb::ui::TunePointRow;
using kwb::ui::TunePointsModel;

namespace {

TunePointRow point(int order, std::int64_t bx, kwb::Outcome outcome, double ms, bool cached = false) {
  TunePointRow r;
  r.order = order;
  r.point = {{"BX", bx}, {"BY", 4}};
  r.label = QStringLiteral("BX=%1 BY=4").arg(bx);
  r.outcome = outcome;
  r.objectiveMs = ms;
  r.cached = cached;
  r.device = outcome == kwb::Outcome::NotRun ? QString() : QStringLiteral("NVIDIA H200");
  return r;
}

QString text(const TunePointsModel &model, int row, int column) { return model.index(row, column).data().toString(); }

}  // namespace

class TestTunePointsModel : public QObject {
  Q_OBJECT

 private slots:
  void columnsBatchesAndBest() {
    TunePointsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.append({point(0, 32, kwb::Outcome::Correct, 0.5), point(1, 64, kwb::Outcome::Incorrect, std::nan(""))});
    model.append({point(2, 16, kwb::Outcome::Correct, 0.0412, true)});
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 1 + 2 + 4);  // #, BX, BY, outcome, time, GPU, came from
    QCOMPARE(model.headerData(1, Qt::Horizontal).toString(), QStringLiteral("BX"));
    QCOMPARE(model.headerData(6, Qt::Horizontal).toString(), QStringLiteral("Came from"));
    QCOMPARE(text(model, 0, 0), QStringLiteral("1"));
    QCOMPARE(text(model, 1, 3), QStringLiteral("incorrect"));
    QCOMPARE(text(model, 1, 4), QStringLiteral("—"));
    QCOMPARE(text(model, 2, 4), QStringLiteral("41.2 µs"));
    QCOMPARE(text(model, 0, 6), QStringLiteral("measured"));
    QCOMPARE(text(model, 2, 6), QStringLiteral("cached"));
    model.setBest(2);
    QCOMPARE(text(model, 2, 3), QStringLiteral("correct (best)"));
    QVERIFY(model.index(2, 0).data(Qt::FontRole).value<QFont>().bold());
    QVERIFY(!model.index(0, 0).data(Qt::FontRole).isValid());
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  // Without a GPU each point is compiled and its launch checked, nothing more: the table says
  // "compiled only", not "measured".
  void compiledOnlyPointsSaySo() {
    TunePointsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.append({point(0, 32, kwb::Outcome::NotRun, std::nan(""))});
    QCOMPARE(text(model, 0, 3), QStringLiteral("not run"));
    QCOMPARE(text(model, 0, 6), QStringLiteral("compiled only"));
    QCOMPARE(model.index(0, 0).data(TunePointsModel::OutcomeRole).toString(), QStringLiteral("not-run"));
  }
};

QTEST_MAIN(TestTunePointsModel)
#include "tst_tune_points_model.moc"
