#pragma once
// The Tasks panel: the task tree with a filter field. Folders are scanned off the GUI thread, one
// scan at a time: asking for a group while a scan runs queues it for the next scan, and a group's
// result is used only when nothing newer was asked for it meanwhile. Rows are updated in place
// and the selection and the rows the user collapsed are kept across scans.
#include <array>

#include <QFutureWatcher>
#include <QList>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "ui/models/task_tree_model.h"

class QLineEdit;
class QSortFilterProxyModel;
class QTreeView;

namespace kwb::ui {

class TaskBrowser : public QWidget {
  Q_OBJECT

 public:
  using Group = TaskTreeModel::Group;

  explicit TaskBrowser(QWidget *parent = nullptr);
  ~TaskBrowser() override;

  TaskTreeModel *model() const { return model_; }
  QTreeView *view() const { return view_; }
  QLineEdit *filterField() const { return filter_; }

  // Each of these rescans its own group only.
  // dir: the kernels folder (empty: none was found); chosenInSettings: it is the user's override.
  void setBundledDir(const QString &dir, bool chosenInSettings);
  void setRecent(const QStringList &folders);
  void setOpenedFolders(const QStringList &folders);
  // The workspace's tasks; the scan only checks that their folders still exist. An empty list
  // clears the group at once (and drops any scan of it still running).
  void setWorkspaceTasks(const QList<TaskItem> &tasks);
  // Scans every group again (F5).
  void rescanAll();
  // A scan runs or is queued.
  bool isScanning() const { return running_ != 0 || pending_ != 0; }

  void setCurrentTask(const QString &folder);

  // What a scan reads, copied to the scanning thread.
  struct Sources {
    QString bundledDir;
    bool bundledChosenInSettings = false;
    QStringList recent;
    QStringList openedFolders;
    QList<TaskItem> workspace;
  };
  struct ScanResult {
    QList<TaskItem> bundled;
    QString bundledProblem;  // why Bundled is empty: no kernels folder, or it cannot be read
    QList<TaskItem> recent;
    QList<TaskFolderItem> opened;
    QList<TaskItem> workspace;
  };
  // Scans the groups whose bits (1 << Group) are set; runs on a worker thread.
  static ScanResult scan(const Sources &sources, int groups);
  // Lists the tasks in folder (itself and its immediate subfolders), or says why there are none.
  static TaskFolderItem scanFolder(const QString &folder);
  // The one wording for "this folder holds no task", in the tree and in the log.
  static QString noTaskMessage();

 signals:
  void taskActivated(const QString &folder);
  // A scan ended and its results are in the model (see isScanning() for whether more follow).
  void scanFinished();
  // The Opened folders group was rescanned; folders as found.
  void openedFoldersScanned(const QList<kwb::ui::TaskFolderItem> &folders);
  // The Bundled group cannot be filled (said once per distinct problem).
  void problemFound(const QString &message);
  // Context menu requests; the window owns the lists.
  void removeFromListRequested(kwb::ui::TaskTreeModel::Group group, const QString &folder);
  void clearRecentRequested();

 private:
  static constexpr int bit(Group group) { return 1 << static_cast<int>(group); }
  void schedule(int groups);
  void startScan();
  void onScanDone();
  void activate(const QModelIndex &proxyIndex);
  void showContextMenu(const QPoint &pos);
  void applyExpansion(const QModelIndex &proxyIndex);
  void restoreSelection(const QString &key);

  TaskTreeModel *model_ = nullptr;
  QSortFilterProxyModel *proxy_ = nullptr;
  QTreeView *view_ = nullptr;
  QLineEdit *filter_ = nullptr;

  Sources sources_;
  QFutureWatcher<ScanResult> watcher_;
  int running_ = 0;  // groups the running scan covers
  int pending_ = 0;  // groups asked for since it started
  std::array<quint64, 4> generation_{};      // bumped by every request for a group
  std::array<quint64, 4> scanGeneration_{};  // generation_ when the running scan started
  QString bundledProblem_;
  QSet<QString> collapsed_;  // KeyRole of rows the user collapsed
};

}  // namespace kwb::ui
