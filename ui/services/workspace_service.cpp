#include "ui/services/workspace_service.h"

#include "core/memory/case_sources.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
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

constexpr std::size_t kHistoryLength = 200;  // runs listed per task

EvaluationRun fromRecord(const kwb::EvaluationRecord &record, const QString &taskFolder) {
  EvaluationRun run;
  run.historyId = record.id;
  run.taskName = QString::fromStdString(record.taskName);
  run.taskFolder = taskFolder;
  run.sourceName = QString::fromStdString(record.sourceName);
  run.startedAt = QString::fromStdString(record.startedAt);
  run.finishedAt = QString::fromStdString(record.finishedAt);
  run.outcome = kwb::parseOutcome(record.outcome).value_or(kwb::Outcome::Error);
  run.message = QString::fromStdString(record.message);
  run.arch = QString::fromStdString(record.arch);
  run.device = QString::fromStdString(record.device);
  return run;
}

QList<EvaluationRun> runsOf(kwb::Workspace &workspace, const QString &taskFolder) {
  QList<EvaluationRun> runs;
  const auto task = workspace.taskByFolder(taskFolder.toStdString());
  if (!task) return runs;
  for (const auto &record : workspace.evaluations(task->id, kHistoryLength)) runs.append(fromRecord(record, taskFolder));
  return runs;
}

std::string folderOfTask(kwb::Workspace &workspace, std::int64_t taskId) {
  for (const auto &task : workspace.tasks())
    if (task.id == taskId) return task.folder;
  return {};
}

}  // namespace

WorkspaceService::WorkspaceService(QObject *parent)
    : QObject(parent),
      jobs_(new BackgroundJobs(QStringLiteral("workspace"), this)),
      workspace_(std::make_shared<std::unique_ptr<kwb::Workspace>>()) {
  qRegisterMetaType<kwb::ui::WorkspaceTask>();
  qRegisterMetaType<QList<kwb::ui::WorkspaceTask>>();
  qRegisterMetaType<kwb::ui::EvaluationRun>();
  qRegisterMetaType<QList<kwb::ui::EvaluationRun>>();
}

WorkspaceService::~WorkspaceService() {
  // Behind any queued requests: they finish, then the workspace closes on its own thread.
  jobs_->post([workspace = workspace_] { workspace->reset(); });
  delete jobs_;
}

