#pragma once
// The one main window: editor tabs in the centre, Tasks on the left, Results on the right, Log
// History and GPUs at the bottom, GPU figures, workspace and run progress in the status bar. Slow work runs
// elsewhere and reports back through signals: the GPU probe in a kwb-worker child process, folder
// scans on a thread pool, the workspace database and evaluations each on a thread of their own.
#include <QMainWindow>

#include "core/agent/session_store.h"
#include <QPointer>
#include <QString>
#include <QStringList>

#include "ui/views/profiler_panel.h"
#include "ui/models/task_tree_model.h"
#include "ui/services/gpu_gate.h"
#include "ui/window/workbench_actions.h"
#include "ui/window/workbench_shell.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QStackedWidget;

namespace kwb {
class ManifestError;
struct Task;
struct GpuInventory;
}  // namespace kwb

namespace kwb::ui {

class CudaEditor;
class DevicesPanel;
class LineagePanel;
class ExperiencePanel;
class MemoryService;
struct CaseDetail;
class ExportDialog;
class ExportService;
class ImportService;
class ImportDialog;
class HelpView;
struct ImportedProblem;
struct ImportProblemsOutcome;
class SkillLibraryService;
class SkillsPanel;
class EditorTabs;
class EvaluationService;
class TuningPanel;
class SourceViewPanel;
class ProfileService;
class TuningService;
class AgentService;
class SessionPanel;
class StartPage;
class WorkArea;
class FindBar;
class HistoryPanel;
class ResultsPanel;
class GpuProbe;
class GpuStatusLabel;
class LogPanel;
class TaskBrowser;
class WorkspaceService;
class WorkbenchContext;
class SelectionRuns;
class AgentController;
class DockLayout;
class RunController;
class GpuController;
class WorkspaceController;
class WindowDialogs;
class TaskLists;
struct WorkspaceTask;
struct EvaluationRun;
struct EvaluationStep;

class MainWindow : public QMainWindow, private WorkbenchShell {
  Q_OBJECT

 public:
  // ReadWrite: the normal window. ReadOnly reads the user's settings but writes none (no Recent
  // entry, no opened folder, no window layout) and starts from the default layout: what
  // --screenshot uses, so taking a picture leaves no trace and looks the same everywhere.
  enum class SettingsMode { ReadWrite, ReadOnly };

  // workspacePath: the workspace file to use (relative: to the current folder); empty means the
  // one in Settings, else the default (userDataDir()/workspace.kwb).
  explicit MainWindow(const QString &workspacePath = QString(),
                      SettingsMode settingsMode = SettingsMode::ReadWrite, QWidget *parent = nullptr);
  ~MainWindow() override;

  // Loads the task in folder (or the task.toml it names) and opens its sources; files already
  // open and unmodified are read again from disk. On a manifest error: logs it, shows the
  // manifest with the line marked, and returns false.
  bool openTask(const QString &folder);
  // What "Open Task Folder…" does with the chosen folder: lists it under "Opened folders" and
  // scans it (off this thread); then opens its task when it is a task folder or holds exactly
  // one, and says what it found otherwise. folderOpened() tells when that is done.
  void openFolder(const QString &folder);
  const QString &currentTaskFolder() const { return taskFolder_; }
  const QString &currentTaskName() const { return taskName_; }

