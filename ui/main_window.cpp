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

constexpr int kStateVersion = 2;  // 2: the big views left the docks for the centre (issue 48)
constexpr int kStatusMessageMs = 5000;

// A provider as shown: a name, or a base URL without its credentials (issue 45, 2).
QString shownProvider(const QString &provider) {
  return QString::fromStdString(kwb::redactUrlsIn(provider.toStdString()));
}

QString counted(qsizetype n, const char *singular, const char *plural) {
  return QStringLiteral("%1 %2").arg(n).arg(QLatin1String(n == 1 ? singular : plural));
}

QIcon themedIcon(const char *themeName, const char *resource) {
  return QIcon::fromTheme(QLatin1String(themeName), QIcon(QLatin1String(resource)));
}

QString readableTime(const QString &isoUtc) {
  const QDateTime time = QDateTime::fromString(isoUtc, Qt::ISODate);
  return time.isValid() ? time.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")) : isoUtc;
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

EditorDiagnostic::Severity severityOf(kwb::Diagnostic::Severity severity) {
  switch (severity) {
    case kwb::Diagnostic::Severity::Warning: return EditorDiagnostic::Severity::Warning;
    case kwb::Diagnostic::Severity::Note: return EditorDiagnostic::Severity::Note;
    case kwb::Diagnostic::Severity::Error: break;
  }
  return EditorDiagnostic::Severity::Error;
}

// A menu entry's text shows '&' as is rather than as a mnemonic marker.
QString menuText(const QString &text) {
  QString escaped = text;
  return escaped.replace(QLatin1Char('&'), QLatin1String("&&"));
}

}  // namespace

MainWindow::MainWindow(const QString &workspacePath, SettingsMode settingsMode, QWidget *parent)
    : QMainWindow(parent), settingsMode_(settingsMode) {
  // The icons are compiled in; every window and dialog of the program is a child of this one and
  // takes its icon from here.
  initResources();
  setObjectName(QStringLiteral("mainWindow"));
  // The Optimize dialog's last choices; before any, the LLM settings' dollar budget.
  if (const auto saved = settings::agentSessionSettings()) {
    agentSettings_ = *saved;
    lastAgentModel_ = settings::agentModel();
  } else {
    agentSettings_.dollars = settings::llmBudgetDollars();
  }
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
  gpuProbe_ = new GpuProbe(this);
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
  connect(import_, &ImportService::problemImported, this, &MainWindow::onProblemImported);
  experiencePanel_ = new ExperiencePanel(this);
  experiencePanel_->attach(memory_);
  connect(experiencePanel_, &ExperiencePanel::settled, this, &MainWindow::checkSettled);
  connect(memory_, &MemoryService::failed, this, [this](const QString &message) { log_->error(message); });
  connect(experiencePanel_, &ExperiencePanel::openRequested, this,
          [this](const CaseDetail &detail) { continueFromCase(detail, false); });
  connect(experiencePanel_, &ExperiencePanel::optimizeRequested, this,
          [this](const CaseDetail &detail) { continueFromCase(detail, true); });
  connect(skills_, &SkillLibraryService::failed, this,
          [this](const QString &message) { log_->error(tr("Skill library: %1").arg(message)); });
  connect(skillsPanel_, &SkillsPanel::tryRequested, this, [this](const QString &id) { tryCardOnCurrentKernel(id); });
  skillsPanel_->setReviewer(settings::reviewerName());
  connect(skillsPanel_, &SkillsPanel::reviewerChanged, this, [this](const QString &name) {
    if (settingsMode_ == SettingsMode::ReadWrite) settings::setReviewerName(name);
  });
  connect(lineagePanel_, &LineagePanel::buildRequested, this, [this] { buildLineageOfCurrentTask(); });
  connect(lineagePanel_, &LineagePanel::deoptimizeRequested, this, [this] { deoptimizeCurrentKernel(); });
  connect(skills_, &SkillLibraryService::built, this, [this](const QString &name, const QString &summary) {
    log_->info(tr("Lineage %1 built: %2").arg(name, summary));
  });
  connect(skills_, &SkillLibraryService::tried, this,
          [this](const QString &id, const QString &verdict, const QString &message, const QString &recorded) {
            log_->info(tr("Skill card %1 tried: %2: %3 (%4)").arg(id, verdict, message, recorded));
          });
  // The views that follow the open task and the selected candidate.
  // Every view selects in it and follows it; SelectionRuns reads the runs a selection lacks.
  context_ = new WorkbenchContext(this);
  selectionRuns_ = new SelectionRuns(workspace_, this);
  for (WorkbenchView *view : std::initializer_list<WorkbenchView *>{
           results_, history_, profiler_, experiencePanel_, lineagePanel_, skillsPanel_, sessionPanel_, tabs_, selectionRuns_})
    context_->addView(view);

  createActions();
  // The centre: the start page or the open files, and the big views beside them as pages.
  startPage_ = new StartPage(open_, importAction_, this);
  connect(startPage_, &StartPage::connectLlmRequested, this, [this] { showSettings(tr("LLM providers")); });
  centre_->addWidget(startPage_);
  centre_->addWidget(editorPage_);
  workArea_ = new WorkArea(centre_, sessionPanel_, lineagePanel_, skillsPanel_, experiencePanel_, profiler_, this);
  context_->addView(workArea_);
  setCentralWidget(workArea_);
  // What a page shows is read again when it comes in front: the memory grows with every run,
  // session and lineage build, and the library is shared with kwb and other windows.
  connect(workArea_, &WorkArea::pageShown, this, [this](WorkArea::Page page) {
    if (page == WorkArea::Page::Experience) experiencePanel_->refresh();
    if (page == WorkArea::Page::Library) skills_->refresh();
  });
  createMenus();
  createDocks();
  createStatusBar();
  updateStartPage();

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
  connect(browser_, &TaskBrowser::openedFoldersScanned, this, &MainWindow::onOpenedFoldersScanned);
  connect(browser_, &TaskBrowser::problemFound, this, [this](const QString &message) {
    log_->warning(message);
    statusBar()->showMessage(message, 2 * kStatusMessageMs);
  });
  connect(browser_, &TaskBrowser::removeFromListRequested, this, &MainWindow::removeFromList);
  connect(browser_, &TaskBrowser::clearRecentRequested, clearRecent_, &QAction::trigger);

  connect(gpuProbe_, &GpuProbe::inventoryReady, this, &MainWindow::onGpuInventory);
  connect(gpuProbe_, &GpuProbe::failed, this, &MainWindow::onGpuProbeFailed);

  connect(workspace_, &WorkspaceService::opened, this, [this](const QString &path, int version) {
    workspaceLabel_->setText(tr("Workspace: %1").arg(QFileInfo(path).fileName()));
    workspaceLabel_->setToolTip(tr("%1\nSchema version %2").arg(native(path)).arg(version));
    workspaceLabel_->setStyleSheet(QString());
    log_->info(tr("Workspace %1 open (schema version %2)").arg(native(path)).arg(version));
    if (!taskFolder_.isEmpty()) workspace_->listEvaluations(taskFolder_);
    workspaceSettled_ = true;
    emit workspaceOpenFinished(true);
  });
  connect(workspace_, &WorkspaceService::openFailed, this,
          [this](const QString &path, const QString &message) {
            browser_->setWorkspaceTasks({});
            workspaceLabel_->setText(tr("Workspace: unavailable"));
            workspaceLabel_->setToolTip(tr("%1\n%2").arg(native(path), message));
            workspaceLabel_->setStyleSheet(QStringLiteral("color: #b91c1c;"));
            log_->error(tr("Workspace %1 could not be opened: %2. The workbench runs without it; opened "
                           "tasks are not recorded. Choose another file in Settings ▸ General.")
                            .arg(native(path), message));
            statusBar()->showMessage(tr("Workspace unavailable: %1").arg(message), 2 * kStatusMessageMs);
            workspaceSettled_ = true;
            emit workspaceOpenFinished(false);
          });
  connect(workspace_, &WorkspaceService::tasksListed, this, &MainWindow::onWorkspaceTasks);
  connect(workspace_, &WorkspaceService::error, this,
          [this](const QString &message) { log_->error(message); });
  connect(workspace_, &WorkspaceService::idle, this, &MainWindow::checkSettled);
  connect(skills_, &SkillLibraryService::idle, this, &MainWindow::checkSettled);

  connect(evaluation_, &EvaluationService::progress, this, &MainWindow::onRunProgress);
  // The Profiler follows the services itself: live samples, profiles and ceilings.
  profiler_->attach(evaluation_, tuning_, profileService_);
  connect(profiler_, &ProfilerPanel::profileRequested, this, [this] { profileCurrent(); });
  // Refresh in the Source/PTX/SASS view: the editor's kernel as it is now.
  connect(sourceView_, &SourceViewPanel::refreshRequested, this, [this] {
    if (!showListing()) sourceView_->showProblem(tr("Open a task first: Refresh shows the kernel in the editor beside its SASS or PTX."));
  });
  connect(profileService_, &ProfileService::finished, this, [this](const ProfileRow &row) {
    if (row.outcome == kwb::Outcome::Profiled)
      log_->info(tr("Profiled %1 (%2) on %3: %n replay pass(es)", nullptr, row.passes)
                     .arg(QFileInfo(row.sourceName).fileName(), row.config, row.device));
    else
      log_->warning(tr("Not profiled: %1: %2").arg(outcomeText(row.outcome), row.message));
    updateActions();
    checkSettled();
  });
  connect(evaluation_, &EvaluationService::devicesChanged, this, &MainWindow::updatePoolDevices);
  connect(evaluation_, &EvaluationService::deviceMessage, this, [this](const QString &message) {
    log_->warning(message);
    statusBar()->showMessage(message, 2 * kStatusMessageMs);
  });
  connect(devices_, &DevicesPanel::refreshed, this, &MainWindow::updatePoolDevices);
  connect(devices_, &DevicesPanel::summaryChanged, this, [this](const QString &summary) {
    gpuSummaryLabel_->setText(summary);
    gpuSummaryLabel_->setVisible(!summary.isEmpty());
  });
  connect(evaluation_, &EvaluationService::finished, this, &MainWindow::onRunFinished);
  connect(tuning_, &TuningService::finished, this, [this](const TuneSummary &s) {
    QString line = tuningPanel_->statusText();
    if (s.stop == QLatin1String("error")) log_->error(line);
    else log_->info(line);
    if (!s.reproduce.isEmpty()) log_->info(tr("Reproduce the best: %1").arg(s.reproduce));
    if (!s.memory.isEmpty()) log_->info(s.memory);
    if (workArea_->current() == WorkArea::Page::Experience && !s.memory.isEmpty()) experiencePanel_->refresh();
    statusBar()->showMessage(line, kStatusMessageMs);
    updateActions();
    checkSettled();
  });
  connect(agent_, &AgentService::started, this,
          [this](const QString &id, const QString &title, const kwb::agent::SessionSettings &settings) {
    sessionPanel_->begin(id, title, settings);
    log_->info(tr("Agent session %1: %2").arg(id, title));
    updateActions();
  });
  connect(agent_, &AgentService::eventsArrived, this, [this](const QList<AgentEventRow> &rows) {
    for (const auto &row : rows) {
      const auto &e = row.event;
      if (e.kind == kwb::agent::SessionEvent::Kind::Dcp || e.kind == kwb::agent::SessionEvent::Kind::GroupDone ||
          e.kind == kwb::agent::SessionEvent::Kind::Baseline || e.kind == kwb::agent::SessionEvent::Kind::Best)
        log_->info(tr("Session: %1").arg(QString::fromStdString(e.text)));
    }
  });
  connect(agent_, &AgentService::error, this, [this](const QString &message) {
    log_->error(tr("Agent session: %1").arg(message));
    statusBar()->showMessage(message, kStatusMessageMs);
  });
  connect(agent_, &AgentService::finished, this, [this](const QString &id, const QString &state, const QString &reason) {
    const QString line = tr("Agent session %1 %2%3").arg(id, state, reason.isEmpty() ? QString() : QStringLiteral(": %1").arg(reason));
    if (state == QLatin1String("failed")) log_->error(line);
    else log_->info(line);
    statusBar()->showMessage(line, kStatusMessageMs);
    if (workspaceSettled_ && !taskFolder_.isEmpty()) workspace_->listEvaluations(taskFolder_);
    updateActions();
    checkSettled();
  });
  connect(sessionPanel_, &SessionPanel::resumeRequested, this, [this](const QString &id) {
    AgentRequest request;
    request.workspaceFile = workspacePath_;
    request.resumeId = id;
    request.provider = lastAgentProvider_;
    request.useDevice = !(gpuProbed_ && !gpuPresent_);
    agent_->start(request);
    updateActions();
  });
  connect(sessionPanel_, &SessionPanel::caseRequested, this, [this](qint64 id) {
    workArea_->reveal(WorkArea::Page::Experience);
    experiencePanel_->refresh();
    experiencePanel_->selectCase(id);
  });
  connect(sessionPanel_, &SessionPanel::evaluationRequested, selectionRuns_, &SelectionRuns::fetchStored);
  connect(sessionPanel_, &SessionPanel::diffRequested, this,
          [this](const QString &parent, const QString &parentName, const QString &source, const QString &name) {
            auto *dialog = new DiffDialog(parent, parentName, source, name, this);
            dialog->setAttribute(Qt::WA_DeleteOnClose);
            dialog->show();
          });
  connect(sessionPanel_, &SessionPanel::profileRequested, this, [this](const QString &source, const QString &name) {
    if (agent_->isRunning()) {
      log_->warning(tr("Profile %1 once the session is paused or finished: a profile now would disturb its timing")
                        .arg(name));
      return;
    }
    if (openSessionCandidate(source, name)) profileCurrent();  // says why in the log when it cannot
  });
  connect(workspace_, &WorkspaceService::evaluationRecorded, this, [this](const EvaluationRun &run) {
    if (results_->run().startedAt == run.startedAt && results_->run().sourceName == run.sourceName &&
        !results_->isFromHistory()) {
      shownHistoryId_ = run.historyId;
    }
    emit runRecorded(run);
  });
  connect(workspace_, &WorkspaceService::evaluationsListed, this,
          [this](const QString &folder, const QList<EvaluationRun> &runs) {
            history_->setRuns(folder, runs, shownHistoryId_);
          });
  connect(history_, &HistoryPanel::runActivated, selectionRuns_, &SelectionRuns::fetchStored);
  connect(selectionRuns_, &SelectionRuns::storedRunSelected, this, [this](const EvaluationRun &run) {
    shownHistoryId_ = run.historyId;
    emit historyRunShown(run);
  });
  connect(tabs_, &EditorTabs::openFailed, log_, &LogPanel::error);

  restoreWindowState();
  updateTitle();
  updateActions();

  log_->info(tr("%1 %2").arg(QLatin1String(kwb::kProjectName), QLatin1String(kwb::kVersion)));
  applyWorkers();
  startGpuProbe();
  {
    const auto worker = kwb::workerExecutable();
    devices_->start(worker ? toQString(*worker) : QString());
  }
  settingsWorkspacePath_ = settings::workspacePath();
  openWorkspace(!workspacePath.isEmpty()            ? normalizedPath(workspacePath)
                : !settingsWorkspacePath_.isEmpty() ? settingsWorkspacePath_
                                                    : settings::defaultWorkspacePath());
  updateBundledDir(true);
  setRecent(settings::recentTasks());
  setOpenedFolders(settings::openedFolders());
}

