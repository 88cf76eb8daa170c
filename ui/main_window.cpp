#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QShowEvent>
#include <QDateTime>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QScreen>
#include <QGuiApplication>
#include <QPushButton>
#include <QStyle>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolBar>
#include <QTreeView>
#include <QVBoxLayout>

#include <Qsci/qsciglobal.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <string_view>
#include <utility>

#include "core/gpu/device_info.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "core/lineage/lineage.h"
#include "core/lineage/lineage_build.h"
#include "core/llm/provider_config.h"
#include "core/text/content_hash.h"
#include "core/text/url_credentials.h"
#include "kwb/version.h"
#include "ui/settings/app_settings.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/devices_panel.h"
#include "ui/views/editor_tabs.h"
#include "ui/services/evaluation_service.h"
#include "ui/filesystem_path.h"
#include "ui/views/find_bar.h"
#include "ui/services/gpu_probe.h"
#include "ui/services/gpu_gate.h"
#include "ui/services/selection_runs.h"
#include "ui/window/workbench_actions.h"
#include "ui/window/agent_controller.h"
#include "ui/window/dock_layout.h"
#include "ui/window/run_controller.h"
#include "ui/window/gpu_controller.h"
#include "ui/window/workspace_controller.h"
#include "ui/window/window_dialogs.h"
#include "ui/window/task_lists.h"
#include "ui/views/gpu_status_label.h"
#include "ui/views/history_panel.h"
#include "ui/views/log_panel.h"
#include "ui/models/gpu_device_model.h"
#include "ui/models/outcome_style.h"
#include "ui/resources_init.h"
#include "ui/views/results_panel.h"
#include "ui/settings/settings_dialog.h"
#include "ui/views/task_browser.h"
#include "ui/services/profile_service.h"
#include "ui/views/profiler_panel.h"
#include "ui/views/source_view_panel.h"
#include "ui/views/tuning_panel.h"
#include "ui/views/diff_dialog.h"
#include "ui/views/experience_panel.h"
#include "ui/services/export_service.h"
#include "ui/services/import_service.h"
#include "ui/views/import_dialog.h"
#include "ui/views/help_view.h"
#include "ui/services/memory_service.h"
#include "ui/views/export_dialog.h"
#include "ui/views/session_panel.h"
#include "ui/views/lineage_panel.h"
#include "ui/views/skills_panel.h"
#include "ui/views/start_page.h"
#include "ui/views/work_area.h"
#include "ui/services/skill_library_service.h"
#include "ui/views/session_settings_dialog.h"
#include "ui/services/agent_service.h"
#include "ui/services/tuning_service.h"
#include "ui/services/workspace_service.h"
#include "ui/workbench_context.h"

namespace kwb::ui {

namespace {

constexpr int kStatusMessageMs = 5000;


QString counted(qsizetype n, const char *singular, const char *plural) {
  return QStringLiteral("%1 %2").arg(n).arg(QLatin1String(n == 1 ? singular : plural));
}



QString native(const QString &path) {
  return QDir::toNativeSeparators(path);
}

// The text shown beside the marked manifest line: "field: detail", or the detail alone.
QString problemText(const kwb::ManifestError &error) {
  const QString field = QString::fromStdString(error.field());
  const QString detail = QString::fromStdString(error.detail());
  return field.isEmpty() ? detail : field + QStringLiteral(": ") + detail;
}



}  // namespace

MainWindow::MainWindow(const QString &workspacePath, SettingsMode settingsMode, QWidget *parent)
    : QMainWindow(parent), settingsMode_(settingsMode) {
  // The icons are compiled in; every window and dialog of the program is a child of this one and
  // takes its icon from here.
  initResources();
  setObjectName(QStringLiteral("mainWindow"));
  setWindowIcon(QIcon(QStringLiteral(":/icons/kernel-workbench.svg")));
  setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);

  tabs_ = new EditorTabs(this);
  findBar_ = new FindBar(tabs_, this);
  editorPage_ = new QWidget(this);
  {
    auto *layout = new QVBoxLayout(editorPage_);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(tabs_, 1);
    layout->addWidget(findBar_);
  }

  centre_ = new QStackedWidget(this);
  centre_->setObjectName(QStringLiteral("editorArea"));

