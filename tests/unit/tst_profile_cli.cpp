// `kwb profile` without using a GPU (--no-gpu, --list-metrics): the metric catalogue, the pass
// count of the chosen metrics from CUPTI's host API, "not run: no CUDA device" with exit status
// 3, and usage errors (unknown chip, set or metric, no task) with exit status 2 and a message
// that names the culprit.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

namespace {

struct Run {
  int exitCode = -1;
  QString out;
  QString err;
};

Run run(const QStringList &args) {
  QProcess p;
  p.start(qEnvironmentVariable("KWB_CLI"), args);
  if (!p.waitForFinished(120000)) return {};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

const QString softmax = QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax");

QString describe(const Run &r) {
  return QString("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(r.out.left(2000), r.err.left(2000));
}

}  // namespace

class TestProfileCli : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(!qEnvironmentVariable("KWB_CLI").isEmpty(), "run through ctest: KWB_CLI names kwb");
  }

  void listMetrics() {
    const auto r = run({"profile", "--list-metrics", "--filter", "dram__throughput", "--json"});
    QVERIFY2(r.exitCode == 0, qPrintable(describe(r)));
    const auto doc = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(doc["chip"].toString(), QString("GH100"));
    bool found = false;
    for (const auto &m : doc["metrics"].toArray()) {
      const auto o = m.toObject();
      QVERIFY(o["name"].toString().contains("dram__throughput"));
      if (o["name"].toString() != "dram__throughput") continue;
      found = true;
      QCOMPARE(o["type"].toString(), QString("throughput"));
      QVERIFY(o["sub_metrics"].toArray().contains(QJsonValue(".avg.pct_of_peak_sustained_elapsed")));
    }
    QVERIFY2(found, qPrintable(describe(r)));

    const auto text = run({"profile", "--list-metrics", "--chip", "GA100", "--filter", "lts__t_sector_hit_rate"});
    QVERIFY2(text.exitCode == 0, qPrintable(describe(text)));
    QVERIFY2(text.out.contains("on GA100") && text.out.contains(".pct"), qPrintable(describe(text)));
    QVERIFY2(text.out.contains("default (5 metrics, 2 passes)"), qPrintable(describe(text)));
  }

  void unknownChip() {
    const auto r = run({"profile", "--list-metrics", "--chip", "GZ1"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("'GZ1'") && r.err.contains("GH100"), qPrintable(describe(r)));
  }

  void passesWithoutGpu() {
    auto r = run({"profile", softmax, "--no-gpu", "--json"});
    QVERIFY2(r.exitCode == 3, qPrintable(describe(r)));
    const auto doc = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(doc["outcome"].toString(), QString("not-run"));
    QVERIFY(doc["message"].toString().startsWith("not run: no CUDA device"));
    QCOMPARE(doc["host"].toObject()["chip"].toString(), QString("GH100"));
    QCOMPARE(doc["host"].toObject()["passes"].toInt(), 2);
    QCOMPARE(doc["requested"].toArray().size(), 5);
    QCOMPARE(doc["requested"].toArray()[1].toObject()["label"].toString(), QString("DRAM throughput"));

    r = run({"profile", softmax, "--no-gpu", "--set", "detailed"});
    QVERIFY2(r.exitCode == 3, qPrintable(describe(r)));
    QVERIFY2(r.out.contains("25 metric(s), 14 replay pass(es) on GH100"), qPrintable(describe(r)));
    QVERIFY2(r.out.contains("Stall: long scoreboard"), qPrintable(describe(r)));
    QVERIFY2(r.out.contains("not run: no CUDA device"), qPrintable(describe(r)));

    r = run({"profile", softmax, "--no-gpu", "--metrics", "gpu__time_duration.sum", "--chip", "GB100"});
    QVERIFY2(r.exitCode == 3, qPrintable(describe(r)));
    QVERIFY2(r.out.contains("1 metric(s), 1 replay pass(es) on GB100"), qPrintable(describe(r)));
  }

  // A lineage file runs as its step does (its launch from lineage.toml, its tunables): with the
  // task's launch the sgemm steps, which name their own kernels, would not even compile.
  void lineageStepRunsWithItsOwnLaunch() {
    const QString sgemm = QStringLiteral(KWB_SOURCE_DIR "/kernels/sgemm");
    auto r = run({"profile", sgemm, sgemm + "/lineage/03-smem-tiling.cu", "--no-gpu", "--json"});
    QVERIFY2(r.exitCode == 3, qPrintable(describe(r)));
    QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object()["outcome"].toString(), QString("not-run"));
    QVERIFY2(r.err.contains("03-smem-tiling.cu is step 3 of the lineage") && r.err.contains("from lineage.toml"),
             qPrintable(describe(r)));
    r = run({"asm", sgemm, sgemm + "/lineage/01-naive.cu"});
    QVERIFY2(r.exitCode == 0 && r.out.contains("FFMA"), qPrintable(describe(r)));
    // The step's tunables, which --set overrides.
    r = run({"eval", softmax, softmax + "/lineage/01-naive.cu", "--no-gpu", "--json"});
    QVERIFY2(r.exitCode == 3 && r.err.contains("is step 1 of the lineage") && r.err.contains("BLOCK=512"),
             qPrintable(describe(r)));
    // The starter is no lineage step: no note.
    r = run({"profile", softmax, "--no-gpu"});
    QVERIFY2(r.exitCode == 3 && !r.err.contains("lineage"), qPrintable(describe(r)));
  }

  void usageErrors() {
    auto r = run({"profile", softmax, "--no-gpu", "--metrics", "gpu__time_duration.sum,dram__througput.avg.pct_of_peak_sustained_elapsed"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("unknown metric 'dram__througput.avg.pct_of_peak_sustained_elapsed'") &&
                 r.err.contains("did you mean 'dram__throughput.avg.pct_of_peak_sustained_elapsed'"),
             qPrintable(describe(r)));
    r = run({"profile", softmax, "--no-gpu", "--set", "everything"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("'everything'"), qPrintable(describe(r)));
    r = run({"profile"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("name a task"), qPrintable(describe(r)));
    r = run({"profile", softmax, "--no-gpu", "--config", "nope"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("'nope'"), qPrintable(describe(r)));
  }
};

QTEST_GUILESS_MAIN(TestProfileCli)
#include "tst_profile_cli.moc"
