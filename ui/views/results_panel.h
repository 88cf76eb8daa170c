#pragma once
// The Results panel: one run's outcome in a line, where and how it ran in another, and the
// result tree (EvaluationResultModel) below: compile, then each configuration with its seeds.
// It shows a live run as it ends and a run chosen in the History panel alike.
#include <QWidget>

#include "ui/models/evaluation_run.h"
#include "ui/workbench_context.h"

class QLabel;
class QTreeView;

namespace kwb::ui {

class EvaluationResultModel;

// A view of the workbench context: it shows the selected candidate's run.
class ResultsPanel : public QWidget, public WorkbenchView {
  Q_OBJECT

 public:
  explicit ResultsPanel(QWidget *parent = nullptr);

  void showRunning(const QString &taskName, const QString &sourceName);
  void showRun(const EvaluationRun &run, bool fromHistory);
  void clear();

  void onTaskChanged(const WorkbenchContext &context) override;
  void onSelectionChanged(const WorkbenchContext &context) override;

  // The headline and the details line, as shown.
  QString summaryText() const;
  const EvaluationRun &run() const { return run_; }
  bool isFromHistory() const { return fromHistory_; }
  EvaluationResultModel *model() const { return model_; }
  QTreeView *view() const { return view_; }
  // What the tree says in its place when the run shown has no rows ("" otherwise).
  QString emptyNote() const;

 private:
  bool eventFilter(QObject *watched, QEvent *event) override;
  void fitColumns();
  void setEmptyNote(const QString &text);
  void placeEmptyNote();

  bool fitting_ = false;
  QLabel *headline_ = nullptr;
  QLabel *details_ = nullptr;
  QTreeView *view_ = nullptr;
  QLabel *emptyNote_ = nullptr;
  EvaluationResultModel *model_ = nullptr;
  EvaluationRun run_;
  bool fromHistory_ = false;
};

}  // namespace kwb::ui