template <typename Job>
void WorkspaceService::post(Job job) {
  ++pending_;
  const quint64 generation = generation_;
  // Of no kind: every request runs, in order (writes must not be dropped), and is answered.
  jobs_->run(
      this, QString(),
      [workspace = workspace_, job = std::move(job)](const JobTicket &) mutable {
        // job(workspace) returns a function to run back on the GUI thread.
        return job(*workspace);
      },
      [this, generation](std::function<void()> deliver) {
        if (generation == generation_) deliver();  // else: about a workspace since replaced
        finishRequest();
      });
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

void WorkspaceService::recordEvaluation(const EvaluationRun &run, const QString &source) {
  post([this, run, source](std::unique_ptr<kwb::Workspace> &workspace) -> std::function<void()> {
    if (!workspace) return [] {};
    try {
      kwb::EvaluationRecord record;
      record.taskName = run.taskName.toStdString();
      record.sourceName = run.sourceName.toStdString();
      record.startedAt = run.startedAt.toStdString();
      record.finishedAt = run.finishedAt.toStdString();
      record.outcome = kwb::toString(run.outcome);
      record.message = run.message.toStdString();
      record.arch = run.arch.toStdString();
      record.device = run.device.toStdString();
      record.resultJson = run.result ? kwb::evaluationResultText(*run.result) : std::string();
      const std::string folder = run.taskFolder.toStdString();
      kwb::EvaluationRecord stored;
      workspace->database().transaction([&] {
        auto task = workspace->taskByFolder(folder);
        record.taskId = task ? task->id : workspace->recordTaskOpened(record.taskName, folder, "").id;
        stored = workspace->addEvaluation(record, source.toStdString());
      });
      EvaluationRun saved = run;
      saved.historyId = stored.id;
      saved.startedAt = QString::fromStdString(stored.startedAt);
      saved.finishedAt = QString::fromStdString(stored.finishedAt);
      const QList<EvaluationRun> runs = runsOf(*workspace, run.taskFolder);
      // The run is experience too: a Case in the user's memory (and anything not recorded yet,
      // such as a session's candidates).
      QString memoryProblem;
      try {
        auto memory = kwb::memory::ExperienceStore::open();
        kwb::memory::syncWorkspace(*memory, *workspace);
      } catch (const std::exception &e) {
        memoryProblem = tr("Experience memory: the run of %1 is stored in the workspace, not in the memory: %2")
                            .arg(run.taskName, QString::fromStdString(e.what()));
      }
      return [this, saved, runs, memoryProblem] {
        emit evaluationRecorded(saved);
        emit evaluationsListed(saved.taskFolder, runs);
        if (!memoryProblem.isEmpty()) emit error(memoryProblem);
      };
    } catch (const std::exception &e) {
      const QString message = tr("Workspace: could not store the run of %1: %2")
                                  .arg(run.taskName, QString::fromStdString(e.what()));
      return [this, message] { emit error(message); };
    }
  });
}

void WorkspaceService::listEvaluations(const QString &taskFolder) {
  post([this, taskFolder](std::unique_ptr<kwb::Workspace> &workspace) -> std::function<void()> {
    if (!workspace) return [] {};
    try {
      const QList<EvaluationRun> runs = runsOf(*workspace, taskFolder);
      return [this, taskFolder, runs] { emit evaluationsListed(taskFolder, runs); };
    } catch (const std::exception &e) {
      const QString message =
          tr("Workspace: could not list the runs of %1: %2").arg(taskFolder, QString::fromStdString(e.what()));
      return [this, message] { emit error(message); };
    }
  });
}

namespace {

// A run with its result (a result that does not parse is shown as what it is rather than dropped)
// and its source; none when the run is gone.
std::optional<std::pair<EvaluationRun, QString>> fullRun(kwb::Workspace &workspace, qint64 historyId) {
  const auto record = workspace.evaluation(historyId);
  if (!record) return std::nullopt;
  EvaluationRun run = fromRecord(*record, QString::fromStdString(folderOfTask(workspace, record->taskId)));
  run.result = kwb::parseEvaluationResult(record->resultJson);
  return std::make_pair(run, QString::fromStdString(workspace.source(record->sourceHash).value_or(std::string())));
}

}  // namespace

void WorkspaceService::fetchEvaluation(qint64 historyId) {
  post([this, historyId](std::unique_ptr<kwb::Workspace> &workspace) -> std::function<void()> {
    if (!workspace) return [] {};
    try {
      const auto found = fullRun(*workspace, historyId);
      if (!found) {
        const QString message = tr("Workspace: run %1 is no longer there").arg(historyId);
        return [this, message] { emit error(message); };
      }
      return [this, found] { emit evaluationFetched(found->first, found->second); };
    } catch (const std::exception &e) {
      const QString message =
          tr("Workspace: could not read run %1: %2").arg(historyId).arg(QString::fromStdString(e.what()));
      return [this, message] { emit error(message); };
    }
  });
}

void WorkspaceService::fetchEvaluationOfCase(const kwb::memory::Case &c) {
  kwb::memory::Case ref;  // what identifies its run, without the code
  ref.id = c.id;
  ref.source = c.source;
  ref.sourceRef = c.sourceRef;
  post([this, ref](std::unique_ptr<kwb::Workspace> &workspace) -> std::function<void()> {
    const qint64 caseId = ref.id;
    std::optional<std::pair<EvaluationRun, QString>> found;
    try {
      if (workspace)
        if (const auto id = kwb::memory::evaluationOfCase(ref, kwb::memory::workspaceKey(*workspace)))
          found = fullRun(*workspace, *id);
    } catch (const std::exception &) {
      // A workspace without an id, or a read that failed: the Case's own summary stands.
    }
    if (!found) return [this, caseId] { emit caseEvaluationFetched(caseId, false, EvaluationRun()); };
    return [this, caseId, run = found->first] { emit caseEvaluationFetched(caseId, true, run); };
  });
}

}  // namespace kwb::ui