  log_ = new LogPanel(this);
  browser_ = new TaskBrowser(this);
  workspace_ = new WorkspaceService(this);
  results_ = new ResultsPanel(this);
  history_ = new HistoryPanel(this);
  evaluation_ = new EvaluationService({}, this);
  evaluation_->setDevices(settings::gpuDevices());
  tuning_ = new TuningService({}, this);
  tuningPanel_ = new TuningPanel(this);
  tuningPanel_->attach(tuning_);
  agent_ = new AgentService(this);
  sessionPanel_ = new SessionPanel(this);
  sessionPanel_->attach(agent_);
  sourceView_ = new SourceViewPanel(this);
  profiler_ = new ProfilerPanel(this);
  profileService_ = new ProfileService({}, this);
  profileService_->useEvaluation(evaluation_);  // one worker per GPU: profiles go to the pool
  devices_ = new DevicesPanel(this);
  skills_ = new SkillLibraryService(QString(), this);
  lineagePanel_ = new LineagePanel(this);
  lineagePanel_->attach(skills_);
  skillsPanel_ = new SkillsPanel(this);
  skillsPanel_->attach(skills_);
  memory_ = new MemoryService(QString(), this);
  export_ = new ExportService(this);
  import_ = new ImportService(this);
  experiencePanel_ = new ExperiencePanel(this);
  experiencePanel_->attach(memory_);
  connect(experiencePanel_, &ExperiencePanel::settled, this, &MainWindow::checkSettled);
  connect(memory_, &MemoryService::failed, this, [this](const QString &message) { log_->error(message); });
  connect(experiencePanel_, &ExperiencePanel::openRequested, this,
          [this](const CaseDetail &detail) { continueFromCase(detail, false); });
  connect(experiencePanel_, &ExperiencePanel::optimizeRequested, this,
          [this](const CaseDetail &detail) { continueFromCase(detail, true); });
  // The views that follow the open task and the selected candidate.
  // Every view selects in it and follows it; SelectionRuns reads the runs a selection lacks.
  context_ = new WorkbenchContext(this);
  selectionRuns_ = new SelectionRuns(workspace_, this);
  for (WorkbenchView *view : std::initializer_list<WorkbenchView *>{
           results_, history_, profiler_, experiencePanel_, lineagePanel_, skillsPanel_, sessionPanel_, tabs_, selectionRuns_})
    context_->addView(view);

  createActions();
  // The centre: the start page or the open files, and the big views beside them as pages.
  startPage_ = new StartPage(actions_.open, actions_.importModules, this);
  connect(startPage_, &StartPage::connectLlmRequested, this, [this] { showSettings(tr("LLM providers")); });
  centre_->addWidget(startPage_);
  centre_->addWidget(editorPage_);
  workArea_ = new WorkArea(centre_, sessionPanel_, lineagePanel_, skillsPanel_, experiencePanel_, profiler_, this);
  context_->addView(workArea_);
  agentWork_ = new AgentController({agent_, sessionPanel_, skills_, skillsPanel_, lineagePanel_, experiencePanel_, workArea_, log_},
                                   this, this);
  setCentralWidget(workArea_);
  // What a page shows is read again when it comes in front: the memory grows with every run,
  // session and lineage build, and the library is shared with kwb and other windows.
  connect(workArea_, &WorkArea::pageShown, this, [this](WorkArea::Page page) {
    if (page == WorkArea::Page::Experience) experiencePanel_->refresh();
    if (page == WorkArea::Page::Library) skills_->refresh();
  });
  createMenus();
  docks_ = new DockLayout(this, {browser_, log_, results_, history_, devices_, tuningPanel_, sourceView_}, actions_.viewMenu,
                          actions_.showListing);
  createStatusBar();
  runs_ = new RunController({evaluation_, tuning_, tuningPanel_, profileService_, profiler_, sourceView_, results_,
                             experiencePanel_, workspace_, context_, workArea_, docks_, log_, runProgress_,
                             actions_.timeRun, actions_.sanitizeRun},
                            this, this);
  connect(runs_, &RunController::runFinished, this, &MainWindow::runFinished);
  dialogs_ = new WindowDialogs({export_, import_, context_, profiler_, log_}, this, this);
  connect(dialogs_, &WindowDialogs::tasksImported, this, &MainWindow::onTasksImported);
  connect(dialogs_, &WindowDialogs::openTaskRequested, this, &MainWindow::openTask);
  gpus_ = new GpuController({evaluation_, tuning_, agent_, skills_, profileService_, profiler_, devices_, log_, gpuLabel_,
                             gpuSummaryLabel_},
                            this);
  connect(gpus_, &GpuController::probeFinished, this, [this] {
    lineagePanel_->setPreviewReason(unmeasuredReason());  // now it can say why it is not measured
    emit gpuProbeFinished();
    checkSettled();
  });
  startPage_->readLlmStatus();