MainWindow::~MainWindow() = default;

void MainWindow::createActions() {
  open_ = new QAction(themedIcon("document-open-folder", ":/icons/folder-open.svg"), tr("&Open Task Folder…"),
                      this);
  open_->setObjectName(QStringLiteral("actionOpenTaskFolder"));
  open_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_O));
  open_->setToolTip(tr("Open a task folder, or a folder of tasks (Ctrl+O)"));
  connect(open_, &QAction::triggered, this, &MainWindow::openTaskFolderDialog);

  save_ = new QAction(themedIcon("document-save", ":/icons/save.svg"), tr("&Save"), this);
  save_->setObjectName(QStringLiteral("actionSave"));
  save_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_S));
  save_->setToolTip(tr("Save the current file (Ctrl+S)"));
  connect(save_, &QAction::triggered, this, &MainWindow::saveCurrent);

  closeTab_ = new QAction(tr("&Close Tab"), this);
  closeTab_->setObjectName(QStringLiteral("actionCloseTab"));
  closeTab_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_W));
  connect(closeTab_, &QAction::triggered, this, [this] {
    if (tabs_->count() > 0) tabs_->closeTab(tabs_->currentIndex());
  });

  reload_ = new QAction(themedIcon("view-refresh", ":/icons/reload.svg"), tr("&Reload Tasks"), this);
  reload_->setObjectName(QStringLiteral("actionReloadTasks"));
  reload_->setShortcut(QKeySequence(Qt::Key_F5));
  reload_->setToolTip(tr("Scan the task folders again (F5)"));
  connect(reload_, &QAction::triggered, this, [this] {
    updateBundledDir(false);  // the bundled suite may have been installed or removed meanwhile
    browser_->rescanAll();    // a scan already running is followed by one more, not a second one
    workspace_->listTasks();
    statusBar()->showMessage(tr("Reloading tasks…"), kStatusMessageMs);
  });

  settings_ = new QAction(themedIcon("preferences-system", ":/icons/settings.svg"), tr("Se&ttings…"), this);
  settings_->setObjectName(QStringLiteral("actionSettings"));
  settings_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
  settings_->setMenuRole(QAction::PreferencesRole);
  connect(settings_, &QAction::triggered, this, [this] { showSettings(); });

  quit_ = new QAction(tr("&Quit"), this);
  quit_->setObjectName(QStringLiteral("actionQuit"));
  quit_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
  quit_->setMenuRole(QAction::QuitRole);
  connect(quit_, &QAction::triggered, this, &QWidget::close);

  find_ = new QAction(tr("&Find…"), this);
  find_->setObjectName(QStringLiteral("actionFind"));
  find_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_F));
  find_->setToolTip(tr("Find text in the current file (Ctrl+F)"));
  connect(find_, &QAction::triggered, findBar_, &FindBar::open);

  findNext_ = new QAction(tr("Find &Next"), this);
  findNext_->setObjectName(QStringLiteral("actionFindNext"));
  findNext_->setShortcut(QKeySequence(Qt::Key_F3));
  connect(findNext_, &QAction::triggered, this, [this] { findBar_->find(true); });

  findPrevious_ = new QAction(tr("Find &Previous"), this);
  findPrevious_->setObjectName(QStringLiteral("actionFindPrevious"));
  findPrevious_->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F3));
  connect(findPrevious_, &QAction::triggered, this, [this] { findBar_->find(false); });

  clearRecent_ = new QAction(tr("&Clear Recent"), this);
  clearRecent_->setObjectName(QStringLiteral("actionClearRecent"));
  connect(clearRecent_, &QAction::triggered, this, [this] { setRecent({}); });

  focusTasks_ = new QAction(tr("Focus &Tasks"), this);
  focusTasks_->setObjectName(QStringLiteral("actionFocusTasks"));
  focusTasks_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_1));
  connect(focusTasks_, &QAction::triggered, this, [this] {
    tasksDock_->show();
    tasksDock_->raise();
    browser_->view()->setFocus(Qt::ShortcutFocusReason);
  });

  focusLog_ = new QAction(tr("Focus &Log"), this);
  focusLog_->setObjectName(QStringLiteral("actionFocusLog"));
  focusLog_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_2));
  connect(focusLog_, &QAction::triggered, this, [this] {
    logDock_->show();
    logDock_->raise();
    log_->view()->setFocus(Qt::ShortcutFocusReason);
  });

  nextTab_ = new QAction(tr("&Next Tab"), this);
  nextTab_->setObjectName(QStringLiteral("actionNextTab"));
  nextTab_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageDown));
  connect(nextTab_, &QAction::triggered, this, [this] {
    if (tabs_->count() > 1) tabs_->setCurrentIndex((tabs_->currentIndex() + 1) % tabs_->count());
  });

  previousTab_ = new QAction(tr("&Previous Tab"), this);
  previousTab_->setObjectName(QStringLiteral("actionPreviousTab"));
  previousTab_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageUp));
  connect(previousTab_, &QAction::triggered, this, [this] {
    if (tabs_->count() > 1)
      tabs_->setCurrentIndex((tabs_->currentIndex() + tabs_->count() - 1) % tabs_->count());
  });

  run_ = new QAction(themedIcon("media-playback-start", ""), tr("&Run"), this);
  if (run_->icon().isNull()) run_->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
  run_->setObjectName(QStringLiteral("actionRun"));
  run_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  run_->setToolTip(tr("Compile the kernel in the editor and check it against the task's reference (Ctrl+R)"));
  connect(run_, &QAction::triggered, this, [this] { runCurrent(); });

  cancelRun_ = new QAction(themedIcon("process-stop", ""), tr("&Cancel Run"), this);
  if (cancelRun_->icon().isNull()) cancelRun_->setIcon(style()->standardIcon(QStyle::SP_MediaStop));
  cancelRun_->setObjectName(QStringLiteral("actionCancelRun"));
  cancelRun_->setToolTip(tr("Stop the run in progress"));
  connect(cancelRun_, &QAction::triggered, this, &MainWindow::cancelRun);

  exportAction_ = new QAction(themedIcon("document-export", ""), tr("&Export Kernel…"), this);
  exportAction_->setObjectName(QStringLiteral("actionExport"));
  exportAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  exportAction_->setStatusTip(tr("Write the selected run's kernel (or the editor's) out as a CUDA package, a PyTorch "
                                 "extension or a report"));
  connect(exportAction_, &QAction::triggered, this, [this] { showExportDialog(); });

  importAction_ = new QAction(themedIcon("document-import", ""), tr("&Import PyTorch Modules or KernelBench Problems…"), this);
  importAction_->setObjectName(QStringLiteral("actionImportKernelBench"));
  importAction_->setStatusTip(tr("Make tasks from PyTorch modules in KernelBench's shape (class Model, get_inputs, "
                                 "get_init_inputs): each becomes the task's PyTorch reference, its weights the kernel's "
                                 "inputs, with a starter to improve"));
  connect(importAction_, &QAction::triggered, this, [this] { showImportDialog(); });

  tune_ = new QAction(themedIcon("system-run", ""), tr("T&une"), this);
  tune_->setObjectName(QStringLiteral("actionTune"));
  tune_->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_T));
  tune_->setToolTip(tr("Search the task's tunable parameters for the fastest correct configuration of the kernel "
                       "in the editor: the built-in autotuner (Ctrl+Alt+T)"));
  connect(tune_, &QAction::triggered, this, [this] { tuneCurrent(); });

  optimize_ = new QAction(tr("&Optimize"), this);
  optimize_->setObjectName(QStringLiteral("actionOptimize"));
  optimize_->setToolTip(tr("Make the kernel in the editor faster. With no LLM configured this runs the built-in "
                           "autotuner"));
  connect(optimize_, &QAction::triggered, this, [this] { optimizeCurrent(); });

  profileAction_ = new QAction(tr("&Profile"), this);
  profileAction_->setObjectName(QStringLiteral("actionProfile"));
  profileAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_P));
  profileAction_->setToolTip(tr("Read the GPU's counters for the kernel in the editor: DRAM throughput, occupancy, "
                                "cache hit rates (CUPTI, a pass of its own; Ctrl+Alt+P)"));
  connect(profileAction_, &QAction::triggered, this, [this] { profileCurrent(); });

  showListing_ = new QAction(tr("Show &PTX/SASS"), this);
  showListing_->setObjectName(QStringLiteral("actionShowListing"));
  showListing_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A));
  showListing_->setToolTip(tr("The kernel in the editor beside its SASS or PTX, line by line (Ctrl+Shift+A)"));
  connect(showListing_, &QAction::triggered, this, [this] { showListing(); });

  timeRun_ = new QAction(tr("&Time After Checking"), this);
  timeRun_->setObjectName(QStringLiteral("actionTimeRun"));
  timeRun_->setCheckable(true);
  timeRun_->setChecked(settings::runTiming());
  timeRun_->setToolTip(tr("Once the kernel is correct on every configuration, time it against the reference"));
  connect(timeRun_, &QAction::toggled, this, [this](bool on) {
    if (settingsMode_ == SettingsMode::ReadWrite) settings::setRunTiming(on);
  });

  sanitizeRun_ = new QAction(tr("&Sanitize After Checking"), this);
  sanitizeRun_->setObjectName(QStringLiteral("actionSanitizeRun"));
  sanitizeRun_->setCheckable(true);
  sanitizeRun_->setChecked(settings::runSanitizer());
  sanitizeRun_->setToolTip(tr("Then run the kernel once more under compute-sanitizer's memcheck, racecheck, initcheck "
                              "and synccheck at the smallest configuration; findings go to Results and the "
                              "editor's lines (tens of seconds)"));
  connect(sanitizeRun_, &QAction::toggled, this, [this](bool on) {
    if (settingsMode_ == SettingsMode::ReadWrite) settings::setRunSanitizer(on);
  });

  userGuide_ = new QAction(themedIcon("help-contents", ""), tr("&User Guide"), this);
  userGuide_->setObjectName(QStringLiteral("actionUserGuide"));
  userGuide_->setShortcut(QKeySequence::HelpContents);
  userGuide_->setStatusTip(tr("The workbench's guide: tasks, the judge, sessions, skill cards, memory, profiling; searchable"));
  connect(userGuide_, &QAction::triggered, this, [this] { showUserGuide(); });
  about_ = new QAction(tr("&About Kernel Workbench"), this);
  about_->setObjectName(QStringLiteral("actionAbout"));
  about_->setMenuRole(QAction::AboutRole);
  connect(about_, &QAction::triggered, this, &MainWindow::showAbout);

  aboutQt_ = new QAction(tr("About &Qt"), this);
  aboutQt_->setObjectName(QStringLiteral("actionAboutQt"));
  aboutQt_->setMenuRole(QAction::AboutQtRole);
  connect(aboutQt_, &QAction::triggered, qApp, &QApplication::aboutQt);
}

