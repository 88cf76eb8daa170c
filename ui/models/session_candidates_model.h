#pragma once
// An agent session's candidates as a tree: a row per group (a sentence across the columns: its
// goal, what came of it and its DCP decision), under it a row per turn, under that a row per line's
// candidate (outcome, time, speedup, reward), lines in order whichever answer starts first. Fed the
// session's events in batches as they arrive (AgentService::eventsArrived); it also keeps what the
// Session panel's meters show (groups done, tokens, cost) and says when the best speedup rose.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include <QAbstractItemModel>
#include <QList>
#include <QString>

#include "core/agent/session.h"

namespace kwb::ui {

// One event as the session view takes it: the core event and when it happened.
struct AgentEventRow {
  kwb::agent::SessionEvent event;
  double seconds = 0;  // since the service's run started
};

class SessionCandidatesModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Column { NameColumn, OutcomeColumn, TimeColumn, SpeedupColumn, RewardColumn, ColumnCount };
  enum Role {
    GroupRowRole = Qt::UserRole + 1,  // bool: a group's row (its sentence spans the columns)
    CandidateRole,                    // bool: a candidate's row
    AnswerRole,                       // a candidate's answer as it streamed in
    SourceRole,                       // the code taken from it (empty: none)
    EvaluationIdRole,                 // its evaluation in the run history (0: none)
    FileNameRole,                     // a name for its code: "g1-l2-t1.cu"
  };

  struct Candidate {
    int group = 0, line = 0, turn = 0;
    QString text;    // the answer as it streamed in
    QString source;  // the code taken from it
    std::optional<kwb::agent::AttemptRecord> attempt;
    qint64 evaluationId() const { return attempt ? attempt->evaluationId : 0; }
    QString fileName() const;
  };

  explicit SessionCandidatesModel(QObject *parent = nullptr);
  ~SessionCandidatesModel() override;

  void clear();
  // One batch of the session's events, in order; `seconds` of each: since the session's run began.
  void addEvents(const QList<AgentEventRow> &events);
  void addEvent(const kwb::agent::SessionEvent &event, double seconds = 0);

  const Candidate *candidateAt(const QModelIndex &index) const;
  const Candidate *candidate(int group, int line, int turn) const;
  QModelIndex indexOf(int group, int line, int turn, int column = NameColumn) const;
  QModelIndex groupIndex(int group) const;
  // What a candidate was made from: the line's previous turn, or for a first turn the code its
  // group started from (its incumbent); its code and a name for it, empty when there is none.
  std::pair<QString, QString> parentOf(const Candidate &candidate) const;

  QString groupText(int group) const;  // the group's row as shown
  QString dcpText(int group) const;    // its DCP decision in words ("" before it is made)
  int candidateCount() const { return static_cast<int>(candidates_.size()); }
  int groupsDone() const { return static_cast<int>(groupsDone_.size()); }
  std::int64_t tokensUsed() const { return tokensUsed_; }
  double cost() const { return cost_; }
  double bestSpeedup() const { return bestSpeedup_; }
  // Over the candidates evaluated so far: how many, how many were timed, how many not run
  // (compile-only).
  struct Counts {
    int evaluated = 0, timed = 0, notRun = 0;
  };
  Counts counts() const;

  QModelIndex index(int row, int column, const QModelIndex &parent = QModelIndex()) const override;
  QModelIndex parent(const QModelIndex &child) const override;
  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  // The best speedup rose to `speedup`, `seconds` into the session.
  void bestImproved(double seconds, double speedup);

 private:
  struct Node;
  using Key = std::tuple<int, int, int>;  // group, line, turn
  Node *groupNode(int group);
  Node *turnNode(int group, int turn);
  Candidate &candidateFor(int group, int line, int turn);
  Node *insertChild(Node *parent, int number, int kind, Candidate *candidate = nullptr);
  QModelIndex indexOfNode(const Node *node, int column = NameColumn) const;
  void apply(const kwb::agent::SessionEvent &event, double seconds);
  void changed(const Node *node);
  void flushChanged();
  const Node *nodeOf(const QModelIndex &index) const;
  QVariant candidateData(const Candidate &c, int column, int role) const;

  std::unique_ptr<Node> root_;
  std::map<Key, Candidate> candidates_;
  std::map<Key, Node *> candidateNodes_;
  std::map<int, QString> dcp_, titles_, incumbents_;
  std::set<int> groupsDone_;
  std::set<const Node *> changed_;  // rows whose data changed in the batch being added
  std::int64_t tokensUsed_ = 0;
  double cost_ = 0, bestSpeedup_ = 0;
};

}  // namespace kwb::ui