  connect(tabs_, &EditorTabs::countChanged, this, [this](int count) {
    centre_->setCurrentWidget(count > 0 ? editorPage_ : static_cast<QWidget *>(startPage_));
    if (count == 0) findBar_->hide();
    updateActions();
  });
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { updateActions(); });
  connect(tabs_, &EditorTabs::modifiedChanged, this, [this] { updateTitle(); });
  connect(tabs_, &EditorTabs::fileSaved, this, &MainWindow::onFileSaved);
  connect(tabs_, &EditorTabs::saveFailed, this, [this](const QString &, const QString &message) {
    log_->error(message);
    statusBar()->showMessage(message, kStatusMessageMs);
  });

  connect(browser_, &TaskBrowser::taskActivated, this, [this](const QString &folder) { openTask(folder); });
  connect(browser_, &TaskBrowser::scanFinished, this, &MainWindow::checkSettled);
  connect(browser_, &TaskBrowser::problemFound, this, [this](const QString &message) {
    log_->warning(message);
    statusBar()->showMessage(message, 2 * kStatusMessageMs);
  });


  connect(workspace_, &WorkspaceService::idle, this, &MainWindow::checkSettled);
  connect(skills_, &SkillLibraryService::idle, this, &MainWindow::checkSettled);

  // The Profiler follows the services itself: live samples, profiles and ceilings.
  profiler_->attach(evaluation_, tuning_, profileService_);
  connect(sessionPanel_, &SessionPanel::evaluationRequested, selectionRuns_, &SelectionRuns::fetchStored);
  workspaceWork_ = new WorkspaceController({workspace_, browser_, history_, results_, selectionRuns_, log_, workspaceLabel_}, this);
  connect(workspaceWork_, &WorkspaceController::openFinished, this, &MainWindow::workspaceOpenFinished);
  connect(workspaceWork_, &WorkspaceController::failed, this, &MainWindow::say);
  connect(workspaceWork_, &WorkspaceController::runRecorded, this, &MainWindow::runRecorded);
  connect(workspaceWork_, &WorkspaceController::historyRunShown, this, &MainWindow::historyRunShown);
  connect(runs_, &RunController::runStarted, workspaceWork_, &WorkspaceController::runStarted);
  connect(tabs_, &EditorTabs::openFailed, log_, &LogPanel::error);

  docks_->restore(settingsMode_ == SettingsMode::ReadWrite, settingsMode_ == SettingsMode::ReadOnly);
  updateTitle();
  updateActions();

  log_->info(tr("%1 %2").arg(QLatin1String(kwb::kProjectName), QLatin1String(kwb::kVersion)));
  gpus_->applyWorkers();
  gpus_->probe();
  gpus_->startFigures();
  settingsWorkspacePath_ = settings::workspacePath();
  workspaceWork_->open(!workspacePath.isEmpty()            ? normalizedPath(workspacePath)
                : !settingsWorkspacePath_.isEmpty() ? settingsWorkspacePath_
                                                    : settings::defaultWorkspacePath());
  lists_ = new TaskLists({browser_, log_, docks_->tasks, actions_.recentMenu, actions_.clearRecent},
                         settingsMode_ == SettingsMode::ReadWrite, this);
  connect(lists_, &TaskLists::openTaskRequested, this, &MainWindow::openTask);
  connect(lists_, &TaskLists::folderOpened, this, &MainWindow::folderOpened);
}

MainWindow::~MainWindow() = default;

