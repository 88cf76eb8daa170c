// Agent sessions (issue 16) end to end without a GPU: a real workspace file, a real HTTP server on
// loopback answering in OpenAI's streamed wire format with the softmax lineage's kernels (and
// scripted compile errors, wrong, truncated and code-less answers), the real compiler. Every
// answer is compiled and its launch checked (the goal "compiles"); the same loop runs on the GPU
// in tests/gpu/tst_gpu_agent.cpp. The kwb optimize tests run the real program and kill it.
#include <QtTest>
#include <QDir>
#include <QTemporaryDir>

#include <csignal>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/agent/session.h"
#include "core/agent/trajectories.h"
#include "core/llm/provider_config.h"
#include "core/task/manifest_parser.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "helpers/measured_lineage.h"
#include "core/memory/case_sources.h"
#include "helpers/memory_fixtures.h"
#include "helpers/replay_llm_server.h"

using namespace kwb;
using namespace kwb::agent;
using kwb::test::ReplayFault;
using kwb::test::ReplayLlmServer;
using nlohmann::json;

namespace {

const std::filesystem::path kSoftmax = std::filesystem::path(KWB_SOURCE_DIR) / "kernels" / "softmax";

SessionSettings compileOnlySettings(std::size_t g, std::size_t k, std::size_t groups) {
  SessionSettings s;
  s.candidates = g;
  s.dcp.maxTurns = k;
  s.groups = groups;
  s.useDevice = false;
  s.maxTokens = 8192;
  return s;
}

// Waits (on a condition, no sleeping) until `count` events of `kind` were seen.
struct EventLog {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<SessionEvent> events;
  void add(const SessionEvent &e) {
    std::lock_guard lock(mutex);
    if (e.kind != SessionEvent::Kind::Text) events.push_back(e);
    changed.notify_all();
  }
  bool waitFor(SessionEvent::Kind kind, std::size_t count, std::chrono::seconds timeout) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, [&] {
      return static_cast<std::size_t>(std::count_if(events.begin(), events.end(), [&](const SessionEvent &e) {
               return e.kind == kind;
             })) >= count;
    });
  }
  std::size_t count(SessionEvent::Kind kind) {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(
        std::count_if(events.begin(), events.end(), [&](const SessionEvent &e) { return e.kind == kind; }));
  }
};

struct Fixture {
  QTemporaryDir dir;
  std::shared_ptr<SessionStore> store;
  ReplayLlmServer server{kSoftmax};
  Task task = loadTask(kSoftmax);
  Fixture() { store = std::make_shared<SessionStore>(std::filesystem::path(dir.filePath("ws.kwb").toStdString())); }
  SessionServices services() {
    SessionServices s;
    s.store = store;
    s.provider = llm::adHocProvider(server.baseUrl());
    s.provider.maxConcurrent = 4;
    s.provider.retry.maxAttempts = 1;
    return s;
  }
  // Runs a new session to its end with these settings (and services as `with` sets them); its
  // first group's first attempt, or an empty one when it did not finish.
  AttemptRecord firstAttempt(const SessionSettings &settings, const std::function<void(SessionServices &)> &with = {}) {
    const std::string id = finished(settings, with);
    if (id.empty()) return AttemptRecord{};
    return store->attempts(store->groups(id).at(0).id).at(0);
  }
  // Runs a new session to its end; its id, or "" when it did not finish.
  std::string finished(const SessionSettings &settings, const std::function<void(SessionServices &)> &with = {}) {
    const auto created = Session::create(*store, task, settings, server.baseUrl(), "replay");
    auto s = services();
    if (with) with(s);
    Session session(s, created.id);
    return session.run() == SessionState::Finished ? created.id : std::string();
  }
};

std::vector<AttemptRecord> ofTurn(const std::vector<AttemptRecord> &all, int turn) {
  std::vector<AttemptRecord> out;
  for (const auto &a : all)
    if (a.turn == turn) out.push_back(a);
  return out;
}

}  // namespace

class TestAgentSession : public QObject {
  Q_OBJECT
 private slots:
  void replayLoopWithRepairsAndRewards();
  void truncatedAndCodelessAnswersAreNamedOutcomes();
  void tokenBudgetStopsNewRequests();
  void dollarBudgetStopsNewRequests();
  void wallTimeBudgetStopsNewRequests();
  void wallTimeSpentInEarlierRunsCounts();
  void pauseCancelsRequestsAndResumeFinishes();
  void pauseOrStopBeforeRunHolds();
  void settingsOutOfRangeAreRefused();
  void settingsRoundTripThroughTheStore();
  void skillCardsGoIntoFirstTurnsAndGainEvidence();
  void skillCardsOffLeavesThemOut();
  void proposedCardsOnlyWhenAsked();
  void experienceWithinASession();
  void contextWindowFromTheProvider();
  void experienceFromAnEarlierTaskChangesThePrompt();
  void optimizeKilledWithSigkillResumes();
  void optimizeCtrlCPausesAndExportsTrajectories();
  void ablationRunnerRunsEachArm();
  void hopelessWhenAskedStopsTheGroup();
};

