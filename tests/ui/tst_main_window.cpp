// The main window under the offscreen platform: opening tasks, CUDA highlighting, finding text,
// the GPU probe (a kwb-worker child process) and workspace status, the task tree (scans, context
// menu, filter, lists), manifest errors, saving, settings, shortcuts, window state, and the
// kernel-workbench --screenshot command line.
#include "isolated_home.h"
#include "signal_wait.h"
#include "window_parts.h"
#include <functional>
#include <memory>
#include <vector>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDirIterator>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPointer>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTimer>
#include <QToolBar>
#include <QTreeView>
#include <QtTest>
#include <QScreen>

#include <Qsci/qscicommandset.h>
#include <Qsci/qscilexercpp.h>
#include <Qsci/qscilexerproperties.h>

#include "core/gpu/device_info.h"
#include "core/gpu/worker_gpu_report.h"
#include "core/paths/install_paths.h"
#include "core/store/database.h"
#include "core/store/workspace.h"
#include "ui/settings/app_settings.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/cuda_lexer.h"
#include "ui/views/editor_tabs.h"
#include "ui/views/find_bar.h"
#include "ui/services/gpu_probe.h"
#include "ui/views/log_panel.h"
#include "ui/main_window.h"
#include "ui/views/start_page.h"
#include "ui/views/work_area.h"
#include "ui/models/task_tree_model.h"
#include "ui/settings/settings_dialog.h"
#include "ui/views/task_browser.h"
#include "ui/services/workspace_service.h"

using kwb::ui::CudaEditor;
using kwb::ui::MainWindow;
using kwb::ui::SettingsDialog;
using kwb::ui::TaskBrowser;
using kwb::ui::TaskTreeModel;

namespace {

const QString kSourceDir = QStringLiteral(KWB_SOURCE_DIR);
const QString kSoftmax = QDir::cleanPath(kSourceDir + QStringLiteral("/kernels/softmax"));
const QString kSgemm = QDir::cleanPath(kSourceDir + QStringLiteral("/kernels/sgemm"));

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

bool writeScript(const QString &path, const QString &text) {
  return writeFile(path, text) &&
         QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
}

// A copy of the softmax task whose output shape names a size that does not exist; returns the
// 1-based line of the mistake, or 0.
int breakSoftmaxCopy(const QString &folder) {
  if (!copyFolder(kSoftmax, folder)) return 0;
  const QString manifestPath = folder + QStringLiteral("/task.toml");
  QStringList lines = readFile(manifestPath).split(QLatin1Char('\n'));
  const auto yHeader = lines.indexOf(QStringLiteral("[tensors.y]"));
  if (yHeader < 0) return 0;
  for (auto i = yHeader; i < lines.size(); ++i) {
    if (lines[i].startsWith(QLatin1String("shape"))) {
      lines[i] = QStringLiteral("shape = [\"rows\", \"cols2\"]");
      return writeFile(manifestPath, lines.join(QLatin1Char('\n'))) ? static_cast<int>(i) + 1 : 0;
    }
  }
  return 0;
}

QStringList childLabels(const QAbstractItemModel *model, const QModelIndex &parent) {
  QStringList labels;
  for (int row = 0; row < model->rowCount(parent); ++row) {
    labels << model->index(row, 0, parent).data().toString();
  }
  return labels;
}

QModelIndex childNamed(const QAbstractItemModel *model, const QModelIndex &parent, const QString &label) {
  for (int row = 0; row < model->rowCount(parent); ++row) {
    const QModelIndex index = model->index(row, 0, parent);
    if (index.data().toString() == label) return index;
  }
  return {};
}

// Every task row's label under parent, at any depth.
QStringList taskLabels(const QAbstractItemModel *model, const QModelIndex &parent) {
  QStringList labels;
  for (int row = 0; row < model->rowCount(parent); ++row) {
    const QModelIndex index = model->index(row, 0, parent);
    if (index.data(TaskTreeModel::KindRole).toInt() == int(TaskTreeModel::Kind::Task))
      labels << index.data().toString();
    labels << taskLabels(model, index);
  }
  return labels;
}

// Calls answer on the first modal dialog of type T to appear within timeoutMs (polling, so it
// works from inside the dialog's own exec()). When none appears, whatever modal widget is up is
// closed, so a test fails at once (on *seen) instead of hanging in exec() until ctest kills it.
template <typename T>
std::shared_ptr<bool> answerModal(QObject *context, std::function<void(T *)> answer, int timeoutMs = 10000) {
  auto seen = std::make_shared<bool>(false);
  auto *timer = new QTimer(context);
  auto clock = std::make_shared<QElapsedTimer>();
  clock->start();
  timer->setInterval(10);
  QObject::connect(timer, &QTimer::timeout, context, [timer, seen, clock, timeoutMs, answer] {
    QWidget *modal = QApplication::activeModalWidget();
    if (auto *dialog = qobject_cast<T *>(modal)) {
      timer->stop();
      timer->deleteLater();
      *seen = true;
      answer(dialog);
      return;
    }
    if (clock->elapsed() < timeoutMs) return;
    timer->stop();
    timer->deleteLater();
    if (auto *other = qobject_cast<QDialog *>(modal)) {
      other->reject();
    } else if (modal) {
      modal->close();
    }
  });
  timer->start();
  return seen;
}

// The newest context menu the task browser has open.
QMenu *contextMenu(TaskBrowser *browser) {
  const auto menus = browser->findChildren<QMenu *>(QStringLiteral("taskContextMenu"));
  return menus.isEmpty() ? nullptr : menus.last();
}

QMenu *openContextMenu(TaskBrowser *browser, const QModelIndex &proxyIndex) {
  QTreeView *view = browser->view();
  view->scrollTo(proxyIndex);
  const QRect rect = view->visualRect(proxyIndex);
  if (!rect.isValid()) return nullptr;
  emit view->customContextMenuRequested(rect.center());
  return contextMenu(browser);
}

QAction *actionNamed(const QMenu *menu, const QString &text) {
  if (!menu) return nullptr;
  for (QAction *action : menu->actions()) {
    if (action->text() == text) return action;
  }
  return nullptr;
}

void closeMenu(QMenu *menu) {
  if (menu) menu->close();
  QTRY_VERIFY(QApplication::activePopupWidget() == nullptr);
}

// Text colour of the first run of text in block that reads `text` (trimmed).
QColor colourOf(const QTextBlock &block, const QString &text) {
  for (auto it = block.begin(); !it.atEnd(); ++it) {
    const QTextFragment fragment = it.fragment();
    if (fragment.text().trimmed() == text) return fragment.charFormat().foreground().color();
  }
  return {};
}

struct Run {
  int exitCode = -1;
  bool finished = false;
  QString out;
  QString err;
};

// Runs the real kernel-workbench with HOME and the XDG folders inside sandbox.
Run runGui(const QString &sandbox, const QStringList &arguments,
           const QList<std::pair<QString, QString>> &extraEnv = {}) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("HOME"), sandbox + QStringLiteral("/home"));
  env.insert(QStringLiteral("XDG_CONFIG_HOME"), sandbox + QStringLiteral("/config"));
  env.insert(QStringLiteral("XDG_DATA_HOME"), sandbox + QStringLiteral("/data"));
  env.insert(QStringLiteral("XDG_CACHE_HOME"), sandbox + QStringLiteral("/cache"));
  env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
  env.remove(QStringLiteral("KWB_KERNELS_DIR"));
  env.remove(QStringLiteral("KWB_WORKER"));
  for (const auto &[key, value] : extraEnv) env.insert(key, value);
  QProcess process;
  process.setProcessEnvironment(env);
  process.start(QStringLiteral(KWB_BINARY_DIR "/app/gui/kernel-workbench"), arguments);
  Run run;
  run.finished = process.waitForFinished(120000);
  if (!run.finished) {
    process.kill();
    process.waitForFinished(5000);
  }
  run.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  run.out = QString::fromUtf8(process.readAllStandardOutput());
  run.err = QString::fromUtf8(process.readAllStandardError());
  return run;
}

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void logPanelColoursAndClears();
  void hasActionsWithUniqueShortcuts();
  void opensBundledTask();
  void highlightsCuda();
  void highlightsCudaTypes();
  void reportsGpuState();
  void probesGpuInChildProcess();
  void opensWorkspace();
  void listsTasks();
  void contextMenuSurvivesRescan();
  void filtersTasks();
  void keepsTreeStateAcrossScans();
  void shortcutsWork();
  void findsInEditor();
  void showsManifestErrors();
  void reopeningReadsChangedFiles();
  void savesEditedFile();
  void closingModifiedTabAsks();
  void appliesEditorSettings();
  void settingsCancelKeepsValues();
  void reportsMissingKernelsFolder();
  void opensFolderOfTasks();
  void removesFromLists();
  void recentMenuOpensTasks();
  void keepsTenRecentTasks();
  void manyEditorsKeepAnnotationStyle();
  void switchesWorkspaceViaSettings();
  void dropsAnswersOfReplacedWorkspace();
  void worksWithoutWorkspace();
  void refusesNewerWorkspace();
  void startPageSaysWhatToDoFirst();
  void restoresWindowState();
  void savesScreenshot();
  void screenshotCommandLine();
  void screenshotOfBrokenTask();
  void screenshotAfterActions();
  void screenshotDeadline();

 private:
  QString tempPath(const QString &name) const { return home_->path(name); }
  bool waitUntilSettled(MainWindow *window) {
    return waitFor(window, &MainWindow::settled, window->isSettled());
  }
  QModelIndex proxyTask(TaskTreeModel::Group group, const QString &label) const {
    const QAbstractItemModel *proxy = partOf<kwb::ui::TaskBrowser>(*window_)->view()->model();
    return childNamed(proxy, proxy->index(static_cast<int>(group), 0), label);
  }

  std::unique_ptr<IsolatedHome> home_;
  std::unique_ptr<MainWindow> window_;
  std::unique_ptr<QAbstractItemModelTester> modelTester_;
};

