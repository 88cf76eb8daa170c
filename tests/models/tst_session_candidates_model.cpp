// SessionCandidatesModel alone, fed events as a session sends them: groups, turns and lines in
// number order whichever starts first; a candidate's answer streaming in (one dataChanged per row
// a batch); its outcome, time, speedup and reward once evaluated; a group's row its sentence (goal,
// DCP decision, done); a candidate's parent (the line's previous turn, or the group's incumbent);
// the meters' totals; bestImproved when the best speedup rises.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

#include "ui/models/session_candidates_model.h"

using kwb::agent::SessionEvent;
using kwb::ui::AgentEventRow;
using kwb::ui::SessionCandidatesModel;
using Kind = SessionEvent::Kind;

namespace {

AgentEventRow sessionEvent(Kind kind, int group, int line, int turn, const std::string &text = {}) {
  AgentEventRow r;
  r.event.kind = kind;
  r.event.group = group;
  r.event.line = line;
  r.event.turn = turn;
  r.event.text = text;
  return r;
}

AgentEventRow attempt(Kind kind, int group, int line, int turn, bool evaluated, const std::string &outcome,
                      std::optional<double> speedup = std::nullopt, const std::string &source = {}) {
  AgentEventRow r = sessionEvent(kind, group, line, turn);
  kwb::agent::AttemptRecord a;
  a.line = line;
  a.turn = turn;
  a.evaluated = evaluated;
  a.answerOutcome = "code";
  a.outcome = outcome;
  a.evaluationId = 100 * group + 10 * line + turn;
  a.inputTokens = 100;
  a.outputTokens = 20;
  a.cost = 0.001;
  if (speedup) {
    a.ms = 0.25;
    a.speedup = speedup;
    a.reward = 0.5;
    a.success = true;
  }
  r.event.attempt = a;
  r.event.source = source;
  return r;
}

QString cell(const QModelIndex &i, int column) { return i.siblingAtColumn(column).data().toString(); }

}  // namespace

class TestSessionCandidatesModel : public QObject {
  Q_OBJECT