void TestAgentSession::replayLoopWithRepairsAndRewards() {
  Fixture f;
  QVERIFY(f.dir.isValid());
  // Group 1: two of four answers do not compile -> N_fail = 2 = ceil(G/2): repair.
  f.server.script({ReplayFault::CompileError, ReplayFault::CompileError});
  const SessionRecord created = Session::create(*f.store, f.task, compileOnlySettings(4, 3, 2), f.server.baseUrl(), "replay");
  EventLog log;
  Session session(f.services(), created.id, [&](const SessionEvent &e) { log.add(e); });
  const SessionState state = session.run();
  const auto record = f.store->session(created.id);
  QVERIFY2(state == SessionState::Finished, record->stopReason.c_str());
  QCOMPARE(record->stopReason, std::string("done: 2 groups; 10 answers: 8 compiled (0 correct), 2 did not compile"));
  // No starter given: the task's own ([editor] starter, beside task.toml) was measured first.
  QVERIFY(record->baseline);
  QVERIFY2(!record->baseline->sourceHash.empty(), record->baseline->feedback.c_str());
  QCOMPARE(record->baseline->outcome, std::string("not-run"));

  const auto groups = f.store->groups(created.id);
  QCOMPARE(groups.size(), std::size_t(2));
  QCOMPARE(groups[0].goal, Goal::Compiles);
  QVERIFY(groups[0].done && groups[1].done);
  QVERIFY(groups[0].dcp.has_value());
  QCOMPARE(groups[0].dcp->verdict, DcpVerdict::Repair);
  QCOMPARE(groups[0].dcp->failures, std::size_t(2));
  QVERIFY2(groups[0].dcp->reason.find("repair: 2 of 4 failed") == 0, groups[0].dcp->reason.c_str());

  const auto first = f.store->attempts(groups[0].id);
  QCOMPARE(ofTurn(first, 1).size(), std::size_t(4));
  const auto repairs = ofTurn(first, 2);
  QCOMPARE(repairs.size(), std::size_t(2));
  QVERIFY(ofTurn(first, 3).empty());  // both repairs compiled: no third turn
  std::set<int> brokenLines;
  for (const auto &a : ofTurn(first, 1)) {
    QVERIFY(a.evaluated);
    QVERIFY(a.evaluationId > 0);
    if (a.outcome == "compile-error") {
      brokenLines.insert(a.line);
      QVERIFY(!a.success);
      // The feedback names the error with FILE:LINE (the attempt's file name).
      QVERIFY2(a.feedback.find("g1-l" + std::to_string(a.line) + "-t1.cu:") != std::string::npos, a.feedback.c_str());
    } else {
      QCOMPARE(a.outcome, std::string("not-run"));
      QVERIFY(a.success);
    }
  }
  QCOMPARE(brokenLines.size(), std::size_t(2));
  for (const auto &r : repairs) {
    QVERIFY(brokenLines.count(r.line));
    QVERIFY(r.success);
    QVERIFY(r.parentId > 0);
    // The repair prompt showed the broken candidate and its compile error.
    QCOMPARE(r.messages.size(), std::size_t(2));
    QVERIFY(r.messages[1].content.find("kwb_replay_broken") != std::string::npos);
    QVERIFY(r.messages[1].content.find("error") != std::string::npos);
  }
  // Rank rewards: a turn-1 success beats the two turn-2 successes and ties the other turn-1 one:
  // (2 - 0) / 3; a turn-2 success is beaten by two: (0 - 2) / 3, every turn of its line alike.
  for (const auto &a : first) {
    QVERIFY(a.reward && a.credit);
    if (brokenLines.count(a.line)) {
      QVERIFY(qFuzzyCompare(*a.reward, -2.0 / 3.0));
      QVERIFY(qFuzzyCompare(*a.credit, -2.0 / 3.0));
    } else {
      QVERIFY(qFuzzyCompare(*a.reward, 2.0 / 3.0));
      QVERIFY(qFuzzyCompare(*a.credit, 2.0 / 3.0));
    }
  }
  // Group 2: all four compile -> easy, no repair, every reward 0.
  QCOMPARE(groups[1].dcp->verdict, DcpVerdict::Easy);
  const auto second = f.store->attempts(groups[1].id);
  QCOMPARE(second.size(), std::size_t(4));
  for (const auto &a : second) QCOMPARE(*a.reward, 0.0);

  // Every request is in the transcripts under the session; the prompts showed the task.
  const auto spend = f.store->spend(created.id);
  QCOMPARE(spend.requests, std::int64_t{10});
  QVERIFY(spend.tokens > 0);
  QCOMPARE(f.server.http().requests().size(), std::size_t(10));
  QVERIFY(first.front().messages[1].content.find("Row-wise softmax") != std::string::npos);
  QCOMPARE(log.count(SessionEvent::Kind::Dcp), std::size_t(2));
  QCOMPARE(log.count(SessionEvent::Kind::GroupDone), std::size_t(2));
  QCOMPARE(log.count(SessionEvent::Kind::Evaluated), std::size_t(10));

  // Trajectories: one chat record per attempt, rewards attached.
  std::ostringstream out;
  QCOMPARE(exportTrajectories(*f.store, {created.id}, out), std::size_t(10));
  std::istringstream lines(out.str());
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    const json r = json::parse(line);
    QCOMPARE(r["messages"].size(), std::size_t(3));
    QCOMPARE(r["messages"][2]["role"].get<std::string>(), std::string("assistant"));
    QVERIFY(r["reward"].is_number());
    QCOMPARE(r["metadata"]["session"].get<std::string>(), created.id);
    QVERIFY(r["metadata"]["dcp"]["reason"].is_string());
  }
  QCOMPARE(n, std::size_t(10));
}

void TestAgentSession::truncatedAndCodelessAnswersAreNamedOutcomes() {
  Fixture f;
  f.server.script({ReplayFault::Truncated, ReplayFault::NoCode});
  const auto created = Session::create(*f.store, f.task, compileOnlySettings(4, 2, 1), f.server.baseUrl(), "replay");
  Session session(f.services(), created.id);
  QCOMPARE(session.run(), SessionState::Finished);
  const auto groups = f.store->groups(created.id);
  const auto attempts = f.store->attempts(groups[0].id);
  std::multiset<std::string> outcomes;
  for (const auto &a : ofTurn(attempts, 1)) outcomes.insert(a.outcome);
  QCOMPARE(outcomes, (std::multiset<std::string>{"no-code", "not-run", "not-run", "truncated"}));
  for (const auto &a : ofTurn(attempts, 1)) {
    if (a.outcome == "truncated" || a.outcome == "no-code") {
      QCOMPARE(a.evaluationId, std::int64_t{0});  // nothing to compile
      QVERIFY(!a.success);
      QVERIFY2(a.feedback.find("Outcome: " + a.outcome) == 0, a.feedback.c_str());
    }
    if (a.outcome == "truncated") QCOMPARE(a.finishReason, std::string("length"));
  }
  // 2 of 4 failed: repaired at turn 2 (the last), where the answers compile.
  QCOMPARE(ofTurn(attempts, 2).size(), std::size_t(2));
  for (const auto &a : ofTurn(attempts, 2)) QVERIFY(a.success);
  // The session's end says what its answers came to.
  QCOMPARE(f.store->session(created.id)->stopReason,
           std::string("done: 1 group; 6 answers: 4 compiled (0 correct), 1 had no code, 1 was cut off"));

  // An empty answer says its likely cause, and the summary counts it.
  Fixture g;
  g.server.script({ReplayFault::Empty, ReplayFault::Empty});
  const auto second = Session::create(*g.store, g.task, compileOnlySettings(2, 1, 1), g.server.baseUrl(), "replay");
  Session empty(g.services(), second.id);
  QCOMPARE(empty.run(), SessionState::Finished);
  for (const auto &a : g.store->sessionAttempts(second.id)) {
    QCOMPARE(a.outcome, std::string("empty"));
    QVERIFY2(a.answerNote.find("ended its answer at once with no text") != std::string::npos, a.answerNote.c_str());
  }
  QCOMPARE(g.store->session(second.id)->stopReason, std::string("done: 1 group; 2 answers: 0 compiled (0 correct), 2 were empty"));
}

