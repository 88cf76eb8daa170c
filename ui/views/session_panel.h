#pragma once
// The Session panel (issue 16): an agent session as it goes. A line with the task, the model and
// the state; Pause, Stop and Resume; meters for the groups done and the budgets; the tree of
// groups, turns and candidates (an icon per outcome, time, speedup, reward) with each group's
// DCP decision in words; the selected candidate's answer, streaming in while it arrives; and the
// best speedup over time. Activating a candidate asks the window to open its code in the editor
// and its evaluation in Results; its context menu also diffs it against its parent (the line's
// previous turn, or the group's incumbent for a first turn) and profiles it. Events come in
// batches (AgentService::eventsArrived). Beside the answer, the Context tab says what the
// experience memory put into the candidate's prompt and why, within which budget.
#include <QWidget>

#include "ui/services/agent_service.h"
#include "ui/workbench_context.h"

class QChart;
class QChartView;
class QLabel;
class QLineSeries;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTextBrowser;
class QTreeView;
class QValueAxis;

namespace kwb::ui {

// In the window's context: the candidate picked is selected there (a SessionCandidate; opened with
// a double click or Open in Editor), so Results shows its stored run and the editor its code.
class SessionPanel : public QWidget, public WorkbenchView {
  Q_OBJECT

 public:
  explicit SessionPanel(QWidget *parent = nullptr);

  // Connects to a service's signals; Pause, Stop and Resume call it.
  void attach(AgentService *service);

  void begin(const QString &sessionId, const QString &title, const kwb::agent::SessionSettings &settings);
  void addEvents(const QList<AgentEventRow> &rows);
  void end(const QString &state, const QString &reason);

  QString statusText() const;
  QTreeView *tree() const { return tree_; }
  SessionCandidatesModel *model() const { return model_; }
  QPlainTextEdit *answerView() const { return answer_; }
  // The selected candidate's context record: what the experience memory put into its prompt, and
  // why (core/memory/context_assembly.h), a Case link each.
  QTextBrowser *contextView() const { return context_; }
  QPushButton *pauseButton() const { return pause_; }
  QPushButton *stopButton() const { return stop_; }
  QPushButton *resumeButton() const { return resume_; }
  QProgressBar *groupsBar() const { return groups_; }
  int bestPoints() const;                       // points on the best-speedup curve
  QString dcpText(int group) const;             // the group's decision as shown
  int candidateRows() const;                    // candidate rows in the tree
  // What the best-speedup chart says in its middle while it has no point (nothing timed yet, or
  // compile-only: nothing can be); empty once it draws a curve.
  QString chartNote() const;
  QProgressBar *tokensBar() const { return tokens_; }
  // The context menu of a candidate's row (Open, Diff Against Parent, Profile, Show Evaluation),
  // for the caller to exec() and delete; nullptr for other rows.
  QMenu *candidateMenu(const QModelIndex &index);

 signals:
  void pauseRequested();
  void stopRequested();
  void resumeRequested(const QString &sessionId);
  // A candidate was activated: its code (empty when the answer held none), a name for it, and
  // its evaluation's id in the run history (0: none).
  void candidateActivated(const QString &source, const QString &name, qint64 evaluationId);
  void diffRequested(const QString &parentSource, const QString &parentName, const QString &source,
                     const QString &name);
  void profileRequested(const QString &source, const QString &name);
  void evaluationRequested(qint64 evaluationId);
  // A Case named in the context record was clicked: show it in the Experience view.
  void caseRequested(qint64 caseId);

 private:
  void setTokens();  // the tokens meter, with or without a budget
  void updateChartNote();
  void placeChartNote();
  bool eventFilter(QObject *watched, QEvent *event) override;
  void showSelected();
  static QString contextHtml(const kwb::agent::AttemptRecord &attempt);
  void addBestPoint(double seconds, double speedup);
  void rowsAdded(const QModelIndex &parent, int first, int last);

  QLabel *status_ = nullptr;
  QPushButton *pause_ = nullptr, *stop_ = nullptr, *resume_ = nullptr;
  QProgressBar *groups_ = nullptr, *tokens_ = nullptr;
  QLabel *spend_ = nullptr;
  QTreeView *tree_ = nullptr;
  SessionCandidatesModel *model_ = nullptr;
  QPlainTextEdit *answer_ = nullptr;
  QTextBrowser *context_ = nullptr;
  QString shownContext_;  // the HTML last given to context_
  QChart *chart_ = nullptr;
  QChartView *chartView_ = nullptr;
  QLabel *chartNote_ = nullptr;
  QLineSeries *best_ = nullptr;
  QValueAxis *xAxis_ = nullptr, *yAxis_ = nullptr;

  void openCandidate(const QString &source, const QString &name, qint64 evaluationId);
  void selectInContext(const QString &source, const QString &name, qint64 evaluationId, bool activate);
  QString sessionId_, title_, state_;
  kwb::agent::SessionSettings settings_;
};

}  // namespace kwb::ui