void MainWindow::createActions() {
  actions_ = WorkbenchActions::create(this, settings::runTiming(), settings::runSanitizer());
  WorkbenchActions::bind(
      this,
      {{actions_.open, [this] { openTaskFolderDialog(); }},
       {actions_.save, [this] { saveCurrent(); }},
       {actions_.closeTab, [this] { if (tabs_->count() > 0) tabs_->closeTab(tabs_->currentIndex()); }},
       {actions_.reload,
        [this] {
          lists_->updateBundled(false);  // the bundled suite may have been installed or removed meanwhile
          browser_->rescanAll();    // a scan already running is followed by one more, not a second one
          workspace_->listTasks();
          statusBar()->showMessage(tr("Reloading tasks…"), kStatusMessageMs);
        }},
       {actions_.settings, [this] { showSettings(); }},
       {actions_.quit, [this] { close(); }},
       {actions_.find, [this] { findBar_->open(); }},
       {actions_.findNext, [this] { findBar_->find(true); }},
       {actions_.findPrevious, [this] { findBar_->find(false); }},
       {actions_.clearRecent, [this] { lists_->clearRecent(); }},
       {actions_.focusTasks,
        [this] {
          docks_->tasks->show();
          docks_->tasks->raise();
          browser_->view()->setFocus(Qt::ShortcutFocusReason);
        }},
       {actions_.focusLog,
        [this] {
          docks_->log->show();
          docks_->log->raise();
          log_->view()->setFocus(Qt::ShortcutFocusReason);
        }},
       {actions_.nextTab,
        [this] { if (tabs_->count() > 1) tabs_->setCurrentIndex((tabs_->currentIndex() + 1) % tabs_->count()); }},
       {actions_.previousTab,
        [this] {
          if (tabs_->count() > 1) tabs_->setCurrentIndex((tabs_->currentIndex() + tabs_->count() - 1) % tabs_->count());
        }},
       {actions_.run, [this] { runCurrent(); }},
       {actions_.cancelRun, [this] { cancelRun(); }},
       {actions_.exportKernel, [this] { showExportDialog(); }},
       {actions_.importModules, [this] { showImportDialog(); }},
       {actions_.tune, [this] { tuneCurrent(); }},
       {actions_.optimize, [this] { optimizeCurrent(); }},
       {actions_.profile, [this] { profileCurrent(); }},
       {actions_.showListing, [this] { showListing(); }},
       {actions_.userGuide, [this] { showUserGuide(); }},
       {actions_.about, [this] { dialogs_->about(); }},
       {actions_.aboutQt, [] { QApplication::aboutQt(); }}});
  WorkbenchActions::bindToggle(this, actions_.timeRun, [this](bool on) {
    if (settingsMode_ == SettingsMode::ReadWrite) settings::setRunTiming(on);
  });
  WorkbenchActions::bindToggle(this, actions_.sanitizeRun, [this](bool on) {
    if (settingsMode_ == SettingsMode::ReadWrite) settings::setRunSanitizer(on);
  });
}

void MainWindow::createMenus() {
  actions_.addMenus(this, workArea_->pageActions());
}


void MainWindow::createStatusBar() {
  workspaceLabel_ = new QLabel(tr("Workspace: opening…"), this);
  workspaceLabel_->setObjectName(QStringLiteral("workspaceStatusLabel"));
  workspaceLabel_->setContentsMargins(6, 0, 6, 0);
  gpuLabel_ = new GpuStatusLabel(this);
  runProgress_ = new QProgressBar(this);
  runProgress_->setObjectName(QStringLiteral("runProgress"));
  runProgress_->setRange(0, 1000);
  runProgress_->setMaximumWidth(260);
  runProgress_->setTextVisible(true);
  runProgress_->hide();
  gpuSummaryLabel_ = new QLabel(this);
  gpuSummaryLabel_->setObjectName(QStringLiteral("gpuSummaryLabel"));
  gpuSummaryLabel_->setContentsMargins(6, 0, 6, 0);
  gpuSummaryLabel_->setToolTip(tr("Mean load and hottest temperature of the GPUs; details in View ▸ GPUs"));
  gpuSummaryLabel_->hide();
  statusBar()->addPermanentWidget(runProgress_);
  statusBar()->addPermanentWidget(gpuSummaryLabel_);
  statusBar()->addPermanentWidget(workspaceLabel_);
  statusBar()->addPermanentWidget(gpuLabel_);
}



