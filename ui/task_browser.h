#pragma once
// The Tasks panel: the task tree with a filter field. Folders are scanned off the GUI thread;
// a newer scan silently replaces an older one still running.
#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "ui/models/task_tree_model.h"

class QLineEdit;
class QSortFilterProxyModel;
class QTreeView;

namespace kwb::ui {

struct TaskSources {
  QString bundledDir;         // empty: no bundled tasks
  QStringList recent;         // task folders, most recent first
  QStringList openedFolders;  // folders holding one or more tasks
};

class TaskBrowser : public QWidget {
  Q_OBJECT

 public:
  explicit TaskBrowser(QWidget *parent = nullptr);

  TaskTreeModel *model() const { return model_; }
  QTreeView *view() const { return view_; }

  // Rescans everything from these sources.
  void setSources(const TaskSources &sources);
  const TaskSources &sources() const { return sources_; }
  void reload();
  bool isScanning() const { return scanning_; }

  void setWorkspaceTasks(const QList<TaskItem> &tasks);
  void setCurrentTask(const QString &folder);

  // Scans the sources; runs on a worker thread.
  struct ScanResult {
    QList<TaskItem> bundled;
    QList<TaskItem> recent;
    QList<TaskFolderItem> opened;
  };
  static ScanResult scan(const TaskSources &sources);

 signals:
  void taskActivated(const QString &folder);
  void scanFinished();

 private:
  void activate(const QModelIndex &proxyIndex);
  void showContextMenu(const QPoint &pos);

  TaskTreeModel *model_ = nullptr;
  QSortFilterProxyModel *proxy_ = nullptr;
  QTreeView *view_ = nullptr;
  QLineEdit *filter_ = nullptr;
  TaskSources sources_;
  bool scanning_ = false;
  quint64 generation_ = 0;
};

}  // namespace kwb::ui
