// ProfileMetricsModel alone: a row per metric of the profile shown, its value with its unit
// (nanoseconds as µs or ms), the baseline's value and the change from it; a metric the baseline
// lacks has neither, a baseline of 0 reads "new".
#include <QAbstractItemModelTester>
#include <QtTest>

#include "ui/models/profile_metrics_model.h"

using kwb::ui::MetricRow;
using kwb::ui::ProfileMetricsModel;
using kwb::ui::ProfileRow;

namespace {

ProfileRow profile(double dram, double duration, std::optional<double> stalls = std::nullopt) {
  ProfileRow p;
  p.metrics = {{QStringLiteral("dram__throughput.avg.pct_of_peak_sustained_elapsed"), QStringLiteral("DRAM throughput"), QStringLiteral("%"), dram},
               {QStringLiteral("gpu__time_duration.sum"), QStringLiteral("Duration"), QStringLiteral("ns"), duration}};
  if (stalls) p.metrics.append({QStringLiteral("smsp__pcsamp_warps_issue_stalled_barrier"), QStringLiteral("Barrier stalls"), QString(), *stalls});
  return p;
}

QString cell(const ProfileMetricsModel &m, int row, int column) { return m.index(row, column).data().toString(); }

}  // namespace

class TestProfileMetricsModel : public QObject {
  Q_OBJECT

 private slots:
  void valuesBaselineAndDeltas() {
    ProfileMetricsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    model.setProfile(profile(84.47, 198700, 12), std::nullopt);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), 5);
    QCOMPARE(cell(model, 0, ProfileMetricsModel::MetricColumn), QStringLiteral("DRAM throughput"));
    QCOMPARE(cell(model, 0, ProfileMetricsModel::ValueColumn), QStringLiteral("84.47 %"));
    QCOMPARE(cell(model, 1, ProfileMetricsModel::ValueColumn), QStringLiteral("198.7 µs"));
    QCOMPARE(cell(model, 2, ProfileMetricsModel::ValueColumn), QStringLiteral("12.00"));
    QVERIFY(cell(model, 0, ProfileMetricsModel::BaselineColumn).isEmpty());
    QVERIFY(cell(model, 0, ProfileMetricsModel::DeltaColumn).isEmpty());
    QVERIFY(!model.index(0, 0).data(ProfileMetricsModel::DeltaRole).isValid());
    QCOMPARE(cell(model, 1, ProfileMetricsModel::NameColumn), QStringLiteral("gpu__time_duration.sum"));

    // Against a baseline: twice the DRAM throughput, a little faster, a metric it did not have.
    model.setProfile(profile(84.5, 198700, 12), profile(42.25, 205000));
    QCOMPARE(cell(model, 0, ProfileMetricsModel::BaselineColumn), QStringLiteral("42.25 %"));
    QCOMPARE(cell(model, 0, ProfileMetricsModel::DeltaColumn), QStringLiteral("+100.0%"));
    QCOMPARE(model.index(0, 0).data(ProfileMetricsModel::DeltaRole).toDouble(), 100.0);
    QCOMPARE(cell(model, 1, ProfileMetricsModel::BaselineColumn), QStringLiteral("205.0 µs"));
    QCOMPARE(cell(model, 1, ProfileMetricsModel::DeltaColumn), QStringLiteral("-3.1%"));
    QVERIFY(cell(model, 2, ProfileMetricsModel::DeltaColumn).isEmpty());
    model.setProfile(profile(10, 2.5e6), profile(0, 0));
    QCOMPARE(cell(model, 0, ProfileMetricsModel::DeltaColumn), QStringLiteral("new"));
    QCOMPARE(cell(model, 1, ProfileMetricsModel::ValueColumn), QStringLiteral("2.500 ms"));
    QCOMPARE(model.deltaText(QStringLiteral("no.such.metric")), QString());
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }
};

QTEST_MAIN(TestProfileMetricsModel)
#include "tst_profile_metrics_model.moc"