// A compile-only session of G = 2 (up to 5 groups) whose answers each wait `delay`, with a budget
// set by `limit`: both first requests are checked against the budget before either answer (and
// what it spends) arrives, so the budget must stop the session after the first group's two
// requests. Fails the calling test otherwise; returns the session as stored.
static std::optional<SessionRecord> stoppedAfterTheFirstGroup(Fixture &f, std::chrono::milliseconds delay,
                                                       const std::function<void(SessionSettings &)> &limit,
                                                       std::optional<llm::Price> price = {}) {
  f.server.setDelays(delay, std::chrono::milliseconds(0));
  auto settings = compileOnlySettings(2, 3, 5);
  limit(settings);
  const auto created = Session::create(*f.store, f.task, settings, f.server.baseUrl(), "replay");
  auto services = f.services();
  services.provider.price = price;
  Session session(services, created.id);
  const SessionState state = session.run();
  const auto record = f.store->session(created.id);
  const std::size_t requests = f.server.http().requests().size(), groups = f.store->groups(created.id).size();
  if (state != SessionState::Finished || requests != 2 || groups != 1) {
    QTest::qFail(("stopped as '" + record->stopReason + "' after " + std::to_string(requests) + " requests in " +
                  std::to_string(groups) + " groups; expected 2 in 1")
                     .c_str(),
                 __FILE__, __LINE__);
    return std::nullopt;
  }
  return record;
}

void TestAgentSession::tokenBudgetStopsNewRequests() {
  Fixture f;
  const auto record = stoppedAfterTheFirstGroup(f, std::chrono::milliseconds(500), [](SessionSettings &s) { s.tokens = 1; });
  QVERIFY(record);
  QVERIFY2(record->stopReason.find("token budget reached") == 0, record->stopReason.c_str());
}

void TestAgentSession::dollarBudgetStopsNewRequests() {
  Fixture f;
  // At $1 a token the first answers spend far more than the $0.01 budget (each answer waits 2 s:
  // room for the second line's thread to start on a loaded machine).
  const auto record = stoppedAfterTheFirstGroup(f, std::chrono::milliseconds(2000),
                                                [](SessionSettings &s) { s.dollars = 0.01; }, llm::Price{1e6, 1e6});
  QVERIFY(record);
  QVERIFY2(record->stopReason.find("dollar budget reached: $") == 0, record->stopReason.c_str());
  QVERIFY2(record->stopReason.find(" of $0.01 spent") != std::string::npos, record->stopReason.c_str());
  QVERIFY(f.store->spend(record->id).cost > 0.01);
}

void TestAgentSession::wallTimeBudgetStopsNewRequests() {
  Fixture f;
  // Every answer takes at least 6 s, so by the time the first group's answers are in, the
  // session has run for more than its 5 s. The first group's requests go out after the starter's
  // compile, well inside 5 s even on a loaded machine.
  const auto record = stoppedAfterTheFirstGroup(f, std::chrono::milliseconds(6000),
                                                [](SessionSettings &s) { s.wallSeconds = 5.0; });
  QVERIFY(record);
  QVERIFY2(record->stopReason.find("wall-time budget reached: ") == 0, record->stopReason.c_str());
  QVERIFY2(record->stopReason.find(" s of 5 s") != std::string::npos, record->stopReason.c_str());
  QVERIFY(record->elapsedSeconds >= 6.0);
}

void TestAgentSession::wallTimeSpentInEarlierRunsCounts() {
  Fixture f;
  // A resumed session's earlier runs count: 100 s already spent of a 50 s budget sends nothing.
  auto settings = compileOnlySettings(2, 3, 5);
  settings.wallSeconds = 50.0;
  const auto created = Session::create(*f.store, f.task, settings, f.server.baseUrl(), "replay");
  f.store->addElapsed(created.id, 100.0);
  Session session(f.services(), created.id);
  QCOMPARE(session.run(), SessionState::Finished);
  const auto record = f.store->session(created.id);
  QVERIFY2(record->stopReason.find("wall-time budget reached: 100 s of 50 s") == 0, record->stopReason.c_str());
  QCOMPARE(f.server.http().requests().size(), std::size_t(0));
}

void TestAgentSession::pauseCancelsRequestsAndResumeFinishes() {
  Fixture f;
  f.server.setDelays(std::chrono::milliseconds(30000), std::chrono::milliseconds(0));
  const auto created = Session::create(*f.store, f.task, compileOnlySettings(3, 2, 1), f.server.baseUrl(), "replay");
  EventLog log;
  SessionState state = SessionState::Running;
  {
    Session session(f.services(), created.id, [&](const SessionEvent &e) { log.add(e); });
    std::thread runner([&] { state = session.run(); });
    QVERIFY(log.waitFor(SessionEvent::Kind::Requesting, 3, std::chrono::seconds(60)));
    QVERIFY(f.server.http().waitForRequests(3, std::chrono::milliseconds(30000)));
    const auto t0 = std::chrono::steady_clock::now();
    session.pause();
    runner.join();
    // Cancelled within a transport poll, not after the server's 30 s delay.
    QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  }
  QCOMPARE(state, SessionState::Paused);
  QCOMPARE(f.store->session(created.id)->state, SessionState::Paused);
  QVERIFY(f.store->sessionAttempts(created.id).empty());  // nothing answered: nothing stored

  f.server.setDelays(std::chrono::milliseconds(0), std::chrono::milliseconds(0));
  Session resumed(f.services(), created.id);
  QCOMPARE(resumed.run(), SessionState::Finished);
  QCOMPARE(f.store->sessionAttempts(created.id).size(), std::size_t(3));
  QCOMPARE(f.server.http().requests().size(), std::size_t(6));  // the 3 cancelled, asked again
  QVERIFY(f.store->session(created.id)->elapsedSeconds > 0);
}

// Pause or Stop pressed while the caller still prepares the run (the GUI waits for a Slurm
// allocation first): run() ends at once in that state, asking nothing; the next run() resumes.
void TestAgentSession::pauseOrStopBeforeRunHolds() {
  Fixture f;
  const auto created = Session::create(*f.store, f.task, compileOnlySettings(2, 1, 1), f.server.baseUrl(), "replay");
  Session session(f.services(), created.id);
  session.pause();
  QCOMPARE(session.run(), SessionState::Paused);
  QCOMPARE(f.store->session(created.id)->stopReason, std::string("paused by the user"));
  QVERIFY(f.server.http().requests().empty());
  session.stop("stopped before it ran");
  QCOMPARE(session.run(), SessionState::Stopped);
  QCOMPARE(f.store->session(created.id)->stopReason, std::string("stopped before it ran"));
  QVERIFY(f.server.http().requests().empty());
  QCOMPARE(session.run(), SessionState::Finished);  // what run() was told is forgotten as it ends
  QCOMPARE(f.server.http().requests().size(), std::size_t(2));
}

