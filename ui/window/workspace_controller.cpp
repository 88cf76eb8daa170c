#include "ui/window/workspace_controller.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QLabel>

#include "ui/filesystem_path.h"
#include "ui/services/selection_runs.h"
#include "ui/services/workspace_service.h"
#include "ui/views/history_panel.h"
#include "ui/views/log_panel.h"
#include "ui/views/results_panel.h"
#include "ui/views/task_browser.h"

namespace kwb::ui {

namespace {

QString readableTime(const QString &isoUtc) {
  const QDateTime time = QDateTime::fromString(isoUtc, Qt::ISODate);
  return time.isValid() ? time.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")) : isoUtc;
}

}  // namespace

WorkspaceController::WorkspaceController(const WorkspaceParts &parts, QObject *parent) : QObject(parent), p_(parts) {
  connect(p_.workspace, &WorkspaceService::opened, this, [this](const QString &path, int version) {
    p_.label->setText(tr("Workspace: %1").arg(QFileInfo(path).fileName()));
    p_.label->setToolTip(tr("%1\nSchema version %2").arg(QDir::toNativeSeparators(path)).arg(version));
    p_.label->setStyleSheet(QString());
    p_.log->info(tr("Workspace %1 open (schema version %2)").arg(QDir::toNativeSeparators(path)).arg(version));
    if (!taskFolder_.isEmpty()) p_.workspace->listEvaluations(taskFolder_);
    settled_ = true;
    emit openFinished(true);
  });
  connect(p_.workspace, &WorkspaceService::openFailed, this, [this](const QString &path, const QString &message) {
    p_.browser->setWorkspaceTasks({});
    p_.label->setText(tr("Workspace: unavailable"));
    p_.label->setToolTip(tr("%1\n%2").arg(QDir::toNativeSeparators(path), message));
    p_.label->setStyleSheet(QStringLiteral("color: #b91c1c;"));
    p_.log->error(tr("Workspace %1 could not be opened: %2. The workbench runs without it; opened tasks are not "
                     "recorded. Choose another file in Settings ▸ General.")
                      .arg(QDir::toNativeSeparators(path), message));
    settled_ = true;
    emit failed(tr("Workspace unavailable: %1").arg(message));
    emit openFinished(false);
  });
  connect(p_.workspace, &WorkspaceService::tasksListed, this, &WorkspaceController::onTasks);
  connect(p_.workspace, &WorkspaceService::error, p_.log, &LogPanel::error);
  connect(p_.workspace, &WorkspaceService::evaluationRecorded, this, [this](const EvaluationRun &run) {
    if (p_.results->run().startedAt == run.startedAt && p_.results->run().sourceName == run.sourceName &&
        !p_.results->isFromHistory())
      shownId_ = run.historyId;
    emit runRecorded(run);
  });
  connect(p_.workspace, &WorkspaceService::evaluationsListed, this,
          [this](const QString &folder, const QList<EvaluationRun> &runs) { p_.history->setRuns(folder, runs, shownId_); });
  connect(p_.history, &HistoryPanel::runActivated, p_.selectionRuns, &SelectionRuns::fetchStored);
  connect(p_.selectionRuns, &SelectionRuns::storedRunSelected, this, [this](const EvaluationRun &run) {
    shownId_ = run.historyId;
    emit historyRunShown(run);
  });
}

void WorkspaceController::open(const QString &path) {
  path_ = path;
  settled_ = false;
  // The group shows this workspace's tasks once it answers, never the previous one's.
  p_.browser->setWorkspaceTasks({});
  p_.label->setText(tr("Workspace: opening…"));
  p_.label->setToolTip(QDir::toNativeSeparators(path));
  p_.workspace->open(path);
}

void WorkspaceController::showHistory(const QString &taskFolder) {
  if (taskFolder != taskFolder_) shownId_ = 0;
  taskFolder_ = taskFolder;
  if (settled_ && !taskFolder.isEmpty()) p_.workspace->listEvaluations(taskFolder);
}

QString WorkspaceController::statusText() const { return p_.label->text(); }

void WorkspaceController::onTasks(const QList<WorkspaceTask> &tasks) {
  QList<TaskItem> items;
  items.reserve(tasks.size());
  for (const WorkspaceTask &task : tasks) {
    TaskItem item;
    item.name = task.name;
    item.folder = normalizedPath(task.folder);
    item.note = tr("Last opened %1").arg(readableTime(task.lastOpenedAt));
    items.append(item);
  }
  p_.browser->setWorkspaceTasks(items);  // the scan marks tasks whose folder is gone
}

}  // namespace kwb::ui
