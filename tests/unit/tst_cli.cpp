// kwb and kwb-worker as a user or script runs them: real processes, real files.
#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

struct Run {
  int exitCode = -1;
  QString out;
  QString err;
};

Run run(const QString &program, const QStringList &args, const QProcessEnvironment &env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  if (!p.waitForFinished(60000)) return {};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
          QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

const QString kernels = QStringLiteral(KWB_SOURCE_DIR "/kernels");

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    kwb_ = qEnvironmentVariable("KWB_CLI");
    worker_ = qEnvironmentVariable("KWB_WORKER");
    QVERIFY2(!kwb_.isEmpty() && !worker_.isEmpty(), "run through ctest: KWB_CLI and KWB_WORKER name the programs");
  }

  void versionAndHelp() {
    auto r = run(kwb_, {"--version"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.startsWith("kwb 0."));
    r = run(kwb_, {"--help"});
    QCOMPARE(r.exitCode, 0);
    for (const char *word : {"devices", "tasks", "task"}) QVERIFY2(r.out.contains(word), word);
    r = run(kwb_, {"task", "--help"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("validate"));
    QVERIFY(r.out.contains("show"));
  }

  void unknownCommandFails() {
    // Exit codes: 2 for an unknown command, CLI11's 106 for a missing subcommand and 109 for an
    // unknown option; -1 (a crash or a hang) must never pass.
    auto r = run(kwb_, {"frobnicate"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.startsWith("kwb: unknown command 'frobnicate'; expected one of: devices, tasks, task"), qPrintable(r.err));
    r = run(kwb_, {"devices", "--frobnicate"});
    QCOMPARE(r.exitCode, 109);
    QVERIFY2(r.err.contains("--frobnicate"), qPrintable(r.err));
    r = run(kwb_, {});
    QCOMPARE(r.exitCode, 106);
    QVERIFY2(r.err.contains("A subcommand is required"), qPrintable(r.err));
  }

  void tasksListShowsTheBundledSuite() {
    auto r = run(kwb_, {"tasks", "list", kernels});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains(QRegularExpression("^sgemm +Single-precision matrix multiply", QRegularExpression::MultilineOption)), qPrintable(r.out));
    QVERIFY2(r.out.contains(QRegularExpression("^softmax +Row-wise softmax", QRegularExpression::MultilineOption)), qPrintable(r.out));
    r = run(kwb_, {"tasks", "list", "--json", kernels});
    QCOMPARE(r.exitCode, 0);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j.is_array());
    QVERIFY(j.size() >= 2);
    for (const auto &row : j) QVERIFY(row["valid"].get<bool>());
    // Without a folder, the bundled suite is found from the build tree.
    r = run(kwb_, {"tasks", "list"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("softmax"));
  }

  void taskShowText() {
    auto r = run(kwb_, {"task", "show", kernels + "/sgemm"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("h200: M=4096 N=4096 K=4096  (137 GFLOP"), qPrintable(r.out));
    QVERIFY(r.out.contains("TILE = 8 16 32"));
    QVERIFY(r.out.contains("sgemm_reference<<<(ceil_div(N, 16), ceil_div(M, 16)), (16, 16)>>>(A, B, C, M, N, K)"));
  }

  void taskShowJson() {
    auto r = run(kwb_, {"task", "show", "--json", kernels + "/softmax/task.toml"});
    QCOMPARE(r.exitCode, 0);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j["name"].get<std::string>(), std::string("softmax"));
    QCOMPARE(j["configs"].size(), std::size_t(3));
  }

  void validateValidAndInvalid() {
    auto r = run(kwb_, {"task", "validate", kernels + "/softmax"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("valid"));

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QFile::copy(kernels + "/softmax/reference.cu", dir.filePath("reference.cu"));
    QFile in(kernels + "/softmax/task.toml");
    QVERIFY(in.open(QIODevice::ReadOnly));
    QString manifest = QString::fromUtf8(in.readAll());
    // Break the shape of y: an unknown size on a known line.
    const int yShape = manifest.indexOf("shape", manifest.indexOf("[tensors.y]"));
    const int line = manifest.left(yShape).count('\n') + 1;
    manifest.replace(yShape, QStringLiteral("shape = [\"rows\", \"cols\"]").size(),
                     QStringLiteral("shape = [\"rows\", \"cols2\"]"));
    QFile out(dir.filePath("task.toml"));
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(manifest.toUtf8());
    out.close();

    r = run(kwb_, {"task", "validate", dir.path()});
    QCOMPARE(r.exitCode, 2);
    const QString expected = QStringLiteral("%1/task.toml:%2: tensors.y.shape: unknown size 'cols2'; known sizes: rows, cols")
                                 .arg(dir.path()).arg(line);
    QVERIFY2(r.err.startsWith(expected), qPrintable(r.err + " != " + expected));

    r = run(kwb_, {"task", "validate", "--json", dir.path()});
    QCOMPARE(r.exitCode, 2);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j["valid"].get<bool>(), false);
    QCOMPARE(j["error"]["line"].get<int>(), line);
    QCOMPARE(j["error"]["field"].get<std::string>(), std::string("tensors.y.shape"));

    r = run(kwb_, {"task", "validate", dir.filePath("no-such-folder")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(!r.err.isEmpty());
  }

  void devicesWithoutDriverExitZero() {
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("KWB_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
    auto r = run(kwb_, {"devices"}, env);
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.startsWith("No CUDA device: compile-only (no CUDA driver"), qPrintable(r.out));
    r = run(kwb_, {"devices", "--json"}, env);
    QCOMPARE(r.exitCode, 0);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j["devices"].empty());
    QCOMPARE(j["summary"].get<std::string>(), std::string("No CUDA device: compile-only"));
  }

  void workerVersionAndDevices() {
    auto r = run(worker_, {"--version"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.startsWith("kwb-worker 0."));
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("KWB_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
    r = run(worker_, {"--devices", "--json"}, env);
    QCOMPARE(r.exitCode, 0);
    QVERIFY(nlohmann::json::parse(r.out.toStdString()).contains("libraries"));
    r = run(worker_, {"--bogus"});
    QCOMPARE(r.exitCode, 2);
  }

 private:
  QString kwb_;
  QString worker_;
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
