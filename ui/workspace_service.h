#pragma once
// The workspace (one SQLite file) behind a queue: a QObject on the GUI thread whose requests run
// in order on a thread of its own, with results coming back as signals. The GUI never touches
// SQLite; a slow disk or a locked file only delays these signals.
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QThread>

namespace kwb::ui {

// A task as the workspace records it.
struct WorkspaceTask {
  qint64 id = 0;
  QString name;
  QString folder;
  QString manifestHash;
  QString addedAt;
  QString lastOpenedAt;
};

class WorkspaceService : public QObject {
  Q_OBJECT

 public:
  explicit WorkspaceService(QObject *parent = nullptr);
  ~WorkspaceService() override;

  // Closes any open workspace, then opens (creating or migrating) the file at path.
  // Answers with opened() or openFailed(), then tasksListed() on success.
  void open(const QString &path);
  // Records that a task was opened. Answers with taskRecorded() then tasksListed(); does nothing
  // when no workspace is open (the failed open was already reported).
  void recordTaskOpened(const QString &name, const QString &folder, const QString &manifestHash);
  void listTasks();

  bool isOpen() const { return open_; }
  const QString &path() const { return path_; }
  // True while requests are queued or running.
  bool isBusy() const { return pending_ > 0; }

 signals:
  void opened(const QString &path, int schemaVersion);
  void openFailed(const QString &path, const QString &message);
  void taskRecorded(const kwb::ui::WorkspaceTask &task);
  void tasksListed(const QList<kwb::ui::WorkspaceTask> &tasks);
  void error(const QString &message);
  // Every queued request has been answered.
  void idle();

 private:
  class Backend;
  // Runs job on the workspace thread; its result handler runs back on this object's thread.
  template <typename Job>
  void post(Job job);
  void finishRequest();

  QThread thread_;
  Backend *backend_ = nullptr;  // lives on thread_
  QString path_;
  bool open_ = false;
  int pending_ = 0;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::WorkspaceTask)