void TestMainWindow::initTestCase() {
  home_ = std::make_unique<IsolatedHome>();
  QVERIFY(home_->isValid());

  window_ = std::make_unique<MainWindow>(tempPath(QStringLiteral("workspace/test.kwb")));
  // Attached before any scan lands, so every insertion and removal is checked.
  modelTester_ = std::make_unique<QAbstractItemModelTester>(
      partOf<kwb::ui::TaskBrowser>(*window_)->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
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

  // Colours: info blue, warning amber, error red, in the level word and in the message.
  const QTextDocument *document = log.view()->document();
  const QColor info = colourOf(document->findBlockByNumber(0), QStringLiteral("info"));
  const QColor warn = colourOf(document->findBlockByNumber(1), QStringLiteral("warn"));
  const QColor error = colourOf(document->findBlockByNumber(2), QStringLiteral("error"));
  const QColor errorText = colourOf(document->findBlockByNumber(2), QStringLiteral("third"));
  const QColor infoText = colourOf(document->findBlockByNumber(0), QStringLiteral("first"));
  QVERIFY(info.isValid() && warn.isValid() && error.isValid() && errorText.isValid() && infoText.isValid());
  QVERIFY2(info.blue() > info.red() && info.blue() > info.green(), qPrintable(info.name()));
  QVERIFY2(warn.red() > warn.green() && warn.green() > warn.blue(), qPrintable(warn.name()));
  QVERIFY2(error.red() > 2 * error.green() && error.red() > 2 * error.blue(), qPrintable(error.name()));
  QVERIFY2(errorText.red() > 2 * errorText.green(), qPrintable(errorText.name()));
  QVERIFY(infoText != errorText);

  log.clearAction()->trigger();
  QCOMPARE(log.messageCount(), 0);
  QVERIFY(log.text().isEmpty());
}

void TestMainWindow::hasActionsWithUniqueShortcuts() {
  const QList<std::pair<const char *, QKeySequence>> expected = {
      {"actionOpenTaskFolder", QKeySequence(Qt::CTRL | Qt::Key_O)},
      {"actionSave", QKeySequence(Qt::CTRL | Qt::Key_S)},
      {"actionCloseTab", QKeySequence(Qt::CTRL | Qt::Key_W)},
      {"actionReloadTasks", QKeySequence(Qt::Key_F5)},
      {"actionSettings", QKeySequence(Qt::CTRL | Qt::Key_Comma)},
      {"actionQuit", QKeySequence(Qt::CTRL | Qt::Key_Q)},
      {"actionFind", QKeySequence(Qt::CTRL | Qt::Key_F)},
      {"actionFindNext", QKeySequence(Qt::Key_F3)},
      {"actionFindPrevious", QKeySequence(Qt::SHIFT | Qt::Key_F3)},
      {"actionFocusTasks", QKeySequence(Qt::ALT | Qt::Key_1)},
      {"actionFocusLog", QKeySequence(Qt::ALT | Qt::Key_2)},
      {"actionNextTab", QKeySequence(Qt::CTRL | Qt::Key_PageDown)},
      {"actionPreviousTab", QKeySequence(Qt::CTRL | Qt::Key_PageUp)},
      {"actionRun", QKeySequence(Qt::CTRL | Qt::Key_R)},
  };
  for (const auto &[name, keys] : expected) {
    auto *action = window_->findChild<QAction *>(QLatin1String(name));
    QVERIFY2(action, name);
    QCOMPARE(action->shortcut(), keys);
  }

  // No two actions share a key, and the editor binds none of them for itself (a key the
  // editor binds never reaches the window while the editor has the focus).
  CudaEditor editor;
  QHash<QKeySequence, QString> owners;
  for (QAction *action : window_->findChildren<QAction *>()) {
    for (const QKeySequence &keys : action->shortcuts()) {
      const QString name = action->objectName().isEmpty() ? action->text() : action->objectName();
      QVERIFY2(!owners.contains(keys), qPrintable(QStringLiteral("%1 is the shortcut of both %2 and %3")
                                                      .arg(keys.toString(), owners.value(keys), name)));
      owners.insert(keys, name);
      QVERIFY2(!editor.standardCommands()->boundTo(keys[0].toCombined()),
               qPrintable(QStringLiteral("the editor binds %1 (%2)").arg(keys.toString(), name)));
    }
  }
  QVERIFY(owners.size() >= expected.size());

  QVERIFY(window_->findChild<QAction *>(QStringLiteral("actionAbout")));
  // Docks and the toolbar carry object names, so their state can be saved and restored.
  QVERIFY(window_->findChild<QDockWidget *>(QStringLiteral("tasksDock")));
  QVERIFY(window_->findChild<QDockWidget *>(QStringLiteral("logDock")));
  QVERIFY(window_->findChild<QToolBar *>(QStringLiteral("mainToolBar")));
  // Nothing is open yet: no tab to save, close or search.
  QVERIFY(!window_->actions().save->isEnabled());
  QVERIFY(!window_->actions().closeTab->isEnabled());
  QVERIFY(!window_->actions().find->isEnabled());
}

void TestMainWindow::opensBundledTask() {
  QSignalSpy opened(window_.get(), &MainWindow::taskOpened);
  QVERIFY(window_->openTask(kSoftmax));
  QCOMPARE(opened.count(), 1);

  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  QVERIFY(editor->text().contains(QLatin1String("__global__")));
  QVERIFY(editor->text().contains(QLatin1String("softmax(")));
  kwb::ui::EditorTabs *tabs = partOf<kwb::ui::EditorTabs>(*window_);
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QStringLiteral("softmax.cu"));
  QCOMPARE(tabs->count(), 3);
  QStringList titles;
  for (int i = 0; i < tabs->count(); ++i) titles << tabs->tabText(i);
  QVERIFY2(titles.contains(QStringLiteral("task.toml")), qPrintable(titles.join(QLatin1Char(' '))));
  QVERIFY2(titles.contains(QStringLiteral("reference.cu")), qPrintable(titles.join(QLatin1Char(' '))));

  QVERIFY(editor->isCudaSource());
  QVERIFY(qobject_cast<kwb::ui::CudaLexer *>(editor->lexer()));
  CudaEditor *manifest = tabs->editorFor(kSoftmax + QStringLiteral("/task.toml"));
  QVERIFY(manifest);
  QVERIFY(qobject_cast<QsciLexerProperties *>(manifest->lexer()));

  QVERIFY2(window_->windowTitle().startsWith(QLatin1String("softmax")), qPrintable(window_->windowTitle()));
  QVERIFY2(
      window_->log()->text().contains(QLatin1String("Opened task softmax (3 configurations, 2 tensors)")),
      qPrintable(window_->log()->text()));
  QCOMPARE(window_->currentTaskName(), QStringLiteral("softmax"));
  QCOMPARE(kwb::ui::settings::recentTasks().value(0), kSoftmax);
  QVERIFY(window_->actions().find->isEnabled());
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
                                         "  int min = 0, max = 1, abs = 2; bool wait = free(reduce);\n"
                                         "  Fragment fragment; Barrier barrier; int precision, pipeline;\n"
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
  // Everyday words stay plain identifiers: a variable called max or wait is not a CUDA name.
  for (const char *word : {" min ", " max ", " abs ", " wait ", "free(", "reduce)", " fragment;", " barrier;",
                           " precision,", " pipeline;"}) {
    const int at = static_cast<int>(bytes.indexOf(word));
    QVERIFY2(at >= 0, word);
    QVERIFY2(editor.styleAt(at + 1) == QsciLexerCPP::Identifier, word);
  }
  // What the editor sets up differently from QScintilla's defaults.
  QVERIFY(!editor.indentationsUseTabs());
  QVERIFY(editor.autoIndent());
  QCOMPARE(editor.braceMatching(), QsciScintilla::SloppyBraceMatch);
  QVERIFY(editor.marginLineNumbers(0));
}

void TestMainWindow::reportsGpuState() {
  QVERIFY2(kwb::workerExecutable(), "kwb-worker was not found: build the kwb-worker target");
  QVERIFY(waitFor(window_.get(), &MainWindow::gpuProbeFinished, window_->isGpuProbeFinished()));
  const QString status = window_->gpuStatusText();
  QVERIFY(!status.isEmpty());
  QVERIFY(status != QStringLiteral("Probing GPUs…"));
  // The worker probed in its own process what this process finds.
  const kwb::GpuInventory inventory = kwb::probeGpus();
  QCOMPARE(status, QString::fromStdString(inventory.summary()));
  if (!inventory.hasDevices()) QCOMPARE(status, QStringLiteral("No CUDA device: compile-only"));
  auto *label = window_->findChild<QLabel *>(QStringLiteral("gpuStatusLabel"));
  QVERIFY(label);
  QVERIFY2(label->toolTip().contains(QLatin1String("NVRTC")), qPrintable(label->toolTip()));
  QVERIFY2(window_->log()->text().contains(QStringLiteral("GPU: ") + status), qPrintable(window_->log()->text()));
}