void TestAgentSession::settingsOutOfRangeAreRefused() {
  QTemporaryDir dir;
  SessionStore store(std::filesystem::path(dir.filePath("ws.kwb").toStdString()));
  const Task task = loadTask(kSoftmax);
  auto s = compileOnlySettings(17, 3, 1);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Session::create(store, task, s, "http://127.0.0.1:1/v1", ""));
  s = compileOnlySettings(4, 0, 1);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Session::create(store, task, s, "http://127.0.0.1:1/v1", ""));
  QVERIFY(store.sessions().empty());
}

// Every choice of the CLI's options and the window's dialog is stored with the session and read
// back as it was (a resume runs with them).
namespace {

// A library in `dir` holding the cards lifted from the softmax lineage (figures by the helper).
std::shared_ptr<SkillLibrary> softmaxCards(const QTemporaryDir &dir, std::vector<std::string> &ids) {
  std::shared_ptr<SkillLibrary> library = SkillLibrary::open(dir.filePath("library.sqlite").toStdString());
  const auto measured = test::measuredLineage("softmax");
  for (const auto &card : liftCards(measured.record, measured.task)) {
    library->proposeCard(card, "test", "softmax lineage");
    ids.push_back(card.id);
  }
  return library;
}

// The library's cards made proven: every other one admitted by the gate, the rest approved by a
// reviewer (issue 47: only those reach a prompt by default).
void proveCards(SkillLibrary &library, const std::vector<std::string> &ids) {
  for (std::size_t i = 0; i < ids.size(); ++i)
    library.setStatus(ids[i], i % 2 ? CardStatus::Approved : CardStatus::Admitted, i % 2 ? "reviewer:test" : "gate",
                      "for the test");
}

std::size_t sessionEvidence(SkillLibrary &library, const std::string &id) {
  const auto card = library.card(id);
  return card ? static_cast<std::size_t>(std::count_if(card->evidence.begin(), card->evidence.end(),
                                                       [](const CardEvidence &e) { return e.kind == "session"; }))
              : 0;
}

}  // namespace

// Issue 18, 6: the cards retrieved for the incumbent go into every first turn (with their carrier
// code), each attempt records which, repairs carry their line's, and a gated evaluation (here a
// compile error; a compiled-only answer is not gated) adds to each carried card's evidence.
void TestAgentSession::skillCardsGoIntoFirstTurnsAndGainEvidence() {
  Fixture f;
  std::vector<std::string> ids;
  auto library = softmaxCards(f.dir, ids);
  QVERIFY(!ids.empty());
  proveCards(*library, ids);
  f.server.script({ReplayFault::CompileError});  // line 1's first answer: repaired in turn 2
  const auto created = Session::create(*f.store, f.task, compileOnlySettings(2, 2, 1), f.server.baseUrl(), "replay");
  auto services = f.services();
  services.skills = library;
  Session session(services, created.id);
  QCOMPARE(session.run(), SessionState::Finished);
  const auto attempts = f.store->attempts(f.store->groups(created.id).at(0).id);
  QVERIFY(attempts.size() >= 3);
  std::vector<std::string> carried;
  for (const auto &a : attempts) {
    QVERIFY2(!a.cards.empty(), ("attempt line " + std::to_string(a.line) + " turn " + std::to_string(a.turn)).c_str());
    QVERIFY(a.cards.size() <= 3);
    // The context record names each card with its status: admitted or approved, none proposed.
    QCOMPARE(a.context["cards"].size(), a.cards.size());
    QCOMPARE(a.context["proposed_cards"], nlohmann::json(false));
    for (const auto &c : a.context["cards"]) {
      const auto stored = library->card(c["id"].get<std::string>());
      QCOMPARE(c["status"].get<std::string>(), kwb::toString(stored->status));
      QVERIFY(kwb::provenStatus(stored->status));
    }
    if (a.turn == 1) {
      const std::string &user = a.messages.at(1).content;
      QVERIFY2(user.find("## Skill cards") != std::string::npos, user.c_str());
      for (const auto &id : a.cards) {
        QVERIFY2(user.find(id) != std::string::npos, id.c_str());
        QVERIFY(std::find(ids.begin(), ids.end(), id) != ids.end());
        const auto card = library->card(id);
        QVERIFY2(user.find(card->afterCode()) != std::string::npos, "the carrier is the code hint");
      }
      carried = a.cards;
    } else {
      QCOMPARE(a.cards, attempts.front().cards);  // a repair carries its line's cards, text and all
      QVERIFY2(a.messages.at(1).content.find("## Skill cards") != std::string::npos, a.messages.at(1).content.c_str());
    }
  }
  // The compile error is the one gated evaluation: one failed "session" measurement per card.
  std::size_t failures = 0;
  for (const auto &a : attempts) failures += a.outcome == "compile-error";
  QCOMPARE(failures, std::size_t(1));
  for (const auto &id : carried) {
    QCOMPARE(sessionEvidence(*library, id), std::size_t(1));
    const auto stored = library->card(id);
    const auto &e = stored->evidence.back();
    QVERIFY(!e.success);
    QCOMPARE(e.task, std::string("softmax"));
    QVERIFY2(e.note.find("session " + created.id) != std::string::npos, e.note.c_str());
    QVERIFY2(e.note.find("compile-error") != std::string::npos, e.note.c_str());
  }
  // Reopened, the attempts still name their cards.
  SessionStore again(std::filesystem::path(f.dir.filePath("ws.kwb").toStdString()));
  QCOMPARE(again.attempts(f.store->groups(created.id).at(0).id).front().cards, attempts.front().cards);
}

void TestAgentSession::skillCardsOffLeavesThemOut() {
  Fixture f;
  std::vector<std::string> ids;
  auto library = softmaxCards(f.dir, ids);
  auto settings = compileOnlySettings(1, 1, 1);
  settings.skills = false;
  const auto created = Session::create(*f.store, f.task, settings, f.server.baseUrl(), "replay");
  auto services = f.services();
  services.skills = library;
  Session session(services, created.id);
  QCOMPARE(session.run(), SessionState::Finished);
  const auto attempts = f.store->attempts(f.store->groups(created.id).at(0).id);
  QCOMPARE(attempts.size(), std::size_t(1));
  QVERIFY(attempts[0].cards.empty());
  QVERIFY(attempts[0].messages.at(1).content.find("## Skill cards") == std::string::npos);
}

