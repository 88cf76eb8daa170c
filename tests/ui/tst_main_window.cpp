// The main window under the offscreen platform: opening tasks, CUDA highlighting, the GPU and
// workspace status, the task tree, manifest errors, saving, window state, and a screenshot.
#include <memory>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolBar>
#include <QTreeView>
#include <QtTest>

#include <Qsci/qscilexercpp.h>
#include <Qsci/qscilexerproperties.h>

#include "core/gpu/device_info.h"
#include "core/store/database.h"
#include "core/store/workspace.h"
#include "ui/app_settings.h"
#include "ui/cuda_editor.h"
#include "ui/cuda_lexer.h"
#include "ui/editor_tabs.h"
#include "ui/log_panel.h"
#include "ui/main_window.h"
#include "ui/models/task_tree_model.h"
#include "ui/settings_dialog.h"
#include "ui/task_browser.h"
#include "ui/workspace_service.h"

using kwb::ui::CudaEditor;
using kwb::ui::MainWindow;
using kwb::ui::TaskTreeModel;

namespace {

const QString kSourceDir = QStringLiteral(KWB_SOURCE_DIR);

bool copyFolder(const QString &from, const QString &to) {
  if (!QDir().mkpath(to)) return false;
  const QDir source(from);
  for (const QString &name : source.entryList(QDir::Files)) {
    if (!QFile::copy(source.filePath(name), QDir(to).filePath(name))) return false;
  }
  return true;
}

QString readFile(const QString &path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(file.readAll());
}

bool writeFile(const QString &path, const QString &text) {
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
  return file.write(text.toUtf8()) >= 0;
}

QStringList childLabels(const QAbstractItemModel *model, const QModelIndex &parent) {
  QStringList labels;
  for (int row = 0; row < model->rowCount(parent); ++row) {
    labels << model->index(row, 0, parent).data().toString();
  }
  return labels;
}

// Waits (on the signal, with a generous limit) unless the condition already holds.
template <typename Object, typename Signal>
bool waitFor(Object *object, Signal signal, bool alreadyDone, int timeoutMs = 60000) {
  if (alreadyDone) return true;
  QSignalSpy spy(object, signal);
  return spy.wait(timeoutMs);
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void logPanelColoursAndClears();
  void hasActionsWithShortcuts();
  void opensBundledTask();
  void highlightsCuda();
  void highlightsCudaTypes();
  void reportsGpuState();
  void opensWorkspace();
  void listsTasks();
  void showsManifestErrors();
  void savesEditedFile();
  void appliesEditorSettings();
  void opensFolderOfTasks();
  void keepsTenRecentTasks();
  void worksWithoutWorkspace();
  void refusesNewerWorkspace();
  void restoresWindowState();
  void savesScreenshot();

 private:
  QString tempPath(const QString &name) const { return QDir(home_->path()).filePath(name); }
  bool waitUntilSettled(MainWindow *window) {
    return waitFor(window, &MainWindow::settled, window->isSettled());
  }

  std::unique_ptr<QTemporaryDir> home_;
  std::unique_ptr<MainWindow> window_;
  std::unique_ptr<QAbstractItemModelTester> modelTester_;
};

void TestMainWindow::initTestCase() {
  home_ = std::make_unique<QTemporaryDir>();
  QVERIFY(home_->isValid());
  // Keep the user's settings and data out of reach. Test mode puts QSettings under
  // $HOME/.qttest; HOME points here too, so parallel runs never share a settings file.
  QStandardPaths::setTestModeEnabled(true);
  qputenv("HOME", home_->path().toUtf8());
  qputenv("XDG_DATA_HOME", tempPath(QStringLiteral("data")).toUtf8());
  qputenv("XDG_CONFIG_HOME", tempPath(QStringLiteral("config")).toUtf8());
  QSettings(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench")).clear();

  window_ = std::make_unique<MainWindow>(tempPath(QStringLiteral("workspace/test.kwb")));
  // Attached before any scan lands, so every insertion and removal is checked.
  modelTester_ = std::make_unique<QAbstractItemModelTester>(
      window_->taskBrowser()->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
  window_->resize(1400, 850);
  window_->show();
  QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
}

void TestMainWindow::cleanupTestCase() {
  modelTester_.reset();
  window_.reset();
}

void TestMainWindow::logPanelColoursAndClears() {
  kwb::ui::LogPanel log;
  QSignalSpy appended(&log, &kwb::ui::LogPanel::messageAppended);
  log.info(QStringLiteral("first"));
  log.warning(QStringLiteral("second"));
  log.error(QStringLiteral("third"));
  QCOMPARE(appended.count(), 3);
  QCOMPARE(log.messageCount(), 3);
  const QStringList lines = log.text().split(QLatin1Char('\n'));
  QCOMPARE(lines.size(), 3);
  QVERIFY(lines[0].contains(QLatin1String("info")) && lines[0].endsWith(QLatin1String("first")));
  QVERIFY(lines[1].contains(QLatin1String("warn")));
  QVERIFY(lines[2].contains(QLatin1String("error")) && lines[2].endsWith(QLatin1String("third")));
  // HH:mm:ss timestamp first.
  QVERIFY(QRegularExpression(QStringLiteral("^\\d\\d:\\d\\d:\\d\\d ")).match(lines[0]).hasMatch());
  log.clearAction()->trigger();
  QCOMPARE(log.messageCount(), 0);
  QVERIFY(log.text().isEmpty());
}

void TestMainWindow::hasActionsWithShortcuts() {
  const QList<std::pair<const char *, QKeySequence>> expected = {
      {"actionOpenTaskFolder", QKeySequence(Qt::CTRL | Qt::Key_O)},
      {"actionSave", QKeySequence(Qt::CTRL | Qt::Key_S)},
      {"actionCloseTab", QKeySequence(Qt::CTRL | Qt::Key_W)},
      {"actionReloadTasks", QKeySequence(Qt::Key_F5)},
      {"actionSettings", QKeySequence(Qt::CTRL | Qt::Key_Comma)},
      {"actionQuit", QKeySequence(Qt::CTRL | Qt::Key_Q)},
      {"actionFocusTasks", QKeySequence(Qt::ALT | Qt::Key_1)},
      {"actionFocusLog", QKeySequence(Qt::ALT | Qt::Key_2)},
      {"actionNextTab", QKeySequence(Qt::CTRL | Qt::Key_PageDown)},
      {"actionPreviousTab", QKeySequence(Qt::CTRL | Qt::Key_PageUp)},
  };
  for (const auto &[name, keys] : expected) {
    auto *action = window_->findChild<QAction *>(QLatin1String(name));
    QVERIFY2(action, name);
    QCOMPARE(action->shortcut(), keys);
  }
  QVERIFY(window_->findChild<QAction *>(QStringLiteral("actionAbout")));
  // Docks and the toolbar carry object names, so their state can be saved and restored.
  QVERIFY(window_->findChild<QDockWidget *>(QStringLiteral("tasksDock")));
  QVERIFY(window_->findChild<QDockWidget *>(QStringLiteral("logDock")));
  QVERIFY(window_->findChild<QToolBar *>(QStringLiteral("mainToolBar")));
  // Nothing is open yet: no tab to save or close.
  QVERIFY(!window_->saveAction()->isEnabled());
  QVERIFY(!window_->closeTabAction()->isEnabled());
}

void TestMainWindow::opensBundledTask() {
  const QString folder = kSourceDir + QStringLiteral("/kernels/softmax");
  QSignalSpy opened(window_.get(), &MainWindow::taskOpened);
  QVERIFY(window_->openTask(folder));
  QCOMPARE(opened.count(), 1);

  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  QVERIFY(editor->text().contains(QLatin1String("__global__")));
  QVERIFY(editor->text().contains(QLatin1String("softmax(")));
  kwb::ui::EditorTabs *tabs = window_->editors();
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QStringLiteral("softmax.cu"));
  QCOMPARE(tabs->count(), 3);
  QStringList titles;
  for (int i = 0; i < tabs->count(); ++i) titles << tabs->tabText(i);
  QVERIFY2(titles.contains(QStringLiteral("task.toml")), qPrintable(titles.join(QLatin1Char(' '))));
  QVERIFY2(titles.contains(QStringLiteral("reference.cu")), qPrintable(titles.join(QLatin1Char(' '))));

  QVERIFY(editor->isCudaSource());
  QVERIFY(qobject_cast<kwb::ui::CudaLexer *>(editor->lexer()));
  CudaEditor *manifest = tabs->editorFor(folder + QStringLiteral("/task.toml"));
  QVERIFY(manifest);
  QVERIFY(qobject_cast<QsciLexerProperties *>(manifest->lexer()));

  QVERIFY2(window_->windowTitle().startsWith(QLatin1String("softmax")), qPrintable(window_->windowTitle()));
  QVERIFY2(
      window_->log()->text().contains(QLatin1String("Opened task softmax (3 configurations, 2 tensors)")),
      qPrintable(window_->log()->text()));
  QCOMPARE(window_->currentTaskName(), QStringLiteral("softmax"));
  QCOMPARE(kwb::ui::settings::recentTasks().value(0), QDir::cleanPath(folder));
}

void TestMainWindow::highlightsCuda() {
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  const QByteArray bytes = editor->text().toUtf8();
  const auto styleOf = [&](const char *needle, int skip = 0) {
    const int at = static_cast<int>(bytes.indexOf(needle));
    return at < 0 ? -1 : editor->styleAt(at + skip);
  };
  QCOMPARE(styleOf("__global__"), int(QsciLexerCPP::Keyword));
  QCOMPARE(styleOf("__launch_bounds__"), int(QsciLexerCPP::Keyword));
  QCOMPARE(styleOf("__restrict__"), int(QsciLexerCPP::Keyword));
  QCOMPARE(styleOf("__shared__"), int(QsciLexerCPP::Keyword));
  QCOMPARE(styleOf("const float", 6), int(QsciLexerCPP::Keyword));  // float stays a C++ keyword
  QCOMPARE(styleOf("threadIdx"), int(QsciLexerCPP::KeywordSet2));
  QCOMPARE(styleOf("blockIdx"), int(QsciLexerCPP::KeywordSet2));
  QCOMPARE(styleOf("__syncthreads"), int(QsciLexerCPP::KeywordSet2));
  QCOMPARE(styleOf("fmaxf"), int(QsciLexerCPP::KeywordSet2));
  QCOMPARE(styleOf("__expf"), int(QsciLexerCPP::KeywordSet2));
  QCOMPARE(styleOf("// Starting point"), int(QsciLexerCPP::CommentLine));
  QCOMPARE(styleOf("scratch"), int(QsciLexerCPP::Identifier));

  auto *lexer = qobject_cast<kwb::ui::CudaLexer *>(editor->lexer());
  QVERIFY(lexer);
  const QColor keyword = lexer->color(QsciLexerCPP::Keyword);
  const QColor builtin = lexer->color(QsciLexerCPP::KeywordSet2);
  const QColor type = lexer->color(QsciLexerCPP::GlobalClass);
  QVERIFY(keyword != builtin);
  QVERIFY(keyword != type);
  QVERIFY(builtin != type);
  QVERIFY(builtin != lexer->color(QsciLexerCPP::Identifier));
  QVERIFY(lexer->font(QsciLexerCPP::Keyword).fixedPitch() ||
          QFontInfo(lexer->font(QsciLexerCPP::Keyword)).fixedPitch());
}

void TestMainWindow::highlightsCudaTypes() {
  const QString path = tempPath(QStringLiteral("types/vector_types.cu"));
  QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
  QVERIFY(writeFile(path, QStringLiteral("__device__ float4 load(const float4 *p) { return __ldg(p); }\n"
                                         "__global__ void k(__half2 *h, __nv_bfloat16 *b, dim3 g) {\n"
                                         "  half2 x = h[threadIdx.x];\n"
                                         "  int4 v; uint4 u; double2 d; cudaStream_t s;\n"
                                         "}\n")));
  CudaEditor editor;
  QString error;
  QVERIFY2(editor.loadFile(path, &error), qPrintable(error));
  QVERIFY(editor.isCudaSource());
  const QByteArray bytes = editor.text().toUtf8();
  for (const char *type :
       {"float4", "__half2", "__nv_bfloat16", "dim3", "half2", "int4", "uint4", "double2", "cudaStream_t"}) {
    const int at = static_cast<int>(bytes.indexOf(QByteArray(type) + ' '));
    QVERIFY2(at >= 0, type);
    QVERIFY2(editor.styleAt(at) == QsciLexerCPP::GlobalClass, type);
  }
  QCOMPARE(editor.styleAt(static_cast<int>(bytes.indexOf("__ldg"))), int(QsciLexerCPP::KeywordSet2));
  QCOMPARE(editor.styleAt(static_cast<int>(bytes.indexOf("__device__"))), int(QsciLexerCPP::Keyword));
  QCOMPARE(editor.tabWidth(), kwb::ui::settings::editor().tabWidth);
  QVERIFY(!editor.indentationsUseTabs());
  QVERIFY(editor.autoIndent());
  QCOMPARE(editor.braceMatching(), QsciScintilla::SloppyBraceMatch);
  QVERIFY(editor.marginLineNumbers(0));
}

void TestMainWindow::reportsGpuState() {
  QVERIFY(waitFor(window_.get(), &MainWindow::gpuProbeFinished, window_->isGpuProbeFinished()));
  const QString status = window_->gpuStatusText();
  QVERIFY(!status.isEmpty());
  QVERIFY(status != QStringLiteral("Probing GPUs…"));
  const kwb::GpuInventory inventory = kwb::probeGpus();
  QCOMPARE(status, QString::fromStdString(inventory.summary()));
  if (!inventory.hasDevices()) QCOMPARE(status, QStringLiteral("No CUDA device: compile-only"));
  auto *label = window_->findChild<QLabel *>(QStringLiteral("gpuStatusLabel"));
  QVERIFY(label);
  QVERIFY2(label->toolTip().contains(QLatin1String("NVRTC")), qPrintable(label->toolTip()));
}

void TestMainWindow::opensWorkspace() {
  QVERIFY(waitFor(window_.get(), &MainWindow::workspaceOpenFinished, window_->isWorkspaceOpenFinished()));
  QVERIFY2(window_->workspace()->isOpen(), qPrintable(window_->log()->text()));
  QCOMPARE(window_->workspaceStatusText(), QStringLiteral("Workspace: test.kwb"));
  QVERIFY(QFileInfo::exists(tempPath(QStringLiteral("workspace/test.kwb"))));
}

void TestMainWindow::listsTasks() {
  QVERIFY(waitUntilSettled(window_.get()));
  const TaskTreeModel *model = window_->taskBrowser()->model();

  const QModelIndex bundled = model->groupIndex(TaskTreeModel::Group::Bundled);
  QVERIFY(bundled.data().toString().startsWith(QLatin1String("Bundled")));
  const QStringList bundledTasks = childLabels(model, bundled);
  QVERIFY2(bundledTasks.contains(QStringLiteral("softmax")), qPrintable(bundledTasks.join(u',')));
  QVERIFY2(bundledTasks.contains(QStringLiteral("sgemm")), qPrintable(bundledTasks.join(u',')));

  const QModelIndex softmax =
      model->index(static_cast<int>(bundledTasks.indexOf(QStringLiteral("softmax"))), 0, bundled);
  QVERIFY(softmax.data(Qt::ToolTipRole).toString().contains(QLatin1String("Row-wise softmax")));
  QVERIFY(softmax.data(Qt::ToolTipRole).toString().contains(QLatin1String("kernels")));
  QVERIFY(softmax.data(TaskTreeModel::ErrorRole).toString().isEmpty());
  QVERIFY(!softmax.data(Qt::DecorationRole).value<QIcon>().isNull());
  QVERIFY(softmax.data(Qt::FontRole).value<QFont>().bold());  // the open task

  const QStringList recent = childLabels(model, model->groupIndex(TaskTreeModel::Group::Recent));
  QCOMPARE(recent, QStringList{QStringLiteral("softmax")});

  // Recorded in the workspace on its own thread and listed back.
  const QStringList recorded = childLabels(model, model->groupIndex(TaskTreeModel::Group::Workspace));
  QVERIFY2(recorded.contains(QStringLiteral("softmax")), qPrintable(window_->log()->text()));

  // Activating a row opens its task.
  auto *view = window_->taskBrowser()->view();
  const QModelIndex proxyBundled = view->model()->index(0, 0);
  QModelIndex sgemmRow;
  for (int row = 0; row < view->model()->rowCount(proxyBundled); ++row) {
    const QModelIndex candidate = view->model()->index(row, 0, proxyBundled);
    if (candidate.data().toString() == QLatin1String("sgemm")) sgemmRow = candidate;
  }
  QVERIFY(sgemmRow.isValid());
  QSignalSpy opened(window_.get(), &MainWindow::taskOpened);
  emit view->activated(sgemmRow);
  QCOMPARE(opened.count(), 1);
  QCOMPARE(window_->currentTaskName(), QStringLiteral("sgemm"));
  QCOMPARE(window_->editors()->tabText(window_->editors()->currentIndex()), QStringLiteral("sgemm.cu"));
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(childLabels(model, model->groupIndex(TaskTreeModel::Group::Recent)),
           (QStringList{QStringLiteral("sgemm"), QStringLiteral("softmax")}));
}

void TestMainWindow::showsManifestErrors() {
  const QString folder = tempPath(QStringLiteral("broken/softmax"));
  QVERIFY(copyFolder(kSourceDir + QStringLiteral("/kernels/softmax"), folder));
  const QString manifestPath = folder + QStringLiteral("/task.toml");
  QStringList lines = readFile(manifestPath).split(QLatin1Char('\n'));
  // The output tensor's shape names a size that does not exist.
  const int yHeader = static_cast<int>(lines.indexOf(QStringLiteral("[tensors.y]")));
  QVERIFY(yHeader >= 0);
  int shapeIndex = -1;
  for (int i = yHeader; i < lines.size(); ++i) {
    if (lines[i].startsWith(QLatin1String("shape"))) {
      shapeIndex = i;
      break;
    }
  }
  QVERIFY(shapeIndex > 0);
  lines[shapeIndex] = QStringLiteral("shape = [\"rows\", \"cols2\"]");
  QVERIFY(writeFile(manifestPath, lines.join(QLatin1Char('\n'))));
  const int line = shapeIndex + 1;

  const QString before = window_->currentTaskFolder();
  QVERIFY(!window_->openTask(folder));
  QCOMPARE(window_->currentTaskFolder(), before);

  const QString log = window_->log()->text();
  QVERIFY2(log.contains(QStringLiteral("task.toml:%1").arg(line)), qPrintable(log));
  QVERIFY2(log.contains(QLatin1String("cols2")), qPrintable(log));

  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  QCOMPARE(QFileInfo(editor->filePath()).canonicalFilePath(), QFileInfo(manifestPath).canonicalFilePath());
  QCOMPARE(editor->problemCount(), 1);
  // The sgemm task's manifest is open too: the tabs say which is which.
  kwb::ui::EditorTabs *tabs = window_->editors();
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QStringLiteral("task.toml (softmax)"));
  QVERIFY(tabs->editorFor(kSourceDir + QStringLiteral("/kernels/sgemm/task.toml")));
  QVERIFY(editor->markersAtLine(line - 1) != 0);
  QVERIFY2(editor->annotation(line - 1).contains(QLatin1String("cols2")),
           qPrintable(editor->annotation(line - 1)));

  // Fixing and saving the manifest clears the mark.
  editor->setText(editor->text().replace(QLatin1String("\"cols2\""), QLatin1String("\"cols\"")));
  window_->saveAction()->trigger();
  QCOMPARE(editor->problemCount(), 0);
  QVERIFY(window_->log()->text().contains(QLatin1String("checks out")));
  QVERIFY(window_->openTask(folder));
}

void TestMainWindow::savesEditedFile() {
  const QString folder = tempPath(QStringLiteral("edited/softmax"));
  QVERIFY(copyFolder(kSourceDir + QStringLiteral("/kernels/softmax"), folder));
  QVERIFY(window_->openTask(folder));
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  kwb::ui::EditorTabs *tabs = window_->editors();
  // Only this task's files stay open.
  for (CudaEditor *open : tabs->editors()) {
    QVERIFY2(open->filePath().startsWith(QFileInfo(folder).canonicalFilePath()) ||
                 open->filePath().startsWith(folder),
             qPrintable(open->filePath()));
  }
  const QString path = folder + QStringLiteral("/softmax.cu");
  QCOMPARE(QFileInfo(editor->filePath()).canonicalFilePath(), QFileInfo(path).canonicalFilePath());

  editor->insertAt(QStringLiteral("// tuned by hand\n"), 0, 0);
  QVERIFY(editor->isModified());
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QStringLiteral("softmax.cu*"));
  QVERIFY(window_->isWindowModified());