void TestMainWindow::probesGpuInChildProcess() {
  using kwb::ui::GpuProbe;
  const QString dir = tempPath(QStringLiteral("fake-workers"));
  QVERIFY(QDir().mkpath(dir));

  // No worker at all.
  {
    GpuProbe probe;
    QSignalSpy failed(&probe, &GpuProbe::failed);
    probe.start(QString());
    QVERIFY(failed.wait(5000));
    QCOMPARE(failed.front().at(0).toString(), QStringLiteral("GPU probe unavailable: kwb-worker not found"));
    QVERIFY(failed.front().at(1).toString().contains(QLatin1String("KWB_WORKER")));
  }
  // A worker that hangs (a wedged driver) is killed at the deadline.
  {
    const QString pidFile = dir + QStringLiteral("/hang.pid");
    const QString hang = dir + QStringLiteral("/hang.sh");
    QVERIFY(writeScript(hang, QStringLiteral("#!/bin/sh\necho $$ > '%1'\nexec sleep 120\n").arg(pidFile)));
    GpuProbe probe;
    QSignalSpy failed(&probe, &GpuProbe::failed);
    QElapsedTimer clock;
    clock.start();
    probe.start(hang, 500);
    QVERIFY(failed.wait(10000));
    QVERIFY(clock.elapsed() < 8000);
    QCOMPARE(failed.front().at(0).toString(), QStringLiteral("GPU probe timed out"));
    QVERIFY(!probe.isRunning());
    QTRY_VERIFY(QFileInfo(pidFile).size() > 0);
    const QString proc = QStringLiteral("/proc/%1/stat").arg(readFile(pidFile).trimmed());
    // Gone, or a zombie waiting to be reaped: either way no longer running.
    QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(proc) || readFile(proc).contains(QLatin1String(") Z ")), 10000);
  }
  // A worker that fails, and one that answers nonsense.
  {
    const QString fails = dir + QStringLiteral("/fails.sh");
    QVERIFY(writeScript(fails, QStringLiteral("#!/bin/sh\necho 'cannot read /dev/nvidia0' >&2\nexit 3\n")));
    GpuProbe probe;
    QSignalSpy failed(&probe, &GpuProbe::failed);
    probe.start(fails);
    QVERIFY(failed.wait(10000));
    QCOMPARE(failed.front().at(0).toString(), QStringLiteral("GPU probe failed"));
    const QString detail = failed.front().at(1).toString();
    QVERIFY2(detail.contains(QLatin1String("code 3")) && detail.contains(QLatin1String("/dev/nvidia0")),
             qPrintable(detail));

    const QString nonsense = dir + QStringLiteral("/nonsense.sh");
    QVERIFY(writeScript(nonsense, QStringLiteral("#!/bin/sh\necho 'not json'\n")));
    failed.clear();
    probe.start(nonsense);
    QVERIFY(failed.wait(10000));
    QVERIFY2(failed.front().at(1).toString().contains(QLatin1String("unreadable")),
             qPrintable(failed.front().at(1).toString()));
  }
  // The answer an H200 machine gave (kept in tests/gpu/results) reads back as that inventory.
  {
    QDirIterator it(kSourceDir + QStringLiteral("/tests/gpu/results"), {QStringLiteral("*kwb-devices.json")},
                    QDir::Files);
    QVERIFY2(it.hasNext(), "no recorded kwb devices JSON in tests/gpu/results");
    QFile file(it.next());
    QVERIFY(file.open(QIODevice::ReadOnly));
    const auto read = kwb::parseGpuInventory(file.readAll().toStdString());
    QVERIFY2(std::holds_alternative<kwb::GpuInventory>(read), (std::holds_alternative<std::string>(read) ? std::get<std::string>(read).c_str() : ""));
    const auto *inventory = &std::get<kwb::GpuInventory>(read);
    QVERIFY(inventory->hasDevices());
    QCOMPARE(QString::fromStdString(inventory->devices.front().name), QStringLiteral("NVIDIA H200"));
    QCOMPARE(inventory->devices.front().ccMajor, 9);
    QCOMPARE(inventory->devices.front().smCount, 132);
    QCOMPARE(inventory->libraries.size(), std::size_t(4));
    QVERIFY(std::holds_alternative<std::string>(kwb::parseGpuInventory("{\"devices\": 3}")));
  }
  // The real worker.
  {
    const auto worker = kwb::workerExecutable();
    QVERIFY(worker);
    GpuProbe probe;
    QSignalSpy ready(&probe, &GpuProbe::inventoryReady);
    probe.start(QString::fromStdString(worker->string()));
    QVERIFY(ready.wait(60000));
    QCOMPARE(ready.front().at(1).toString(), QString::fromStdString(kwb::probeGpus().summary()));
  }
}

void TestMainWindow::opensWorkspace() {
  QVERIFY(waitFor(window_.get(), &MainWindow::workspaceOpenFinished, window_->isWorkspaceOpenFinished()));
  QVERIFY2(partOf<kwb::ui::WorkspaceService>(*window_)->isOpen(), qPrintable(window_->log()->text()));
  QCOMPARE(window_->workspaceStatusText(), QStringLiteral("Workspace: test.kwb"));
  QVERIFY(QFileInfo::exists(tempPath(QStringLiteral("workspace/test.kwb"))));
}

void TestMainWindow::listsTasks() {
  QVERIFY(waitUntilSettled(window_.get()));
  const TaskTreeModel *model = partOf<kwb::ui::TaskBrowser>(*window_)->model();

  const QModelIndex bundled = model->groupIndex(TaskTreeModel::Group::Bundled);
  QVERIFY(bundled.data().toString().startsWith(QLatin1String("Bundled")));
  const QStringList bundledTasks = childLabels(model, bundled);
  QVERIFY2(bundledTasks.contains(QStringLiteral("softmax")), qPrintable(bundledTasks.join(u',')));
  QVERIFY2(bundledTasks.contains(QStringLiteral("sgemm")), qPrintable(bundledTasks.join(u',')));

  const QModelIndex softmax = childNamed(model, bundled, QStringLiteral("softmax"));
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
  auto *view = partOf<kwb::ui::TaskBrowser>(*window_)->view();
  const QModelIndex sgemmRow = proxyTask(TaskTreeModel::Group::Bundled, QStringLiteral("sgemm"));
  QVERIFY(sgemmRow.isValid());
  QSignalSpy opened(window_.get(), &MainWindow::taskOpened);
  emit view->activated(sgemmRow);
  QCOMPARE(opened.count(), 1);
  QCOMPARE(window_->currentTaskName(), QStringLiteral("sgemm"));
  QCOMPARE(partOf<kwb::ui::EditorTabs>(*window_)->tabText(partOf<kwb::ui::EditorTabs>(*window_)->currentIndex()), QStringLiteral("sgemm.cu"));
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(childLabels(model, model->groupIndex(TaskTreeModel::Group::Recent)),
           (QStringList{QStringLiteral("sgemm"), QStringLiteral("softmax")}));
}

void TestMainWindow::contextMenuSurvivesRescan() {
  TaskBrowser *browser = partOf<kwb::ui::TaskBrowser>(*window_);
  QVERIFY(waitUntilSettled(window_.get()));
  QMenu *menu = openContextMenu(browser, proxyTask(TaskTreeModel::Group::Bundled, QStringLiteral("softmax")));
  QVERIFY(menu);
  QAction *open = actionNamed(menu, QStringLiteral("Open Task"));
  QVERIFY(open);
  QVERIFY(actionNamed(menu, QStringLiteral("Copy Folder Path")));
  QVERIFY(!actionNamed(menu, QStringLiteral("Remove from List")));  // Bundled is not a list of ours

  // The rows change under the open menu: a filter, then a full rescan replace what it was opened on.
  browser->filterField()->setText(QStringLiteral("sgemm"));
  browser->rescanAll();
  QVERIFY(waitUntilSettled(window_.get()));
  QSignalSpy activated(browser, &TaskBrowser::taskActivated);
  open->trigger();
  QCOMPARE(activated.count(), 1);
  QCOMPARE(activated.front().front().toString(), kSoftmax);  // the task it was opened on
  QCOMPARE(window_->currentTaskName(), QStringLiteral("softmax"));
  closeMenu(menu);
  browser->filterField()->clear();
  QVERIFY(waitUntilSettled(window_.get()));
}

void TestMainWindow::filtersTasks() {
  TaskBrowser *browser = partOf<kwb::ui::TaskBrowser>(*window_);
  const QAbstractItemModel *proxy = browser->view()->model();
  const QStringList before = taskLabels(proxy, QModelIndex());
  QVERIFY(before.contains(QStringLiteral("softmax")) && before.contains(QStringLiteral("sgemm")));

  QTest::keyClicks(browser->filterField(), QStringLiteral("SGEM"));  // case does not matter
  const QStringList matching = taskLabels(proxy, QModelIndex());
  QVERIFY2(!matching.isEmpty(), qPrintable(matching.join(u',')));
  for (const QString &label : matching) QVERIFY2(label.contains(QLatin1String("sgemm")), qPrintable(label));
  // The groups holding matches stay, opened, so every match is visible.
  const QModelIndex bundled = proxy->index(int(TaskTreeModel::Group::Bundled), 0);
  QCOMPARE(childLabels(proxy, bundled), QStringList{QStringLiteral("sgemm")});
  QVERIFY(browser->view()->isExpanded(bundled));

  browser->filterField()->setText(QStringLiteral("no such task"));
  QVERIFY(taskLabels(proxy, QModelIndex()).isEmpty());

  browser->filterField()->clear();
  QCOMPARE(taskLabels(proxy, QModelIndex()), before);
}

