// On a machine with a GPU: an agent session (core/agent/session.h) through the replay LLM server
// (tests/helpers/replay_llm_server.h: the softmax lineage's steps, one further each time it is
// shown the incumbent) with the real worker: every answer checked and timed against the
// reference. The best time must fall group by group as the lineage's does, a wrong answer must
// come back incorrect with the mismatch in its repair prompt, and the groups' numbers are
// written to agent-replay.json in the test's output folder. Skips, saying why, without a GPU.
#include <QtTest>
#include <QTemporaryDir>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "core/agent/session.h"
#include "core/memory/case_sources.h"
#include "core/memory/experience_store.h"
#include "core/llm/provider_config.h"
#include "core/task/manifest_parser.h"
#include "helpers/replay_llm_server.h"
#include "helpers/gpu_test.h"
#include "helpers/test_files.h"

using namespace kwb;
using namespace kwb::agent;
using kwb::test::kernelsDir;
using kwb::test::outputDir;
using kwb::test::ReplayFault;
using kwb::test::ReplayLlmServer;
using nlohmann::json;

class TestGpuAgent : public QObject {
  Q_OBJECT
  std::string worker_;

  // A session's store, the replay server as its provider and a pool of the real worker.
  SessionServices gpuServices(const std::shared_ptr<SessionStore> &store, const std::string &baseUrl) const {
    SessionServices services;
    services.store = store;
    services.provider = llm::adHocProvider(baseUrl);
    EvaluatorPoolSettings ps;
    ps.evaluator.workerPath = worker_;
    ps.evaluator.compiler.cacheDirectory = outputDir() / "gpu-agent-compile-cache";
    services.pool = std::make_shared<EvaluatorPool>(ps);
    services.evaluator = ps.evaluator;
    return services;
  }

 private slots:
  void initTestCase() {
    KWB_REQUIRE_GPU_WORKER(worker_);
  }

