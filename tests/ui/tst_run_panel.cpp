// Run, Cancel, Results and History in the real main window under the offscreen platform: compile
// errors marked in the editor, the bundled starter evaluated (on a machine without a GPU: "not
// run", with resources and occupancy), runs stored in the workspace file and read back, Cancel,
// and a task that stops loading. (The result tree alone: tests/models.)
#include "isolated_home.h"
#include <memory>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QProgressBar>
#include <QRandomGenerator>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QToolBar>
#include <QTreeView>
#include <QtTest>

#include "core/store/workspace.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/editor_tabs.h"
#include "ui/models/evaluation_run.h"
#include "ui/services/evaluation_service.h"
#include "ui/views/history_panel.h"
#include "ui/main_window.h"
#include "window_parts.h"
#include "helpers/model_cells.h"
#include "ui/models/evaluation_result_model.h"
#include "ui/models/run_history_model.h"
#include "ui/views/results_panel.h"
#include "ui/services/workspace_service.h"

using kwb::ui::CudaEditor;
using kwb::ui::EvaluationResultModel;
using kwb::ui::EvaluationRun;
using kwb::ui::MainWindow;
using kwb::ui::RunHistoryModel;

using kwb::test::cell;

namespace {

const QString kSoftmax = QDir::cleanPath(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax"));
constexpr int kRunTimeoutMs = 120000;

bool copyFolder(const QString &from, const QString &to) {
  if (!QDir().mkpath(to)) return false;
  const QDir source(from);
  for (const QString &name : source.entryList(QDir::Files)) {
    QFile::remove(QDir(to).filePath(name));
    if (!QFile::copy(source.filePath(name), QDir(to).filePath(name))) return false;
    QFile::setPermissions(QDir(to).filePath(name), QFile::ReadOwner | QFile::WriteOwner);
  }
  return true;
}

// The top-level rows of a kind.
QList<QModelIndex> rowsOf(const EvaluationResultModel *model, EvaluationResultModel::Kind kind) {
  return kwb::test::topLevelRows(model, EvaluationResultModel::KindRole, int(kind));
}

// A comment that makes the source new to the compile cache, so compiling it takes real time.
QString uniqueComment() {
  return QStringLiteral("\n// %1\n").arg(QRandomGenerator::global()->generate64());
}

}  // namespace

class TestRunPanel : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void hasRunActions();
  void compileErrorsAreMarkedInline();
  void runsStarterAndKeepsHistory();
  void historyPersistsInTheWorkspaceFile();
  void cancelStopsTheRun();
  void cancelDuringProgress();
  void brokenTaskEndsInAResultRow();
  void sanitizeAfterCheckingShowsItsRows();

 private:
  QString tempPath(const QString &name) const { return home_->path(name); }
  // Runs with Ctrl+R, as a user would, and waits for the run to end.
  EvaluationRun runWithShortcut();

  std::unique_ptr<IsolatedHome> home_;
  std::unique_ptr<MainWindow> window_;
  QString task_;       // a writable copy of the softmax task
  QString workspace_;  // the window's workspace file
  std::unique_ptr<QAbstractItemModelTester> resultsTester_;
  std::unique_ptr<QAbstractItemModelTester> historyTester_;
};