void TestMainWindow::keepsTreeStateAcrossScans() {
  TaskBrowser *browser = partOf<kwb::ui::TaskBrowser>(*window_);
  QTreeView *view = browser->view();
  const QAbstractItemModel *proxy = view->model();
  const TaskTreeModel *model = browser->model();
  QVERIFY(waitUntilSettled(window_.get()));

  // The user collapses Bundled and selects a Recent row.
  QCOMPARE(childLabels(model, model->groupIndex(TaskTreeModel::Group::Recent)),
           (QStringList{QStringLiteral("softmax"), QStringLiteral("sgemm")}));
  const QModelIndex bundled = proxy->index(int(TaskTreeModel::Group::Bundled), 0);
  view->collapse(bundled);
  const QModelIndex softmaxRecent = proxyTask(TaskTreeModel::Group::Recent, QStringLiteral("softmax"));
  QVERIFY(softmaxRecent.isValid());
  view->setCurrentIndex(softmaxRecent);
  const QString selectedKey = softmaxRecent.data(TaskTreeModel::KeyRole).toString();
  const QPersistentModelIndex bundledSgemm =
      childNamed(model, model->groupIndex(TaskTreeModel::Group::Bundled), QStringLiteral("sgemm"));
  QVERIFY(bundledSgemm.isValid());

  // Opening a task changes Recent (and what the workspace lists) only: Bundled is not touched.
  QSignalSpy removed(model, &QAbstractItemModel::rowsRemoved);
  QVERIFY(window_->openTask(kSgemm));
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(childLabels(model, model->groupIndex(TaskTreeModel::Group::Recent)),
           (QStringList{QStringLiteral("sgemm"), QStringLiteral("softmax")}));
  QVERIFY(!removed.isEmpty());  // Recent's rows were reordered
  for (const QList<QVariant> &removal : removed) {
    const QModelIndex parent = removal.front().value<QModelIndex>();
    QVERIFY(parent == model->groupIndex(TaskTreeModel::Group::Recent) ||
            parent == model->groupIndex(TaskTreeModel::Group::Workspace));
  }
  QVERIFY(bundledSgemm.isValid());
  QVERIFY(!view->isExpanded(proxy->index(int(TaskTreeModel::Group::Bundled), 0)));
  // The selected row moved (softmax is second now) and is still the selected one.
  QCOMPARE(view->currentIndex().data(TaskTreeModel::KeyRole).toString(), selectedKey);
  QCOMPARE(view->currentIndex().row(), 1);

  // Reload pressed three times in a row: one scan runs, the other two requests become one more.
  QSignalSpy scans(browser, &TaskBrowser::scanFinished);
  removed.clear();
  browser->rescanAll();
  browser->rescanAll();
  browser->rescanAll();
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(scans.count(), 2);
  // Nothing changed on disk: every row stays where it is, collapsed and selected as before.
  QCOMPARE(removed.count(), 0);
  QVERIFY(bundledSgemm.isValid());
  QVERIFY(!view->isExpanded(proxy->index(int(TaskTreeModel::Group::Bundled), 0)));
  QCOMPARE(view->currentIndex().data(TaskTreeModel::KeyRole).toString(), selectedKey);

  view->expand(proxy->index(int(TaskTreeModel::Group::Bundled), 0));
}

void TestMainWindow::shortcutsWork() {
  window_->activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(window_.get()));
  kwb::ui::EditorTabs *tabs = partOf<kwb::ui::EditorTabs>(*window_);
  QCOMPARE(tabs->count(), 3);
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  editor->setFocus();
  QTRY_COMPARE(QApplication::focusWidget(), static_cast<QWidget *>(editor));

  // Keys go to the editor, which has the focus; the window's shortcuts must still win.
  const int first = tabs->currentIndex();
  QTest::keySequence(editor, QKeySequence(Qt::CTRL | Qt::Key_PageDown));
  QCOMPARE(tabs->currentIndex(), (first + 1) % 3);
  QTest::keySequence(tabs->currentWidget(), QKeySequence(Qt::CTRL | Qt::Key_PageUp));
  QCOMPARE(tabs->currentIndex(), first);
  QTest::keySequence(editor, QKeySequence(Qt::CTRL | Qt::Key_PageUp));
  QCOMPARE(tabs->currentIndex(), (first + 2) % 3);
  tabs->setCurrentIndex(first);

  QTest::keySequence(editor, QKeySequence(Qt::ALT | Qt::Key_1));
  QTRY_COMPARE(QApplication::focusWidget(), static_cast<QWidget *>(partOf<kwb::ui::TaskBrowser>(*window_)->view()));
  QTest::keySequence(partOf<kwb::ui::TaskBrowser>(*window_)->view(), QKeySequence(Qt::ALT | Qt::Key_2));
  QTRY_COMPARE(QApplication::focusWidget(), static_cast<QWidget *>(window_->log()->view()));

  editor->setFocus();
  QTest::keySequence(editor, QKeySequence(Qt::CTRL | Qt::Key_F));
  QVERIFY(partOf<kwb::ui::FindBar>(*window_)->isVisible());
  QTRY_COMPARE(QApplication::focusWidget(), static_cast<QWidget *>(partOf<kwb::ui::FindBar>(*window_)->field()));
  QTest::keyClick(partOf<kwb::ui::FindBar>(*window_)->field(), Qt::Key_Escape);
  QVERIFY(!partOf<kwb::ui::FindBar>(*window_)->isVisible());
  QTRY_COMPARE(QApplication::focusWidget(), static_cast<QWidget *>(editor));

  // The pages: Ctrl+3 the Library, Ctrl+1 back to the editor, also from inside it.
  QTest::keySequence(editor, QKeySequence(Qt::CTRL | Qt::Key_3));
  QVERIFY(window_->workArea()->current() == kwb::ui::WorkArea::Page::Library);
  QTest::keySequence(window_->workArea()->currentWidget(), QKeySequence(Qt::CTRL | Qt::Key_1));
  QVERIFY(window_->workArea()->current() == kwb::ui::WorkArea::Page::Editor);
  editor->setFocus();

  QTest::keySequence(editor, QKeySequence(Qt::CTRL | Qt::Key_W));
  QCOMPARE(tabs->count(), 2);
  QVERIFY(!tabs->editors().contains(editor));
  QVERIFY(window_->openTask(kSoftmax));  // back to three tabs
  QCOMPARE(tabs->count(), 3);
}

void TestMainWindow::findsInEditor() {
  window_->activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(window_.get()));
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  QCOMPARE(editor->fileName(), QStringLiteral("softmax.cu"));
  kwb::ui::FindBar *bar = partOf<kwb::ui::FindBar>(*window_);
  const QString needle = QStringLiteral("__syncthreads");
  QVERIFY(editor->text().count(needle) >= 3);
  editor->setCursorPosition(0, 0);

  window_->actions().find->trigger();
  QVERIFY(bar->isVisible());
  QTest::keyClicks(bar->field(), needle);  // found while typing
  QCOMPARE(editor->selectedText(), needle);
  int firstLine = -1;
  int index = -1;
  editor->getCursorPosition(&firstLine, &index);
  QCOMPARE(editor->text(firstLine).indexOf(needle), index - needle.size());

  QTest::keyClick(bar->field(), Qt::Key_Return);  // next
  int secondLine = -1;
  editor->getCursorPosition(&secondLine, &index);
  QVERIFY2(secondLine > firstLine, qPrintable(QStringLiteral("%1 %2").arg(firstLine).arg(secondLine)));
  QCOMPARE(editor->selectedText(), needle);

  editor->setFocus();
  QTest::keySequence(editor, QKeySequence(Qt::Key_F3));  // next, from the editor
  int thirdLine = -1;
  editor->getCursorPosition(&thirdLine, &index);
  QVERIFY(thirdLine > secondLine);
  QTest::keySequence(editor, QKeySequence(Qt::SHIFT | Qt::Key_F3));  // previous
  int line = -1;
  editor->getCursorPosition(&line, &index);
  QCOMPARE(line, secondLine);

  bar->matchCaseBox()->setChecked(true);
  bar->field()->setText(needle.toUpper());
  QVERIFY(!bar->find(true));
  QVERIFY(bar->findChild<QLabel *>(QStringLiteral("findStatus"))->text().contains(QLatin1String("No matches")));
  bar->matchCaseBox()->setChecked(false);
  QVERIFY(bar->find(true));
  QCOMPARE(editor->selectedText(), needle);
  bar->field()->setText(QStringLiteral("no_such_text_anywhere"));
  QVERIFY(!bar->find(true));
  QVERIFY(!editor->isModified());
  bar->dismiss();
  QVERIFY(!bar->isVisible());
}

void TestMainWindow::showsManifestErrors() {
  const QString folder = tempPath(QStringLiteral("broken/softmax"));
  const int line = breakSoftmaxCopy(folder);
  QVERIFY(line > 0);
  const QString manifestPath = folder + QStringLiteral("/task.toml");

  QVERIFY(window_->openTask(kSgemm));
  const QString before = window_->currentTaskFolder();
  QVERIFY(!window_->openTask(folder));
  QCOMPARE(window_->currentTaskFolder(), before);

  const QString log = window_->log()->text();
  QVERIFY2(log.contains(QStringLiteral("task.toml:%1").arg(line)), qPrintable(log));
  QVERIFY2(log.contains(QLatin1String("cols2")), qPrintable(log));

  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  QCOMPARE(editor->filePath(), manifestPath);
  QCOMPARE(editor->problemCount(), 1);
  // The sgemm task's manifest is open too: the tabs say which is which.
  kwb::ui::EditorTabs *tabs = partOf<kwb::ui::EditorTabs>(*window_);
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QStringLiteral("task.toml (softmax)"));
  QVERIFY(tabs->editorFor(kSgemm + QStringLiteral("/task.toml")));
  QVERIFY(editor->markersAtLine(line - 1) != 0);
  QVERIFY2(editor->annotation(line - 1).contains(QLatin1String("cols2")),
           qPrintable(editor->annotation(line - 1)));

  // Fixing and saving the manifest clears the mark.
  editor->setText(editor->text().replace(QLatin1String("\"cols2\""), QLatin1String("\"cols\"")));
  window_->actions().save->trigger();
  QCOMPARE(editor->problemCount(), 0);
  QVERIFY(window_->log()->text().contains(QLatin1String("checks out")));
  QVERIFY(window_->openTask(folder));
}