// Issue 47, 1: lifted cards are proposed, unproven: a session leaves them out unless it asks
// for them, and then its context record says they were proposed.
void TestAgentSession::proposedCardsOnlyWhenAsked() {
  Fixture f;
  std::vector<std::string> ids;
  auto library = softmaxCards(f.dir, ids);
  QVERIFY(!ids.empty());
  auto first = [&](const SessionSettings &settings) {
    return f.firstAttempt(settings, [&](SessionServices &s) { s.skills = library; });
  };
  const auto byDefault = first(compileOnlySettings(1, 1, 1));
  QVERIFY(!byDefault.messages.empty());
  QVERIFY(byDefault.cards.empty());
  QVERIFY(byDefault.messages.at(1).content.find("## Skill cards") == std::string::npos);
  QCOMPARE(byDefault.context["cards"].size(), std::size_t(0));
  auto settings = compileOnlySettings(1, 1, 1);
  settings.proposedCards = true;
  const auto asked = first(settings);
  QVERIFY(!asked.cards.empty());
  QVERIFY(asked.messages.at(1).content.find("## Skill cards") != std::string::npos);
  QCOMPARE(asked.context["proposed_cards"], nlohmann::json(true));
  for (const auto &c : asked.context["cards"]) QCOMPARE(c["status"].get<std::string>(), std::string("proposed"));
  // One card approved by a reviewer: the default session carries it, and only it.
  library->setStatus(ids.front(), CardStatus::Approved, "reviewer:test", "read it");
  const auto approved = first(compileOnlySettings(1, 1, 1));
  QCOMPARE(approved.cards, std::vector<std::string>{ids.front()});
  QCOMPARE(approved.context["cards"].at(0)["status"].get<std::string>(), std::string("approved"));
}

// Issue 47, 5: each attempt is a Case as soon as its evaluation ends. Group 1's compile error is
// in group 2's first prompt (this task's experience, warm), and in the repair prompt of its own line.
void TestAgentSession::experienceWithinASession() {
  Fixture f;
  std::shared_ptr<kwb::memory::ExperienceStore> memory =
      kwb::memory::ExperienceStore::open(f.dir.filePath("library.sqlite").toStdString());
  f.server.script({ReplayFault::CompileError});
  const std::string id = f.finished(compileOnlySettings(1, 1, 2), [&](SessionServices &s) { s.memory = memory; });
  QVERIFY(!id.empty());
  const auto groups = f.store->groups(id);
  QCOMPARE(groups.size(), std::size_t(2));
  const auto failed = f.store->attempts(groups.at(0).id).at(0);
  QCOMPARE(failed.outcome, std::string("compile-error"));
  // Recorded with its session, before group 2 began.
  const auto cases = memory->query(kwb::memory::MemoryQuery{.task = "softmax", .session = id});
  QCOMPARE(cases.size(), std::size_t(1));
  const auto second = f.store->attempts(groups.at(1).id).at(0);
  bool shown = false;
  for (const auto &item : second.context["included"])
    if (item.value("case", std::int64_t(0)) == cases[0].c.id) shown = item["tier"] == "warm";
  QVERIFY2(shown, second.context.dump().c_str());
  QVERIFY2(second.messages.at(1).content.find("compile-error") != std::string::npos, second.messages.at(1).content.c_str());

  // A repair turn: the line's own compile error is the recency reserve and its Case is experience.
  Fixture g;
  std::shared_ptr<kwb::memory::ExperienceStore> memory2 =
      kwb::memory::ExperienceStore::open(g.dir.filePath("library.sqlite").toStdString());
  g.server.script({ReplayFault::CompileError});
  const std::string repaired = g.finished(compileOnlySettings(1, 2, 1), [&](SessionServices &s) { s.memory = memory2; });
  QVERIFY(!repaired.empty());
  const auto attempts = g.store->attempts(g.store->groups(repaired).at(0).id);
  QCOMPARE(attempts.size(), std::size_t(2));
  const auto &repair = attempts.at(1);
  QCOMPARE(repair.turn, 2);
  QVERIFY(repair.context["recency"].get<std::size_t>() > 0);
  QCOMPARE(repair.context["budget"].get<std::size_t>(),
           repair.context["window"].get<std::size_t>() - repair.context["system"].get<std::size_t>() -
               repair.context["generation"].get<std::size_t>() - repair.context["recency"].get<std::size_t>());
  bool warm = false;
  for (const auto &item : repair.context["included"]) warm = warm || item["tier"] == "warm";
  QVERIFY2(warm, repair.context.dump().c_str());
  QVERIFY2(repair.messages.at(1).content.find("## Experience") != std::string::npos, repair.messages.at(1).content.c_str());
}

// Issue 47, 5: W and the answer limit come from the provider when the session does not set them;
// the request asks for no more than the provider allows.
void TestAgentSession::contextWindowFromTheProvider() {
  Fixture f;
  std::shared_ptr<kwb::memory::ExperienceStore> memory =
      kwb::memory::ExperienceStore::open(f.dir.filePath("library.sqlite").toStdString());
  const auto a = f.firstAttempt(compileOnlySettings(1, 1, 1), [&](SessionServices &s) {
    s.memory = memory;
    s.provider.contextWindow = 12000;
    s.provider.maxOutputTokens = 3000;
  });
  QVERIFY(!a.messages.empty());
  QCOMPARE(a.context["window"].get<std::size_t>(), std::size_t(12000));
  QCOMPARE(a.context["window_from"].get<std::string>(), std::string("the provider's setting"));
  QCOMPARE(a.context["generation"].get<std::size_t>(), std::size_t(3000));  // the session asked for 8192
  const auto requests = f.server.http().requests();
  QVERIFY(!requests.empty());
  const auto body = nlohmann::json::parse(requests.back().body);
  QCOMPARE(body["max_tokens"].get<int>(), 3000);
  // Neither set: assumed, and said so.
  Fixture g;
  const auto b = g.firstAttempt(compileOnlySettings(1, 1, 1), [&](SessionServices &s) { s.memory = memory; });
  QVERIFY(!b.messages.empty());
  QCOMPARE(b.context["window"].get<std::size_t>(), std::size_t(kwb::llm::kAssumedContextWindow));
  QVERIFY(b.context["window_from"].get<std::string>().rfind("assumed", 0) == 0);
}