void MainWindow::showEvent(QShowEvent *event) {
  QMainWindow::showEvent(event);
  docks_->shown();
}

void MainWindow::saveWindowState() {
  if (settingsMode_ == SettingsMode::ReadWrite) docks_->save();
}

void MainWindow::closeEvent(QCloseEvent *event) {
  if (!tabs_->confirmDiscardOrSaveAll()) {
    event->ignore();
    return;
  }
  cancelRun();
  saveWindowState();
  event->accept();
}

CudaEditor *MainWindow::currentEditor() const {
  return tabs_->currentEditor();
}

QString MainWindow::gpuStatusText() const { return gpus_->statusText(); }

bool MainWindow::isGpuProbeFinished() const { return gpus_->probed(); }

bool MainWindow::isWorkspaceOpenFinished() const { return workspaceWork_->settled(); }

QString MainWindow::workspacePath() const { return workspaceWork_->path(); }

bool MainWindow::useDevice() const { return !(gpus_->probed() && !gpus_->hasGpu()); }

QString MainWindow::workspaceStatusText() const {
  return workspaceWork_->statusText();
}


bool MainWindow::isSettled() const {
  return pendingWork().isEmpty();
}

QStringList MainWindow::pendingWork() const {
  QStringList pending;
  if (!gpus_->probed()) pending << tr("GPU probe");
  if (!workspaceWork_->settled() || workspace_->isBusy()) pending << tr("workspace");
  if (browser_->isScanning()) pending << tr("task scan");
  if (evaluation_->isRunning()) pending << tr("evaluation");
  if (tuning_->isRunning()) pending << tr("tuning");
  if (agent_->isRunning()) pending << tr("agent session");
  if (profileService_->isRunning()) pending << tr("profiling");
  if (export_->isBusy()) pending << tr("export");
  if (skills_->isBusy()) pending << tr("skill library");
  if (!experiencePanel_->isSettled()) pending << tr("experience graph");
  return pending;
}

void MainWindow::cancelBackgroundWork() {
  gpus_->cancel();
  tuning_->cancel();
  agent_->pause();
  skills_->cancelTry();
  skills_->cancelBuild();
}


void MainWindow::checkSettled() {
  updateActions();  // whatever ended may free the GPU for the actions that wait for it
  if (isSettled()) emit settled();
}











bool MainWindow::openTask(const QString &path) {
  QString folder = normalizedPath(path);
  if (QFileInfo(folder).isFile()) folder = normalizedPath(QFileInfo(folder).absolutePath());
  const QString manifestPath = QDir(folder).filePath(QLatin1String(kwb::kManifestFileName));

  kwb::Task task;
  try {
    task = kwb::loadTask(toFsPath(folder));
  } catch (const kwb::ManifestError &e) {
    showManifestError(manifestPath, e);
    return false;
  } catch (const std::exception &e) {
    const QString message = QStringLiteral("%1: %2").arg(native(folder), QString::fromStdString(e.what()));
    log_->error(message);
    statusBar()->showMessage(message, kStatusMessageMs);
    return false;
  }

  if (!taskFolder_.isEmpty() && taskFolder_ != folder) tabs_->closeTabsOutside(folder);

  const std::filesystem::path base = toFsPath(folder);
  const QString starterPath = normalizedPath(toQString(base / task.starterSource()));
  const QString referencePath = normalizedPath(toQString(base / task.reference.source));

  CudaEditor *starter = nullptr;
  for (const QString &file : {starterPath, manifestPath, referencePath}) {
    QString error;
    CudaEditor *editor = tabs_->editorFor(file);
    if (editor && editor->isModified()) {
      log_->info(tr("%1 has unsaved changes: kept them instead of reading the file again").arg(native(file)));
    } else if (editor && !editor->reload(&error)) {
      log_->error(error);
    } else if (!editor) {
      editor = tabs_->openFile(file, &error);
      if (!editor) {
        log_->error(error);
        continue;
      }
    }
    if (file == manifestPath) editor->clearProblems();
    if (!starter) starter = editor;
  }
  if (starter) tabs_->setCurrentWidget(starter);

  QStringList configNames;
  for (const auto &c : task.configs) configNames << QString::fromStdString(c.name);
  profiler_->setConfigurations(configNames);
  taskFolder_ = folder;
  showBundledLineage(task);
  taskName_ = QString::fromStdString(task.name);
  starterPath_ = starterPath;
  browser_->setCurrentTask(folder);
  context_->setTask(folder, taskName_);
  updateTitle();
  updateActions();

  log_->info(tr("Opened task %1 (%2, %3)")
                 .arg(taskName_,
                      counted(static_cast<qsizetype>(task.configs.size()), "configuration", "configurations"),
                      counted(static_cast<qsizetype>(task.tensors.size()), "tensor", "tensors")));
  statusBar()->showMessage(tr("Opened %1").arg(taskName_), kStatusMessageMs);

  // Only Recent changes: the other groups keep their rows (and the user's selection).
  lists_->addRecent(folder);

  QFile manifest(manifestPath);
  if (manifest.open(QIODevice::ReadOnly)) {
    const QByteArray bytes = manifest.readAll();
    const QString hash = QString::fromStdString(
        kwb::contentHash(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size()))));
    workspace_->recordTaskOpened(taskName_, folder, hash);
  }
  workspaceWork_->showHistory(folder);

  emit taskOpened(folder);
  return true;
}

