// LineageStepsModel alone: a row per step of a lineage, naive to expert, its gate in words and
// colour (passed, rejected and why, not measured for a lineage read from its task), and for the
// configuration chosen its median and speedups; another configuration, other figures.
#include <QAbstractItemModelTester>
#include <QColor>
#include <QtTest>

#include "ui/models/lineage_steps_model.h"

using kwb::ui::LineageStepsModel;

namespace {

kwb::LineageStepRecord step(int position, const std::string &title, bool accepted, const std::string &outcome,
                            std::vector<kwb::StepFigures> figures = {}) {
  kwb::LineageStepRecord s;
  s.position = position;
  s.title = title;
  s.accepted = accepted;
  s.outcome = outcome;
  s.figures = std::move(figures);
  s.source = "__global__ void k() {}";
  return s;
}

kwb::StepFigures at(const std::string &config, double ms, double vsPrevious, double vsReference) {
  kwb::StepFigures f;
  f.config = config;
  f.medianMs = ms;
  f.speedupVsPrevious = vsPrevious;
  f.speedupVsReference = vsReference;
  return f;
}

QString cell(const LineageStepsModel &m, int row, int column) { return m.index(row, column).data().toString(); }

}  // namespace

class TestLineageStepsModel : public QObject {
  Q_OBJECT

 private slots:
  void stepsGatesAndFigures() {
    kwb::LineageRecord lineage;
    lineage.name = "softmax";
    lineage.steps = {step(1, "naive", true, "correct", {at("wide", 2.0, 0, 0.5), at("tall", 4.0, 0, 0.25)}),
                     step(2, "warp shuffle", true, "correct", {at("wide", 0.5, 4.0, 2.0), at("tall", 2.0, 2.0, 0.5)}),
                     step(3, "broken unroll", false, "incorrect")};
    lineage.steps[2].reason = "wrong at 3 of 4096 elements";
    LineageStepsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    model.setLineage(&lineage, QStringLiteral("wide"));
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 5);
    QVERIFY(model.hasFigures());
    QCOMPARE(cell(model, 1, LineageStepsModel::StepColumn), QStringLiteral("2. warp shuffle"));
    QCOMPARE(cell(model, 1, LineageStepsModel::GateColumn), QStringLiteral("passed"));
    QCOMPARE(cell(model, 1, LineageStepsModel::MedianColumn), QStringLiteral("0.500 ms"));
    QCOMPARE(cell(model, 1, LineageStepsModel::VsPreviousColumn), QStringLiteral("\u00d74.00"));
    QCOMPARE(cell(model, 1, LineageStepsModel::VsReferenceColumn), QStringLiteral("\u00d72.00"));
    QCOMPARE(model.index(1, 0).data(LineageStepsModel::SpeedupVsPreviousRole).toDouble(), 4.0);
    QVERIFY(!model.index(0, 0).data(LineageStepsModel::SpeedupVsPreviousRole).isValid());  // the first has none
    QCOMPARE(cell(model, 2, LineageStepsModel::GateColumn), QStringLiteral("rejected: wrong at 3 of 4096 elements"));
    QCOMPARE(model.index(2, 0).data(LineageStepsModel::GateRole).toInt(), int(LineageStepsModel::Gate::Rejected));
    QCOMPARE(model.index(1, 0).data(Qt::DecorationRole).value<QColor>(), QColor(0x16, 0xa3, 0x4a));
    QCOMPARE(model.index(2, 0).data(Qt::DecorationRole).value<QColor>(), QColor(0xdc, 0x26, 0x26));
    QVERIFY(cell(model, 2, LineageStepsModel::MedianColumn).isEmpty());
    QCOMPARE(model.rowOfPosition(3), 2);
    QCOMPARE(model.rowOfPosition(9), -1);
    QVERIFY(model.step(0)->source.empty());  // the code stays with the lineage

    model.setLineage(&lineage, QStringLiteral("tall"));
    QCOMPARE(cell(model, 1, LineageStepsModel::VsPreviousColumn), QStringLiteral("\u00d72.00"));
    QCOMPARE(cell(model, 1, LineageStepsModel::MedianColumn), QStringLiteral("2.000 ms"));

    // Read from its task: nothing measured, grey, no bars.
    kwb::LineageRecord read;
    read.steps = {step(1, "naive", false, "not-measured"), step(2, "tiled", false, "not-measured")};
    model.setLineage(&read, QString());
    QVERIFY(!model.hasFigures());
    QCOMPARE(cell(model, 0, LineageStepsModel::GateColumn), QStringLiteral("not measured"));
    QCOMPARE(model.index(0, 0).data(Qt::DecorationRole).value<QColor>(), QColor(0x9c, 0xa3, 0xaf));
    model.setLineage(nullptr, QString());
    QCOMPARE(model.rowCount(), 0);
  }
};

QTEST_MAIN(TestLineageStepsModel)
#include "tst_lineage_steps_model.moc"