// KOPE end to end: a session on softmax with an empty memory; then an earlier task's runs
// (layernorm, in another workspace) become Cases; the next session's first prompt carries that
// experience in its cold tier, within the budget, and the attempt records which Case and why.
void TestAgentSession::experienceFromAnEarlierTaskChangesThePrompt() {
  Fixture f;
  std::shared_ptr<kwb::memory::ExperienceStore> memory =
      kwb::memory::ExperienceStore::open(f.dir.filePath("library.sqlite").toStdString());
  auto runSession = [&](const SessionSettings &settings) {
    return f.firstAttempt(settings, [&](SessionServices &s) { s.memory = memory; });
  };
  const auto before = runSession(compileOnlySettings(1, 1, 1));
  QVERIFY(!before.messages.empty());
  QVERIFY(before.messages.at(1).content.find("## Further experience") == std::string::npos);
  QVERIFY(before.messages.at(1).content.find("## Experience with this kernel") == std::string::npos);
  QCOMPARE(before.context["included"].size(), std::size_t(1));  // the hot tier alone

  // The earlier task: two layernorm runs, the second twice as fast, recorded as Cases.
  auto earlier = kwb::Workspace::open(f.dir.filePath("earlier.kwb").toStdString());
  const auto layernorm = earlier->recordTaskOpened("layernorm", KWB_SOURCE_DIR "/kernels/layernorm", "hash");
  kwb::test::addMemoryRun(*earlier, layernorm.id, "// plain\n", kwb::test::memoryRunResult(true, {1.0, 1.0, 1.0}), "plain.cu");
  kwb::test::addMemoryRun(*earlier, layernorm.id, "// welford\n", kwb::test::memoryRunResult(true, {2.0, 2.0, 2.0}),
                          "welford-warp-per-row.cu");
  QCOMPARE(kwb::memory::syncWorkspace(*memory, *earlier).added, std::size_t(2));

  auto settings = compileOnlySettings(1, 1, 1);
  settings.contextWindow = 16384;
  const auto after = runSession(settings);
  const std::string &user = after.messages.at(1).content;
  QVERIFY2(user.find("## Further experience") != std::string::npos, user.c_str());
  QVERIFY2(user.find("layernorm: run of welford-warp-per-row.cu") != std::string::npos, user.c_str());
  QVERIFY(user.find("[effective, x2.00 over where it started") != std::string::npos);
  QVERIFY(user.size() > before.messages.at(1).content.size());
  const auto &context = after.context;
  QVERIFY(context["tokens"].get<std::size_t>() <= context["budget"].get<std::size_t>());
  // B = W - S - G - R: the window set, the system prompt, the answer limit, the recency reserve
  // (the incumbent's feedback).
  QCOMPARE(context["window"].get<std::size_t>(), std::size_t(16384));
  QCOMPARE(context["budget"].get<std::size_t>(), std::size_t(16384) - 8192 - (after.messages.at(0).content.size() + 3) / 4 -
                                                     context["recency"].get<std::size_t>());
  bool cold = false;
  for (const auto &item : context["included"])
    if (item["tier"] == "cold") {
      cold = true;
      QVERIFY(item["why"].get<std::string>().find("another operator") != std::string::npos);
    }
  QVERIFY2(cold, context.dump().c_str());
  // Stored with the attempt: reopened, the record is there.
  SessionStore again(std::filesystem::path(f.dir.filePath("ws.kwb").toStdString()));
  QCOMPARE(again.attempts(after.groupId).at(0).context, after.context);

  // Switched off, the same memory leaves the prompt as it was.
  auto off = compileOnlySettings(1, 1, 1);
  off.memory = false;
  const auto without = runSession(off);
  QVERIFY(without.messages.at(1).content.find("## Further experience") == std::string::npos);
  QVERIFY2(!without.context.contains("included") && !without.context.contains("budget"), without.context.dump().c_str());
}

void TestAgentSession::settingsRoundTripThroughTheStore() {
  QTemporaryDir dir;
  SessionStore store(std::filesystem::path(dir.filePath("ws.kwb").toStdString()));
  const Task task = loadTask(kSoftmax);
  auto s = compileOnlySettings(6, 4, 5);
  s.dcp.easyBelow = 2;
  s.dcp.hopelessAbove = 5;
  s.discount = 0.25;
  s.minGain = 0.05;
  s.dollars = 1.5;
  s.tokens = 123456;
  s.wallSeconds = 900;
  s.timingCapSeconds = 0.3;
  s.profile = false;
  s.sanitizeBest = false;
  const auto created = Session::create(store, task, s, "http://127.0.0.1:1/v1", "m");
  const auto record = store.session(created.id);
  QVERIFY(record);
  const SessionSettings &r = record->settings;
  QCOMPARE(r.candidates, std::size_t(6));
  QCOMPARE(r.dcp.maxTurns, std::size_t(4));
  QCOMPARE(r.groups, std::size_t(5));
  QCOMPARE(r.dcp.easyBelow.value_or(0), std::size_t(2));
  QCOMPARE(r.dcp.hopelessAbove.value_or(0), std::size_t(5));
  QCOMPARE(r.discount, 0.25);
  QCOMPARE(r.minGain, 0.05);
  QCOMPARE(r.dollars.value_or(0), 1.5);
  QCOMPARE(r.tokens.value_or(0), std::int64_t(123456));
  QCOMPARE(r.wallSeconds.value_or(0), 900.0);
  QCOMPARE(r.timingCapSeconds, 0.3);
  QVERIFY(!r.profile);
  QVERIFY(!r.sanitizeBest);
  QVERIFY(!r.useDevice);
  QVERIFY(r.skills);
  QCOMPARE(r.skillCards, 3);
  // And the defaults: both GPU steps on.
  const auto plain = Session::create(store, task, compileOnlySettings(4, 3, 1), "http://127.0.0.1:1/v1", "m");
  QVERIFY(store.session(plain.id)->settings.profile);
  QVERIFY(store.session(plain.id)->settings.sanitizeBest);
  QVERIFY(!store.session(plain.id)->settings.dcp.easyBelow);
}

