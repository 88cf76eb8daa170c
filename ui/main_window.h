#pragma once
// The one main window: editor tabs in the centre, Tasks on the left, Log at the bottom, GPU and
// workspace state in the status bar. Slow work (GPU probe, folder scans, the workspace database)
// runs off the GUI thread and reports back through signals.
#include <QMainWindow>
#include <QString>

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QStackedWidget;

namespace kwb {
class ManifestError;
struct GpuInventory;
}  // namespace kwb

namespace kwb::ui {

class CudaEditor;
class EditorTabs;
class GpuStatusLabel;
class LogPanel;
class TaskBrowser;
class WorkspaceService;
struct WorkspaceTask;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  // workspacePath: the workspace file to use; empty means the one in Settings, else the default
  // (userDataDir()/workspace.kwb).
  explicit MainWindow(const QString &workspacePath = QString(), QWidget *parent = nullptr);
  ~MainWindow() override;

  // Loads the task in folder (or the task.toml it names) and opens its sources. On a manifest
  // error: logs it, shows the manifest with the line marked, and returns false.
  bool openTask(const QString &folder);
  // What "Open Task Folder…" does with the chosen folder: lists it under "Opened folders", and
  // opens its task when it is a task folder or holds exactly one.
  void openFolder(const QString &folder);
  const QString &currentTaskFolder() const { return taskFolder_; }
  const QString &currentTaskName() const { return taskName_; }

  LogPanel *log() const { return log_; }
  EditorTabs *editors() const { return tabs_; }
  CudaEditor *currentEditor() const;
  TaskBrowser *taskBrowser() const { return browser_; }
  WorkspaceService *workspace() const { return workspace_; }

  QString gpuStatusText() const;
  QString workspaceStatusText() const;
  const QString &workspacePath() const { return workspacePath_; }

  bool isGpuProbeFinished() const { return gpuProbed_; }
  bool isWorkspaceOpenFinished() const { return workspaceSettled_; }
  // Nothing is running in the background: GPU probe done, workspace answered, scans done.
  bool isSettled() const;

  QAction *openAction() const { return open_; }
  QAction *saveAction() const { return save_; }
  QAction *closeTabAction() const { return closeTab_; }
  QAction *reloadAction() const { return reload_; }
  QAction *settingsAction() const { return settings_; }

  // Stores geometry and dock layout in QSettings (also done on close).
  void saveWindowState();

 signals:
  void gpuProbeFinished();
  void workspaceOpenFinished(bool ok);
  void taskOpened(const QString &folder);
  // Emitted whenever background work drains (see isSettled()).
  void settled();

 protected:
  void closeEvent(QCloseEvent *event) override;

 private:
  void createActions();
  void createMenus();
  void createDocks();
  void createStatusBar();
  void restoreWindowState();
  void startGpuProbe();
  void openWorkspace(const QString &path);
  void reloadTaskSources();
  void showManifestError(const QString &manifestPath, const kwb::ManifestError &error);
  void openTaskFolderDialog();
  void saveCurrent();
  void showSettings();
  void applySettings();
  void showAbout();
  void updateTitle();
  void updateActions();
  void updateRecentMenu();
  void onGpuInventory(const kwb::GpuInventory &inventory);
  void onWorkspaceTasks(const QList<WorkspaceTask> &tasks);
  void onFileSaved(const QString &path);
  void checkSettled();

  EditorTabs *tabs_ = nullptr;
  QStackedWidget *centre_ = nullptr;
  QWidget *placeholder_ = nullptr;
  TaskBrowser *browser_ = nullptr;
  LogPanel *log_ = nullptr;
  QDockWidget *tasksDock_ = nullptr;
  QDockWidget *logDock_ = nullptr;
  GpuStatusLabel *gpuLabel_ = nullptr;
  QLabel *workspaceLabel_ = nullptr;
  WorkspaceService *workspace_ = nullptr;

  QAction *open_ = nullptr;
  QAction *save_ = nullptr;
  QAction *closeTab_ = nullptr;
  QAction *reload_ = nullptr;
  QAction *settings_ = nullptr;
  QAction *quit_ = nullptr;
  QAction *focusTasks_ = nullptr;
  QAction *focusLog_ = nullptr;
  QAction *nextTab_ = nullptr;
  QAction *previousTab_ = nullptr;
  QAction *about_ = nullptr;
  QAction *aboutQt_ = nullptr;
  QMenu *recentMenu_ = nullptr;
  QMenu *viewMenu_ = nullptr;

  QString workspacePath_;
  QString settingsWorkspacePath_;  // the Settings value, to notice when the user changes it
  QString taskFolder_;
  QString taskName_;
  bool gpuProbed_ = false;
  bool workspaceSettled_ = false;
};

}  // namespace kwb::ui
