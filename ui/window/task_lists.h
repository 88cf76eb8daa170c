#pragma once
// The Tasks panel's lists, for the window: Recent (and File ▸ Recent Tasks), the folders opened
// with Open Task Folder… (scanned, then their task opened, or what was found said), and the
// Bundled group's folder (Settings may move it). Written to the settings unless the window is a
// read-only one.
#include <QObject>
#include <QStringList>

#include "ui/models/task_tree_model.h"

class QAction;
class QDockWidget;
class QMenu;

namespace kwb::ui {

class LogPanel;
class TaskBrowser;

struct TaskListParts {
  TaskBrowser *browser = nullptr;
  LogPanel *log = nullptr;
  QDockWidget *dock = nullptr;      // the Tasks dock, brought forward when a folder holds several
  QMenu *recentMenu = nullptr;      // File ▸ Recent Tasks
  QAction *clearRecent = nullptr;
};

class TaskLists : public QObject {
  Q_OBJECT

 public:
  TaskLists(const TaskListParts &parts, bool writeSettings, QObject *parent);

  // Lists `folder` under "Opened folders" and scans it; then opens its task when it is a task
  // folder or holds exactly one, and says what it found otherwise (folderOpened()).
  void openFolder(const QString &folder);
  // A folder under "Opened folders" (imports put their tasks there).
  void addFolder(const QString &folder);
  void addRecent(const QString &taskFolder);
  void clearRecent();
  // The Bundled group's folder, read again from the settings; `force`: told even when unchanged.
  void updateBundled(bool force);
  QString bundledDir() const { return bundledDir_; }

 signals:
  void openTaskRequested(const QString &taskFolder);
  void folderOpened(const QString &folder, int taskCount);

 private:
  void setRecent(const QStringList &recent);
  void setFolders(const QStringList &folders);
  void remove(TaskTreeModel::Group group, const QString &folder);
  void rebuildRecentMenu();
  void onScanned(const QList<TaskFolderItem> &folders);

  TaskListParts p_;
  bool write_;
  QString bundledDir_;
  bool bundledChosen_ = false;
  QStringList recent_, folders_;
  QStringList waiting_;  // openFolder() waits for these folders' scans
};

}  // namespace kwb::ui