namespace {

QString kwbProgram() { return qEnvironmentVariable("KWB_CLI"); }

// Reads the process's output until `needle` appears (waiting on its readyRead, no sleeping).
bool waitForOutput(QProcess &p, QByteArray &seen, const QByteArray &needle, int timeoutMs) {
  QElapsedTimer t;
  t.start();
  while (!seen.contains(needle)) {
    if (t.elapsed() > timeoutMs || p.state() == QProcess::NotRunning) return seen.contains(needle);
    p.waitForReadyRead(200);
    seen += p.readAllStandardOutput();
  }
  return true;
}

// `kwb optimize` on softmax, compile-only, G candidates, K = 2, 2 groups, in dir's ws.kwb, with
// answers streamed slowly (40 ms a chunk); returns once the first evaluation was printed.
void startSlowOptimize(QProcess &p, const QTemporaryDir &dir, ReplayLlmServer &server, int g, QByteArray &out) {
  server.setDelays(std::chrono::milliseconds(0), std::chrono::milliseconds(40));
  p.setWorkingDirectory(dir.path());
  p.start(kwbProgram(), {"optimize", QString::fromStdString(kSoftmax.string()), "--provider",
                         QString::fromStdString(server.baseUrl()), "--no-gpu", "-G", QString::number(g), "-K", "2",
                         "--groups", "2", "--workspace", dir.filePath("ws.kwb")});
  QVERIFY(p.waitForStarted());
  QVERIFY2(waitForOutput(p, out, "] not-run", 120000), out.constData());
}

std::string sessionIdIn(const QByteArray &out) {
  const QRegularExpression re(QStringLiteral("session (\\d{8}-\\d{6}-[0-9a-f]{4})"));
  const auto m = re.match(QString::fromUtf8(out));
  return m.hasMatch() ? m.captured(1).toStdString() : std::string();
}

}  // namespace

void TestAgentSession::optimizeKilledWithSigkillResumes() {
  QVERIFY2(!kwbProgram().isEmpty(), "run through ctest: KWB_CLI names kwb");
  QTemporaryDir dir;
  ReplayLlmServer server(kSoftmax);
  // Slow answers: the kill lands while some are stored and others are in flight.
  const QString ws = dir.filePath("ws.kwb");
  QProcess p;
  QByteArray out;
  startSlowOptimize(p, dir, server, 4, out);
  if (QTest::currentTestFailed()) return;
  ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
  QVERIFY(p.waitForFinished(10000));
  QCOMPARE(p.exitStatus(), QProcess::CrashExit);
  const std::string id = sessionIdIn(out);
  QVERIFY2(!id.empty(), out.constData());

  // What was committed before the kill: answered attempts, kept as they are.
  std::vector<AttemptRecord> before;
  {
    SessionStore store(std::filesystem::path(ws.toStdString()));
    QCOMPARE(store.session(id)->state, SessionState::Running);  // it never got to say otherwise
    before = store.sessionAttempts(id);
  }
  QVERIFY(!before.empty());
  QVERIFY(before.size() < 8);
  const std::size_t requestsBefore = server.http().requests().size();

  server.setDelays(std::chrono::milliseconds(0), std::chrono::milliseconds(0));
  QProcess resume;
  resume.setWorkingDirectory(dir.path());
  resume.start(kwbProgram(), {"optimize", "--resume", QString::fromStdString(id), "--provider",
                              QString::fromStdString(server.baseUrl()), "--workspace", ws});
  QVERIFY(resume.waitForFinished(180000));
  const QByteArray resumeOut = resume.readAllStandardOutput();
  QCOMPARE(resume.exitCode(), 3);  // no GPU: compiled only
  QVERIFY2(resumeOut.contains("resuming session " + QByteArray::fromStdString(id)), resumeOut.constData());

  SessionStore store(std::filesystem::path(ws.toStdString()));
  QCOMPARE(store.session(id)->state, SessionState::Finished);
  const auto after = store.sessionAttempts(id);
  QCOMPARE(after.size(), std::size_t(8));  // 2 groups of 4, every answer compiles: no repairs
  for (const auto &b : before) {
    const auto same = std::find_if(after.begin(), after.end(), [&](const AttemptRecord &a) { return a.id == b.id; });
    QVERIFY(same != after.end());
    QCOMPARE(same->createdAt, b.createdAt);
    QCOMPARE(same->responseText, b.responseText);
  }
  // Answers that had arrived were not asked for again.
  QCOMPARE(server.http().requests().size() - requestsBefore, std::size_t(8) - before.size());
}

void TestAgentSession::optimizeCtrlCPausesAndExportsTrajectories() {
  QVERIFY2(!kwbProgram().isEmpty(), "run through ctest: KWB_CLI names kwb");
  QTemporaryDir dir;
  ReplayLlmServer server(kSoftmax);
  const QString ws = dir.filePath("ws.kwb");
  QProcess p;
  QByteArray out;
  startSlowOptimize(p, dir, server, 2, out);
  if (QTest::currentTestFailed()) return;
  ::kill(static_cast<pid_t>(p.processId()), SIGINT);
  QVERIFY(p.waitForFinished(60000));
  out += p.readAllStandardOutput();
  QCOMPARE(p.exitStatus(), QProcess::NormalExit);
  QCOMPARE(p.exitCode(), 5);  // paused
  QVERIFY2(out.contains("session paused: interrupted (Ctrl+C)"), out.constData());
  const std::string id = sessionIdIn(out);

  QProcess resume;
  resume.setWorkingDirectory(dir.path());
  resume.start(kwbProgram(), {"optimize", "--resume", QString::fromStdString(id), "--workspace", ws});
  QVERIFY(resume.waitForFinished(180000));
  QCOMPARE(resume.exitCode(), 3);

  const QString file = dir.filePath("t.jsonl");
  QProcess exporter;
  exporter.start(kwbProgram(), {"trajectories", "export", QString::fromStdString(id), "--format", "jsonl", "--output", file,
                                "--workspace", ws});
  QVERIFY(exporter.waitForFinished(60000));
  QCOMPARE(exporter.exitCode(), 0);
  std::ifstream in(file.toStdString());
  std::size_t n = 0;
  for (std::string line; std::getline(in, line); ++n) {
    const json r = json::parse(line);
    QCOMPARE(r["metadata"]["goal"].get<std::string>(), std::string("compiles"));
    QVERIFY(r["reward"].is_number());
  }
  QCOMPARE(n, std::size_t(4));

  QProcess list;
  list.start(kwbProgram(), {"sessions", "--workspace", ws, "--json"});
  QVERIFY(list.waitForFinished(60000));
  const json sessions = json::parse(list.readAllStandardOutput().toStdString());
  QCOMPARE(sessions.size(), std::size_t(1));
  QCOMPARE(sessions[0]["state"].get<std::string>(), std::string("finished"));
  QCOMPARE(sessions[0]["attempts"].get<int>(), 4);
}