  QVERIFY(window_->saveAction()->isEnabled());
  window_->saveAction()->trigger();
  QVERIFY(readFile(path).startsWith(QLatin1String("// tuned by hand\n#ifndef BLOCK")) ||
          readFile(path).startsWith(QLatin1String("// tuned by hand\n")));
  QVERIFY(readFile(path).contains(QLatin1String("softmax(")));
  QVERIFY(!editor->isModified());
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QStringLiteral("softmax.cu"));
  QVERIFY(!window_->isWindowModified());
  QVERIFY(window_->log()->text().contains(QLatin1String("Saved ")));
}

void TestMainWindow::appliesEditorSettings() {
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  const int fontBefore = editor->lexer()->font(QsciLexerCPP::Default).pointSize();
  // The dialog is modal: fill it in and press OK once it is up.
  bool sawDialog = false;
  QTimer::singleShot(0, this, [&sawDialog] {
    auto *dialog = qobject_cast<kwb::ui::SettingsDialog *>(QApplication::activeModalWidget());
    if (!dialog) return;
    sawDialog = true;
    dialog->tabWidthField()->setValue(4);
    dialog->fontSizeField()->setValue(13);
    QCOMPARE(dialog->archField()->currentText(), QStringLiteral("sm_90"));
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
  });
  window_->settingsAction()->trigger();
  QVERIFY(sawDialog);
  QCOMPARE(editor->tabWidth(), 4);
  QCOMPARE(editor->lexer()->font(QsciLexerCPP::Default).pointSize(), 13);
  QVERIFY(fontBefore != 13);
  QCOMPARE(kwb::ui::settings::editor().tabWidth, 4);

  kwb::ui::settings::setEditor({});
  QTimer::singleShot(0, this, [] {
    if (auto *dialog = qobject_cast<kwb::ui::SettingsDialog *>(QApplication::activeModalWidget())) {
      dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
    }
  });
  window_->settingsAction()->trigger();
  QCOMPARE(editor->tabWidth(), 2);
}

