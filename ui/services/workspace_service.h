#pragma once
// The workspace (one SQLite file) behind a queue: a QObject on the GUI thread whose requests run
// in order on a thread of its own, with results coming back as signals. The GUI never touches
// SQLite; a slow disk or a locked file only delays these signals.
#include <memory>

#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>

#include "core/memory/experience_store.h"
#include "core/store/workspace.h"
#include "ui/models/evaluation_run.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

// A task as the workspace lists it.
struct WorkspaceTask {
  QString name;
  QString folder;
  QString lastOpenedAt;  // ISO 8601, UTC
};

class WorkspaceService : public QObject {
  Q_OBJECT

 public:
  explicit WorkspaceService(QObject *parent = nullptr);
  ~WorkspaceService() override;

  // Closes any open workspace, then opens (creating or migrating) the file at path.
  // Answers with opened() or openFailed(), then tasksListed() on success. Answers to requests
  // made before this call are dropped: they belong to the workspace being replaced.
  void open(const QString &path);
  // Records that a task was opened. Answers with tasksListed(); does nothing when no workspace
  // is open (the failed open was already reported).
  void recordTaskOpened(const QString &name, const QString &folder, const QString &manifestHash);
  void listTasks();

  // Stores a finished run and the source it evaluated, in one transaction (recording the task
  // first when the workspace does not know its folder yet). Answers with evaluationRecorded()
  // and then evaluationsListed() for the run's task.
  void recordEvaluation(const kwb::ui::EvaluationRun &run, const QString &source);
  // The task's runs, newest first, without their results. Answers with evaluationsListed().
  void listEvaluations(const QString &taskFolder);
  // One run with its result and source. Answers with evaluationFetched().
  void fetchEvaluation(qint64 historyId);
  // The run a Case of the experience memory was made from, when it is a run of this workspace (an
  // editor run or a session's candidate), with its result. Answers with caseEvaluationFetched()
  // (found false for a Case of another workspace or source, or a run no longer there).
  void fetchEvaluationOfCase(const kwb::memory::Case &c);

  bool isOpen() const { return open_; }
  // True while requests are queued or running.
  bool isBusy() const { return pending_ > 0; }

 signals:
  void opened(const QString &path, int schemaVersion);
  void openFailed(const QString &path, const QString &message);
  void tasksListed(const QList<kwb::ui::WorkspaceTask> &tasks);
  void evaluationRecorded(const kwb::ui::EvaluationRun &run);
  void evaluationsListed(const QString &taskFolder, const QList<kwb::ui::EvaluationRun> &runs);
  void evaluationFetched(const kwb::ui::EvaluationRun &run, const QString &source);
  void caseEvaluationFetched(qint64 caseId, bool found, const kwb::ui::EvaluationRun &run);
  void error(const QString &message);
  // Every queued request has been answered.
  void idle();

 private:
  // Runs job on the workspace thread; the function it returns runs back on this object's thread,
  // unless open() was called in between.
  template <typename Job>
  void post(Job job);
  void finishRequest();

  BackgroundJobs *jobs_ = nullptr;
  // Only ever used on the jobs' thread, so SQLite opens and closes there.
  std::shared_ptr<std::unique_ptr<kwb::Workspace>> workspace_;
  quint64 generation_ = 0;      // bumped by open()
  bool open_ = false;
  int pending_ = 0;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::WorkspaceTask)