void MainWindow::createMenus() {
  // The gated actions' own tooltips; updateActions() adds the gate's words.
  for (QAction *action : {run_, tune_, optimize_, profileAction_}) action->setProperty("kwbTip", action->toolTip());
  QMenu *file = menuBar()->addMenu(tr("&File"));
  file->addAction(open_);
  recentMenu_ = file->addMenu(tr("Recent &Tasks"));
  recentMenu_->setObjectName(QStringLiteral("recentTasksMenu"));
  // Filled each time it opens: rebuilding it from an entry's own triggered() (openTask adds to
  // Recent) would delete the action whose signal is being delivered.
  connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
  file->addSeparator();
  file->addAction(save_);
  file->addAction(closeTab_);
  file->addSeparator();
  file->addAction(importAction_);
  file->addAction(exportAction_);
  file->addSeparator();
  file->addAction(reload_);
  file->addSeparator();
  file->addAction(settings_);
  file->addSeparator();
  file->addAction(quit_);

  QMenu *edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(find_);
  edit->addAction(findNext_);
  edit->addAction(findPrevious_);

  QMenu *runMenu = menuBar()->addMenu(tr("&Run"));
  runMenu->addAction(run_);
  runMenu->addAction(cancelRun_);
  runMenu->addSeparator();
  runMenu->addAction(optimize_);
  runMenu->addAction(tune_);
  runMenu->addAction(profileAction_);
  runMenu->addSeparator();
  runMenu->addAction(timeRun_);
  runMenu->addAction(sanitizeRun_);

  viewMenu_ = menuBar()->addMenu(tr("&View"));
  viewMenu_->addActions(workArea_->pageActions());
  viewMenu_->addSeparator();
  viewMenu_->addAction(focusTasks_);
  viewMenu_->addAction(focusLog_);
  viewMenu_->addSeparator();
  viewMenu_->addAction(nextTab_);
  viewMenu_->addAction(previousTab_);
  viewMenu_->addSeparator();

  QMenu *help = menuBar()->addMenu(tr("&Help"));
  help->addAction(userGuide_);
  help->addSeparator();
  help->addAction(about_);
  help->addAction(aboutQt_);

  QToolBar *tools = addToolBar(tr("Main Toolbar"));
  tools->setObjectName(QStringLiteral("mainToolBar"));
  tools->setMovable(false);
  tools->setIconSize(QSize(20, 20));
  tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  tools->addAction(open_);
  tools->addAction(save_);
  tools->addSeparator();
  tools->addAction(run_);
  tools->addAction(cancelRun_);
  tools->addAction(timeRun_);
  tools->addAction(optimize_);
  tools->addAction(tune_);
  tools->addAction(profileAction_);
  tools->addSeparator();
  tools->addAction(reload_);
  tools->addAction(settings_);
}

