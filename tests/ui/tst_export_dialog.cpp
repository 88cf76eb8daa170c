// File ▸ Export Kernel… in the window (issue 20): a run selected in the History exported as a CUDA
// package and as a report through the dialog, on the export service's thread, against a real
// workspace file; a folder with files in it refused unless the box is ticked; the editor's kernel
// exported when no run is selected. Offscreen, with a picture of the dialog in the test output.
#include <QtTest>

#include <QCheckBox>
#include <QLabel>
#include <QListWidget>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <filesystem>

#include "core/store/workspace.h"
#include "helpers/memory_fixtures.h"
#include "helpers/test_files.h"
#include "isolated_home.h"
#include "signal_wait.h"
#include "window_parts.h"
#include "ui/main_window.h"
#include "ui/services/export_service.h"
#include "ui/views/export_dialog.h"
#include "ui/views/history_panel.h"
#include "ui/workbench_context.h"

namespace fs = std::filesystem;
using namespace kwb;
using namespace kwb::ui;

namespace {

bool exportInto(ExportDialog *dialog, const QString &dir) {
  dialog->setFolder(dir);
  QSignalSpy done(dialog, &ExportDialog::exported);
  if (!dialog->start()) return false;
  return done.wait(60000);
}

}  // namespace

class TestExportDialog : public QObject {
  Q_OBJECT

  IsolatedHome home_;

 private slots:
  void exportsTheSelectedRun() {
    QTemporaryDir dir;
    const QString wsPath = dir.filePath(QStringLiteral("runs.kwb"));
    const std::string code = test::readFile(test::kernelsDir() / "softmax" / "softmax.cu");
    std::int64_t runId = 0;
    {
      auto ws = Workspace::open(wsPath.toStdString());
      const auto task = ws->recordTaskOpened("softmax", (test::kernelsDir() / "softmax").string(), "hash");
      runId = test::addMemoryRun(*ws, task.id, code, test::memoryRunResult(true, {1.2, 1.4, 1.6}), "softmax.cu");
    }
    MainWindow window(wsPath);
    window.resize(1400, 900);
    window.show();
    QVERIFY_SETTLED(window);
    QVERIFY(!window.actions().exportKernel->isEnabled());  // no task yet
    QVERIFY(!window.showExportDialog());
    QVERIFY(window.openTask(QString::fromStdString((test::kernelsDir() / "softmax").string())));
    QVERIFY_SETTLED(window);
    QVERIFY(window.actions().exportKernel->isEnabled());

    emit partOf<kwb::ui::HistoryPanel>(window)->runActivated(runId);
    QVERIFY_SETTLED(window);
    QVERIFY(window.context()->selection() && window.context()->selection()->run.historyId == runId);

    auto *dialog = window.showExportDialog();
    QVERIFY(dialog);
    QVERIFY(dialog->folder().endsWith(QStringLiteral("kernel-workbench-exports/softmax-cuda")));
    const QString cuda = dir.filePath(QStringLiteral("cuda"));
    QVERIFY(exportInto(dialog, cuda));
    QVERIFY2(dialog->outcome() && dialog->outcome()->ok, qPrintable(dialog->outcome() ? dialog->outcome()->error : QString()));
    QCOMPARE(dialog->outcome()->what, QStringLiteral("run %1").arg(runId));
    QVERIFY(dialog->outcome()->files.contains(QStringLiteral("include/softmax.h")));
    QVERIFY(test::readFile(fs::path(cuda.toStdString()) / "README.md").find("| wide | correct |") != std::string::npos);
    QVERIFY(dialog->findChild<QListWidget *>(QStringLiteral("exportFiles"))->count() > 5);

    // Again into the same folder: refused, then allowed by the box.
    QVERIFY(exportInto(dialog, cuda));
    QVERIFY(dialog->outcome() && !dialog->outcome()->ok);
    QVERIFY2(dialog->findChild<QLabel *>(QStringLiteral("exportStatus"))->text().contains(QStringLiteral("is not empty")),
             qPrintable(dialog->findChild<QLabel *>(QStringLiteral("exportStatus"))->text()));
    dialog->setOverwrite(true);
    QVERIFY(exportInto(dialog, cuda));
    QVERIFY(dialog->outcome()->ok);

    // The report: self-contained HTML beside the Markdown.
    dialog->setOverwrite(false);
    dialog->setFormat(exporting::ExportFormat::Report);
    const QString report = dir.filePath(QStringLiteral("report"));
    QVERIFY(exportInto(dialog, report));
    QVERIFY2(dialog->outcome()->ok, qPrintable(dialog->outcome()->error));
    const std::string html = test::readFile(fs::path(report.toStdString()) / "report.html");
    QVERIFY(html.find("<h2>Speedup history</h2>") != std::string::npos);
    QVERIFY(html.find("data:image/svg+xml;base64,") != std::string::npos);
    QVERIFY(dialog->grab().save(QString::fromStdString((test::outputDir() / "export-dialog.png").string())));
    dialog->close();

    // No run selected: the editor's kernel, with the workspace's run of the same code found.
    window.context()->clearSelection();
    auto *second = window.showExportDialog();
    QVERIFY(second);
    QVERIFY(exportInto(second, dir.filePath(QStringLiteral("editor"))));
    QVERIFY2(second->outcome()->ok, qPrintable(second->outcome()->error));
    QVERIFY2(second->outcome()->what.startsWith(QStringLiteral("file softmax.cu")), qPrintable(second->outcome()->what));
    second->close();
    QVERIFY_SETTLED(window);
  }
};

QTEST_MAIN(TestExportDialog)
#include "tst_export_dialog.moc"
