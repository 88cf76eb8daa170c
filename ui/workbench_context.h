#pragma once
// What the whole window is about, in one place: the task that is open, the candidate selected
// (a run fresh from the evaluator or from the history, a lineage step, a session's candidate or
// a Case of the experience graph), and the baseline pinned to compare against. Views observe it
// and set it; the main window does not wire panels to each other. After RenderDoc's
// ICaptureViewer: every view implements the few callbacks it cares about and is added once with
// addView(), which also hands it the context to select in (WorkbenchView::context()). A selection
// that is `activate`d (opened: a double click, a link followed) brings forward the views that work
// on it: the Library for a lineage step, the editor for a session's candidate, the Experience page
// for a Case.
#include <memory>
#include <optional>

#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>

#include "ui/models/evaluation_run.h"

namespace kwb::memory {
struct Case;
}

namespace kwb::ui {

// A candidate as every view can show it: where its text came from and, once it has run, its run.
struct CandidateSelection {
  // GraphNode: a Case of the experience graph.
  enum class Origin { Run, History, GraphNode, LineageStep, SessionCandidate };
  Origin origin = Origin::Run;
  EvaluationRun run;  // its run, once known (a session candidate's or a Case's when read from the workspace)
  QString lineage;    // LineageStep: the lineage and the step's position (1-based)
  int step = 0;
  QString sessionId, name, source;  // SessionCandidate: its session, file name and code
  qint64 evaluationId = 0;          // SessionCandidate: its stored evaluation; 0 none
  std::shared_ptr<const kwb::memory::Case> experienceCase;  // GraphNode: the Case
  bool activate = false;            // opened, not only selected: the views that work on it come forward
  bool hasRun() const { return !run.sourceName.isEmpty() || run.historyId > 0; }
};

class WorkbenchContext;

// The observer side. Each callback is called on the GUI thread after the context has changed.
class WorkbenchView {
 public:
  virtual ~WorkbenchView() = default;
  virtual void onTaskChanged(const WorkbenchContext &) {}
  virtual void onSelectionChanged(const WorkbenchContext &) {}
  virtual void onBaselineChanged(const WorkbenchContext &) {}
  // The context the view was added to (to select in); nullptr before.
  WorkbenchContext *context() const { return context_; }

 private:
  friend class WorkbenchContext;
  WorkbenchContext *context_ = nullptr;
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