QString MainWindow::unmeasuredReason() const {
  return gpus_->probed() && !gpus_->hasGpu() ? tr("no GPU: %1").arg(gpus_->noGpuWhy()) : tr("not built in the library yet");
}

void MainWindow::showBundledLineage(const kwb::Task &task) {
  // The task's bundled lineage as it reads: in the Library with code and diffs before any build,
  // and on machines without a GPU, where none can be built.
  std::optional<kwb::LineageRecord> preview;
  if (kwb::hasLineage(task)) try {
      preview = kwb::unmeasuredLineage(task, unmeasuredReason().toStdString());
    } catch (const std::exception &e) {
      log_->warning(tr("The lineage of %1 does not read: %2").arg(QString::fromStdString(task.name), QString::fromStdString(e.what())));
    }
  lineagePanel_->setPreview(std::move(preview));
}

void MainWindow::showManifestError(const QString &manifestPath, const kwb::ManifestError &error) {
  const QString message = QString::fromStdString(error.what());
  log_->error(message);
  statusBar()->showMessage(tr("The task did not load: %1").arg(message), 2 * kStatusMessageMs);

  QString file = manifestPath;
  if (!QFileInfo(file).isFile()) {
    const QString named = QString::fromStdString(error.file());
    if (!QFileInfo(named).isFile()) return;  // nothing to show: the message says what is missing
    file = named;
  }
  QString openError;
  CudaEditor *editor = tabs_->editorFor(file);
  if (editor && !editor->isModified() && !editor->reload(&openError)) log_->error(openError);
  if (!editor) editor = tabs_->openFile(file, &openError);
  if (!editor) {
    log_->error(openError);
    return;
  }
  editor->clearProblems();
  editor->markProblem(error.line(), problemText(error));
  tabs_->setCurrentWidget(editor);
  updateActions();
}




void MainWindow::onTasksImported(const QString &folder, const QStringList &tasks) {
  const QString summary = tr("Imported %n task(s) into %1", nullptr, static_cast<int>(tasks.size())).arg(native(folder));
  log_->info(summary);
  statusBar()->showMessage(summary, 2 * kStatusMessageMs);
  if (!tasks.isEmpty()) lists_->addFolder(folder);
}

void MainWindow::openTaskFolderDialog() {
  QString start =
      taskFolder_.isEmpty() ? settings::effectiveKernelsDir() : QFileInfo(taskFolder_).absolutePath();
  const QString folder = QFileDialog::getExistingDirectory(this, tr("Open Task Folder"), start);
  if (!folder.isEmpty()) openFolder(folder);
}

void MainWindow::openFolder(const QString &path) { lists_->openFolder(path); }


void MainWindow::saveCurrent() {
  if (CudaEditor *editor = currentEditor()) tabs_->save(editor);
}

