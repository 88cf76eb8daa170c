#include "ui/workspace_service.h"

#include <functional>
#include <memory>
#include <stdexcept>

#include <QDir>
#include <QFileInfo>

#include "core/store/workspace.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

namespace {

WorkspaceTask fromRecord(const kwb::TaskRecord &record) {
  WorkspaceTask task;
  task.name = QString::fromStdString(record.name);
  task.folder = QString::fromStdString(record.folder);
  task.lastOpenedAt = QString::fromStdString(record.lastOpenedAt);
  return task;
}

QList<WorkspaceTask> fromRecords(const std::vector<kwb::TaskRecord> &records) {
  QList<WorkspaceTask> tasks;
  tasks.reserve(static_cast<qsizetype>(records.size()));
  for (const auto &record : records) tasks.append(fromRecord(record));
  return tasks;
}

}  // namespace

// Owns the Workspace; only ever used on the workspace thread.
class WorkspaceService::Backend : public QObject {
 public:
  std::unique_ptr<kwb::Workspace> workspace;
};

WorkspaceService::WorkspaceService(QObject *parent) : QObject(parent) {
  qRegisterMetaType<kwb::ui::WorkspaceTask>();
  qRegisterMetaType<QList<kwb::ui::WorkspaceTask>>();
  thread_.setObjectName(QStringLiteral("workspace"));
  backend_ = new Backend;
  backend_->moveToThread(&thread_);
  // Deleted on its own thread, after the last queued request, so SQLite closes there.
  connect(&thread_, &QThread::finished, backend_, &QObject::deleteLater);
  thread_.start();
}

WorkspaceService::~WorkspaceService() {
  // Posted behind any queued requests: they finish, then the workspace closes and the thread ends.
  Backend *backend = backend_;
  QMetaObject::invokeMethod(
      backend_,
      [backend] {
        backend->workspace.reset();
        QThread::currentThread()->quit();
      },
      Qt::QueuedConnection);
  thread_.wait();
}

template <typename Job>
void WorkspaceService::post(Job job) {
  ++pending_;
  Backend *backend = backend_;
  const quint64 generation = generation_;
  QMetaObject::invokeMethod(
      backend_,
      [this, backend, generation, job = std::move(job)]() mutable {
        // job(workspace) returns a function to run back on the GUI thread.
        auto deliver = job(backend->workspace);
        QMetaObject::invokeMethod(
            this,
            [this, generation, deliver = std::move(deliver)]() mutable {
              if (generation == generation_) deliver();  // else: about a workspace since replaced
              finishRequest();
            },
            Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
}

void WorkspaceService::finishRequest() {
  if (--pending_ == 0) emit idle();
}

void WorkspaceService::open(const QString &path) {
  ++generation_;
  open_ = false;
  post([this, path](std::unique_ptr<kwb::Workspace> &workspace) -> std::function<void()> {
    workspace.reset();
    try {
      // A workspace chosen in a folder that does not exist yet: make the folder.
      const QString parent = QFileInfo(path).absolutePath();
      if (!QDir().mkpath(parent)) {
        throw std::runtime_error(tr("cannot create the folder %1").arg(parent).toStdString());
      }
      workspace = kwb::Workspace::open(toFsPath(path));
      const int version = workspace->schemaVersion();
      const QList<WorkspaceTask> tasks = fromRecords(workspace->tasks());
      return [this, path, version, tasks] {
        open_ = true;
        emit opened(path, version);
        emit tasksListed(tasks);
      };
    } catch (const std::exception &e) {
      workspace.reset();
      const QString message = QString::fromStdString(e.what());
      return [this, path, message] {
        open_ = false;
        emit openFailed(path, message);
      };
    }
  });
}

void WorkspaceService::recordTaskOpened(const QString &name, const QString &folder,
                                        const QString &manifestHash) {
  post([this, name, folder,
        manifestHash](std::unique_ptr<kwb::Workspace> &workspace) -> std::function<void()> {
    if (!workspace) return [] {};
    try {
      workspace->recordTaskOpened(name.toStdString(), folder.toStdString(), manifestHash.toStdString());
      const QList<WorkspaceTask> tasks = fromRecords(workspace->tasks());
      return [this, tasks] { emit tasksListed(tasks); };
    } catch (const std::exception &e) {
      const QString message =
          tr("Workspace: could not record task %1: %2").arg(name, QString::fromStdString(e.what()));
      return [this, message] { emit error(message); };
    }
  });
}

void WorkspaceService::listTasks() {
  post([this](std::unique_ptr<kwb::Workspace> &workspace) -> std::function<void()> {
    if (!workspace) return [] {};
    try {
      const QList<WorkspaceTask> tasks = fromRecords(workspace->tasks());
      return [this, tasks] { emit tasksListed(tasks); };
    } catch (const std::exception &e) {
      const QString message = tr("Workspace: could not list tasks: %1").arg(QString::fromStdString(e.what()));
      return [this, message] { emit error(message); };
    }
  });
}

}  // namespace kwb::ui