void MainWindow::createDocks() {
  tasksDock_ = new QDockWidget(tr("Tasks"), this);
  tasksDock_->setObjectName(QStringLiteral("tasksDock"));
  tasksDock_->setWidget(browser_);
  tasksDock_->setAllowedAreas(Qt::LeftDockWidgetArea | Qt::RightDockWidgetArea);
  addDockWidget(Qt::LeftDockWidgetArea, tasksDock_);

  logDock_ = new QDockWidget(tr("Log"), this);
  logDock_->setObjectName(QStringLiteral("logDock"));
  logDock_->setWidget(log_);
  logDock_->setAllowedAreas(Qt::BottomDockWidgetArea | Qt::TopDockWidgetArea | Qt::RightDockWidgetArea);
  addDockWidget(Qt::BottomDockWidgetArea, logDock_);

  resultsDock_ = new QDockWidget(tr("Results"), this);
  resultsDock_->setObjectName(QStringLiteral("resultsDock"));
  resultsDock_->setWidget(results_);
  addDockWidget(Qt::RightDockWidgetArea, resultsDock_);

  historyDock_ = new QDockWidget(tr("History"), this);
  historyDock_->setObjectName(QStringLiteral("historyDock"));
  historyDock_->setWidget(history_);
  addDockWidget(Qt::BottomDockWidgetArea, historyDock_);
  tabifyDockWidget(logDock_, historyDock_);

  gpusDock_ = new QDockWidget(tr("GPUs"), this);
  gpusDock_->setObjectName(QStringLiteral("gpusDock"));
  gpusDock_->setWidget(devices_);
  addDockWidget(Qt::BottomDockWidgetArea, gpusDock_);
  tabifyDockWidget(historyDock_, gpusDock_);
  tuningDock_ = new QDockWidget(tr("Tuning"), this);
  tuningDock_->setObjectName(QStringLiteral("tuningDock"));
  tuningDock_->setWidget(tuningPanel_);
  addDockWidget(Qt::BottomDockWidgetArea, tuningDock_);
  tabifyDockWidget(gpusDock_, tuningDock_);
  sourceViewDock_ = new QDockWidget(tr("Source/PTX/SASS"), this);
  sourceViewDock_->setObjectName(QStringLiteral("sourceViewDock"));
  sourceViewDock_->setWidget(sourceView_);
  addDockWidget(Qt::BottomDockWidgetArea, sourceViewDock_);
  tabifyDockWidget(tuningDock_, sourceViewDock_);
  // The bottom strip is for short output: its views may be squeezed to a few lines (a tabbed
  // view's minimum would be the whole strip's).
  for (QDockWidget *dock : {logDock_, historyDock_, gpusDock_, tuningDock_, sourceViewDock_})
    dock->widget()->setMinimumSize(200, 60);

  logDock_->raise();

  const std::pair<QDockWidget *, const char *> toggles[] = {
      {tasksDock_, "actionToggleTasks"}, {logDock_, "actionToggleLog"},       {resultsDock_, "actionToggleResults"},
      {historyDock_, "actionToggleHistory"}, {gpusDock_, "actionToggleGpus"}, {tuningDock_, "actionToggleTuning"},
      {sourceViewDock_, "actionToggleSourceView"}};
  for (const auto &[dock, name] : toggles) {
    QAction *toggle = dock->toggleViewAction();
    toggle->setObjectName(QLatin1String(name));
    viewMenu_->addAction(toggle);
  }
  viewMenu_->addAction(showListing_);
  if (auto *tools = findChild<QToolBar *>(QStringLiteral("mainToolBar"))) {
    QAction *toggleTools = tools->toggleViewAction();
    toggleTools->setText(tr("Toolbar"));
    viewMenu_->addAction(toggleTools);
  }
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

void MainWindow::restoreWindowState() {
  const bool restore = settingsMode_ == SettingsMode::ReadWrite;
  const QByteArray geometry = restore ? settings::windowGeometry() : QByteArray();
  if (geometry.isEmpty() || !restoreGeometry(geometry)) {
    // The first time: the screen's room (less the panels and task bars it keeps).
    const QScreen *where = screen() ? screen() : QGuiApplication::primaryScreen();
    if (where && settingsMode_ == SettingsMode::ReadWrite) setGeometry(where->availableGeometry());
    else resize(1400, 880);
  }
  const QByteArray state = restore ? settings::windowState() : QByteArray();
  // No saved layout: the default one, once the window has its size (docks sized before the
  // window is shown keep their size hints, and the Log took a third of the height).
  defaultDockLayoutPending_ = state.isEmpty() || !restoreState(state, kStateVersion);
}

void MainWindow::applyDefaultDockLayout() {
  // The centre gets the room: the bottom docks (the Log in front) a few lines, Results a
  // quarter of the width.
  resizeDocks({tasksDock_, resultsDock_}, {std::min(260, width() / 6), width() / 4}, Qt::Horizontal);
  resizeDocks({logDock_}, {std::max(110, height() / 8)}, Qt::Vertical);
}

void MainWindow::showEvent(QShowEvent *event) {
  QMainWindow::showEvent(event);
  if (!defaultDockLayoutPending_) return;
  defaultDockLayoutPending_ = false;
  // After the first layout pass, which the show has only scheduled.
  QMetaObject::invokeMethod(this, &MainWindow::applyDefaultDockLayout, Qt::QueuedConnection);
}

void MainWindow::saveWindowState() {
  if (settingsMode_ != SettingsMode::ReadWrite) return;
  settings::setWindowGeometryAndState(saveGeometry(), saveState(kStateVersion));
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

QString MainWindow::gpuStatusText() const {
  return gpuLabel_->text();
}

QString MainWindow::workspaceStatusText() const {
  return workspaceLabel_->text();
}

ExportDialog *MainWindow::showExportDialog() {
  if (taskFolder_.isEmpty()) {
    log_->warning(tr("Open a task first: an export is of one of its kernels"));
    return nullptr;
  }
  ExportRequest request;
  request.taskFolder = taskFolder_;
  request.workspacePath = workspacePath_;
  QString what;
  const auto &selection = context_->selection();
  if (selection && selection->run.historyId > 0 && selection->run.taskName == taskName_) {
    request.runId = selection->run.historyId;
    what = tr("run %1 (%2)").arg(selection->run.historyId).arg(QFileInfo(selection->run.sourceName).fileName());
  } else if (CudaEditor *editor = currentEditor()) {
    request.code = editor->text();
    request.sourceName = editor->fileName();
    what = tr("the editor's %1").arg(QFileInfo(editor->fileName()).fileName());
  } else {
    log_->warning(tr("Nothing to export: select a run in the History, or open a kernel in the editor"));
    return nullptr;
  }
  if (const auto &shown = profiler_->shownProfile(); shown && shown->taskFolder == taskFolder_) {
    request.profile = toProfileResult(*shown);
    if (const auto &base = profiler_->baselineProfile()) request.baselineProfile = toProfileResult(*base);
  }
  request.driver = driverText_;
  auto *dialog = new ExportDialog(export_, request, what, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &ExportDialog::exported, this, [this](const ExportOutcome &outcome) {
    if (outcome.ok) log_->info(tr("Exported %1 into %2").arg(outcome.what, outcome.dir));
    else log_->error(tr("Export failed: %1").arg(outcome.error));
    checkSettled();
  });
  dialog->show();
  return dialog;
}

bool MainWindow::isSettled() const {
  return pendingWork().isEmpty();
}

QStringList MainWindow::pendingWork() const {
  QStringList pending;
  if (!gpuProbed_) pending << tr("GPU probe");
  if (!workspaceSettled_ || workspace_->isBusy()) pending << tr("workspace");
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
  gpuProbe_->cancel();
  tuning_->cancel();
  agent_->pause();
  skills_->cancelTry();
  skills_->cancelBuild();
  devices_->stop();
}

void MainWindow::updatePoolDevices() {
  devices_->setPoolDevices(evaluation_->deviceStates(), evaluation_->poolProblem());
}

void MainWindow::checkSettled() {
  updateActions();  // whatever ended may free the GPU for the actions that wait for it
  if (isSettled()) emit settled();
}

void MainWindow::startGpuProbe() {
  gpuProbed_ = false;
  gpuLabel_->setProbing();
  const auto worker = kwb::workerExecutable();
  gpuProbe_->start(worker ? toQString(*worker) : QString());
}

void MainWindow::onGpuInventory(const kwb::GpuInventory &inventory, const QString &localSummary) {
  const QString where = evaluation_->workersDescription();
  const QString summary = where == QLatin1String("local") ? localSummary : tr("%1: %2").arg(where, localSummary);
  gpuLabel_->setInventory(inventory, summary);
  gpuProbed_ = true;
  gpuPresent_ = inventory.hasDevices();
  const QString why = QString::fromStdString(inventory.problem);
  noGpuWhy_ = why.isEmpty() ? localSummary : why;
  driverText_ = inventory.driverVersion
                    ? tr("%1.%2 (the CUDA driver API's version, as the workbench probed it)")
                          .arg(inventory.driverVersion / 1000)
                          .arg(inventory.driverVersion % 1000 / 10)
                    : tr("not known: %1").arg(why.isEmpty() ? summary : why);
  log_->info(inventory.hasDevices() || why.isEmpty() ? tr("GPU: %1").arg(summary)
                                                     : tr("GPU: %1 (%2)").arg(summary, why));
  // The roofline's ceilings: measured once per GPU by a worker (then cached), off this thread.
  if (gpuPresent_ && !ceilingsAsked_) {
    ceilingsAsked_ = true;
    profileService_->loadCeilings(inventory.devices.front().ordinal);
  } else if (!gpuPresent_) {
    profiler_->setCeilingsProblem(tr("no GPU: %1").arg(why.isEmpty() ? summary : why));
  }
  lineagePanel_->setPreviewReason(unmeasuredReason());  // now it can say why it is not measured
  emit gpuProbeFinished();
  checkSettled();
}

void MainWindow::onGpuProbeFailed(const QString &summary, const QString &detail) {
  gpuLabel_->setProbeFailed(summary, detail);
  gpuProbed_ = true;
  noGpuWhy_ = tr("%1: %2").arg(summary, detail);
  log_->warning(noGpuWhy_);
  lineagePanel_->setPreviewReason(unmeasuredReason());
  emit gpuProbeFinished();
  checkSettled();
}

void MainWindow::openWorkspace(const QString &path) {
  workspacePath_ = path;
  workspaceSettled_ = false;
  // The group shows this workspace's tasks once it answers, never the previous one's.
  browser_->setWorkspaceTasks({});
  workspaceLabel_->setText(tr("Workspace: opening…"));
  workspaceLabel_->setToolTip(native(path));
  workspace_->open(path);
}

void MainWindow::onWorkspaceTasks(const QList<WorkspaceTask> &tasks) {
  QList<TaskItem> items;
  items.reserve(tasks.size());
  for (const WorkspaceTask &task : tasks) {
    TaskItem item;
    item.name = task.name;
    item.folder = normalizedPath(task.folder);
    item.note = tr("Last opened %1").arg(readableTime(task.lastOpenedAt));
    items.append(item);
  }
  browser_->setWorkspaceTasks(items);  // the scan marks tasks whose folder is gone
}

void MainWindow::updateBundledDir(bool force) {
  const QString chosen = settings::kernelsDirOverride();
  QString dir = chosen;
  if (chosen.isEmpty()) {
    const auto bundled = kwb::bundledKernelsDir();
    dir = bundled ? normalizedPath(toQString(*bundled)) : QString();
  }
  if (!force && dir == bundledDir_ && bundledDirChosen_ == !chosen.isEmpty()) return;
  bundledDir_ = dir;
  bundledDirChosen_ = !chosen.isEmpty();
  browser_->setBundledDir(dir, bundledDirChosen_);
}

void MainWindow::setRecent(const QStringList &recent) {
  recent_ = recent;
  if (settingsMode_ == SettingsMode::ReadWrite) settings::setRecentTasks(recent_);
  browser_->setRecent(recent_);
  recentMenu_->setEnabled(!recent_.isEmpty());
  clearRecent_->setEnabled(!recent_.isEmpty());
}

void MainWindow::setOpenedFolders(const QStringList &folders) {
  openedFolders_ = folders;
  if (settingsMode_ == SettingsMode::ReadWrite) settings::setOpenedFolders(openedFolders_);
  browser_->setOpenedFolders(openedFolders_);
}

void MainWindow::removeFromList(TaskTreeModel::Group group, const QString &folder) {
  if (group == TaskTreeModel::Group::Recent) {
    QStringList recent = recent_;
    recent.removeAll(folder);
    setRecent(recent);
  } else if (group == TaskTreeModel::Group::OpenedFolders) {
    QStringList folders = openedFolders_;
    folders.removeAll(folder);
    setOpenedFolders(folders);
  }
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  for (const QString &folder : recent_) {
    QAction *action = recentMenu_->addAction(menuText(native(folder)));
    connect(action, &QAction::triggered, this, [this, folder] { openTask(folder); });
  }
  recentMenu_->addSeparator();
  recentMenu_->addAction(clearRecent_);
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

  if (taskFolder_ != folder) shownHistoryId_ = 0;
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
  setRecent(settings::withRecentTask(recent_, folder));

  QFile manifest(manifestPath);
  if (manifest.open(QIODevice::ReadOnly)) {
    const QByteArray bytes = manifest.readAll();
    const QString hash = QString::fromStdString(
        kwb::contentHash(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size()))));
    workspace_->recordTaskOpened(taskName_, folder, hash);
  }
  workspace_->listEvaluations(folder);

  emit taskOpened(folder);
  return true;
}