void TestMainWindow::opensFolderOfTasks() {
  const QString suite = tempPath(QStringLiteral("suite"));
  QVERIFY(copyFolder(kSourceDir + QStringLiteral("/kernels/softmax"), suite + QStringLiteral("/softmax")));
  QVERIFY(copyFolder(kSourceDir + QStringLiteral("/kernels/sgemm"), suite + QStringLiteral("/sgemm")));
  const QString taskBefore = window_->currentTaskFolder();
  window_->openFolder(suite);
  QCOMPARE(window_->currentTaskFolder(), taskBefore);  // two tasks: the user picks one
  QVERIFY2(window_->log()->text().contains(QLatin1String("holds 2 tasks")),
           qPrintable(window_->log()->text()));
  QVERIFY(waitUntilSettled(window_.get()));

  const TaskTreeModel *model = window_->taskBrowser()->model();
  const QModelIndex opened = model->groupIndex(TaskTreeModel::Group::OpenedFolders);
  QCOMPARE(model->rowCount(opened), 1);
  const QModelIndex folderRow = model->index(0, 0, opened);
  QCOMPARE(folderRow.data().toString(), QStringLiteral("suite"));
  QCOMPARE(folderRow.data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Folder));
  QCOMPARE(childLabels(model, folderRow), (QStringList{QStringLiteral("sgemm"), QStringLiteral("softmax")}));

  // A folder holding one task opens it, and is listed as that task.
  const QString single = tempPath(QStringLiteral("single"));
  QVERIFY(copyFolder(kSourceDir + QStringLiteral("/kernels/sgemm"), single + QStringLiteral("/mine")));
  window_->openFolder(single);
  QCOMPARE(window_->currentTaskName(), QStringLiteral("sgemm"));
  QCOMPARE(window_->currentTaskFolder(), QDir::cleanPath(single + QStringLiteral("/mine")));
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(model->rowCount(opened), 2);
  QCOMPARE(model->index(1, 0, opened).data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Task));

  // A folder without tasks says so.
  const QString empty = tempPath(QStringLiteral("empty"));
  QVERIFY(QDir().mkpath(empty));
  window_->openFolder(empty);
  QVERIFY(window_->log()->text().contains(QLatin1String("holds no task")));
  QVERIFY(waitUntilSettled(window_.get()));
  const QModelIndex emptyRow = model->index(2, 0, opened);
  QVERIFY(!emptyRow.data(TaskTreeModel::ErrorRole).toString().isEmpty());
}

