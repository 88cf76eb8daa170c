#pragma once
// The History panel: the current task's evaluation runs from the workspace, newest first.
// Choosing one asks for its result (runActivated), which the Results panel then shows.
#include <QWidget>

#include "ui/models/evaluation_run.h"
#include "ui/workbench_context.h"

class QLabel;
class QTreeView;

namespace kwb::ui {

class RunHistoryModel;

// A view of the workbench context: it lists the current task's runs.
class HistoryPanel : public QWidget, public WorkbenchView {
  Q_OBJECT

 public:
  explicit HistoryPanel(QWidget *parent = nullptr);

  // The task whose runs are listed; clears the list until setRuns() brings them.
  void setTask(const QString &taskFolder, const QString &taskName);
  const QString &taskFolder() const { return taskFolder_; }
  // Ignored unless taskFolder is the current task. selectId: the run to mark as shown (0: none);
  // marking it does not emit runActivated.
  void setRuns(const QString &taskFolder, const QList<EvaluationRun> &runs, qint64 selectId = 0);
  // Selects the run's row as the user would (runActivated follows); false when not listed.
  bool activateRun(qint64 historyId);

  void onTaskChanged(const WorkbenchContext &context) override;

  RunHistoryModel *model() const { return model_; }
  QTreeView *view() const { return view_; }

 signals:
  void runActivated(qint64 historyId);

 private:
  void updateHeading();

  QLabel *heading_ = nullptr;
  QTreeView *view_ = nullptr;
  RunHistoryModel *model_ = nullptr;
  QString taskFolder_;
  QString taskName_;
  bool quiet_ = false;  // selection changes made by setRuns() are not the user's
};

}  // namespace kwb::ui