QString MainWindow::unmeasuredReason() const {
  return gpuProbed_ && !gpuPresent_ ? tr("no GPU: %1").arg(noGpuWhy_) : tr("not built in the library yet");
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

HelpView *MainWindow::showUserGuide(const QString &chapter) {
  if (!help_) {
    help_ = new HelpView(this);
    help_->setAttribute(Qt::WA_DeleteOnClose);
  }
  if (!chapter.isEmpty()) help_->showChapter(chapter);
  help_->show();
  help_->raise();
  help_->activateWindow();
  return help_;
}

ImportDialog *MainWindow::showImportDialog() {
  if (!importDialog_) {
    importDialog_ = new ImportDialog(import_, this);
    importDialog_->setAttribute(Qt::WA_DeleteOnClose);
    connect(importDialog_, &ImportDialog::imported, this, &MainWindow::onTasksImported);
    connect(importDialog_, &ImportDialog::openTaskRequested, this, &MainWindow::openTask);
  }
  importDialog_->show();
  importDialog_->raise();
  importDialog_->activateWindow();
  return importDialog_;
}

void MainWindow::onProblemImported(const ImportedProblem &row) {
  if (!row.ok) log_->error(tr("Not imported: %1").arg(row.message));
  for (const QString &w : row.warnings) log_->warning(QFileInfo(row.folder).fileName() + QStringLiteral(": ") + w);
}

void MainWindow::onTasksImported(const QString &folder, const QStringList &tasks) {
  const QString summary = tr("Imported %n task(s) into %1", nullptr, static_cast<int>(tasks.size())).arg(native(folder));
  log_->info(summary);
  statusBar()->showMessage(summary, 2 * kStatusMessageMs);
  if (tasks.isEmpty()) return;
  QStringList folders = openedFolders_;
  const QString dir = normalizedPath(folder);
  if (!folders.contains(dir)) folders.append(dir);
  setOpenedFolders(folders);
}

void MainWindow::openTaskFolderDialog() {
  QString start =
      taskFolder_.isEmpty() ? settings::effectiveKernelsDir() : QFileInfo(taskFolder_).absolutePath();
  const QString folder = QFileDialog::getExistingDirectory(this, tr("Open Task Folder"), start);
  if (!folder.isEmpty()) openFolder(folder);
}

void MainWindow::openFolder(const QString &path) {
  const QString folder = normalizedPath(path);
  if (!foldersToOpen_.contains(folder)) foldersToOpen_.append(folder);
  QStringList folders = openedFolders_;
  if (!folders.contains(folder)) folders.append(folder);
  setOpenedFolders(folders);  // scans it; onOpenedFoldersScanned() goes on
}

void MainWindow::onOpenedFoldersScanned(const QList<TaskFolderItem> &folders) {
  const QStringList waiting = std::exchange(foldersToOpen_, QStringList());
  for (const QString &folder : waiting) {
    const auto entry = std::find_if(folders.begin(), folders.end(),
                                    [&](const TaskFolderItem &f) { return f.folder == folder; });
    if (entry == folders.end()) continue;  // removed from the list before its scan ended

    if (entry->missing) {
      log_->error(tr("%1: not a folder").arg(native(folder)));
      QStringList remaining = openedFolders_;
      remaining.removeAll(folder);
      setOpenedFolders(remaining);
    } else if (entry->tasks.isEmpty()) {
      log_->warning(entry->error);
    } else {
      const auto self = std::find_if(entry->tasks.begin(), entry->tasks.end(),
                                     [&](const TaskItem &t) { return t.folder == folder; });
      if (self != entry->tasks.end()) {
        openTask(folder);
      } else if (entry->tasks.size() == 1) {
        openTask(entry->tasks.front().folder);
      } else {
        log_->info(tr("%1 holds %2 tasks; double-click one under \"Opened folders\" to open it")
                       .arg(native(folder))
                       .arg(entry->tasks.size()));
        tasksDock_->show();
        tasksDock_->raise();
      }
    }
    emit folderOpened(folder, static_cast<int>(entry->tasks.size()));
  }
}

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

void MainWindow::updateStartPage() {
  // What Optimize would use: the provider chosen last, else the first configured.
  std::vector<kwb::llm::ProviderConfig> providers;
  try {
    providers = kwb::llm::loadProviders();
  } catch (const std::exception &e) {
    startPage_->setLlmStatus(tr("The LLM providers cannot be read: %1").arg(QString::fromStdString(e.what())), false);
    return;
  }
  if (providers.empty()) {
    startPage_->setLlmStatus(QString(), false);
    return;
  }
  const QString chosen = settings::agentProvider();
  const auto it = std::find_if(providers.begin(), providers.end(),
                               [&](const auto &p) { return QString::fromStdString(p.name) == chosen; });
  const auto &p = it != providers.end() ? *it : providers.front();
  startPage_->setLlmStatus(tr("Optimize asks %1%2.")
                               .arg(shownProvider(QString::fromStdString(p.name)),
                                    p.model.empty() ? QString() : tr(" (%1)").arg(QString::fromStdString(p.model))),
                           true);
}

void MainWindow::showSettings(const QString &page) {
  SettingsDialog dialog(this);
  dialog.setWorkspaceInUse(workspacePath_);
  if (!page.isEmpty()) dialog.showPage(page);
  connect(&dialog, &SettingsDialog::applied, this, [this, &dialog] {
    applySettings();
    dialog.setWorkspaceInUse(workspacePath_);
  });
  dialog.exec();
}

bool MainWindow::applyWorkers() {
  const QString spec = settings::workersSpec();
  if (spec == workersSpec_) return false;
  workersSpec_ = spec;
  std::string problem;
  const auto launcher = kwb::worker::parseWorkerLauncher(spec.toStdString(), problem).value_or(kwb::worker::WorkerLauncher{});
  evaluation_->setWorkers(spec);
  tuning_->setWorkers(launcher);
  agent_->setWorkers(launcher);
  skills_->setWorkers(launcher);
  gpuProbe_->setLauncher(launcher);
  devices_->setLauncher(launcher);
  if (launcher.remote()) log_->info(tr("GPU workers run on %1").arg(QString::fromStdString(launcher.describe())));
  return true;
}

void MainWindow::applySettings() {
  updateStartPage();  // the LLM providers may have changed
  tabs_->applySettings(settings::editor());
  evaluation_->setDevices(settings::gpuDevices());
  if (applyWorkers()) startGpuProbe();
  const QString chosen = settings::workspacePath();
  if (chosen != settingsWorkspacePath_) {
    settingsWorkspacePath_ = chosen;
    const QString path = chosen.isEmpty() ? settings::defaultWorkspacePath() : chosen;
    if (path != workspacePath_) openWorkspace(path);
  }
  updateBundledDir(false);
}

void MainWindow::showAbout() {
  QMessageBox::about(this, tr("About Kernel Workbench"),
                     tr("<h3>Kernel Workbench %1</h3>"
                        "<p>Takes a CUDA kernel from correct to fast, and keeps what it learned.</p>"
                        "<p>Qt %2 · QScintilla %3</p>")
                         .arg(QLatin1String(kwb::kVersion), QLatin1String(qVersion()),
                              QLatin1String(QSCINTILLA_VERSION_STR)));
}

void MainWindow::updateTitle() {
  const QString app = QLatin1String(kwb::kProjectName);
  setWindowTitle(taskName_.isEmpty() ? QString(app + QStringLiteral("[*]"))
                                     : QString(taskName_ + QStringLiteral("[*] — ") + app));
  setWindowModified(tabs_->hasUnsavedChanges());
}

void MainWindow::updateActions() {
  const bool hasEditor = tabs_->currentEditor() != nullptr;
  save_->setEnabled(hasEditor);
  closeTab_->setEnabled(hasEditor);
  find_->setEnabled(hasEditor);
  findNext_->setEnabled(hasEditor);
  findPrevious_->setEnabled(hasEditor);
  nextTab_->setEnabled(tabs_->count() > 1);
  previousTab_->setEnabled(tabs_->count() > 1);
  const bool running = evaluation_->isRunning();
  // Every GPU-using action asks the one gate, and shows its answer in the tooltip.
  const GpuState state = gpuState();
  const std::pair<QAction *, GpuAction> gated[] = {
      {run_, GpuAction::Run}, {tune_, GpuAction::Tune}, {optimize_, GpuAction::Optimize}, {profileAction_, GpuAction::Profile}};
  for (const auto &[action, what] : gated) {
    const GpuVerdict v = gpuVerdict(what, state);
    action->setEnabled(v.allowed);
    const QString tip = action->property("kwbTip").toString();
    action->setToolTip(v.why.isEmpty() ? tip : tip + QStringLiteral("\n") + v.why);
  }
  profiler_->profileButton()->setEnabled(profileAction_->isEnabled());
  profiler_->profileButton()->setToolTip(profileAction_->toolTip());
  const GpuVerdict build = gpuVerdict(GpuAction::BuildLineage, state), deoptimize = gpuVerdict(GpuAction::Deoptimize, state);
  lineagePanel_->setGate(build.allowed, build.why, deoptimize.allowed, deoptimize.why);
  exportAction_->setEnabled(!taskFolder_.isEmpty());
  cancelRun_->setEnabled(running && !evaluation_->isCancelling());
}

GpuState MainWindow::gpuState() {
  GpuState s;
  s.taskOpen = !taskFolder_.isEmpty();
  CudaEditor *current = currentEditor();
  s.kernelToRun = (current && current->isCudaSource()) || !starterPath_.isEmpty();
  s.probed = gpuProbed_;
  s.gpu = gpuPresent_;
  s.noGpuWhy = noGpuWhy_;
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

bool MainWindow::tuneCurrent() {
  if (const GpuVerdict v = verdict(GpuAction::Tune); !v.allowed) {
    if (!taskFolder_.isEmpty()) log_->warning(tr("Not tuned: %1").arg(v.why));
    return false;
  }
  CudaEditor *editor = editorToRun();
  if (!editor) return false;
  TuneRequest request;
  request.taskFolder = taskFolder_;
  request.source = editor->text();
  request.sourceName = editor->filePath();
  request.gpus = settings::gpuDevices();
  if (!tuning_->run(request)) return false;
  revealInBottomStrip(tuningDock_);
  log_->info(tr("Tuning %1 on task %2 (the built-in autotuner)").arg(editor->fileName(), taskName_));
  updateActions();
  return true;
}

bool MainWindow::openSessionCandidate(const QString &source, const QString &name) {
  if (source.isEmpty()) return false;
  // The candidate's code in a file of its own (Run, Profile, diff).
  return openCodeInEditor(QString::fromStdString((kwb::userDataDir() / "sessions").string()) + QLatin1Char('/') +
                              agent_->sessionId(),
                          source, name);
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
    const QString bundled = QDir(bundledDir_).filePath(task);
    if (bundledDir_.isEmpty() || !QFileInfo::exists(QDir(bundled).filePath(QLatin1String(kwb::kManifestFileName))) ||
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

bool MainWindow::profileCurrent() {
  if (const GpuVerdict v = verdict(GpuAction::Profile); !v.allowed) {
    if (!taskFolder_.isEmpty()) log_->warning(tr("Not profiled: %1").arg(v.why));
    return false;
  }
  CudaEditor *editor = editorToRun();
  if (!editor) return false;
  ProfileRequest request;
  request.taskFolder = taskFolder_;
  request.source = editor->text();
  request.sourceName = editor->filePath();
  request.set = profiler_->profileSet();
  request.config = profiler_->profileConfig();
  if (!profileService_->profile(request)) return false;
  workArea_->reveal(WorkArea::Page::Profiler);
  log_->info(tr("Profiling %1 on task %2 (%3 metric set%4)")
                 .arg(editor->fileName(), taskName_, request.set,
                      request.config.isEmpty() ? QString() : tr(", configuration %1").arg(request.config)));
  updateActions();
  return true;
}

bool MainWindow::showListing() {
  if (taskFolder_.isEmpty()) return false;
  CudaEditor *editor = editorToRun();
  if (!editor) return false;
  if (gpuProbed_ && !gpuPresent_) sourceView_->setArch(settings::compileOnlyArch());
  sourceView_->showCandidate(taskFolder_, editor->text(), editor->filePath());
  revealInBottomStrip(sourceViewDock_);
  return true;
}

void MainWindow::revealInBottomStrip(QDockWidget *dock) {
  // The strip is kept short for output; a listing or a tuning table asked for gets room to be read.
  dock->show();
  dock->raise();
  if (dock->height() < height() / 3) resizeDocks({dock}, {height() * 2 / 5}, Qt::Vertical);
}

bool MainWindow::optimizeCurrent() {
  // With an LLM configured, Optimize runs an agent session with the first provider; else the
  // built-in autotuner, and says why.
  std::vector<kwb::llm::ProviderConfig> providers;
  QString problem;
  try {
    providers = kwb::llm::loadProviders();
  } catch (const std::exception &e) {
    problem = QString::fromStdString(e.what());
  }
  if (!providers.empty()) {
    if (!agentCanStart()) return false;
    // The session's settings first (G, K, DCP, budgets...), prefilled with the last ones.
    QStringList names;
    for (const auto &p : providers) names << QString::fromStdString(p.name);
    const QString preferred = lastAgentProvider_.isEmpty() ? settings::agentProvider() : lastAgentProvider_;
    auto *dialog = new SessionSettingsDialog(names, preferred, lastAgentModel_, agentSettings_, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
      agentSettings_ = dialog->settings();
      lastAgentModel_ = dialog->model();
      if (settingsMode_ == SettingsMode::ReadWrite) {
        settings::setAgentSessionSettings(agentSettings_);
        settings::setAgentProvider(dialog->provider(), dialog->model());
      }
      startAgentSession(dialog->provider(), dialog->model());
    });
    dialog->open();
    return true;
  }
  // No model to ask: the user chooses between setting one up and the built-in autotuner.
  if (!verdict(GpuAction::Tune).allowed) return false;
  auto *box = new QMessageBox(
      QMessageBox::Question, tr("Optimize without an LLM"),
      problem.isEmpty()
          ? tr("No LLM is set up. Optimize asks a model for faster kernels, turn by turn; without one, the built-in "
               "autotuner searches the task's tunable parameters instead.")
          : tr("The LLM providers cannot be read (%1). Without a model, the built-in autotuner searches the task's "
               "tunable parameters instead.")
                .arg(problem),
      QMessageBox::Cancel, this);
  box->setObjectName(QStringLiteral("optimizeWithoutLlm"));
  QPushButton *setUp = box->addButton(tr("Set Up an LLM…"), QMessageBox::ActionRole);
  setUp->setObjectName(QStringLiteral("setUpLlmButton"));
  QPushButton *tuner = box->addButton(tr("Run the Autotuner"), QMessageBox::AcceptRole);
  tuner->setObjectName(QStringLiteral("runTunerButton"));
  box->setDefaultButton(setUp);
  box->setWindowModality(Qt::WindowModal);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::buttonClicked, this, [this, setUp, tuner](QAbstractButton *clicked) {
    if (clicked == setUp) {
      QMetaObject::invokeMethod(this, [this] { showSettings(tr("LLM providers")); }, Qt::QueuedConnection);
    } else if (clicked == tuner && tuneCurrent()) {
      const QString line = tr("No LLM set up: Optimize ran the built-in autotuner (Settings ▸ LLM providers adds a model)");
      log_->info(line);
      statusBar()->showMessage(line, 2 * kStatusMessageMs);
    }
  });
  box->open();
  return true;
}

bool MainWindow::tryCardOnCurrentKernel(const QString &id) {
  CudaEditor *editor = editorToRun();
  if (taskFolder_.isEmpty() || !editor) {
    skillsPanel_->showMessage(tr("Open a task first: the card is tried on the kernel in the editor."), true);
    return false;
  }
  const QString provider = lastAgentProvider_.isEmpty() ? settings::agentProvider() : lastAgentProvider_;
  if (provider.isEmpty()) {
    skillsPanel_->showMessage(tr("No model chosen: run Optimize once with an LLM provider (Settings ▸ LLM providers); "
                                 "the card is tried with the same one."),
                              true);
    return false;
  }
  if (const GpuVerdict v = verdict(GpuAction::TryCard); !v.allowed) {
    skillsPanel_->showMessage(v.why, true);
    return false;
  }
  CardTryRequest request;
  request.id = id;
  request.taskFolder = taskFolder_;
  request.kernel = editor->text();
  request.kernelName = editor->fileName();
  request.provider = provider;
  request.model = lastAgentModel_.isEmpty() ? settings::agentModel() : lastAgentModel_;
  request.useDevice = !(gpuProbed_ && !gpuPresent_);
  if (!skills_->tryCard(request)) return false;
  skillsPanel_->showMessage(tr("Trying %1 on %2 with %3…").arg(id, editor->fileName(), shownProvider(provider)));
  updateActions();
  return true;
}

bool MainWindow::buildLineageOfCurrentTask() {
  if (taskFolder_.isEmpty()) {
    lineagePanel_->showBuildMessage(tr("Open a task first: its bundled lineage is built."));
    return false;
  }
  if (!QFileInfo::exists(QDir(taskFolder_).filePath(QStringLiteral("lineage/lineage.toml")))) {
    lineagePanel_->showBuildMessage(
        tr("%1 has no bundled lineage (lineage/lineage.toml): De-optimize current kernel makes one from an expert kernel.")
            .arg(QFileInfo(taskFolder_).fileName()));
    return false;
  }
  if (const GpuVerdict v = verdict(GpuAction::BuildLineage); !v.allowed) {
    lineagePanel_->showBuildMessage(v.why);
    return false;
  }
  LineageBuildRequest request;
  request.taskFolder = taskFolder_;
  if (!skills_->buildLineage(request)) {
    lineagePanel_->showBuildMessage(tr("A card try or another build is running: wait for it, or cancel it."));
    return false;
  }
  lineagePanel_->buildStarted(tr("Building the lineage of %1…").arg(QFileInfo(taskFolder_).fileName()));
  updateActions();
  return true;
}

bool MainWindow::deoptimizeCurrentKernel(bool confirmed) {
  CudaEditor *editor = editorToRun();
  if (taskFolder_.isEmpty() || !editor) {
    lineagePanel_->showBuildMessage(tr("Open a task and its expert kernel first: the kernel in the editor is de-optimized."));
    return false;
  }
  const QString provider = lastAgentProvider_.isEmpty() ? settings::agentProvider() : lastAgentProvider_;
  if (provider.isEmpty()) {
    lineagePanel_->showBuildMessage(tr("No model chosen: run Optimize once with an LLM provider (Settings ▸ LLM "
                                       "providers); the kernel is de-optimized with the same one."));
    return false;
  }
  QString problem;
  const auto resolved = resolveAgentProvider(provider, QString(), problem);
  if (!resolved) {
    lineagePanel_->showBuildMessage(problem);
    return false;
  }
  const GpuVerdict v = verdict(GpuAction::Deoptimize);
  if (!v.allowed) {
    lineagePanel_->showBuildMessage(v.why);
    return false;
  }
  const QString model = lastAgentModel_.isEmpty() ? settings::agentModel() : lastAgentModel_;
  if (!confirmed) {
    // Many requests: what it costs is said before any is sent.
    const auto &config = resolved->first;
    const int requests = LineageBuildRequest{}.maxSteps;
    const QString price = !config.price ? tr("%1 has no prices set: the cost is not known.").arg(shownProvider(provider))
                          : config.price->inputPerMillion == 0 && config.price->outputPerMillion == 0
                              ? tr("%1 costs nothing per token (a local server).").arg(shownProvider(provider))
                              : tr("At %1's prices ($%2 in, $%3 out per million tokens), each request costs about $%4.")
                                    .arg(shownProvider(provider))
                                    .arg(config.price->inputPerMillion)
                                    .arg(config.price->outputPerMillion)
                                    .arg((editor->text().size() / 4.0 + 1500) * config.price->inputPerMillion / 1e6 +
                                             (editor->text().size() / 4.0 + 500) * config.price->outputPerMillion / 1e6,
                                         0, 'f', 4);
    auto *box = new QMessageBox(
        QMessageBox::Question, tr("De-optimize %1").arg(editor->fileName()),
        tr("The model takes one technique at a time out of %1 and each version is compiled and checked%2: up to %3 "
           "requests to %4 (%5), about %6 tokens each way.\n\n%7")
            .arg(editor->fileName(), v.why.isEmpty() ? tr(" and timed (kept only when slower)") : tr(" (no GPU: not timed)"))
            .arg(requests)
            .arg(shownProvider(provider), model.isEmpty() ? QString::fromStdString(config.model) : model)
            .arg(editor->text().size() / 4)
            .arg(price),
        QMessageBox::Cancel, this);
    box->setObjectName(QStringLiteral("deoptimizeConfirmation"));
    box->addButton(tr("De-optimize"), QMessageBox::AcceptRole);
    box->setDefaultButton(QMessageBox::Cancel);
    box->setWindowModality(Qt::WindowModal);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::accepted, this, [this] { deoptimizeCurrentKernel(true); });
    box->open();
    return true;
  }
  LineageBuildRequest request;
  request.taskFolder = taskFolder_;
  request.expert = editor->text();
  request.expertName = editor->fileName();
  request.provider = provider;
  request.model = model;
  if (!skills_->buildLineage(request)) {
    lineagePanel_->showBuildMessage(tr("A card try or another build is running: wait for it, or cancel it."));
    return false;
  }
  lineagePanel_->buildStarted(tr("De-optimizing %1 with %2…").arg(editor->fileName(), shownProvider(provider)));
  updateActions();
  return true;
}

bool MainWindow::agentCanStart() {
  return verdict(GpuAction::Optimize).allowed && editorToRun();
}

bool MainWindow::startAgentSession(const QString &provider, const QString &model) {
  if (!agentCanStart()) return false;
  CudaEditor *editor = editorToRun();
  AgentRequest request;
  request.workspaceFile = workspacePath_;
  request.taskFolder = taskFolder_;
  request.provider = provider;
  request.model = model;
  request.useDevice = !(gpuProbed_ && !gpuPresent_);
  request.settings = agentSettings_;
  request.starter = editor->text();
  request.starterName = editor->fileName();
  agentSettings_ = request.settings;
  lastAgentProvider_ = provider;
  if (!agent_->start(request)) return false;
  workArea_->reveal(WorkArea::Page::Session);
  log_->info(tr("Optimizing %1 on task %2 with %3: G=%4, K=%5, %6 group(s)")
                 .arg(editor->fileName(), taskName_, shownProvider(provider))
                 .arg(request.settings.candidates)
                 .arg(request.settings.dcp.maxTurns)
                 .arg(request.settings.groups));
  updateActions();
  return true;
}

bool MainWindow::runCurrent() {
  if (!verdict(GpuAction::Run).allowed) return false;
  CudaEditor *editor = editorToRun();
  if (!editor) return false;

  RunRequest request;
  request.taskFolder = taskFolder_;
  request.source = editor->text();
  request.sourceName = editor->filePath();
  request.time = timeRun_->isChecked();
  request.sanitize = sanitizeRun_->isChecked();
  // Without a GPU the evaluator compiles for the architecture chosen in Settings.
  if (gpuProbed_ && !gpuPresent_) request.arch = settings::compileOnlyArch();
  if (!evaluation_->run(request)) return false;

  editor->clearDiagnostics();
  runEditor_ = editor;
  results_->showRunning(taskName_, editor->filePath());
  resultsDock_->show();
  shownHistoryId_ = 0;
  runProgress_->setValue(0);
  runProgress_->setFormat(tr("Starting %p%"));
  runProgress_->show();
  log_->info(tr("Run %1 on task %2%3")
                 .arg(editor->fileName(), taskName_,
                      QString(request.time ? tr(", timing it once correct") : QString()) +
                          (request.sanitize ? tr(", then under compute-sanitizer") : QString())));
  updateActions();
  return true;
}

void MainWindow::cancelRun() {
  if (!evaluation_->isRunning() || evaluation_->isCancelling()) return;
  evaluation_->cancel();
  runProgress_->setFormat(tr("Cancelling…"));
  log_->info(tr("Cancelling the run…"));
  updateActions();
}

void MainWindow::onRunProgress(const EvaluationStep &step) {
  if (evaluation_->isCancelling()) return;
  runProgress_->setValue(static_cast<int>(step.fraction * 1000.0));
  const QString where = step.config.isEmpty() ? step.stage : step.stage + QStringLiteral(" ") + step.config;
  runProgress_->setFormat(where + QStringLiteral(" %p%"));
  runProgress_->setToolTip(step.text);
}

void MainWindow::onRunFinished(const EvaluationRun &run, const QString &source) {
  runProgress_->hide();
  context_->select({CandidateSelection::Origin::Run, run});
  showDiagnostics(run, source);

  const QString line = tr("Run %1: %2: %3")
                           .arg(QFileInfo(run.sourceName).fileName(), QLatin1String(kwb::toString(run.outcome)), run.message);
  if (run.outcome == kwb::Outcome::Correct || run.outcome == kwb::Outcome::NotRun ||
      run.outcome == kwb::Outcome::Cancelled) {
    log_->info(line);
  } else {
    log_->error(line);
  }
  statusBar()->showMessage(line, kStatusMessageMs);
  if (workspace_->isOpen()) workspace_->recordEvaluation(run, source);
  updateActions();
  emit runFinished(run);
  checkSettled();
}

void MainWindow::showDiagnostics(const EvaluationRun &run, const QString &source) {
  CudaEditor *editor = runEditor_.data();
  runEditor_.clear();
  // Edited while it ran: the lines may no longer match.
  if (!editor || editor->text() != source) return;
  const QString file = QFileInfo(run.sourceName).fileName();
  QList<EditorDiagnostic> diagnostics;
  if (run.result) {
    for (const kwb::Diagnostic &d : run.result->candidate.diagnostics) {
      // Diagnostics in other files (an included header) are listed in Results only.
      if (d.line <= 0 || (!d.file.empty() && QFileInfo(QString::fromStdString(d.file)).fileName() != file)) continue;
      EditorDiagnostic diagnostic;
      diagnostic.line = d.line;
      diagnostic.column = d.column;
      diagnostic.severity = severityOf(d.severity);
      diagnostic.message = QString::fromStdString(d.message);
      diagnostics.append(diagnostic);
    }
    // The sanitizer's findings in this file, on the lines they name.
    if (run.result->sanitize) {
      for (const kwb::SanitizerReport &report : run.result->sanitize->reports)
        for (const kwb::SanitizerFinding &f : report.findings) {
          if (f.origin != kwb::SanitizerOrigin::Candidate) continue;
          for (const kwb::SanitizerLocation &l : f.locations) {
            if (l.line <= 0 || QFileInfo(QString::fromStdString(l.file)).fileName() != file) continue;
            EditorDiagnostic diagnostic;
            diagnostic.line = l.line;
            diagnostic.severity = f.warning ? EditorDiagnostic::Severity::Warning : EditorDiagnostic::Severity::Error;
            diagnostic.message = QStringLiteral("%1: %2").arg(QLatin1String(kwb::sanitizerToolName(f.tool)),
                                                              QString::fromStdString(f.what));
            if (f.hazards) diagnostic.message += tr(" (%1 hazards)").arg(f.hazards);
            diagnostics.append(diagnostic);
          }
        }
    }
  }
  editor->showDiagnostics(diagnostics);
}

}  // namespace kwb::ui