void MainWindow::onFileSaved(const QString &path) {
  log_->info(tr("Saved %1").arg(native(path)));
  statusBar()->showMessage(tr("Saved %1").arg(QFileInfo(path).fileName()), kStatusMessageMs);

  // A saved manifest is checked at once, so a mistake shows while it is fresh.
  if (QFileInfo(path).fileName() != QLatin1String(kwb::kManifestFileName)) return;
  CudaEditor *editor = tabs_->editorFor(path);
  if (!editor) return;
  editor->clearProblems();
  try {
    const kwb::Task task = kwb::loadTask(toFsPath(path));
    log_->info(
        tr("%1: manifest of task %2 checks out").arg(native(path), QString::fromStdString(task.name)));
  } catch (const kwb::ManifestError &e) {
    log_->error(QString::fromStdString(e.what()));
    editor->markProblem(e.line(), problemText(e));
  } catch (const std::exception &e) {
    log_->error(QStringLiteral("%1: %2").arg(native(path), QString::fromStdString(e.what())));
  }
}


void MainWindow::showSettings(const QString &page) {
  SettingsDialog dialog(this);
  dialog.setWorkspaceInUse(workspaceWork_->path());
  if (!page.isEmpty()) dialog.showPage(page);
  connect(&dialog, &SettingsDialog::applied, this, [this, &dialog] {
    applySettings();
    dialog.setWorkspaceInUse(workspaceWork_->path());
  });
  dialog.exec();
}


void MainWindow::applySettings() {
  startPage_->readLlmStatus();  // the LLM providers may have changed
  tabs_->applySettings(settings::editor());
  evaluation_->setDevices(settings::gpuDevices());
  if (gpus_->applyWorkers()) gpus_->probe();
  const QString chosen = settings::workspacePath();
  if (chosen != settingsWorkspacePath_) {
    settingsWorkspacePath_ = chosen;
    const QString path = chosen.isEmpty() ? settings::defaultWorkspacePath() : chosen;
    if (path != workspaceWork_->path()) workspaceWork_->open(path);
  }
  lists_->updateBundled(false);
}


void MainWindow::updateTitle() {
  const QString app = QLatin1String(kwb::kProjectName);
  setWindowTitle(taskName_.isEmpty() ? QString(app + QStringLiteral("[*]"))
                                     : QString(taskName_ + QStringLiteral("[*] — ") + app));
  setWindowModified(tabs_->hasUnsavedChanges());
}

void MainWindow::updateActions() {
  const bool hasEditor = tabs_->currentEditor() != nullptr;
  actions_.save->setEnabled(hasEditor);
  actions_.closeTab->setEnabled(hasEditor);
  actions_.find->setEnabled(hasEditor);
  actions_.findNext->setEnabled(hasEditor);
  actions_.findPrevious->setEnabled(hasEditor);
  actions_.nextTab->setEnabled(tabs_->count() > 1);
  actions_.previousTab->setEnabled(tabs_->count() > 1);
  const bool running = evaluation_->isRunning();
  // Every GPU-using action asks the one gate, and shows its answer in the tooltip.
  const GpuState state = gpuState();
  const std::pair<QAction *, GpuAction> gated[] = {
      {actions_.run, GpuAction::Run}, {actions_.tune, GpuAction::Tune}, {actions_.optimize, GpuAction::Optimize}, {actions_.profile, GpuAction::Profile}};
  for (const auto &[action, what] : gated) {
    const GpuVerdict v = gpuVerdict(what, state);
    action->setEnabled(v.allowed);
    const QString tip = action->property("kwbTip").toString();
    action->setToolTip(v.why.isEmpty() ? tip : tip + QStringLiteral("\n") + v.why);
  }
  profiler_->profileButton()->setEnabled(actions_.profile->isEnabled());
  profiler_->profileButton()->setToolTip(actions_.profile->toolTip());
  const GpuVerdict build = gpuVerdict(GpuAction::BuildLineage, state), deoptimize = gpuVerdict(GpuAction::Deoptimize, state);
  lineagePanel_->setGate(build.allowed, build.why, deoptimize.allowed, deoptimize.why);
  actions_.exportKernel->setEnabled(!taskFolder_.isEmpty());
  actions_.cancelRun->setEnabled(running && !evaluation_->isCancelling());
}