  void lineageReplayGetsFasterGroupByGroup() {
    QTemporaryDir dir;
    ReplayLlmServer server(kernelsDir() / "softmax");
    server.setLastStep(4);  // step 5 launches differently from the task's [launch]
    // The first answer is wrong: 1 of 2 failed = ceil(G/2): repaired with the mismatch report.
    server.script({ReplayFault::WrongAnswer});
    auto store = std::make_shared<SessionStore>(std::filesystem::path(dir.filePath("ws.kwb").toStdString()));
    const Task task = loadTask(kernelsDir() / "softmax");
    SessionSettings s;
    s.candidates = 2;
    s.dcp.maxTurns = 2;
    s.groups = 4;
    s.configs = {"h200"};
    s.timingCapSeconds = 0.5;
    const auto created = Session::create(*store, task, s, server.baseUrl(), "replay");

    SessionServices services = gpuServices(store, server.baseUrl());
    services.provider.maxConcurrent = 2;
    QVERIFY2(!services.pool->devices().empty(), services.pool->problem().c_str());

    const auto t0 = std::chrono::steady_clock::now();
    // Every event on stdout: a failure on the GPU machine says where the session went.
    // compute-sanitizer's word on each kernel before it became the best, by g-l-t; the bests.
    std::mutex eventsMutex;
    std::map<std::string, std::string> sanitized;
    std::vector<std::string> bests;
    Session session(services, created.id, [&](const SessionEvent &e) {
      if (e.kind == SessionEvent::Kind::Text) return;  // the answers themselves are in the store
      std::cout << "event g" << e.group << " l" << e.line << " t" << e.turn << ": " << e.text.substr(0, 300) << "\n";
      const std::string key = std::to_string(e.group) + "-" + std::to_string(e.line) + "-" + std::to_string(e.turn);
      std::lock_guard lock(eventsMutex);
      if (e.kind == SessionEvent::Kind::Message && e.text.rfind("sanitized ", 0) == 0) sanitized[key] = e.text;
      if (e.kind == SessionEvent::Kind::Best) bests.push_back(key);
    });
    const SessionState state = session.run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto record = store->session(created.id);
    QVERIFY2(state == SessionState::Finished, record->stopReason.c_str());
    QVERIFY(record->baseline);
    QVERIFY2(record->baseline->ms, ("the starter has no time: " + record->baseline->outcome + "\n" +
                                    record->baseline->feedback).c_str());
    const double starterMs = *record->baseline->ms;

    json out = {{"task", "softmax"}, {"config", "h200"}, {"G", 2}, {"K", 2}, {"starter_ms", starterMs},
                {"wall_s", wall}, {"groups", json::array()}};
    std::optional<double> best;
    bool sawMismatchRepair = false, sawProfile = false;
    double llmSeconds = 0, evalSeconds = 0;
    for (const auto &g : store->groups(created.id)) {
      std::optional<double> groupBest;
      json steps = json::array();
      for (const auto &a : store->attempts(g.id)) {
        llmSeconds += a.llmSeconds;
        evalSeconds += a.evalSeconds;
        const std::size_t step = server.stepShown(a.responseText);
        steps.push_back({{"line", a.line}, {"turn", a.turn}, {"step", step}, {"outcome", a.outcome},
                         {"ms", a.ms ? json(*a.ms) : json(nullptr)}, {"success", a.success},
                         {"reward", a.reward ? json(*a.reward) : json(nullptr)}});
        if (a.turn == 2 && a.messages.size() == 2 && a.messages[1].content.find("mismatch") != std::string::npos)
          sawMismatchRepair = true;
        // An optimization turn shows the incumbent's profile (the detailed set on the session's config).
        if (g.goal == Goal::Faster && a.turn == 1 && a.messages.size() == 2 &&
            a.messages[1].content.find("Profile (h200, ") != std::string::npos &&
            a.messages[1].content.find("memory-bound") != std::string::npos)
          sawProfile = true;
        if (a.outcome == "correct" && a.ms && (!groupBest || *a.ms < *groupBest)) groupBest = a.ms;
      }
      const std::optional<double> previous = best;
      if (groupBest && (!best || *groupBest < *best)) best = groupBest;
      // Best so far never rises.
      if (previous && best) QVERIFY(*best <= *previous);
      out["groups"].push_back({{"ordinal", g.ordinal}, {"goal", toString(g.goal)},
                               {"incumbent_ms", g.incumbentMs ? json(*g.incumbentMs) : json(nullptr)},
                               {"best_ms_so_far", best ? json(*best) : json(nullptr)},
                               {"dcp", g.dcp ? g.dcp->reason : std::string()}, {"attempts", steps}});
      std::cout << "group " << g.ordinal << " goal " << toString(g.goal) << " incumbent "
                << (g.incumbentMs ? std::to_string(*g.incumbentMs) : std::string("-")) << " ms, best so far "
                << (best ? std::to_string(*best) : std::string("-")) << " ms; " << (g.dcp ? g.dcp->reason : "") << "\n";
    }
    out["llm_s"] = llmSeconds;
    out["eval_s"] = evalSeconds;
    std::filesystem::create_directories(outputDir());
    std::ofstream(outputDir() / "agent-replay.json") << out.dump(2) << "\n";
    QVERIFY2(sawMismatchRepair, out.dump(1).c_str());
    QVERIFY2(sawProfile, "no optimization prompt carried the incumbent's profile");
    // Every best was sanitized first, and the lineage's kernels are clean.
    QVERIFY(!bests.empty());
    for (const auto &key : bests) {
      QVERIFY2(sanitized.count(key), ("best " + key + " was not sanitized first").c_str());
      QVERIFY2(sanitized[key].find(": clean (") != std::string::npos, sanitized[key].c_str());
    }
    // The lineage's later steps are faster than the starter: the session found them.
    QVERIFY(best);
    QVERIFY2(*best < starterMs * 0.9, out.dump(1).c_str());
    QCOMPARE(store->groups(created.id)[1].goal, Goal::Faster);

    // The session is experience (issue 19): its timed candidates become Cases, each under the
    // Case it started from, with the speedups the GPU measured; a second session's first prompt
    // then carries them, and says why, within its budget.
    std::shared_ptr<memory::ExperienceStore> experience =
        memory::ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    const auto synced = memory::syncWorkspace(*experience, store->workspace());
    QVERIFY2(synced.added >= 4 && synced.problems.empty(), std::to_string(synced.added).c_str());
    std::size_t timed = 0, children = 0;
    double bestCase = 0;
    for (const auto &c : experience->cases("softmax")) {
      if (c.source == "session") {
        QCOMPARE(c.gpu.empty(), false);
        if (c.correct) {
          QVERIFY(c.speedup > 0 && c.confidence > 0);
          ++timed;
          bestCase = std::max(bestCase, c.speedup);
        }
        if (c.parent) ++children;
      }
    }
    QVERIFY2(timed >= 3 && children >= 3, (std::to_string(timed) + " timed, " + std::to_string(children) + " children").c_str());
    std::cout << "memory: " << synced.added << " Cases from the session, " << timed << " timed, best " << bestCase
              << "x the reference\n";
    out["memory"] = {{"cases", synced.added}, {"timed", timed}, {"best_speedup", bestCase}};
    std::ofstream(outputDir() / "agent-replay.json") << out.dump(2) << "\n";

    ReplayLlmServer second(kernelsDir() / "softmax");
    second.setLastStep(2);
    SessionSettings s2 = s;
    s2.groups = 1;
    s2.candidates = 1;
    s2.dcp.maxTurns = 1;
    s2.contextWindow = 32768;
    const auto created2 = Session::create(*store, task, s2, second.baseUrl(), "replay");
    SessionServices services2 = services;
    services2.provider = llm::adHocProvider(second.baseUrl());
    services2.memory = experience;
    Session session2(services2, created2.id, [](const SessionEvent &) {});
    QCOMPARE(session2.run(), SessionState::Finished);
    const auto first = store->attempts(store->groups(created2.id).front().id).front();
    QVERIFY2(first.context.is_object(), "the second session's first prompt has no context record");
    std::size_t fromSession = 0;
    for (const auto &item : first.context["included"])
      if (item.contains("case") && experience->get(item["case"].get<std::int64_t>())->source == "session") ++fromSession;
    QVERIFY2(fromSession > 0, first.context.dump(1).c_str());
    QVERIFY(first.context["tokens"].get<double>() <= first.context["budget"].get<double>());
    QVERIFY(first.messages.back().content.find("x the reference") != std::string::npos);
    std::cout << "second session: " << fromSession << " Case(s) of the first in its first prompt; context "
              << first.context["tokens"] << " of " << first.context["budget"] << " tokens\n";
  }