void TestMainWindow::keepsTenRecentTasks() {
  const QStringList saved = kwb::ui::settings::recentTasks();
  for (int i = 0; i < 12; ++i) kwb::ui::settings::addRecentTask(tempPath(QStringLiteral("recent/%1").arg(i)));
  kwb::ui::settings::addRecentTask(tempPath(QStringLiteral("recent/5")));
  const QStringList recent = kwb::ui::settings::recentTasks();
  QCOMPARE(recent.size(), kwb::ui::settings::kMaxRecentTasks);
  QCOMPARE(recent.front(), QDir::cleanPath(tempPath(QStringLiteral("recent/5"))));
  QCOMPARE(recent.count(recent.front()), 1);
  QCOMPARE(recent.value(1), QDir::cleanPath(tempPath(QStringLiteral("recent/11"))));
  QVERIFY(!recent.contains(QDir::cleanPath(tempPath(QStringLiteral("recent/0")))));
  // Put the real list back for the tests that follow.
  QSettings(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench"))
      .remove(QStringLiteral("tasks/recent"));
  for (auto it = saved.crbegin(); it != saved.crend(); ++it) kwb::ui::settings::addRecentTask(*it);
  QCOMPARE(kwb::ui::settings::recentTasks(), saved);
}

void TestMainWindow::worksWithoutWorkspace() {
  // A folder where the workspace file should be: it cannot be opened.
  const QString path = tempPath(QStringLiteral("not-a-file.kwb"));
  QVERIFY(QDir().mkpath(path));
  MainWindow window(path);
  QSignalSpy finished(&window, &MainWindow::workspaceOpenFinished);
  QVERIFY(finished.wait(60000));
  QCOMPARE(finished.front().front().toBool(), false);
  QVERIFY(!window.workspace()->isOpen());
  QCOMPARE(window.workspaceStatusText(), QStringLiteral("Workspace: unavailable"));
  QVERIFY(window.log()->text().contains(QLatin1String("could not be opened")));
  QVERIFY(window.openTask(kSourceDir + QStringLiteral("/kernels/softmax")));
  QVERIFY(waitUntilSettled(&window));
}

void TestMainWindow::refusesNewerWorkspace() {
  const QString path = tempPath(QStringLiteral("workspace/future.kwb"));
  {
    auto workspace = kwb::Workspace::open(path.toStdString());
    QVERIFY(workspace);
  }
  {
    kwb::Database db(path.toStdString(), kwb::Database::Mode::OpenExisting);
    db.exec(
        "INSERT INTO schema_version(version, description, applied_at) VALUES(99, 'future', '2099-01-01')");
  }
  MainWindow window(path);
  QSignalSpy finished(&window, &MainWindow::workspaceOpenFinished);
  QVERIFY(finished.wait(60000));
  QCOMPARE(finished.front().front().toBool(), false);
  QVERIFY2(window.log()->text().contains(QLatin1String("newer")), qPrintable(window.log()->text()));
  QCOMPARE(window.workspaceStatusText(), QStringLiteral("Workspace: unavailable"));
  auto *label = window.findChild<QLabel *>(QStringLiteral("workspaceStatusLabel"));
  QVERIFY(label && label->toolTip().contains(QLatin1String("newer")));
  QVERIFY(waitUntilSettled(&window));
}

void TestMainWindow::restoresWindowState() {
  {
    MainWindow first(tempPath(QStringLiteral("workspace/state-1.kwb")));
    first.show();
    QVERIFY(QTest::qWaitForWindowExposed(&first));
    auto *logDock = first.findChild<QDockWidget *>(QStringLiteral("logDock"));
    QVERIFY(logDock);
    QVERIFY(logDock->isVisible());
    logDock->hide();
    QVERIFY(first.close());  // saves geometry and docks
    QVERIFY(waitUntilSettled(&first));
  }
  {
    MainWindow second(tempPath(QStringLiteral("workspace/state-2.kwb")));
    second.show();
    QVERIFY(QTest::qWaitForWindowExposed(&second));
    auto *logDock = second.findChild<QDockWidget *>(QStringLiteral("logDock"));
    auto *tasksDock = second.findChild<QDockWidget *>(QStringLiteral("tasksDock"));
    QVERIFY(logDock && tasksDock);
    QVERIFY(!logDock->isVisible());
    QVERIFY(tasksDock->isVisible());
    logDock->show();  // leave a normal layout behind
    second.saveWindowState();
    QVERIFY(waitUntilSettled(&second));
  }
}

void TestMainWindow::savesScreenshot() {
  QVERIFY(window_->openTask(kSourceDir + QStringLiteral("/kernels/softmax")));
  QVERIFY(waitUntilSettled(window_.get()));
  window_->resize(1400, 850);
  const QString path = QStringLiteral(KWB_TEST_OUTPUT_DIR "/main-window.png");
  QFile::remove(path);
  QVERIFY(window_->grab().save(path, "PNG"));
  QVERIFY(QFileInfo::exists(path));
  QVERIFY2(QFileInfo(path).size() > 10 * 1024, qPrintable(QString::number(QFileInfo(path).size())));
}

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