  LogPanel *log() const { return log_; }
  CudaEditor *currentEditor() const;
  // The parts the screenshot driver (--screenshot ... --then) shows; tests find any part by its
  // type or object name (tests/ui/window_parts.h).
  // The centre: the editor and the big views (session, library, experience, profiler) as pages.
  WorkArea *workArea() const { return workArea_; }
  LineagePanel *lineagePanel() const { return lineagePanel_; }
  SkillsPanel *skillsPanel() const { return skillsPanel_; }
  SkillLibraryService *skillLibrary() const { return skills_; }
  ExperiencePanel *experiencePanel() const { return experiencePanel_; }
  MemoryService *memory() const { return memory_; }
  // "Continue from here" in the Experience view: the Case's kernel written to a file of its own
  // (userDataDir()/memory/TASK-case-N.cu) and opened in the editor, its task opened first when it
  // is a bundled one; with `optimize`, then Optimize on it. False, saying why in the log, when the
  // Case's task is not open and cannot be found.
  bool continueFromCase(const CaseDetail &detail, bool optimize);
  ProfilerPanel *profilerPanel() const { return profiler_; }
  // Profiles the kernel in the editor (or the starter) on the task's first configuration.
  bool profileCurrent();
  // File ▸ Export Kernel…: the selected run of the history (or a Case's run), else the editor's
  // kernel; the dialog is returned (it deletes itself when closed); nullptr without a task.
  ExportDialog *showExportDialog();
  // File ▸ Import PyTorch Modules or KernelBench Problems…: the import dialog (one at a time; it
  // deletes itself when closed). The log lists what was made, refused and why; the folder the
  // tasks went into joins the opened folders; Open Task opens one.
  ImportDialog *showImportDialog();
  // Help ▸ User Guide (F1): the guide's window (one; it deletes itself when closed), at `chapter`
  // ("06-the-window.md") when one is named.
  HelpView *showUserGuide(const QString &chapter = QString());
  // A session candidate's code written to the session's folder (userDataDir()/sessions/ID/NAME)
  // and opened in the editor; false (and why, in the log) when it cannot be.
  bool openCodeInEditor(const QString &folder, const QString &source, const QString &name);
  bool openSessionCandidate(const QString &source, const QString &name);
  // Shows the kernel in the editor (or the task's starter) beside its SASS/PTX; false without a task.
  bool showListing();
  // The open task, the selected candidate and the pinned baseline that the views follow.
  WorkbenchContext *context() const { return context_; }

  // Run: evaluates the current editor's text (the task's starter when the current tab is not a
  // CUDA source) against the open task, off this thread; diagnostics land in that editor, the
  // result in Results, and the run in the workspace's history. False when there is no task or
  // a run is already in progress.
  bool runCurrent();
  // Takes up the settings as they are now (what the Settings dialog's Apply leads to): editor,
  // GPUs, workers, workspace.
  void applySettings();
  void cancelRun();
  bool isRunning() const;

  QString gpuStatusText() const;
  QString workspaceStatusText() const;
  QString workspacePath() const;

  bool isGpuProbeFinished() const;
  bool isWorkspaceOpenFinished() const;
  // Nothing is running in the background: GPU probe done, workspace answered, scans done.
  bool isSettled() const;
  // What has not settled yet, in words ("GPU probe", "workspace", "task scan"); empty when settled.
  QStringList pendingWork() const;
  // Before giving up on pendingWork(): kills the GPU probe's worker if it still runs. (Scans and
  // the workspace thread cannot be interrupted; they end with the process.)
  void cancelBackgroundWork();
  // Tunes the kernel in the editor (or the task's starter) with the built-in autotuner; false
  // when nothing can be tuned now (no task, or a run or tuning in progress). Optimize calls it
  // too when no LLM is configured, and says so.
  bool tuneCurrent();
  // Build lineage / De-optimize current kernel in the Lineage view (SkillLibraryService::
  // buildLineage): the open task's bundled lineage, or the editor's kernel taken apart by the
  // Optimize action's model. False, saying why in the view, when there is no task, lineage,
  // kernel or model, or something else holds the GPU's attention.
  bool buildLineageOfCurrentTask();
  // With an LLM configured: the session settings dialog (objectName "sessionSettingsDialog",
  // window-modal), whose Start runs startAgentSession(); else the tuner. False when neither can start.
  bool optimizeCurrent();

  // Stores geometry and dock layout in QSettings (also done on close); not in ReadOnly mode.
  void saveWindowState();
  // The window's actions (each also found by its object name).
  const WorkbenchActions &actions() const { return actions_; }

 signals:
  void gpuProbeFinished();
  void workspaceOpenFinished(bool ok);
  void taskOpened(const QString &folder);
  // openFolder() has scanned folder and done what it does with it; taskCount tasks were found.
  void folderOpened(const QString &folder, int taskCount);
  // Emitted whenever background work drains (see isSettled()).
  void settled();
  // A run ended (whatever its outcome) and is shown in Results.
  void runFinished(const kwb::ui::EvaluationRun &run);
  // A run is stored in the workspace (run.historyId set).
  void runRecorded(const kwb::ui::EvaluationRun &run);
  // A run chosen in History is shown in Results.
  void historyRunShown(const kwb::ui::EvaluationRun &run);

 protected:
  void closeEvent(QCloseEvent *event) override;
  void showEvent(QShowEvent *event) override;