void TestMainWindow::reopeningReadsChangedFiles() {
  const QString folder = tempPath(QStringLiteral("reopened/softmax"));
  QVERIFY(copyFolder(kSoftmax, folder));
  const QString path = folder + QStringLiteral("/softmax.cu");
  QVERIFY(window_->openTask(folder));
  CudaEditor *editor = partOf<kwb::ui::EditorTabs>(*window_)->editorFor(path);
  QVERIFY(editor);
  const QString original = editor->text();

  // Changed on disk by another program: opening the task again shows the new text.
  QVERIFY(writeFile(path, QStringLiteral("// changed outside\n") + original));
  QVERIFY(window_->openTask(folder));
  QCOMPARE(partOf<kwb::ui::EditorTabs>(*window_)->editorFor(path), editor);
  QCOMPARE(editor->text(), QStringLiteral("// changed outside\n") + original);
  QVERIFY(!editor->isModified());

  // Unsaved edits are never thrown away.
  editor->insertAt(QStringLiteral("// mine\n"), 0, 0);
  QVERIFY(writeFile(path, original));
  QVERIFY(window_->openTask(folder));
  QVERIFY(editor->text().startsWith(QLatin1String("// mine\n// changed outside\n")));
  QVERIFY(editor->isModified());
  QVERIFY2(window_->log()->text().contains(QLatin1String("unsaved changes")), qPrintable(window_->log()->text()));
  editor->setModified(false);  // nothing to ask about when the tab closes later
}

void TestMainWindow::savesEditedFile() {
  const QString folder = tempPath(QStringLiteral("edited/softmax"));
  QVERIFY(copyFolder(kSoftmax, folder));
  QVERIFY(window_->openTask(folder));
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  kwb::ui::EditorTabs *tabs = partOf<kwb::ui::EditorTabs>(*window_);
  // Only this task's files stay open.
  for (CudaEditor *open : tabs->editors()) {
    QVERIFY2(open->filePath().startsWith(folder + QLatin1Char('/')), qPrintable(open->filePath()));
  }
  const QString path = folder + QStringLiteral("/softmax.cu");
  QCOMPARE(editor->filePath(), path);
  const QString original = readFile(path);

  editor->insertAt(QStringLiteral("// tuned by hand\n"), 0, 0);
  QVERIFY(editor->isModified());
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QStringLiteral("softmax.cu*"));
  QVERIFY(window_->isWindowModified());

  QVERIFY(window_->actions().save->isEnabled());
  window_->activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(window_.get()));
  editor->setFocus();
  QTest::keySequence(editor, QKeySequence(Qt::CTRL | Qt::Key_S));
  QCOMPARE(readFile(path), QStringLiteral("// tuned by hand\n") + original);
  QVERIFY(!editor->isModified());
  QCOMPARE(tabs->tabText(tabs->currentIndex()), QStringLiteral("softmax.cu"));
  QVERIFY(!window_->isWindowModified());
  QVERIFY(window_->log()->text().contains(QStringLiteral("Saved ") + path));
}

void TestMainWindow::closingModifiedTabAsks() {
  kwb::ui::EditorTabs *tabs = partOf<kwb::ui::EditorTabs>(*window_);
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  const QString path = editor->filePath();
  const QString onDisk = readFile(path);
  const int count = tabs->count();
  editor->insertAt(QStringLiteral("// unsaved\n"), 0, 0);

  // Cancel: the tab stays, with its changes.
  QString question;
  auto seen = answerModal<QMessageBox>(this, [&question](QMessageBox *box) {
    question = box->text();
    box->button(QMessageBox::Cancel)->click();
  });
  window_->actions().closeTab->trigger();
  QVERIFY(*seen);
  QVERIFY2(question.contains(QLatin1String("softmax.cu")), qPrintable(question));
  QCOMPARE(tabs->count(), count);
  QVERIFY(tabs->editors().contains(editor));
  QVERIFY(editor->isModified());

  // Discard: the tab closes and the file is as it was.
  seen = answerModal<QMessageBox>(this, [](QMessageBox *box) { box->button(QMessageBox::Discard)->click(); });
  window_->actions().closeTab->trigger();
  QVERIFY(*seen);
  QCOMPARE(tabs->count(), count - 1);
  QCOMPARE(readFile(path), onDisk);
  QVERIFY(!window_->isWindowModified());
  QVERIFY(window_->openTask(window_->currentTaskFolder()));
  QCOMPARE(tabs->count(), count);
}

void TestMainWindow::appliesEditorSettings() {
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  const int fontBefore = editor->lexer()->font(QsciLexerCPP::Default).pointSize();
  QVERIFY(fontBefore != 13);
  QString arch;
  auto seen = answerModal<SettingsDialog>(this, [&arch](SettingsDialog *dialog) {
    dialog->tabWidthField()->setValue(4);
    dialog->fontSizeField()->setValue(13);
    arch = dialog->archField()->currentText();
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
  });
  window_->actions().settings->trigger();
  QVERIFY(*seen);
  QCOMPARE(arch, QStringLiteral("sm_90"));
  QCOMPARE(editor->tabWidth(), 4);
  QCOMPARE(editor->lexer()->font(QsciLexerCPP::Default).pointSize(), 13);
  QCOMPARE(kwb::ui::settings::editor().tabWidth, 4);

  kwb::ui::settings::setEditor({});
  seen = answerModal<SettingsDialog>(this, [](SettingsDialog *dialog) {
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
  });
  window_->actions().settings->trigger();
  QVERIFY(*seen);
  QCOMPARE(editor->tabWidth(), 2);
}

void TestMainWindow::settingsCancelKeepsValues() {
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  const auto editorBefore = kwb::ui::settings::editor();
  const QString archBefore = kwb::ui::settings::compileOnlyArch();
  const QString workspaceBefore = window_->workspacePath();
  QString inUse;
  auto seen = answerModal<SettingsDialog>(this, [&inUse](SettingsDialog *dialog) {
    inUse = dialog->workspaceInUseLabel()->text();
    dialog->tabWidthField()->setValue(7);
    dialog->fontSizeField()->setValue(21);
    dialog->archField()->setCurrentText(QStringLiteral("sm_80"));
    dialog->workspaceField()->setText(QStringLiteral("elsewhere.kwb"));
    dialog->kernelsDirField()->setText(QStringLiteral("/nowhere"));
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Cancel)->click();
  });
  window_->actions().settings->trigger();
  QVERIFY(*seen);
  // The dialog named the workspace in use (given to the window, not stored in Settings).
  QVERIFY2(inUse.contains(workspaceBefore), qPrintable(inUse));
  QCOMPARE(kwb::ui::settings::editor().tabWidth, editorBefore.tabWidth);
  QCOMPARE(kwb::ui::settings::editor().fontSize, editorBefore.fontSize);
  QCOMPARE(kwb::ui::settings::compileOnlyArch(), archBefore);
  QVERIFY(kwb::ui::settings::workspacePath().isEmpty());
  QVERIFY(kwb::ui::settings::kernelsDirOverride().isEmpty());
  QCOMPARE(editor->tabWidth(), editorBefore.tabWidth);
  QCOMPARE(window_->workspacePath(), workspaceBefore);
}

void TestMainWindow::reportsMissingKernelsFolder() {
  const QString missing = tempPath(QStringLiteral("no-such-kernels"));
  const TaskTreeModel *model = partOf<kwb::ui::TaskBrowser>(*window_)->model();
  auto seen = answerModal<SettingsDialog>(this, [&missing](SettingsDialog *dialog) {
    dialog->kernelsDirField()->setText(missing);
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
  });
  window_->actions().settings->trigger();
  QVERIFY(*seen);
  QVERIFY(waitUntilSettled(window_.get()));
  QVERIFY(kwb::ui::settings::effectiveKernelsDir().isEmpty());  // the override does not exist

  const QModelIndex bundled = model->groupIndex(TaskTreeModel::Group::Bundled);
  QCOMPARE(model->rowCount(bundled), 1);
  const QModelIndex row = model->index(0, 0, bundled);
  QCOMPARE(row.data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Message));
  QVERIFY2(row.data(TaskTreeModel::ErrorRole).toString().contains(missing),
           qPrintable(row.data(TaskTreeModel::ErrorRole).toString()));
  QVERIFY(row.data(TaskTreeModel::ErrorRole).toString().contains(QLatin1String("Settings")));
  QCOMPARE(bundled.data().toString(), QStringLiteral("Bundled"));  // no count: no tasks
  QVERIFY2(window_->log()->text().contains(missing + QStringLiteral(": folder not found")),
           qPrintable(window_->log()->text()));

  seen = answerModal<SettingsDialog>(this, [](SettingsDialog *dialog) {
    dialog->kernelsDirField()->clear();
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
  });
  window_->actions().settings->trigger();
  QVERIFY(*seen);
  QVERIFY(waitUntilSettled(window_.get()));
  QVERIFY(childLabels(model, model->groupIndex(TaskTreeModel::Group::Bundled)).contains(QStringLiteral("sgemm")));
}

