// File ▸ Import KernelBench Problems… in the window (issue 21): problem files read by the real
// reader in this machine's python3, on the import service's thread. A problem the task format
// cannot express (an input that is a softmax of a generator) is refused with its file, line and why; where
// python3 has no PyTorch, a problem that is otherwise fine is refused saying its output's shape
// needs PyTorch; where it has PyTorch, the task is made and opened. The log says each.
#include <QtTest>

#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>

#include "helpers/test_files.h"
#include "isolated_home.h"
#include "signal_wait.h"
#include "ui/main_window.h"
#include "ui/services/import_service.h"
#include "ui/views/log_panel.h"
#include "ui/workbench_context.h"

using namespace kwb::ui;

class TestImportKernelBench : public QObject {
  Q_OBJECT

  IsolatedHome home_;

 private slots:
  void importsAndSaysWhy() {
    if (QStandardPaths::findExecutable(QStringLiteral("python3")).isEmpty()) QSKIP("no python3 on PATH");
    const QString fixtures = QString::fromStdString((std::filesystem::path(KWB_SOURCE_DIR) / "tests/fixtures/kernelbench").string());
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("ws.kwb")));
    window.resize(1200, 800);
    window.show();
    QVERIFY(waitFor(&window, &MainWindow::settled, window.isSettled()));
    QVERIFY(window.importKernelBenchAction());
    QCOMPARE(window.importKernelBenchAction()->objectName(), QStringLiteral("actionImportKernelBench"));

    QSignalSpy finished(window.importService(), &ImportService::finished);
    window.importKernelBench({fixtures + "/softmax_input.py", fixtures + "/relu.py"}, dir.path());
    QVERIFY(finished.wait(120000));
    const auto outcome = finished.front().front().value<ImportProblemsOutcome>();
    const QString log = window.log()->text();

    // A softmax of a generator is no input the task format has: refused where it is written.
    QVERIFY2(log.contains(QLatin1String("Not imported: ")) && log.contains(QLatin1String("softmax_input.py:20: get_inputs")),
             qPrintable(log));
    const bool torch = outcome.folders.size() == 1;
    if (torch) {
      QVERIFY(outcome.folders.front().endsWith(QLatin1String("/relu")));
      QVERIFY(waitFor(&window, &MainWindow::settled, window.isSettled()));
      QCOMPARE(window.context()->taskName(), QStringLiteral("relu"));
      QVERIFY(log.contains(QLatin1String("Imported 1 task(s)")));
    } else {
      QCOMPARE(outcome.errors.size(), 2);
      QVERIFY2(outcome.errors.back().contains(QLatin1String("relu.py")) && outcome.errors.back().contains(QLatin1String("PyTorch")),
               qPrintable(outcome.errors.back()));
      QVERIFY(log.contains(QLatin1String("Imported 0 task(s)")));
      QVERIFY(log.contains(QLatin1String("2 problem(s) refused")));
    }
    QVERIFY(window.statusBar()->currentMessage().startsWith(QLatin1String("Imported")));
  }
};

QTEST_MAIN(TestImportKernelBench)
#include "tst_import_kernelbench.moc"