  // The session's sanitizer gate (Session::sanitizeBefore) with a kernel that fails it: the only
  // answer is softmax's step 2 with a race the double run does not see (ReplayFault::Racy). It is
  // correct on the checks and faster than the starter, so it would be the best; compute-sanitizer's
  // racecheck must turn it into an incorrect attempt, and no Best event may name it.
  void racyKernelIsNeverTheBest() {
    QTemporaryDir dir;
    ReplayLlmServer server(kernelsDir() / "softmax");
    server.script({ReplayFault::Racy});
    auto store = std::make_shared<SessionStore>(std::filesystem::path(dir.filePath("ws.kwb").toStdString()));
    const Task task = loadTask(kernelsDir() / "softmax");
    SessionSettings s;
    s.candidates = 1;
    s.dcp.maxTurns = 1;
    s.groups = 1;
    s.configs = {"small"};
    s.timingCapSeconds = 0.3;
    QVERIFY(s.sanitizeBest);
    const auto created = Session::create(*store, task, s, server.baseUrl(), "replay");
    const SessionServices services = gpuServices(store, server.baseUrl());
    QVERIFY2(!services.pool->devices().empty(), services.pool->problem().c_str());
    std::mutex eventsMutex;
    std::vector<std::string> bests, sanitized;
    Session session(services, created.id, [&](const SessionEvent &e) {
      if (e.kind == SessionEvent::Kind::Text) return;
      std::cerr << "event g" << e.group << " l" << e.line << " t" << e.turn << ": " << e.text.substr(0, 300) << "\n";
      std::lock_guard lock(eventsMutex);
      if (e.kind == SessionEvent::Kind::Best) bests.push_back(e.text);
      if (e.kind == SessionEvent::Kind::Message && e.text.rfind("sanitized ", 0) == 0) sanitized.push_back(e.text);
    });
    const SessionState state = session.run();
    const auto record = store->session(created.id);
    QVERIFY2(state == SessionState::Finished, record->stopReason.c_str());
    QVERIFY(record->baseline && record->baseline->ms);
    const auto groups = store->groups(created.id);
    QVERIFY2(groups.size() == 1, record->stopReason.c_str());
    const auto attempts = store->attempts(groups.front().id);
    QCOMPARE(attempts.size(), std::size_t(1));
    const AttemptRecord &racy = attempts.front();
    QCOMPARE(server.stepShown(racy.responseText), std::size_t(0));  // step 2 changed: no step as it is
    // Faster than the starter (the gate runs only for a would-be best), and then refused.
    QVERIFY2(racy.ms && *racy.ms < *record->baseline->ms, racy.feedback.c_str());
    QCOMPARE(racy.outcome, std::string("incorrect"));
    QVERIFY2(racy.message.rfind("compute-sanitizer: ", 0) == 0, racy.message.c_str());
    QVERIFY2(racy.feedback.find("compute-sanitizer found errors") != std::string::npos, racy.feedback.c_str());
    QVERIFY2(racy.feedback.find("racecheck") != std::string::npos, racy.feedback.c_str());
    QVERIFY(!racy.success);
    QCOMPARE(sanitized.size(), std::size_t(1));
    // (QVERIFY2 builds its message whether or not the check fails.)
    std::string named;
    for (const auto &b : bests) named += b + "\n";
    QVERIFY2(bests.empty(), named.c_str());
  }
};

QTEST_GUILESS_MAIN(TestGpuAgent)
#include "tst_gpu_agent.moc"