void TestMainWindow::opensFolderOfTasks() {
  const QString suite = tempPath(QStringLiteral("suite"));
  QVERIFY(copyFolder(kSoftmax, suite + QStringLiteral("/softmax")));
  QVERIFY(copyFolder(kSgemm, suite + QStringLiteral("/sgemm")));
  const QString taskBefore = window_->currentTaskFolder();
  QSignalSpy folderOpened(window_.get(), &MainWindow::folderOpened);
  window_->openFolder(suite);
  QVERIFY(folderOpened.wait(60000));
  QCOMPARE(folderOpened.front().at(1).toInt(), 2);
  QCOMPARE(window_->currentTaskFolder(), taskBefore);  // two tasks: the user picks one
  QVERIFY2(window_->log()->text().contains(QLatin1String("holds 2 tasks")),
           qPrintable(window_->log()->text()));
  QVERIFY(waitUntilSettled(window_.get()));

  const TaskTreeModel *model = partOf<kwb::ui::TaskBrowser>(*window_)->model();
  const QModelIndex opened = model->groupIndex(TaskTreeModel::Group::OpenedFolders);
  QCOMPARE(model->rowCount(opened), 1);
  const QModelIndex folderRow = model->index(0, 0, opened);
  QCOMPARE(folderRow.data().toString(), QStringLiteral("suite"));
  QCOMPARE(folderRow.data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Folder));
  QCOMPARE(childLabels(model, folderRow), (QStringList{QStringLiteral("sgemm"), QStringLiteral("softmax")}));
  // The user collapses it; it stays collapsed while the list around it changes.
  QTreeView *view = partOf<kwb::ui::TaskBrowser>(*window_)->view();
  const QString suiteKey = folderRow.data(TaskTreeModel::KeyRole).toString();
  auto suiteInView = [&] {
    auto *proxy = qobject_cast<const QSortFilterProxyModel *>(view->model());
    return proxy->mapFromSource(model->indexForKey(suiteKey));
  };
  view->collapse(suiteInView());

  // A folder holding one task opens it, and is listed as that task.
  const QString single = tempPath(QStringLiteral("single"));
  QVERIFY(copyFolder(kSgemm, single + QStringLiteral("/mine")));
  folderOpened.clear();
  window_->openFolder(single);
  QVERIFY(folderOpened.wait(60000));
  QCOMPARE(window_->currentTaskName(), QStringLiteral("sgemm"));
  QCOMPARE(window_->currentTaskFolder(), single + QStringLiteral("/mine"));
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(model->rowCount(opened), 2);
  QCOMPARE(model->index(1, 0, opened).data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Task));
  QVERIFY(suiteInView().isValid());
  QVERIFY(!view->isExpanded(suiteInView()));

  // A folder without tasks says so, in the log and in the tree, in the same words.
  const QString empty = tempPath(QStringLiteral("empty"));
  QVERIFY(QDir().mkpath(empty));
  folderOpened.clear();
  window_->openFolder(empty);
  QVERIFY(folderOpened.wait(60000));
  QCOMPARE(folderOpened.front().at(1).toInt(), 0);
  const QString noTask = empty + QStringLiteral(": ") + TaskBrowser::noTaskMessage();
  QVERIFY(TaskBrowser::noTaskMessage().contains(QLatin1String("immediate subfolders")));
  QVERIFY2(window_->log()->text().contains(noTask), qPrintable(window_->log()->text()));
  QVERIFY(waitUntilSettled(window_.get()));
  const QModelIndex emptyRow = model->index(2, 0, opened);
  QCOMPARE(emptyRow.data(TaskTreeModel::ErrorRole).toString(), noTask);

  // Something that is not a folder is reported and not kept in the list.
  folderOpened.clear();
  window_->openFolder(tempPath(QStringLiteral("not-there")));
  QVERIFY(folderOpened.wait(60000));
  QVERIFY(window_->log()->text().contains(tempPath(QStringLiteral("not-there")) + QStringLiteral(": not a folder")));
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(model->rowCount(opened), 3);

  // Two opened folders of one name are told apart by their parent folder.
  for (const QString &parent : {QStringLiteral("a"), QStringLiteral("b")}) {
    const QString lib = tempPath(parent + QStringLiteral("/lib"));
    QVERIFY(copyFolder(kSoftmax, lib + QStringLiteral("/softmax")));
    QVERIFY(copyFolder(kSgemm, lib + QStringLiteral("/sgemm")));
    folderOpened.clear();
    window_->openFolder(lib);
    QVERIFY(folderOpened.wait(60000));
  }
  QVERIFY(waitUntilSettled(window_.get()));
  const QStringList labels = childLabels(model, opened);
  QVERIFY2(labels.contains(QStringLiteral("lib (a)")) && labels.contains(QStringLiteral("lib (b)")),
           qPrintable(labels.join(u',')));
  QVERIFY(!view->isExpanded(suiteInView()));
}

void TestMainWindow::removesFromLists() {
  TaskBrowser *browser = partOf<kwb::ui::TaskBrowser>(*window_);
  const TaskTreeModel *model = browser->model();
  QVERIFY(waitUntilSettled(window_.get()));
  const QStringList recentBefore = kwb::ui::settings::recentTasks();
  QVERIFY(recentBefore.size() >= 2);

  // Recent: remove the first entry from its context menu.
  const QAbstractItemModel *proxy = browser->view()->model();
  const QModelIndex recentGroup = proxy->index(int(TaskTreeModel::Group::Recent), 0);
  const QModelIndex firstRecent = proxy->index(0, 0, recentGroup);
  QCOMPARE(firstRecent.data(TaskTreeModel::FolderRole).toString(), recentBefore.front());
  QMenu *menu = openContextMenu(browser, firstRecent);
  QVERIFY(menu);
  QAction *remove = actionNamed(menu, QStringLiteral("Remove from List"));
  QVERIFY(remove);
  QVERIFY(actionNamed(menu, QStringLiteral("Clear Recent")));
  remove->trigger();
  closeMenu(menu);
  QCOMPARE(kwb::ui::settings::recentTasks(), recentBefore.mid(1));
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(model->rowCount(model->groupIndex(TaskTreeModel::Group::Recent)), recentBefore.size() - 1);

  // Opened folders: remove "suite".
  const QStringList openedBefore = kwb::ui::settings::openedFolders();
  const QString suite = tempPath(QStringLiteral("suite"));
  QVERIFY(openedBefore.contains(suite));
  const QModelIndex suiteRow =
      childNamed(proxy, proxy->index(int(TaskTreeModel::Group::OpenedFolders), 0), QStringLiteral("suite"));
  QVERIFY(suiteRow.isValid());
  menu = openContextMenu(browser, suiteRow);
  remove = actionNamed(menu, QStringLiteral("Remove from List"));
  QVERIFY(remove);
  QVERIFY(!actionNamed(menu, QStringLiteral("Open Task")));  // a folder row
  remove->trigger();
  closeMenu(menu);
  QVERIFY(!kwb::ui::settings::openedFolders().contains(suite));
  QCOMPARE(kwb::ui::settings::openedFolders().size(), openedBefore.size() - 1);
  QVERIFY(waitUntilSettled(window_.get()));
  QVERIFY(!childLabels(model, model->groupIndex(TaskTreeModel::Group::OpenedFolders))
               .contains(QStringLiteral("suite")));

  // A task inside an opened folder is not a list entry of its own.
  const QModelIndex libA =
      childNamed(proxy, proxy->index(int(TaskTreeModel::Group::OpenedFolders), 0), QStringLiteral("lib (a)"));
  QVERIFY(libA.isValid());
  menu = openContextMenu(browser, proxy->index(0, 0, libA));
  QVERIFY(menu);
  QVERIFY(actionNamed(menu, QStringLiteral("Open Task")));
  QVERIFY(!actionNamed(menu, QStringLiteral("Remove from List")));
  closeMenu(menu);

  // Clear Recent, from the File menu's Recent Tasks.
  emit window_->actions().recentMenu->aboutToShow();
  QVERIFY(window_->actions().recentMenu->actions().contains(window_->actions().clearRecent));
  window_->actions().clearRecent->trigger();
  QVERIFY(kwb::ui::settings::recentTasks().isEmpty());
  QVERIFY(!window_->actions().recentMenu->isEnabled());
  QVERIFY(waitUntilSettled(window_.get()));
  QCOMPARE(model->rowCount(model->groupIndex(TaskTreeModel::Group::Recent)), 0);
}

void TestMainWindow::recentMenuOpensTasks() {
  const QString ampersand = tempPath(QStringLiteral("R&D/softmax"));
  QVERIFY(copyFolder(kSoftmax, ampersand));
  QVERIFY(window_->openTask(kSgemm));
  QVERIFY(window_->openTask(ampersand));
  QMenu *menu = window_->actions().recentMenu;
  QVERIFY(menu->isEnabled());
  emit menu->aboutToShow();  // filled as it opens
  QList<QAction *> entries;
  for (QAction *action : menu->actions()) {
    if (!action->isSeparator() && action != window_->actions().clearRecent) entries << action;
  }
  QCOMPARE(entries.size(), 2);
  // '&' is shown, not taken as a mnemonic.
  QCOMPARE(entries[0]->text(), QString(ampersand).replace(QLatin1Char('&'), QLatin1String("&&")));
  QCOMPARE(entries[1]->text(), kSgemm);

  // Choosing an entry opens its task, which moves it to the front of Recent; the entry being
  // triggered stays alive throughout (the menu is refilled only when it opens again).
  QPointer<QAction> chosen = entries[1];
  QSignalSpy opened(window_.get(), &MainWindow::taskOpened);
  chosen->trigger();
  QCOMPARE(opened.count(), 1);
  QVERIFY(chosen);
  QCOMPARE(window_->currentTaskFolder(), kSgemm);
  QCOMPARE(kwb::ui::settings::recentTasks().value(0), kSgemm);
  emit menu->aboutToShow();
  QVERIFY(!chosen);  // refilled now
  QCOMPARE(menu->actions().value(0)->text(), kSgemm);
  QVERIFY(waitUntilSettled(window_.get()));
}

