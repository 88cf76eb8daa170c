#include "ui/models/session_candidates_model.h"

#include <algorithm>

#include "ui/models/outcome_style.h"

namespace kwb::ui {

namespace {

using Kind = kwb::agent::SessionEvent::Kind;
enum NodeKind { GroupNode, TurnNode, LineNode };

QString msText(double ms) {
  return ms >= 1 ? QStringLiteral("%1 ms").arg(ms, 0, 'f', 3) : QStringLiteral("%1 us").arg(ms * 1000, 0, 'f', 1);
}

}  // namespace

struct SessionCandidatesModel::Node {
  int kind = GroupNode;
  int number = 0;  // the group's, the turn's or the line's
  Node *parent = nullptr;
  std::vector<std::unique_ptr<Node>> children;
  Candidate *candidate = nullptr;  // a line's
  int row() const {
    if (!parent) return 0;
    for (std::size_t i = 0; i < parent->children.size(); ++i)
      if (parent->children[i].get() == this) return static_cast<int>(i);
    return 0;
  }
};

QString SessionCandidatesModel::Candidate::fileName() const {
  return QStringLiteral("g%1-l%2-t%3.cu").arg(group).arg(line).arg(turn);
}

SessionCandidatesModel::SessionCandidatesModel(QObject *parent)
    : QAbstractItemModel(parent), root_(std::make_unique<Node>()) {}

SessionCandidatesModel::~SessionCandidatesModel() = default;

void SessionCandidatesModel::clear() {
  beginResetModel();
  root_ = std::make_unique<Node>();
  candidates_.clear();
  candidateNodes_.clear();
  dcp_.clear();
  titles_.clear();
  incumbents_.clear();
  groupsDone_.clear();
  changed_.clear();
  tokensUsed_ = 0;
  cost_ = 0;
  bestSpeedup_ = 0;
  endResetModel();
}

SessionCandidatesModel::Node *SessionCandidatesModel::insertChild(Node *parent, int number, int kind, Candidate *candidate) {
  // In number order: groups, turns and lines as they are numbered, whichever starts first.
  auto at = std::find_if(parent->children.begin(), parent->children.end(),
                         [number](const std::unique_ptr<Node> &n) { return n->number > number; });
  const int row = static_cast<int>(at - parent->children.begin());
  beginInsertRows(indexOfNode(parent), row, row);
  auto node = std::make_unique<Node>();
  node->kind = kind;
  node->number = number;
  node->parent = parent;
  node->candidate = candidate;  // before the row is announced: a view asked for its data finds it
  Node *made = node.get();
  parent->children.insert(parent->children.begin() + row, std::move(node));
  endInsertRows();
  return made;
}

SessionCandidatesModel::Node *SessionCandidatesModel::groupNode(int group) {
  for (auto &n : root_->children)
    if (n->number == group) return n.get();
  return insertChild(root_.get(), group, GroupNode);
}

SessionCandidatesModel::Node *SessionCandidatesModel::turnNode(int group, int turn) {
  Node *g = groupNode(group);
  for (auto &n : g->children)
    if (n->number == turn) return n.get();
  return insertChild(g, turn, TurnNode);
}

SessionCandidatesModel::Candidate &SessionCandidatesModel::candidateFor(int group, int line, int turn) {
  const Key key{group, line, turn};
  auto found = candidates_.find(key);
  if (found != candidates_.end()) return found->second;
  Candidate &c = candidates_[key];
  c.group = group;
  c.line = line;
  c.turn = turn;
  candidateNodes_[key] = insertChild(turnNode(group, turn), line, LineNode, &c);
  return c;
}

void SessionCandidatesModel::changed(const Node *node) { changed_.insert(node); }

void SessionCandidatesModel::flushChanged() {
  for (const Node *n : changed_) emit dataChanged(indexOfNode(n, NameColumn), indexOfNode(n, RewardColumn));
  changed_.clear();
}

void SessionCandidatesModel::addEvents(const QList<AgentEventRow> &events) {
  // A row's dataChanged once a batch, however many pieces of its answer the batch held.
  for (const auto &row : events) apply(row.event, row.seconds);
  flushChanged();
}

void SessionCandidatesModel::addEvent(const kwb::agent::SessionEvent &event, double seconds) {
  apply(event, seconds);
  flushChanged();
}

void SessionCandidatesModel::apply(const kwb::agent::SessionEvent &e, double seconds) {
  const Key key{e.group, e.line, e.turn};
  switch (e.kind) {
    case Kind::Requesting:
      candidateFor(e.group, e.line, e.turn);
      break;
    case Kind::Text: {
      candidateFor(e.group, e.line, e.turn).text += QString::fromStdString(e.text);
      changed(candidateNodes_[key]);
      break;
    }
    case Kind::Answered:
    case Kind::Evaluated:
    case Kind::Rewarded: {
      Candidate &c = candidateFor(e.group, e.line, e.turn);
      c.attempt = e.attempt;
      if (!e.source.empty()) c.source = QString::fromStdString(e.source);
      if (c.attempt) {
        if (c.text.isEmpty()) c.text = QString::fromStdString(c.attempt->responseText);
        if (e.kind == Kind::Answered) {
          tokensUsed_ += c.attempt->inputTokens + c.attempt->outputTokens;
          cost_ += c.attempt->cost;
        }
      }
      changed(candidateNodes_[key]);
      break;
    }
    case Kind::Dcp:
      dcp_[e.group] = QString::fromStdString(e.text);
      changed(groupNode(e.group));
      break;
    case Kind::GroupDone:
      groupsDone_.insert(e.group);
      changed(groupNode(e.group));
      break;
    case Kind::Message:
      // The group's own lines ("group 2: goal faster, ..."), not the log's other messages.
      if (e.group > 0 && e.line == 0 && e.text.rfind("group ", 0) == 0) {
        titles_[e.group] = QString::fromStdString(e.text).section(QLatin1Char(':'), 1).trimmed();
        if (!e.source.empty()) incumbents_[e.group] = QString::fromStdString(e.source);
        changed(groupNode(e.group));
      }
      break;
    case Kind::Best:
      if (e.attempt && e.attempt->speedup && *e.attempt->speedup > bestSpeedup_) {
        bestSpeedup_ = *e.attempt->speedup;
        emit bestImproved(seconds, bestSpeedup_);
      }
      break;
    case Kind::State:
    case Kind::Baseline:
      break;
  }
}

const SessionCandidatesModel::Node *SessionCandidatesModel::nodeOf(const QModelIndex &index) const {
  return index.isValid() ? static_cast<const Node *>(index.internalPointer()) : root_.get();
}

QModelIndex SessionCandidatesModel::indexOfNode(const Node *node, int column) const {
  if (!node || node == root_.get()) return {};
  return createIndex(node->row(), column, const_cast<Node *>(node));
}

const SessionCandidatesModel::Candidate *SessionCandidatesModel::candidateAt(const QModelIndex &index) const {
  if (!index.isValid() || index.model() != this) return nullptr;
  return nodeOf(index)->candidate;
}

const SessionCandidatesModel::Candidate *SessionCandidatesModel::candidate(int group, int line, int turn) const {
  const auto it = candidates_.find(Key{group, line, turn});
  return it == candidates_.end() ? nullptr : &it->second;
}

QModelIndex SessionCandidatesModel::indexOf(int group, int line, int turn, int column) const {
  const auto it = candidateNodes_.find(Key{group, line, turn});
  return it == candidateNodes_.end() ? QModelIndex() : indexOfNode(it->second, column);
}

QModelIndex SessionCandidatesModel::groupIndex(int group) const {
  for (const auto &n : root_->children)
    if (n->number == group) return indexOfNode(n.get());
  return {};
}

std::pair<QString, QString> SessionCandidatesModel::parentOf(const Candidate &c) const {
  if (c.turn > 1) {
    const Candidate *previous = candidate(c.group, c.line, c.turn - 1);
    if (previous) return {previous->source, previous->fileName()};
    return {};
  }
  if (const auto inc = incumbents_.find(c.group); inc != incumbents_.end())
    return {inc->second, tr("incumbent of group %1").arg(c.group)};
  return {};
}

QString SessionCandidatesModel::groupText(int group) const {
  // "Group 2 — 3 of 3 lines met the goal (compiles) · no repair: …": one sentence across the row.
  QString text = groupsDone_.count(group) ? tr("Group %1, done").arg(group) : tr("Group %1").arg(group);
  if (const auto t = titles_.find(group); t != titles_.end() && !t->second.isEmpty()) text += QStringLiteral(" — ") + t->second;
  if (const auto d = dcp_.find(group); d != dcp_.end() && !d->second.isEmpty()) text += QStringLiteral(" · ") + d->second;
  return text;
}

SessionCandidatesModel::Counts SessionCandidatesModel::counts() const {
  Counts n;
  for (const auto &[key, c] : candidates_) {
    if (!c.attempt || !c.attempt->evaluated) continue;
    ++n.evaluated;
    if (c.attempt->ms) ++n.timed;
    if (c.attempt->outcome == "not-run") ++n.notRun;
  }
  return n;
}

QString SessionCandidatesModel::dcpText(int group) const {
  const auto it = dcp_.find(group);
  return it == dcp_.end() ? QString() : it->second;
}

QModelIndex SessionCandidatesModel::index(int row, int column, const QModelIndex &parent) const {
  if (!hasIndex(row, column, parent)) return {};
  const Node *p = nodeOf(parent);
  return createIndex(row, column, p->children[static_cast<std::size_t>(row)].get());
}

QModelIndex SessionCandidatesModel::parent(const QModelIndex &child) const {
  if (!child.isValid()) return {};
  return indexOfNode(nodeOf(child)->parent);
}

int SessionCandidatesModel::rowCount(const QModelIndex &parent) const {
  if (parent.isValid() && parent.column() != 0) return 0;
  return static_cast<int>(nodeOf(parent)->children.size());
}

int SessionCandidatesModel::columnCount(const QModelIndex &) const { return ColumnCount; }

QVariant SessionCandidatesModel::candidateData(const Candidate &c, int column, int role) const {
  switch (role) {
    case AnswerRole: return c.text;
    case SourceRole: return c.source;
    case EvaluationIdRole: return c.evaluationId();
    case FileNameRole: return c.fileName();
    default: break;
  }
  const auto &a = c.attempt;
  const auto outcome = a && a->evaluated ? kwb::parseOutcome(a->outcome) : std::nullopt;
  if (role == Qt::ForegroundRole)
    return column == OutcomeColumn ? QVariant(toneColour(!a || !a->evaluated ? OutcomeTone::Quiet
                                                        : outcome             ? toneOf(*outcome)
                                                                              : OutcomeTone::Bad))
                                   : QVariant();
  if (role == Qt::ToolTipRole) return column == OutcomeColumn && a ? QVariant(QString::fromStdString(a->message)) : QVariant();
  if (role != Qt::DisplayRole) return {};
  switch (column) {
    case NameColumn: return tr("Line %1").arg(c.line);
    case OutcomeColumn:
      if (!a) return tr("asking…");
      if (!a->evaluated) return a->answerOutcome == "code" ? tr("evaluating…") : QString::fromStdString(a->answerOutcome);
      return QString((outcome ? outcomeText(*outcome) : QString::fromStdString(a->outcome)) + (a->success ? QStringLiteral(" ✓") : QString()));
    case TimeColumn: return a && a->evaluated && a->ms ? msText(*a->ms) : QString();
    case SpeedupColumn: return a && a->evaluated && a->speedup ? QStringLiteral("%1x").arg(*a->speedup, 0, 'f', 2) : QString();
    case RewardColumn: return a && a->evaluated && a->reward ? QStringLiteral("%1").arg(*a->reward, 0, 'f', 2) : QString();
    default: return {};
  }
}

QVariant SessionCandidatesModel::data(const QModelIndex &index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const Node *n = nodeOf(index);
  if (role == GroupRowRole) return n->kind == GroupNode;
  if (role == CandidateRole) return n->kind == LineNode;
  if (n->kind == LineNode) return candidateData(*n->candidate, index.column(), role);
  if (index.column() != NameColumn || (role != Qt::DisplayRole && role != Qt::ToolTipRole)) return {};
  return n->kind == GroupNode ? groupText(n->number) : tr("Turn %1").arg(n->number);
}

QVariant SessionCandidatesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case NameColumn: return tr("Candidate");
    case OutcomeColumn: return tr("Outcome");
    case TimeColumn: return tr("Time");
    case SpeedupColumn: return tr("Speedup");
    case RewardColumn: return tr("Reward");
    default: return {};
  }
}

}  // namespace kwb::ui