void TestRunPanel::initTestCase() {
  home_ = std::make_unique<IsolatedHome>();
  QVERIFY(home_->isValid());

  task_ = tempPath(QStringLiteral("tasks/softmax"));
  QVERIFY(copyFolder(kSoftmax, task_));
  workspace_ = tempPath(QStringLiteral("workspace/runs.kwb"));
  window_ = std::make_unique<MainWindow>(workspace_);
  resultsTester_ = std::make_unique<QAbstractItemModelTester>(
      partOf<kwb::ui::ResultsPanel>(*window_)->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
  historyTester_ = std::make_unique<QAbstractItemModelTester>(
      partOf<kwb::ui::HistoryPanel>(*window_)->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
  window_->resize(1400, 850);
  window_->show();
  QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
  QSignalSpy workspaceOpen(window_.get(), &MainWindow::workspaceOpenFinished);
  QVERIFY(window_->isWorkspaceOpenFinished() || workspaceOpen.wait(60000));
  QVERIFY(partOf<kwb::ui::WorkspaceService>(*window_)->isOpen());
  QVERIFY(window_->openTask(task_));
}

void TestRunPanel::cleanupTestCase() {
  resultsTester_.reset();
  historyTester_.reset();
  window_.reset();
}

EvaluationRun TestRunPanel::runWithShortcut() {
  QSignalSpy finished(window_.get(), &MainWindow::runFinished);
  window_->activateWindow();
  if (!QTest::qWaitForWindowActive(window_.get())) return {};
  CudaEditor *editor = window_->currentEditor();
  editor->setFocus();
  if (!QTest::qWaitFor([&] { return QApplication::focusWidget() == editor; })) return {};
  // The editor has the focus; the window's shortcut must still win (and nothing is typed).
  const QString text = editor->text();
  QTest::keySequence(editor, QKeySequence(Qt::CTRL | Qt::Key_R));
  if (!window_->isRunning() && finished.isEmpty()) return {};
  if (editor->text() != text) return {};
  if (finished.isEmpty() && !finished.wait(kRunTimeoutMs)) return {};
  return finished.front().front().value<EvaluationRun>();
}

void TestRunPanel::hasRunActions() {
  QCOMPARE(window_->actions().run->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_R));
  QVERIFY(window_->actions().run->isEnabled());
  QVERIFY(!window_->actions().cancelRun->isEnabled());
  QVERIFY(window_->actions().timeRun->isCheckable());
  QVERIFY(window_->actions().sanitizeRun->isCheckable());
  QVERIFY(!window_->actions().sanitizeRun->isChecked());  // off until asked for
  QVERIFY(!window_->findChild<QProgressBar *>(QStringLiteral("runProgress"))->isVisible());
  QVERIFY(window_->findChild<QDockWidget *>(QStringLiteral("resultsDock")));
  QVERIFY(window_->findChild<QDockWidget *>(QStringLiteral("historyDock")));
  auto *toolbar = window_->findChild<QToolBar *>(QStringLiteral("mainToolBar"));
  QVERIFY(toolbar && toolbar->actions().contains(window_->actions().run) &&
          toolbar->actions().contains(window_->actions().cancelRun));
  QCOMPARE(partOf<kwb::ui::ResultsPanel>(*window_)->model()->rowCount(), 0);
  QVERIFY(partOf<kwb::ui::HistoryPanel>(*window_)->taskFolder() == task_);
}

void TestRunPanel::compileErrorsAreMarkedInline() {
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  QCOMPARE(editor->fileName(), QStringLiteral("softmax.cu"));
  const QString original = editor->text();
  // A kernel with a syntax error on a line of its own.
  editor->setText(original + QStringLiteral("\n__device__ int broken_value = ;\n"));
  const QStringList lines = editor->text().split(QLatin1Char('\n'));
  const int errorLine =
      static_cast<int>(lines.indexOf(QStringLiteral("__device__ int broken_value = ;"))) + 1;
  QVERIFY(errorLine > 1);

  QVERIFY(window_->actions().run->isEnabled());
  const EvaluationRun run = runWithShortcut();
  QCOMPARE(run.outcome, kwb::Outcome::CompileError);
  QVERIFY2(run.message.contains(QLatin1String("does not compile")), qPrintable(run.message));

  // The editor: an error symbol on the line, and the compiler's words under it.
  QVERIFY(editor->diagnosticCount() >= 1);
  QVERIFY2(editor->markersAtLine(errorLine - 1) & (1 << CudaEditor::kErrorMarker),
           qPrintable(QStringLiteral("no error marker on line %1").arg(errorLine)));
  const QString note = editor->annotation(errorLine - 1);
  QVERIFY2(note.contains(QLatin1String("error")) && note.contains(QLatin1String("expected an expression")),
           qPrintable(note));
  QCOMPARE(editor->markersAtLine(0) & (1 << CudaEditor::kErrorMarker), 0);

  // The Results panel says compile error, with the diagnostic listed under the compile row.
  kwb::ui::ResultsPanel *results = partOf<kwb::ui::ResultsPanel>(*window_);
  QVERIFY2(results->summaryText().startsWith(QLatin1String("compile error")),
           qPrintable(results->summaryText()));
  const QModelIndex compile = results->model()->firstOf(EvaluationResultModel::Kind::Compile);
  QVERIFY(compile.isValid());
  QCOMPARE(cell(compile, EvaluationResultModel::OutcomeColumn), QStringLiteral("compile error"));
  QVERIFY(results->model()->rowCount(compile) >= 1);
  QCOMPARE(results->model()->index(0, 0, compile).data().toString(),
           QStringLiteral("softmax.cu:%1:%2")
               .arg(errorLine)
               .arg(run.result->candidate.diagnostics.at(0).column));
  QVERIFY(results->view()->isExpanded(compile));

  // Editing clears the marks: they described the text that ran.
  editor->setCursorPosition(0, 0);
  editor->insert(QStringLiteral(" "));
  QCOMPARE(editor->diagnosticCount(), 0);
  QCOMPARE(editor->markersAtLine(errorLine - 1) & (1 << CudaEditor::kErrorMarker), 0);
  QVERIFY(editor->annotation(errorLine - 1).isEmpty());

  editor->setText(original);
  editor->setModified(false);
  QVERIFY(QTest::qWaitFor([&] { return window_->isSettled(); }, 60000));
}

void TestRunPanel::runsStarterAndKeepsHistory() {
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  QSignalSpy recorded(window_.get(), &MainWindow::runRecorded);
  QSignalSpy progress(partOf<kwb::ui::EvaluationService>(*window_), &kwb::ui::EvaluationService::progress);

  const EvaluationRun run = runWithShortcut();
  QVERIFY2(run.result.has_value(), "the run did not finish");
  QVERIFY(!progress.isEmpty());  // the progress bar was fed
  QVERIFY(!window_->findChild<QProgressBar *>(QStringLiteral("runProgress"))->isVisible());
  QVERIFY(window_->actions().run->isEnabled());
  QVERIFY(!window_->actions().cancelRun->isEnabled());
  QCOMPARE(editor->diagnosticCount(), 0);

  const EvaluationResultModel *model = partOf<kwb::ui::ResultsPanel>(*window_)->model();
  const QModelIndex compile = model->firstOf(EvaluationResultModel::Kind::Compile);
  QCOMPARE(cell(compile, EvaluationResultModel::OutcomeColumn), QStringLiteral("ok"));
  QVERIFY2(cell(compile, EvaluationResultModel::DetailColumn).contains(QLatin1String("softmax: ")),
           qPrintable(cell(compile, EvaluationResultModel::DetailColumn)));
  QVERIFY(cell(compile, EvaluationResultModel::DetailColumn).contains(QLatin1String("registers")));
  const auto configs = rowsOf(model, EvaluationResultModel::Kind::Config);
  QCOMPARE(configs.size(), 3);
  QCOMPARE(configs[0].data().toString(), QStringLiteral("small"));
  if (run.outcome == kwb::Outcome::NotRun) {
    // This machine has no GPU: compiled, resources and occupancy reported, nothing faked.
    QVERIFY2(run.message.startsWith(QLatin1String("no CUDA device here, compiled only")), qPrintable(run.message));
    QVERIFY(partOf<kwb::ui::ResultsPanel>(*window_)->summaryText().contains(QLatin1String("no CUDA device here, compiled only")));
    for (const QModelIndex &config : configs) {
      QCOMPARE(cell(config, EvaluationResultModel::OutcomeColumn), QStringLiteral("not run"));
      QCOMPARE(cell(config, EvaluationResultModel::DetailColumn), QStringLiteral("no CUDA device here, compiled only"));
      QVERIFY(cell(config, EvaluationResultModel::LaunchColumn).startsWith(QLatin1String("grid ")));
      QVERIFY2(cell(config, EvaluationResultModel::OccupancyColumn).contains(QLatin1String("blocks/SM")),
               qPrintable(cell(config, EvaluationResultModel::OccupancyColumn)));
      QVERIFY(cell(config, EvaluationResultModel::TimeColumn).isEmpty());
    }
  } else {
    QCOMPARE(run.outcome, kwb::Outcome::Correct);  // the starter is a correct kernel
    for (const QModelIndex &config : configs) QCOMPARE(model->rowCount(config), 3);  // three seeds
  }

  // Stored in the workspace, listed in History, marked as the run shown.
  // (The previous test's run may be recorded first: the workspace answers in order.)
  EvaluationRun stored;
  QTRY_VERIFY_WITH_TIMEOUT(
      [&] {
        for (const QList<QVariant> &signal : recorded) {
          const auto candidate = signal.front().value<EvaluationRun>();
          if (candidate.startedAt == run.startedAt) stored = candidate;
        }
        return stored.historyId > 0;
      }(),
      60000);
  QCOMPARE(stored.outcome, run.outcome);
  const RunHistoryModel *history = partOf<kwb::ui::HistoryPanel>(*window_)->model();
  QTRY_COMPARE_WITH_TIMEOUT(history->rowOf(stored.historyId), 0, 60000);
  QCOMPARE(history->rowCount(), 2);
  QCOMPARE(history->index(0, 0).data(RunHistoryModel::OutcomeRole).toString(), QLatin1String(kwb::toString(run.outcome)));
  QCOMPARE(history->index(0, RunHistoryModel::SourceColumn).data().toString(), QStringLiteral("softmax.cu"));
  QCOMPARE(partOf<kwb::ui::HistoryPanel>(*window_)->view()->currentIndex().row(), 0);
  // The compile error of the previous test is the older row.
  QCOMPARE(history->index(1, 0).data(RunHistoryModel::OutcomeRole).toString(),
           QStringLiteral("compile-error"));

  // Choosing the older run shows it in Results, from the history.
  QSignalSpy shown(window_.get(), &MainWindow::historyRunShown);
  QVERIFY(partOf<kwb::ui::HistoryPanel>(*window_)->activateRun(
      history->index(1, 0).data(RunHistoryModel::HistoryIdRole).toLongLong()));
  QVERIFY(shown.wait(60000));
  QVERIFY(partOf<kwb::ui::ResultsPanel>(*window_)->isFromHistory());
  QVERIFY(partOf<kwb::ui::ResultsPanel>(*window_)->summaryText().startsWith(QLatin1String("compile error")));
  QCOMPARE(cell(partOf<kwb::ui::ResultsPanel>(*window_)->model()->firstOf(EvaluationResultModel::Kind::Compile),
                EvaluationResultModel::OutcomeColumn),
           QStringLiteral("compile error"));
  QVERIFY(partOf<kwb::ui::ResultsPanel>(*window_)->summaryText().contains(QLatin1String("from the history")));
}

void TestRunPanel::historyPersistsInTheWorkspaceFile() {
  QVERIFY(QTest::qWaitFor([&] { return window_->isSettled(); }, 60000));
  // The file itself, read with the store (not through the window).
  {
    auto workspace = kwb::Workspace::open(workspace_.toStdString());
    const auto task = workspace->taskByFolder(task_.toStdString());
    QVERIFY(task.has_value());
    const auto runs = workspace->evaluations(task->id);
    QVERIFY(runs.size() >= 2);
    QCOMPARE(runs[1].outcome, std::string("compile-error"));
    const auto newest = workspace->evaluation(runs[0].id);
    QVERIFY(newest.has_value());
    const auto json = nlohmann::json::parse(newest->resultJson);
    QCOMPARE(QString::fromStdString(json.value("outcome", std::string())),
             QString::fromStdString(runs[0].outcome));
    QCOMPARE(json["configs"].size(), std::size_t{3});
    QVERIFY(json["configs"][0].contains("occupancy"));
    QCOMPARE(QString::fromStdString(newest->sourceName), task_ + QStringLiteral("/softmax.cu"));
    QVERIFY(workspace->source(newest->sourceHash).value_or("").find("softmax") != std::string::npos);
  }

  // Another window on the same file lists them too.
  MainWindow again(workspace_);
  QSignalSpy listed(partOf<kwb::ui::WorkspaceService>(again), &kwb::ui::WorkspaceService::evaluationsListed);
  QVERIFY(again.openTask(task_));
  QTRY_VERIFY_WITH_TIMEOUT(partOf<kwb::ui::HistoryPanel>(again)->model()->rowCount() >= 2, 60000);
  QCOMPARE(partOf<kwb::ui::HistoryPanel>(again)->model()->index(1, 0).data(RunHistoryModel::OutcomeRole).toString(),
           QStringLiteral("compile-error"));
  QSignalSpy shown(&again, &MainWindow::historyRunShown);
  QVERIFY(partOf<kwb::ui::HistoryPanel>(again)->activateRun(
      partOf<kwb::ui::HistoryPanel>(again)->model()->index(0, 0).data(RunHistoryModel::HistoryIdRole).toLongLong()));
  QVERIFY(shown.wait(60000));
  QCOMPARE(rowsOf(partOf<kwb::ui::ResultsPanel>(again)->model(), EvaluationResultModel::Kind::Config).size(), 3);
  QVERIFY(QTest::qWaitFor([&] { return again.isSettled(); }, 60000));
}

void TestRunPanel::cancelStopsTheRun() {
  CudaEditor *editor = window_->currentEditor();
  const QString original = editor->text();
  editor->setText(original + uniqueComment());
  QSignalSpy finished(window_.get(), &MainWindow::runFinished);
  QSignalSpy recorded(window_.get(), &MainWindow::runRecorded);

  QVERIFY(window_->runCurrent());
  QVERIFY(window_->isRunning());
  QVERIFY(!window_->actions().run->isEnabled());
  QVERIFY(window_->actions().cancelRun->isEnabled());
  QVERIFY(window_->findChild<QProgressBar *>(QStringLiteral("runProgress"))->isVisible());
  QVERIFY(!window_->runCurrent());  // one run at a time
  // Cancelled at once: before the evaluation began or while it compiles, never after it ended
  // (an uncached compile takes far longer than these few lines).
  window_->actions().cancelRun->trigger();
  QVERIFY(!window_->actions().cancelRun->isEnabled());

  QVERIFY(finished.wait(kRunTimeoutMs));
  const EvaluationRun run = finished.front().front().value<EvaluationRun>();
  QCOMPARE(run.outcome, kwb::Outcome::Cancelled);
  QCOMPARE(run.message, QStringLiteral("cancelled by the user"));
  QVERIFY(run.result.has_value());
  for (const auto &config : run.result->configs) QCOMPARE(config.outcome, kwb::Outcome::Cancelled);
  QVERIFY(partOf<kwb::ui::ResultsPanel>(*window_)->summaryText().startsWith(QLatin1String("cancelled")));
  QVERIFY(!window_->isRunning());
  QVERIFY(window_->actions().run->isEnabled());
  QVERIFY(!window_->findChild<QProgressBar *>(QStringLiteral("runProgress"))->isVisible());
  QVERIFY(recorded.wait(60000));
  QTRY_COMPARE_WITH_TIMEOUT(
      partOf<kwb::ui::HistoryPanel>(*window_)->model()->index(0, 0).data(RunHistoryModel::OutcomeRole).toString(),
      QStringLiteral("cancelled"), 60000);

  editor->setText(original);
  editor->setModified(false);
}

void TestRunPanel::cancelDuringProgress() {
  // Cancel from the first progress report, as a user pressing Cancel mid-run: the run ends
  // cancelled, or, when it had already finished, as a complete run. Either way the window is
  // ready for the next one.
  CudaEditor *editor = window_->currentEditor();
  const QString original = editor->text();
  editor->setText(original + uniqueComment());
  QSignalSpy finished(window_.get(), &MainWindow::runFinished);
  bool cancelled = false;
  const auto connection = connect(partOf<kwb::ui::EvaluationService>(*window_), &kwb::ui::EvaluationService::progress, this,
                                  [&](const kwb::ui::EvaluationStep &) {
                                    if (cancelled) return;
                                    cancelled = true;
                                    window_->cancelRun();
                                  });
  QVERIFY(window_->runCurrent());
  QVERIFY(finished.wait(kRunTimeoutMs));
  disconnect(connection);
  QVERIFY(cancelled);
  const EvaluationRun run = finished.front().front().value<EvaluationRun>();
  if (run.outcome == kwb::Outcome::Cancelled) {
    QCOMPARE(run.message, QStringLiteral("cancelled by the user"));
  } else {
    QVERIFY2(run.outcome == kwb::Outcome::NotRun || run.outcome == kwb::Outcome::Correct,
             qPrintable(QLatin1String(kwb::toString(run.outcome)) + QStringLiteral(": ") + run.message));
    QCOMPARE(run.result->configs.size(), std::size_t{3});
  }
  QVERIFY(!window_->isRunning());
  QVERIFY(window_->actions().run->isEnabled());
  QVERIFY(!window_->actions().cancelRun->isEnabled());
  editor->setText(original);
  editor->setModified(false);
  QVERIFY(QTest::qWaitFor([&] { return window_->isSettled(); }, 60000));
}

void TestRunPanel::brokenTaskEndsInAResultRow() {
  // The manifest breaks on disk after the task was opened: the run says so in a row.
  const QString manifest = task_ + QStringLiteral("/task.toml");
  QFile file(manifest);
  QVERIFY(file.open(QIODevice::ReadOnly));
  const QByteArray good = file.readAll();
  file.close();
  QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
  file.write(QByteArray(good).replace("[reference]", "[reference"));
  file.close();

  partOf<kwb::ui::EditorTabs>(*window_)->setCurrentWidget(partOf<kwb::ui::EditorTabs>(*window_)->editorFor(task_ + QStringLiteral("/softmax.cu")));
  const EvaluationRun run = runWithShortcut();
  QCOMPARE(run.outcome, kwb::Outcome::Error);
  QVERIFY2(run.message.contains(QLatin1String("task.toml")), qPrintable(run.message));
  const QModelIndex row = partOf<kwb::ui::ResultsPanel>(*window_)->model()->firstOf(EvaluationResultModel::Kind::Run);
  QVERIFY(row.isValid());
  QCOMPARE(cell(row, EvaluationResultModel::OutcomeColumn), QStringLiteral("error"));
  QVERIFY(cell(row, EvaluationResultModel::DetailColumn).contains(QLatin1String("the task did not load")));
  QVERIFY(window_->actions().run->isEnabled());

  QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
  file.write(good);
  file.close();
  QVERIFY(QTest::qWaitFor([&] { return window_->isSettled(); }, 60000));
}

// Run with *Sanitize After Checking* on: the result carries the sanitizer's part and Results
// shows it; without a GPU (here) a row that says why nothing ran, with one a row per tool.
void TestRunPanel::sanitizeAfterCheckingShowsItsRows() {
  partOf<kwb::ui::EditorTabs>(*window_)->setCurrentWidget(partOf<kwb::ui::EditorTabs>(*window_)->editorFor(task_ + QStringLiteral("/softmax.cu")));
  window_->actions().sanitizeRun->setChecked(true);
  const EvaluationRun run = runWithShortcut();
  window_->actions().sanitizeRun->setChecked(false);
  QVERIFY2(run.result.has_value() && run.result->sanitize.has_value(), "the run did not carry the sanitizer's part");
  const auto rows = rowsOf(partOf<kwb::ui::ResultsPanel>(*window_)->model(), EvaluationResultModel::Kind::Sanitizer);
  if (run.outcome == kwb::Outcome::NotRun) {
    QCOMPARE(rows.size(), 1);
    QCOMPARE(cell(rows[0], EvaluationResultModel::OutcomeColumn), QStringLiteral("not run"));
    QVERIFY2(cell(rows[0], EvaluationResultModel::DetailColumn).contains(QLatin1String("no CUDA device")),
             qPrintable(cell(rows[0], EvaluationResultModel::DetailColumn)));
  } else {
    QCOMPARE(rows.size(), 4);
  }
  QVERIFY2(partOf<kwb::ui::ResultsPanel>(*window_)->summaryText().contains(QLatin1String("sanitizer:")),
           qPrintable(partOf<kwb::ui::ResultsPanel>(*window_)->summaryText()));
  QVERIFY(QTest::qWaitFor([&] { return window_->isSettled(); }, 60000));
}

QTEST_MAIN(TestRunPanel)
#include "tst_run_panel.moc"