void TestMainWindow::keepsTenRecentTasks() {
  const QStringList saved = kwb::ui::settings::recentTasks();
  for (int i = 0; i < 12; ++i) kwb::ui::settings::addRecentTask(tempPath(QStringLiteral("recent/%1").arg(i)));
  kwb::ui::settings::addRecentTask(tempPath(QStringLiteral("recent/./5")));
  const QStringList recent = kwb::ui::settings::recentTasks();
  QCOMPARE(recent.size(), kwb::ui::settings::kMaxRecentTasks);
  QCOMPARE(recent.front(), tempPath(QStringLiteral("recent/5")));
  QCOMPARE(recent.count(recent.front()), 1);
  QCOMPARE(recent.value(1), tempPath(QStringLiteral("recent/11")));
  QVERIFY(!recent.contains(tempPath(QStringLiteral("recent/0"))));
  // Put the real list back for the tests that follow.
  kwb::ui::settings::setRecentTasks(saved);
  QCOMPARE(kwb::ui::settings::recentTasks(), saved);
}

void TestMainWindow::manyEditorsKeepAnnotationStyle() {
  // Every editor marks problems with the one style number; a hundred editors (thirty-odd task
  // opens) later, annotations still get the problem colours.
  constexpr int style = CudaEditor::kAnnotationStyle;
  const long text = 0x1b1b99;   // #991b1b as Scintilla's BGR
  const long paper = 0xf2f2fe;  // #fef2f2
  std::vector<std::unique_ptr<CudaEditor>> editors;
  for (int i = 0; i < 100; ++i) {
    auto editor = std::make_unique<CudaEditor>();
    QString error;
    QVERIFY2(editor->loadFile(kSoftmax + QStringLiteral("/softmax.cu"), &error), qPrintable(error));
    editor->markProblem(3, QStringLiteral("problem %1").arg(i));
    const long offset = editor->SendScintilla(QsciScintillaBase::SCI_ANNOTATIONGETSTYLEOFFSET);
    QCOMPARE(editor->SendScintilla(QsciScintillaBase::SCI_ANNOTATIONGETSTYLE, 2UL) + offset, long(style));
    QCOMPARE(editor->SendScintilla(QsciScintillaBase::SCI_STYLEGETFORE, static_cast<unsigned long>(style)), text);
    QCOMPARE(editor->SendScintilla(QsciScintillaBase::SCI_STYLEGETBACK, static_cast<unsigned long>(style)), paper);
    QCOMPARE(editor->annotation(2), QStringLiteral("problem %1").arg(i));
    editors.push_back(std::move(editor));
  }
  // The style number is none of the lexer's own.
  QVERIFY(editors.front()->lexer()->description(style).isEmpty());
}

void TestMainWindow::switchesWorkspaceViaSettings() {
  const QString first = tempPath(QStringLiteral("switch/first.kwb"));
  MainWindow window(first);
  QVERIFY(waitUntilSettled(&window));
  QVERIFY(window.openTask(kSoftmax));
  QVERIFY(waitUntilSettled(&window));
  const TaskTreeModel *model = partOf<kwb::ui::TaskBrowser>(window)->model();
  const QModelIndex workspaceGroup = model->groupIndex(TaskTreeModel::Group::Workspace);
  QCOMPARE(childLabels(model, workspaceGroup), QStringList{QStringLiteral("softmax")});

  // A relative path typed in Settings is stored absolute.
  const QString previousDir = QDir::currentPath();
  QVERIFY(QDir::setCurrent(home_->root()));
  QSignalSpy finished(&window, &MainWindow::workspaceOpenFinished);
  auto seen = answerModal<SettingsDialog>(this, [](SettingsDialog *dialog) {
    dialog->workspaceField()->setText(QStringLiteral("switch/../switch/second.kwb"));
    dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok)->click();
  });
  window.actions().settings->trigger();
  QDir::setCurrent(previousDir);
  QVERIFY(*seen);
  const QString second = tempPath(QStringLiteral("switch/second.kwb"));
  QCOMPARE(kwb::ui::settings::workspacePath(), second);
  QCOMPARE(window.workspacePath(), second);
  // The old workspace's tasks are gone at once, and none of its answers come back later.
  QCOMPARE(model->rowCount(workspaceGroup), 0);
  QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 60000);
  QCOMPARE(finished.front().front().toBool(), true);
  QCOMPARE(window.workspaceStatusText(), QStringLiteral("Workspace: second.kwb"));
  QVERIFY(waitUntilSettled(&window));
  QCOMPARE(model->rowCount(workspaceGroup), 0);

  QString inUse;
  seen = answerModal<SettingsDialog>(this, [&inUse](SettingsDialog *dialog) {
    inUse = dialog->workspaceInUseLabel()->text();
    QCOMPARE(dialog->workspaceField()->text(), dialog->workspaceField()->text().trimmed());
    dialog->reject();
  });
  window.actions().settings->trigger();
  QVERIFY(*seen);
  QVERIFY2(inUse.contains(second), qPrintable(inUse));

  // The new workspace records from now on.
  QVERIFY(window.openTask(kSgemm));
  QVERIFY(waitUntilSettled(&window));
  QCOMPARE(childLabels(model, workspaceGroup), QStringList{QStringLiteral("sgemm")});
  kwb::ui::settings::setWorkspacePath(QString());
}

void TestMainWindow::dropsAnswersOfReplacedWorkspace() {
  kwb::ui::WorkspaceService service;
  QSignalSpy opened(&service, &kwb::ui::WorkspaceService::opened);
  service.open(tempPath(QStringLiteral("stale/a.kwb")));
  QVERIFY(opened.wait(60000));
  service.recordTaskOpened(QStringLiteral("softmax"), kSoftmax, QStringLiteral("hash"));
  QTRY_VERIFY_WITH_TIMEOUT(!service.isBusy(), 60000);

  QSignalSpy listed(&service, &kwb::ui::WorkspaceService::tasksListed);
  service.listTasks();                                // answered from a.kwb…
  service.open(tempPath(QStringLiteral("stale/b.kwb")));  // …after b.kwb was asked for
  QTRY_VERIFY_WITH_TIMEOUT(!service.isBusy(), 60000);
  QCOMPARE(listed.count(), 1);  // b's own listing only
  QVERIFY(listed.front().front().value<QList<kwb::ui::WorkspaceTask>>().isEmpty());
}

