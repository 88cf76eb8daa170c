// The import dialog (File ▸ Import PyTorch Modules or KernelBench Problems…, issue 48 item 5) on
// its own, with the real ImportService and the real reader: PyTorch is checked first (an
// interpreter that is missing, or one without PyTorch, is said so with the fix and Import stays
// off); with PyTorch, two modules are imported into a folder and the result table says, a row
// each, what was made and what was refused (FILE:LINE and why); Open Task names the task made.
// Then in the window: the action opens the one dialog, whose import joins the folder to the
// opened folders and whose Open Task opens the task.
#include <QtTest>

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "helpers/torch_tasks.h"
#include "isolated_home.h"
#include "signal_wait.h"
#include "window_parts.h"
#include "ui/main_window.h"
#include "ui/services/import_service.h"
#include "ui/views/import_dialog.h"
#include "ui/views/log_panel.h"
#include "ui/workbench_context.h"

using namespace kwb::ui;

namespace {

std::string findTorch(std::string &looked) { return kwb::test::torchPython(looked); }

QString fixture(const char *name) {
  return QString::fromStdString((std::filesystem::path(KWB_SOURCE_DIR) / "tests/fixtures/kernelbench" / name).string());
}

QString statusOf(const ImportDialog &d) { return d.findChild<QLabel *>(QStringLiteral("importPythonStatus"))->text(); }

}  // namespace

class TestImportKernelBench : public QObject {
  Q_OBJECT

  std::string looked_;
  const std::string torch_ = findTorch(looked_);  // before HOME moves: the venv is under the real one
  IsolatedHome home_;

  // Sets the interpreter and waits for its check's answer.
  static bool checked(ImportDialog &dialog, const QString &python) {
    QSignalSpy answered(&dialog, &ImportDialog::pythonCheckAnswered);
    dialog.setPython(python);
    return answered.wait(60000);
  }

 private slots:
  void pythonIsCheckedFirst() {
    ImportService service;
    ImportDialog dialog(&service);
    dialog.show();
    auto *import = dialog.findChild<QPushButton *>(QStringLiteral("importStart"));
    QVERIFY(import);
    dialog.addModules({fixture("relu.py")});
    QTemporaryDir dir;
    dialog.setFolder(dir.path());

    QVERIFY(checked(dialog, QStringLiteral("/no/such/python3")));
    QVERIFY(!dialog.pythonReady());
    QVERIFY2(statusOf(dialog).contains(QLatin1String("/no/such/python3")) &&
                 statusOf(dialog).contains(QLatin1String("not an executable file")) &&
                 statusOf(dialog).contains(QLatin1String("install-torch.sh")),
             qPrintable(statusOf(dialog)));
    QVERIFY(!import->isEnabled());
    QVERIFY(!dialog.start());
    QCOMPARE(dialog.results()->rowCount(), 0);

    // A Python without PyTorch (made here: an interpreter whose `import torch` fails).
    QTemporaryDir fake;
    const QString noTorch = fake.filePath(QStringLiteral("python"));
    {
      QFile f(noTorch);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("#!/bin/sh\nexport PYTHONPATH=" + fake.path().toUtf8() + "\nexec python3 \"$@\"\n");
      f.close();
      f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
      QFile torch(fake.filePath(QStringLiteral("torch.py")));
      QVERIFY(torch.open(QIODevice::WriteOnly));
      torch.write("raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n");
    }
    QVERIFY(checked(dialog, noTorch));
    QVERIFY(!dialog.pythonReady());
    QVERIFY2(statusOf(dialog).contains(QLatin1String("PyTorch is not installed")) &&
                 statusOf(dialog).contains(QLatin1String("pip install torch")),
             qPrintable(statusOf(dialog)));
    QVERIFY(!import->isEnabled());
  }

