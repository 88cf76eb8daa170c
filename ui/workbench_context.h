#pragma once
// What the whole window is about, in one place: the task that is open, the candidate selected
// (a run fresh from the evaluator or from the history; next, a lineage step, a session's
// candidate or a node of the experience graph), and the baseline pinned to compare against.
// Views observe it and set it; the main window does not wire panels to each other. After
// RenderDoc's ICaptureViewer: every view implements the few callbacks it cares about and is
// added once with addView().
#include <optional>

#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>

#include "ui/models/evaluation_run.h"

namespace kwb::ui {

// A candidate as every view can show it: where its text came from and, once it has run, its run.
struct CandidateSelection {
  enum class Origin { Run, History, GraphNode };  // GraphNode: a Case of the experience graph; next: LineageStep, SessionCandidate
  Origin origin = Origin::Run;
  EvaluationRun run;
};

class WorkbenchContext;

// The observer side. Each callback is called on the GUI thread after the context has changed.
class WorkbenchView {
 public:
  virtual ~WorkbenchView() = default;
  virtual void onTaskChanged(const WorkbenchContext &) {}
  virtual void onSelectionChanged(const WorkbenchContext &) {}
  virtual void onBaselineChanged(const WorkbenchContext &) {}
};

class WorkbenchContext : public QObject {
  Q_OBJECT

 public:
  explicit WorkbenchContext(QObject *parent = nullptr);

  // The task open; empty folder: none.
  const QString &taskFolder() const { return taskFolder_; }
  const QString &taskName() const { return taskName_; }
  void setTask(const QString &folder, const QString &name);

  // The selected candidate; none until something ran or was chosen.
  const std::optional<CandidateSelection> &selection() const { return selection_; }
  void select(const CandidateSelection &selection);
  void clearSelection();

  // The pinned baseline; none until pinned.
  const std::optional<CandidateSelection> &baseline() const { return baseline_; }
  void pinBaseline(const CandidateSelection &baseline);
  void unpinBaseline();

  // A view to notify, from now on, until it is removed (or, for a QObject view, destroyed).
  void addView(WorkbenchView *view);
  void removeView(WorkbenchView *view);

 signals:
  // For code that is not a view (scripts, tests): the same moments.
  void taskChanged();
  void selectionChanged();
  void baselineChanged();

 private:
  template <typename Call>
  void notify(Call call);

  QString taskFolder_, taskName_;
  std::optional<CandidateSelection> selection_, baseline_;
  struct Registered {
    WorkbenchView *view = nullptr;
    QPointer<QObject> alive;  // set for QObject views: a destroyed one is skipped
    bool isObject = false;
  };
  QList<Registered> views_;
};

}  // namespace kwb::ui