GpuState MainWindow::gpuState() {
  GpuState s;
  s.taskOpen = !taskFolder_.isEmpty();
  CudaEditor *current = currentEditor();
  s.kernelToRun = (current && current->isCudaSource()) || !starterPath_.isEmpty();
  s.probed = gpus_->probed();
  s.gpu = gpus_->hasGpu();
  s.noGpuWhy = gpus_->noGpuWhy();
  s.evaluating = evaluation_->isRunning();
  s.tuning = tuning_->isRunning();
  s.session = agent_->isRunning();
  s.profiling = profileService_->isRunning();
  s.building = skills_->isBuilding();
  s.trying = skills_->isTrying();
  return s;
}

GpuVerdict MainWindow::verdict(GpuAction action) {
  return gpuVerdict(action, gpuState());
}

bool MainWindow::isRunning() const {
  return evaluation_->isRunning();
}

CudaEditor *MainWindow::editorToRun() {
  CudaEditor *current = currentEditor();
  if (current && current->isCudaSource()) return current;
  if (starterPath_.isEmpty()) return nullptr;
  if (CudaEditor *starter = tabs_->editorFor(starterPath_)) return starter;
  QString error;
  CudaEditor *reopened = tabs_->openFile(starterPath_, &error);
  if (!reopened) log_->error(error);
  return reopened;
}


bool MainWindow::openSessionCandidate(const QString &source, const QString &name) {
  if (source.isEmpty()) return false;
  QString error;
  if (tabs_->openCandidate(agent_->sessionId(), source, name, &error)) return true;
  log_->error(error);
  return false;
}

bool MainWindow::openCodeInEditor(const QString &folder, const QString &source, const QString &name) {
  QString error;
  if (tabs_->openCode(folder, source, name, &error)) return true;
  log_->error(error);
  return false;
}

bool MainWindow::continueFromCase(const CaseDetail &detail, bool optimize) {
  const auto &c = detail.c;
  const QString task = QString::fromStdString(c.task);
  if (c.after.empty()) return false;
  if (task != taskName_) {
    // A bundled task of that name is opened first; any other must be opened by the user.
    const QString bundled = QDir(lists_->bundledDir()).filePath(task);
    if (lists_->bundledDir().isEmpty() || !QFileInfo::exists(QDir(bundled).filePath(QLatin1String(kwb::kManifestFileName))) ||
        !openTask(bundled)) {
      log_->warning(tr("Case %1 is a kernel of task %2: open that task (Ctrl+O), then continue from the Case again")
                        .arg(c.id)
                        .arg(task));
      return false;
    }
  }
  const QString folder = QString::fromStdString((kwb::userDataDir() / "memory").string());
  if (!openCodeInEditor(folder, QString::fromStdString(c.after), QStringLiteral("%1-case-%2.cu").arg(task).arg(c.id)))
    return false;
  log_->info(tr("Case %1 of %2 opened in the editor (%3)").arg(c.id).arg(task, QString::fromStdString(c.idea).left(80)));
  return optimize ? optimizeCurrent() : true;
}

bool MainWindow::optimizeCurrent() { return agentWork_->optimize(); }

ExportDialog *MainWindow::showExportDialog() { return dialogs_->exportKernel(gpus_->driverText()); }

ImportDialog *MainWindow::showImportDialog() { return dialogs_->importModules(); }

HelpView *MainWindow::showUserGuide(const QString &chapter) { return dialogs_->userGuide(chapter); }

bool MainWindow::runCurrent() { return runs_->run(); }

void MainWindow::cancelRun() { runs_->cancel(); }

bool MainWindow::tuneCurrent() { return runs_->tune(); }

bool MainWindow::profileCurrent() { return runs_->profile(); }

bool MainWindow::showListing() { return runs_->showListing(); }

bool MainWindow::buildLineageOfCurrentTask() { return agentWork_->buildLineage(); }

void MainWindow::say(const QString &line) { statusBar()->showMessage(line, 2 * kStatusMessageMs); }

void MainWindow::historyChanged() {
  workspaceWork_->showHistory(taskFolder_);
}















}  // namespace kwb::ui