void TestMainWindow::worksWithoutWorkspace() {
  // A folder where the workspace file should be: it cannot be opened.
  const QString path = tempPath(QStringLiteral("not-a-file.kwb"));
  QVERIFY(QDir().mkpath(path));
  MainWindow window(path);
  QSignalSpy finished(&window, &MainWindow::workspaceOpenFinished);
  QVERIFY(finished.wait(60000));
  QCOMPARE(finished.front().front().toBool(), false);
  QVERIFY(!partOf<kwb::ui::WorkspaceService>(window)->isOpen());
  QCOMPARE(window.workspaceStatusText(), QStringLiteral("Workspace: unavailable"));
  QVERIFY(window.log()->text().contains(QLatin1String("could not be opened")));
  QVERIFY(window.openTask(kSoftmax));
  QVERIFY(waitUntilSettled(&window));
  const TaskTreeModel *model = partOf<kwb::ui::TaskBrowser>(window)->model();
  QCOMPARE(model->rowCount(model->groupIndex(TaskTreeModel::Group::Workspace)), 0);
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

// Before a task is open the centre says what to do first, each a button.
void TestMainWindow::startPageSaysWhatToDoFirst() {
  MainWindow window(tempPath(QStringLiteral("workspace/start.kwb")));
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  auto *start = partOf<kwb::ui::StartPage>(window);
  QVERIFY(start && start->isVisible());
  QVERIFY2(start->openButton()->text().contains(QStringLiteral("Open Task Folder")) &&
               start->openButton()->text().contains(QStringLiteral("Ctrl+O")),
           qPrintable(start->openButton()->text()));
  QVERIFY2(start->importButton()->text().contains(QStringLiteral("Import PyTorch Modules")), qPrintable(start->importButton()->text()));
  QVERIFY(start->connectButton()->isVisible());
  auto *llm = start->findChild<QLabel *>(QStringLiteral("startLlmStatus"));
  QVERIFY(llm && !llm->text().isEmpty());
  QVERIFY(window.grab().save(QStringLiteral(KWB_TEST_OUTPUT_DIR "/start-page.png")));
  QVERIFY(window.openTask(kSoftmax));
  QVERIFY(!start->isVisible());  // the files take its place
  QVERIFY(waitUntilSettled(&window));
}

void TestMainWindow::restoresWindowState() {
  // The offscreen screen is 800x600: a size inside it is restored as it was.
  const QSize size(720, 510);
  {
    // Nothing saved yet: the window takes the screen's available room (and fits in it).
    QSettings stored(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench"));
    stored.remove(QStringLiteral("window/geometry"));
    stored.remove(QStringLiteral("window/state"));
    stored.sync();
    MainWindow fresh(tempPath(QStringLiteral("workspace/state-0.kwb")));
    QVERIFY(fresh.screen());
    QCOMPARE(fresh.size(), fresh.screen()->availableGeometry().size());
    fresh.show();
    QVERIFY(QTest::qWaitForWindowExposed(&fresh));
    QCOMPARE(fresh.size(), fresh.screen()->availableGeometry().size());
    QVERIFY(waitUntilSettled(&fresh));
  }
  {
    MainWindow first(tempPath(QStringLiteral("workspace/state-1.kwb")));
    first.show();
    QVERIFY(QTest::qWaitForWindowExposed(&first));
    first.resize(size);
    QTRY_COMPARE(first.size(), size);
    auto *logDock = first.findChild<QDockWidget *>(QStringLiteral("logDock"));
    QVERIFY(logDock);
    QVERIFY(logDock->isVisible());
    logDock->hide();
    QVERIFY(first.close());  // saves geometry and docks
    QVERIFY(waitUntilSettled(&first));
  }
  {
    MainWindow second(tempPath(QStringLiteral("workspace/state-2.kwb")));
    QCOMPARE(second.size(), size);
    second.show();
    QVERIFY(QTest::qWaitForWindowExposed(&second));
    QCOMPARE(second.size(), size);
    auto *logDock = second.findChild<QDockWidget *>(QStringLiteral("logDock"));
    auto *tasksDock = second.findChild<QDockWidget *>(QStringLiteral("tasksDock"));
    QVERIFY(logDock && tasksDock);
    QVERIFY(!logDock->isVisible());
    QVERIFY(tasksDock->isVisible());
    logDock->show();  // leave a normal layout behind
    second.saveWindowState();
    QVERIFY(waitUntilSettled(&second));
  }
  {
    // A read-only window (what --screenshot uses) starts from the default layout and saves nothing.
    const QByteArray saved =
        QSettings(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench")).value(QStringLiteral("window/geometry")).toByteArray();
    MainWindow readOnly(tempPath(QStringLiteral("workspace/state-3.kwb")), MainWindow::SettingsMode::ReadOnly);
    QCOMPARE(readOnly.size(), QSize(1400, 880));
    readOnly.resize(640, 480);
    readOnly.saveWindowState();
    QVERIFY(waitUntilSettled(&readOnly));
    QCOMPARE(QSettings(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench"))
                 .value(QStringLiteral("window/geometry"))
                 .toByteArray(),
             saved);
  }
}

void TestMainWindow::savesScreenshot() {
  QVERIFY(window_->openTask(kSoftmax));
  QVERIFY(waitUntilSettled(window_.get()));
  window_->resize(1400, 850);
  const QString path = QStringLiteral(KWB_TEST_OUTPUT_DIR "/main-window.png");
  QFile::remove(path);
  QVERIFY(window_->grab().save(path, "PNG"));
  QVERIFY(QFileInfo::exists(path));
  QVERIFY2(QFileInfo(path).size() > 10 * 1024, qPrintable(QString::number(QFileInfo(path).size())));
}

void TestMainWindow::screenshotCommandLine() {
  QVERIFY2(QFileInfo(QStringLiteral(KWB_BINARY_DIR "/app/gui/kernel-workbench")).isExecutable(),
           "build the kernel-workbench target first");
  QTemporaryDir sandbox;
  QVERIFY(sandbox.isValid());
  // Settings as a user would have them; a screenshot must leave them byte for byte.
  const QString conf = sandbox.filePath(QStringLiteral("config/KernelWorkbench/kernel-workbench.conf"));
  {
    QSettings user(conf, QSettings::IniFormat);
    user.setValue(QStringLiteral("tasks/recent"), QStringList{kSgemm});
    user.setValue(QStringLiteral("window/geometry"), QByteArray("not a geometry"));
  }
  QFile confFile(conf);
  QVERIFY(confFile.open(QIODevice::ReadOnly));
  const QByteArray confBefore = confFile.readAll();
  confFile.close();

  const QString png = sandbox.filePath(QStringLiteral("shot.png"));
  const Run run = runGui(sandbox.path(), {QStringLiteral("--screenshot"), png, kSoftmax});
  QVERIFY2(run.finished, "kernel-workbench --screenshot did not finish");
  QVERIFY2(run.exitCode == 0, qPrintable(run.err));
  QVERIFY2(run.out.contains(QStringLiteral("screenshot: ") + png), qPrintable(run.out));
  const QImage image(png);
  QVERIFY(!image.isNull());
  QVERIFY2(image.width() >= 1000 && image.height() >= 600,
           qPrintable(QStringLiteral("%1x%2").arg(image.width()).arg(image.height())));
  QVERIFY(confFile.open(QIODevice::ReadOnly));
  QCOMPARE(confFile.readAll(), confBefore);
}

void TestMainWindow::screenshotOfBrokenTask() {
  QTemporaryDir sandbox;
  QVERIFY(sandbox.isValid());
  const QString folder = sandbox.filePath(QStringLiteral("broken/softmax"));
  QVERIFY(breakSoftmaxCopy(folder) > 0);
  const QString png = sandbox.filePath(QStringLiteral("shot.png"));
  const Run run = runGui(sandbox.path(), {QStringLiteral("--screenshot"), png, folder});
  QVERIFY(run.finished);
  QCOMPARE(run.exitCode, 1);
  QVERIFY2(run.err.contains(QLatin1String("did not load")) && run.err.contains(QLatin1String("cols2")),
           qPrintable(run.err));
  // Issue 17, 6: the picture shows the error (it exited 1 with none).
  QVERIFY2(run.out.contains(QStringLiteral("screenshot: ") + png), qPrintable(run.out));
  const QImage picture(png);
  QVERIFY(!picture.isNull());
  QVERIFY(picture.width() >= 1000);
}

// --then: actions in turn, each once the last has finished, then the picture. Without a GPU the
// run and the profile end "not run", which is enough to see the order and the waiting.
void TestMainWindow::screenshotAfterActions() {
  QTemporaryDir sandbox;
  QVERIFY(sandbox.isValid());
  const QString png = sandbox.filePath(QStringLiteral("shot.png"));
  Run run = runGui(sandbox.path(), {QStringLiteral("--screenshot"), png, QStringLiteral("--then"),
                                    QStringLiteral("time,listing,show:metrics"), kSoftmax});
  QVERIFY(run.finished);
  QVERIFY2(run.exitCode == 0, qPrintable(run.err));
  const qsizetype time = run.out.indexOf(QLatin1String("then: time")),
                  listing = run.out.indexOf(QLatin1String("then: listing")),
                  show = run.out.indexOf(QLatin1String("then: show:metrics")),
                  shot = run.out.indexOf(QLatin1String("screenshot: "));
  QVERIFY2(time >= 0 && time < listing && listing < show && show < shot, qPrintable(run.out));
  const QImage image(png);
  QCOMPARE(image.size(), QSize(1600, 1000));
  // Mistakes are named before any window opens; a configuration the task lacks, once it is open.
  run = runGui(sandbox.path(), {QStringLiteral("--screenshot"), png, QStringLiteral("--then"), QStringLiteral("show:nothing"), kSoftmax});
  QCOMPARE(run.exitCode, 2);
  QVERIFY2(run.err.contains(QLatin1String("cannot read 'show:nothing'")), qPrintable(run.err));
  run = runGui(sandbox.path(), {QStringLiteral("--then"), QStringLiteral("run"), kSoftmax});
  QCOMPARE(run.exitCode, 2);
  QVERIFY2(run.err.contains(QLatin1String("--then goes with --screenshot")), qPrintable(run.err));
  run = runGui(sandbox.path(), {QStringLiteral("--screenshot"), png, QStringLiteral("--then"), QStringLiteral("profile:huge"), kSoftmax});
  QCOMPARE(run.exitCode, 2);
  QVERIFY2(run.err.contains(QLatin1String("the task has no configuration 'huge'")), qPrintable(run.err));
  // No GPU here (these suites run without one): a profile does not start, and says why.
  run = runGui(sandbox.path(), {QStringLiteral("--screenshot"), png, QStringLiteral("--then"), QStringLiteral("profile:h200"), kSoftmax});
  QCOMPARE(run.exitCode, 1);
  QVERIFY2(run.err.contains(QLatin1String("Profiling reads the GPU's counters")), qPrintable(run.err));
}

void TestMainWindow::screenshotDeadline() {
  QTemporaryDir sandbox;
  QVERIFY(sandbox.isValid());
  // A worker that never answers, as one stuck in a wedged driver would.
  // (A stuck folder scan cannot be staged here: the manifest reader refuses pipes and devices.)
  const QString worker = sandbox.filePath(QStringLiteral("stuck-worker.sh"));
  const QString pidFile = sandbox.filePath(QStringLiteral("stuck-worker.pid"));
  QVERIFY(writeScript(worker, QStringLiteral("#!/bin/sh\necho $$ > '%1'\nexec sleep 60\n").arg(pidFile)));
  const QString png = sandbox.filePath(QStringLiteral("shot.png"));
  QElapsedTimer clock;
  clock.start();
  const Run run = runGui(sandbox.path(),
                         {QStringLiteral("--screenshot"), png, QStringLiteral("--screenshot-timeout"),
                          QStringLiteral("3"), kSoftmax},
                         {{QStringLiteral("KWB_WORKER"), worker}});
  QVERIFY(run.finished);
  QCOMPARE(run.exitCode, 1);
  QVERIFY2(run.err.contains(QLatin1String("gave up after 3 s")) && run.err.contains(QLatin1String("GPU probe")),
           qPrintable(run.err));
  QVERIFY2(clock.elapsed() < 25000, qPrintable(QString::number(clock.elapsed())));  // not the probe's 30 s
  QVERIFY(!QFileInfo::exists(png));
  // The stuck worker was killed on the way out, not left behind.
  const QString proc = QStringLiteral("/proc/%1/stat").arg(readFile(pidFile).trimmed());
  QVERIFY(!readFile(pidFile).trimmed().isEmpty());
  QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(proc) || readFile(proc).contains(QLatin1String(") Z ")), 5000);
}

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"