// Issue 47, 7: kwb suite TASKS --agent --ablate ...: the same sessions once per arm, each with its
// part switched off, from its own copy of the library; per arm the papers' figures, as a table and
// JSON. Through the real kwb and the replay server (no GPU: nothing solved, the calls counted).
void TestAgentSession::ablationRunnerRunsEachArm() {
  QVERIFY2(!kwbProgram().isEmpty(), "run through ctest: KWB_CLI names kwb");
  QTemporaryDir dir;
  ReplayLlmServer server(kSoftmax);
  server.script({ReplayFault::CompileError});  // the first answer of the first arm: a repair follows
  // The user's library: softmax's cards, one approved; one Case of experience.
  const std::string library = dir.filePath("library.sqlite").toStdString();
  std::vector<std::string> ids;
  {
    QTemporaryDir cardsDir;
    auto cards = softmaxCards(cardsDir, ids);
    auto lib = SkillLibrary::open(library);
    for (const auto &id : ids) lib->proposeCard(*cards->card(id), "test", "softmax lineage");
    lib->setStatus(ids.front(), CardStatus::Approved, "reviewer:test", "read it");
    auto memory = kwb::memory::ExperienceStore::open(library);
    auto earlier = kwb::Workspace::open(dir.filePath("earlier.kwb").toStdString());
    const auto softmax = earlier->recordTaskOpened("softmax", kSoftmax.string(), "hash");
    kwb::test::addMemoryRun(*earlier, softmax.id, "// plain\n", kwb::test::memoryRunResult(true, {1.0, 1.0, 1.0}), "plain.cu");
    QCOMPARE(kwb::memory::syncWorkspace(*memory, *earlier).added, std::size_t(1));
  }
  const auto casesBefore = kwb::memory::ExperienceStore::open(library)->cases().size();
  const QString tasks = dir.filePath("tasks");
  QVERIFY(QDir().mkpath(tasks));
  std::filesystem::create_directory_symlink(kSoftmax, (tasks + "/softmax").toStdString());
  const QString out = QString::fromUtf8(qgetenv("KWB_TEST_OUTPUT_DIR")) + "/ablation-replay.json";
  QProcess p;
  auto env = QProcessEnvironment::systemEnvironment();
  env.insert("KWB_LIBRARY", QString::fromStdString(library));
  p.setProcessEnvironment(env);
  p.start(kwbProgram(), {"suite", tasks, "--agent", "--provider", QString::fromStdString(server.baseUrl()), "--ablate", "none",
                         "--ablate", "memory", "--ablate", "skills", "--ablate", "dcp", "--no-gpu", "-G", "2", "-K", "2",
                         "--groups", "1", "--max-tokens", "4096", "--workspace", dir.filePath("ws.kwb"), "--out", out});
  QVERIFY(p.waitForFinished(300000));
  const QByteArray stdoutText = p.readAllStandardOutput();
  QVERIFY2(p.exitCode() == 0, (stdoutText + p.readAllStandardError()).constData());
  // The table: one row per arm.
  for (const char *row : {"\nnone ", "\nmemory ", "\nskills ", "\ndcp "}) QVERIFY2(stdoutText.contains(row), stdoutText.constData());
  QVERIFY(stdoutText.contains("LLM calls"));
  std::ifstream in(out.toStdString());
  const json j = json::parse(in);
  QCOMPARE(j["on_gpu"], json(false));
  const auto &arms = j["arms"];
  QCOMPARE(arms.size(), std::size_t(4));
  SessionStore store(std::filesystem::path(dir.filePath("ws.kwb").toStdString()));
  std::map<std::string, std::vector<AttemptRecord>> attemptsOf;
  for (const auto &arm : arms) {
    QCOMPARE(arm["tasks"].size(), std::size_t(1));
    const auto &row = arm["tasks"][0];
    QCOMPARE(row["task"].get<std::string>(), std::string("softmax"));
    QVERIFY(row["llm_calls"].get<int>() >= 2);
    QVERIFY(row["tokens"].get<int>() > 0);
    QCOMPARE(row["gpu_evaluations"].get<int>(), 0);
    QCOMPARE(arm["solve_rate"].get<double>(), 0.0);
    attemptsOf[arm["off"].get<std::string>()] = store.sessionAttempts(row["session"].get<std::string>());
  }
  QCOMPARE(arms[0]["off"].get<std::string>(), std::string("none"));
  QCOMPARE(arms[0]["llm_calls"].get<int>(), 3);  // G = 2 and the compile error's repair
  // Each arm's part is off in its prompts, on in the others'.
  auto hasCards = [](const AttemptRecord &a) { return !a.cards.empty(); };
  auto hasMemory = [](const AttemptRecord &a) { return a.context.contains("budget"); };
  for (const auto &[arm, attempts] : attemptsOf) {
    QVERIFY(!attempts.empty());
    for (const auto &a : attempts) {
      QCOMPARE(hasCards(a), arm != "skills");
      QCOMPARE(hasMemory(a), arm != "memory");
      if (hasCards(a)) QCOMPARE(a.cards, std::vector<std::string>{ids.front()});  // the approved one only
    }
  }
  // The user's library was only read: the sessions' Cases went to each arm's copy.
  QCOMPARE(kwb::memory::ExperienceStore::open(library)->cases().size(), casesBefore);
}

// DCP's hopeless branch is off by default (README: it cost solve rate in the simulation) but a
// session that sets it prunes: the same two failures are repaired by default and not when more
// than one failure is hopeless (issue 47, 6: not only "never hopeless" under test).
void TestAgentSession::hopelessWhenAskedStopsTheGroup() {
  auto attemptsWith = [](std::optional<std::size_t> hopelessAbove, DcpVerdict &verdict) {
    Fixture f;
    f.server.script({ReplayFault::CompileError, ReplayFault::CompileError});
    auto settings = compileOnlySettings(2, 3, 1);
    settings.dcp.hopelessAbove = hopelessAbove;
    const auto created = Session::create(*f.store, f.task, settings, f.server.baseUrl(), "replay");
    Session session(f.services(), created.id);
    if (session.run() != SessionState::Finished) return std::size_t(0);
    const auto group = f.store->groups(created.id).at(0);
    verdict = group.dcp->verdict;
    return f.store->attempts(group.id).size();
  };
  DcpVerdict byDefault = DcpVerdict::Easy, asked = DcpVerdict::Easy;
  QVERIFY(attemptsWith(std::nullopt, byDefault) > 2);  // both failed: repaired
  QCOMPARE(byDefault, DcpVerdict::Repair);
  QCOMPARE(attemptsWith(1, asked), std::size_t(2));     // more than 1 of 2 failed: hopeless, no repair
  QCOMPARE(asked, DcpVerdict::Hopeless);
}

QTEST_GUILESS_MAIN(TestAgentSession)
#include "tst_agent_session.moc"