  void importsIntoTheTable() {
    if (torch_.empty()) QSKIP(looked_.c_str());
    ImportService service;
    ImportDialog dialog(&service);
    QAbstractItemModelTester tester(const_cast<ImportResultsModel *>(dialog.results()),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    dialog.show();
    QVERIFY(checked(dialog, QString::fromStdString(torch_)));
    QVERIFY2(dialog.pythonReady(), qPrintable(statusOf(dialog)));
    QVERIFY2(statusOf(dialog).contains(QLatin1String("PyTorch ")), qPrintable(statusOf(dialog)));
    QTemporaryDir dir;
    dialog.setFolder(dir.filePath(QStringLiteral("tasks")));
    QVERIFY(!dialog.start());  // no modules yet
    dialog.addModules({fixture("softmax_input.py"), fixture("relu.py")});

    QSignalSpy imported(&dialog, &ImportDialog::imported);
    QVERIFY(dialog.start());
    QVERIFY(dialog.isRunning());
    QVERIFY(imported.wait(180000));
    QVERIFY(!dialog.isRunning());
    const ImportResultsModel *table = dialog.results();
    QCOMPARE(table->rowCount(), 2);
    // A softmax of a generator is no input the task format has: refused where it is written.
    QCOMPARE(table->index(0, ImportResultsModel::ResultColumn).data().toString(), QStringLiteral("refused"));
    QVERIFY2(table->index(0, ImportResultsModel::DetailColumn).data().toString().contains(
                 QLatin1String("softmax_input.py:20: get_inputs")),
             qPrintable(table->index(0, ImportResultsModel::DetailColumn).data().toString()));
    QCOMPARE(table->index(1, ImportResultsModel::ResultColumn).data().toString(), QStringLiteral("imported"));
    const QString relu = table->index(1, 0).data(ImportResultsModel::FolderRole).toString();
    QVERIFY2(relu.endsWith(QLatin1String("/tasks/relu")) && QFileInfo(relu + "/task.toml").isFile(), qPrintable(relu));
    QCOMPARE(imported.front().at(1).toStringList(), QStringList{relu});
    QVERIFY(dialog.findChild<QLabel *>(QStringLiteral("importStatus"))->text().contains(QLatin1String("Imported 1 of 2")));

    auto *open = dialog.findChild<QPushButton *>(QStringLiteral("importOpenTask"));
    QVERIFY(open->isEnabled());
    QSignalSpy openRequested(&dialog, &ImportDialog::openTaskRequested);
    open->click();
    QCOMPARE(openRequested.size(), 1);
    QCOMPARE(openRequested.front().front().toString(), relu);
  }

  void theWindowOpensWhatWasImported() {
    if (torch_.empty()) QSKIP(looked_.c_str());
    QTemporaryDir dir;
    MainWindow window(dir.filePath(QStringLiteral("ws.kwb")));
    window.resize(1200, 800);
    window.show();
    QVERIFY_SETTLED(window);
    auto *action = window.findChild<QAction *>(QStringLiteral("actionImportKernelBench"));
    QVERIFY(action);
    action->trigger();
    auto *dialog = window.findChild<ImportDialog *>(QStringLiteral("importDialog"));
    QVERIFY(dialog && dialog->isVisible());
    action->trigger();  // one dialog, raised again
    QCOMPARE(window.findChildren<ImportDialog *>().size(), 1);

    QVERIFY(checked(*dialog, QString::fromStdString(torch_)));
    dialog->addModules({fixture("relu.py")});
    dialog->setFolder(dir.filePath(QStringLiteral("imported")));
    QSignalSpy imported(dialog, &ImportDialog::imported);
    QVERIFY(dialog->start());
    QVERIFY(imported.wait(180000));
    QVERIFY2(window.log()->text().contains(QLatin1String("Imported 1 task(s)")), qPrintable(window.log()->text()));
    dialog->findChild<QPushButton *>(QStringLiteral("importOpenTask"))->click();
    QVERIFY_SETTLED(window);
    QCOMPARE(window.context()->taskName(), QStringLiteral("relu"));
  }
};

QTEST_MAIN(TestImportKernelBench)
#include "tst_import_kernelbench.moc"