 private:
  // WorkbenchShell: what the controllers ask of the window.
  QString taskFolder() const override { return taskFolder_; }
  QString taskName() const override { return taskName_; }
  QString workspaceFile() const override { return workspacePath(); }
  CudaEditor *kernelEditor() override { return editorToRun(); }
  CudaEditor *shownEditor() override { return currentEditor(); }
  GpuVerdict gate(GpuAction action) override { return verdict(action); }
  bool useDevice() const override;
  bool writesSettings() const override { return settingsMode_ == SettingsMode::ReadWrite; }
  void say(const QString &line) override;
  void actionsChanged() override { updateActions(); }
  void workEnded() override { checkSettled(); }
  void historyChanged() override;
  bool tuneKernel() override { return tuneCurrent(); }
  bool profileKernel() override { return profileCurrent(); }
  void showSettingsPage(const QString &page) override { showSettings(page); }
  bool openCandidate(const QString &source, const QString &name) override { return openSessionCandidate(source, name); }

  void createActions();
  void createMenus();
  void createStatusBar();
  void showBundledLineage(const kwb::Task &task);
  QString unmeasuredReason() const;
  void showManifestError(const QString &manifestPath, const kwb::ManifestError &error);
  void openTaskFolderDialog();
  void saveCurrent();
  // Settings, at `page` when given ("LLM providers").
  void showSettings(const QString &page = QString());
  void updateTitle();
  void updateActions();
  void onFileSaved(const QString &path);
  void checkSettled();
  CudaEditor *editorToRun();
  // A task is open with an editor to start from, and nothing runs that an agent session would disturb.
  // "Try on current kernel" in the Skills view: the card applied to the editor's kernel by the
  // Optimize action's model (SkillLibraryService::tryCard). False, saying why in the view, when
  // there is no task, kernel or model.
  // What the GPU gate (ui/services/gpu_gate.h) is told, and its answer for an action now.
  GpuState gpuState();
  GpuVerdict verdict(GpuAction action);

  SettingsMode settingsMode_ = SettingsMode::ReadWrite;

  EditorTabs *tabs_ = nullptr;
  FindBar *findBar_ = nullptr;
  QStackedWidget *centre_ = nullptr;  // the start page or the editor
  StartPage *startPage_ = nullptr;
  WorkArea *workArea_ = nullptr;
  QWidget *editorPage_ = nullptr;
  TaskBrowser *browser_ = nullptr;
  LogPanel *log_ = nullptr;
  DevicesPanel *devices_ = nullptr;
  QLabel *gpuSummaryLabel_ = nullptr;
  ResultsPanel *results_ = nullptr;
  WorkbenchContext *context_ = nullptr;
  SelectionRuns *selectionRuns_ = nullptr;
  HistoryPanel *history_ = nullptr;
  QProgressBar *runProgress_ = nullptr;
  EvaluationService *evaluation_ = nullptr;
  TuningService *tuning_ = nullptr;
  TuningPanel *tuningPanel_ = nullptr;
  AgentService *agent_ = nullptr;
  SessionPanel *sessionPanel_ = nullptr;
  SkillLibraryService *skills_ = nullptr;
  LineagePanel *lineagePanel_ = nullptr;
  SkillsPanel *skillsPanel_ = nullptr;
  MemoryService *memory_ = nullptr;
  ExperiencePanel *experiencePanel_ = nullptr;
  AgentController *agentWork_ = nullptr;
  DockLayout *docks_ = nullptr;
  RunController *runs_ = nullptr;
  GpuController *gpus_ = nullptr;
  WorkspaceController *workspaceWork_ = nullptr;
  WindowDialogs *dialogs_ = nullptr;
  TaskLists *lists_ = nullptr;  // Recent, opened folders, the Bundled group  // Export, Import, User Guide, About  // the workspace, its tasks and the History  // the probe, the GPUs dock, where the workers run  // Run, Tune, Profile, Show PTX/SASS  // Optimize, sessions, the Library's LLM and GPU jobs
  SourceViewPanel *sourceView_ = nullptr;
  ProfilerPanel *profiler_ = nullptr;
  ProfileService *profileService_ = nullptr;
  GpuStatusLabel *gpuLabel_ = nullptr;
  QLabel *workspaceLabel_ = nullptr;
  WorkspaceService *workspace_ = nullptr;

  ExportService *export_ = nullptr;
  ImportService *import_ = nullptr;
  WorkbenchActions actions_;
  void onTasksImported(const QString &folder, const QStringList &tasks);

  QString settingsWorkspacePath_;  // the Settings value, to notice when the user changes it
  QString taskFolder_;
  QString taskName_;
  QString starterPath_;             // the open task's starter source
};

}  // namespace kwb::ui