 private slots:
  void treeFollowsTheEvents() {
    SessionCandidatesModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy best(&model, &SessionCandidatesModel::bestImproved);
    AgentEventRow title = sessionEvent(Kind::Message, 1, 0, 0, "group 1: goal compiles, 2 lines");
    title.event.source = "__global__ void incumbent() {}";
    // Line 2 asks first; line 1 after it: line 1 is still the first row.
    model.addEvents({title, sessionEvent(Kind::Requesting, 1, 2, 1), sessionEvent(Kind::Requesting, 1, 1, 1)});
    QCOMPARE(model.rowCount(), 1);
    const QModelIndex group = model.groupIndex(1);
    QVERIFY(group.data(SessionCandidatesModel::GroupRowRole).toBool());
    QCOMPARE(group.data().toString(), QStringLiteral("Group 1 — goal compiles, 2 lines"));
    QCOMPARE(model.rowCount(group), 1);
    const QModelIndex turn = model.index(0, 0, group);
    QCOMPARE(turn.data().toString(), QStringLiteral("Turn 1"));
    QCOMPARE(model.rowCount(turn), 2);
    QCOMPARE(model.index(0, 0, turn), model.indexOf(1, 1, 1));
    QCOMPARE(model.index(1, 0, turn), model.indexOf(1, 2, 1));
    const QModelIndex first = model.indexOf(1, 1, 1);
    QVERIFY(first.data(SessionCandidatesModel::CandidateRole).toBool());
    QCOMPARE(cell(first, SessionCandidatesModel::OutcomeColumn), QStringLiteral("asking…"));
    QCOMPARE(first.data(SessionCandidatesModel::FileNameRole).toString(), QStringLiteral("g1-l1-t1.cu"));

    // Three pieces of the answer in one batch: the row changes once, its answer whole.
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.addEvents({sessionEvent(Kind::Text, 1, 1, 1, "__global__ "), sessionEvent(Kind::Text, 1, 1, 1, "void k() "),
                     sessionEvent(Kind::Text, 1, 1, 1, "{}")});
    QCOMPARE(changed.count(), 1);
    QCOMPARE(changed.first().at(0).value<QModelIndex>(), first);
    QCOMPARE(first.data(SessionCandidatesModel::AnswerRole).toString(), QStringLiteral("__global__ void k() {}"));

    model.addEvents({attempt(Kind::Answered, 1, 1, 1, false, "", std::nullopt, "__global__ void k() {}")});
    QCOMPARE(cell(first, SessionCandidatesModel::OutcomeColumn), QStringLiteral("evaluating…"));
    QCOMPARE(model.tokensUsed(), 120);
    model.addEvents({attempt(Kind::Evaluated, 1, 1, 1, true, "correct", 1.5, "__global__ void k() {}"),
                     attempt(Kind::Answered, 1, 2, 1, false, ""), attempt(Kind::Evaluated, 1, 2, 1, true, "compile-error")});
    QCOMPARE(cell(first, SessionCandidatesModel::OutcomeColumn), QStringLiteral("correct ✓"));
    QCOMPARE(cell(first, SessionCandidatesModel::TimeColumn), QStringLiteral("250.0 us"));
    QCOMPARE(cell(first, SessionCandidatesModel::SpeedupColumn), QStringLiteral("1.50x"));
    QCOMPARE(cell(first, SessionCandidatesModel::RewardColumn), QStringLiteral("0.50"));
    QCOMPARE(first.data(SessionCandidatesModel::EvaluationIdRole).toLongLong(), 111);
    QCOMPARE(cell(model.indexOf(1, 2, 1), SessionCandidatesModel::OutcomeColumn), QStringLiteral("compile error"));
    QVERIFY(model.indexOf(1, 2, 1).siblingAtColumn(SessionCandidatesModel::SpeedupColumn).data().toString().isEmpty());
    QCOMPARE(model.tokensUsed(), 240);
    QCOMPARE(model.counts().evaluated, 2);
    QCOMPARE(model.counts().timed, 1);

    // The first turn's parent is the group's incumbent; a repair's is its line's previous turn.
    const auto [incumbent, incumbentName] = model.parentOf(*model.candidateAt(first));
    QCOMPARE(incumbent, QStringLiteral("__global__ void incumbent() {}"));
    QCOMPARE(incumbentName, QStringLiteral("incumbent of group 1"));
    model.addEvents({sessionEvent(Kind::Dcp, 1, 0, 0, "repair 1 line: 1 of 2 compiled"), sessionEvent(Kind::Requesting, 1, 2, 2)});
    QCOMPARE(model.rowCount(group), 2);
    const auto [previous, previousName] = model.parentOf(*model.candidate(1, 2, 2));
    QCOMPARE(previousName, QStringLiteral("g1-l2-t1.cu"));
    QVERIFY(previous.isEmpty());  // that answer held no code
    QCOMPARE(model.dcpText(1), QStringLiteral("repair 1 line: 1 of 2 compiled"));

    AgentEventRow rise = attempt(Kind::Best, 1, 1, 1, true, "correct", 1.5);
    rise.seconds = 4;
    AgentEventRow same = rise;
    same.seconds = 5;
    model.addEvents({rise, same, sessionEvent(Kind::GroupDone, 1, 0, 0)});
    QCOMPARE(best.count(), 1);  // only a rise
    QCOMPARE(best.first().at(0).toDouble(), 4.0);
    QCOMPARE(best.first().at(1).toDouble(), 1.5);
    QCOMPARE(model.groupsDone(), 1);
    QCOMPARE(group.data().toString(), QStringLiteral("Group 1, done — goal compiles, 2 lines · repair 1 line: 1 of 2 compiled"));

    // A later group, then one numbered before it: groups in number order.
    model.addEvents({sessionEvent(Kind::Requesting, 3, 1, 1), sessionEvent(Kind::Requesting, 2, 1, 1)});
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.index(1, 0).data().toString(), QStringLiteral("Group 2"));
    QCOMPARE(model.candidateCount(), 5);
    QVERIFY(!model.candidateAt(group));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.tokensUsed(), 0);
    QVERIFY(!model.indexOf(1, 1, 1).isValid());
  }
};

QTEST_MAIN(TestSessionCandidatesModel)
#include "tst_session_candidates_model.moc"
