// A gated application of a skill card (issue 18, admission) without a GPU: a card lifted from the
// layernorm lineage (warp-shuffle reductions) applied to the softmax lineage's naive kernel by a
// real HTTP server on loopback speaking OpenAI's streamed format (ReplayLlmServer: shown softmax
// step 1, it answers with step 2, the warp-shuffle version: a real kernel edit), compiled by the
// real compiler; the card in a real library file. A compile error is the gate's verdict here too;
// whether the applied kernel is correct and fast needs the GPU (tests/gpu/tst_gpu_card_application.cpp).
#include <QtTest>
#include <QProcess>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

#include "core/agent/card_application.h"
#include "core/agent/prompt.h"
#include "core/agent/session.h"
#include "core/lineage/lineage_build.h"
#include "core/lineage/lineage.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "core/llm/provider_config.h"
#include "core/task/manifest_parser.h"
#include "helpers/measured_lineage.h"
#include "helpers/replay_llm_server.h"

using namespace kwb;
using namespace kwb::agent;
using kwb::test::ReplayFault;
using kwb::test::ReplayLlmServer;

namespace {

const std::filesystem::path kKernels = std::filesystem::path(KWB_SOURCE_DIR) / "kernels";

// The layernorm lineage's warp-shuffle card (lifted as kwb lineage build does, figures chosen by
// the helper: each step twice as fast as the one before).
SkillCard warpShuffleCard() { return test::liftedCard("layernorm", "warp-shuffle"); }

struct Fixture {
  QTemporaryDir dir;
  ReplayLlmServer server{kKernels / "softmax"};
  Task task = loadTask(kKernels / "softmax");
  Lineage lineage = loadLineage(task);
  std::unique_ptr<SkillLibrary> library;
  SkillCard card = warpShuffleCard();
  Evaluator evaluator{[] {
    EvaluatorSettings s;
    s.useDevice = false;  // compile only, as on a machine without a GPU
    return s;
  }()};
  llm::ProviderConfig config;

  Fixture() {
    library = SkillLibrary::open(dir.filePath("library.sqlite").toStdString());
    library->proposeCard(card, "test", "from the layernorm lineage");
    config = llm::adHocProvider(server.baseUrl());
    config.retry.maxAttempts = 1;
  }
  std::string stepSource(int step) const { return server.stepSource(static_cast<std::size_t>(step)); }
  CardApplication apply(int step) {
    llm::Provider provider(config, "");
    CardApplicationServices services;
    services.provider = &provider;
    services.evaluator = &evaluator;
    return applyCard(card, taskForStep(task, lineage.steps.at(static_cast<std::size_t>(step - 1))), stepSource(step),
                     lineage.steps.at(static_cast<std::size_t>(step - 1)).file.filename().string(), services);
  }
  std::size_t applications(const std::string &id) {
    const auto stored = library->card(id);
    return static_cast<std::size_t>(std::count_if(stored->evidence.begin(), stored->evidence.end(),
                                                  [](const CardEvidence &e) { return e.kind == "application"; }));
  }
};

}  // namespace

class TestCardApplication : public QObject {
  Q_OBJECT

 private slots:
  void requiredSpeedupIsAShareOfTheDeclaredGain_data() {
    QTest::addColumn<double>("declared");
    QTest::addColumn<double>("share");
    QTest::addColumn<double>("required");
    QTest::newRow("x1.40, half") << 1.40 << 0.5 << 1.20;
    QTest::newRow("x2, half") << 2.0 << 0.5 << 1.5;
    QTest::newRow("x2, all") << 2.0 << 1.0 << 2.0;
    // Issue 47, 2: never admitted for "not slower" (x0.95 was asked before): a gain is asked.
    QTest::newRow("x1.02: no gain declared") << 1.02 << 0.5 << 1.02;
    QTest::newRow("x1.03: half of it is under 2%") << 1.03 << 0.5 << 1.02;
    QTest::newRow("x0.8: a slower card") << 0.8 << 0.5 << 1.02;
    QTest::newRow("unmeasured") << 0.0 << 0.5 << 1.02;
  }
  void requiredSpeedupIsAShareOfTheDeclaredGain() {
    QFETCH(double, declared);
    QFETCH(double, share);
    QFETCH(double, required);
    QVERIFY2(std::abs(requiredSpeedup(declared, share) - required) < 1e-9, std::to_string(requiredSpeedup(declared, share)).c_str());
  }

  void theModelSeesTheCardAndTheKernelOnly() {
    Fixture f;
    const auto messages = cardApplicationMessages(f.card, f.task, f.stepSource(1), "01-naive.cu");
    QCOMPARE(messages.size(), std::size_t(2));
    QCOMPARE(messages[0].role, std::string("system"));
    const std::string &user = messages[1].content;
    for (const char *placeholder : {"{{card}}", "{{task}}", "{{kernel}}", "{{kernel_name}}", "{{answer_format}}"})
      QVERIFY2(user.find(placeholder) == std::string::npos, placeholder);
    QVERIFY(user.find("Skill `warp-shuffle`") != std::string::npos);
    QVERIFY(user.find(f.card.intent) != std::string::npos);
    for (const auto &p : f.card.preconditions) QVERIFY2(user.find(p) != std::string::npos, p.c_str());
    QVERIFY(!f.card.afterCode().empty());
    QVERIFY2(user.find(f.card.afterCode()) != std::string::npos, "the carrier's After code is the hint");
    QVERIFY(user.find(f.stepSource(1)) != std::string::npos);
    QVERIFY(user.find("01-naive.cu") != std::string::npos);
    // The task's specification (its launch), not the card's own lineage's code.
    QVERIFY(user.find(taskSpec(f.task)) != std::string::npos);
  }

  void withoutAGpuTheEditArrivesCompiledButIsNotGated() {
    Fixture f;
    const auto a = f.apply(1);
    QCOMPARE(toString(a.verdict), std::string("not-gated"));
    QVERIFY2(a.message.find("no GPU") != std::string::npos, a.message.c_str());
    QCOMPARE(a.answerOutcome, std::string("code"));
    QCOMPARE(a.source, f.stepSource(2));  // the warp-shuffle kernel: the card's edit, for real
    QCOMPARE(f.server.answeredSteps(), std::vector<std::size_t>{2});
    QVERIFY(a.after.outcome == Outcome::NotRun);
    QVERIFY(a.after.candidate.ok);
    QVERIFY(!a.gated());
    QCOMPARE(recordApplication(*f.library, a), std::string("not recorded (not-gated)"));
    QCOMPARE(kwb::toString(f.library->card("warp-shuffle")->status), std::string("proposed"));
    QCOMPARE(f.applications("warp-shuffle"), std::size_t(0));
  }

  void aCompileErrorRejectsAProposedCardByTheGate() {
    Fixture f;
    f.server.script({ReplayFault::CompileError});
    const auto a = f.apply(1);
    QCOMPARE(toString(a.verdict), std::string("compile-error"));
    QVERIFY(a.gated());
    QVERIFY2(a.message.find("does not compile") != std::string::npos, a.message.c_str());
    QCOMPARE(recordApplication(*f.library, a), std::string("evidence added; the card is now rejected"));
    const auto stored = f.library->card("warp-shuffle");
    QCOMPARE(kwb::toString(stored->status), std::string("rejected"));
    QCOMPARE(f.applications("warp-shuffle"), std::size_t(1));
    const auto &e = stored->evidence.back();
    QCOMPARE(e.kind, std::string("application"));
    QVERIFY(!e.success);
    QCOMPARE(e.task, std::string("softmax"));
    QVERIFY2(e.note.find("01-naive.cu") != std::string::npos, e.note.c_str());
    const auto audit = f.library->audit("warp-shuffle");
    QVERIFY(!audit.empty());
    QCOMPARE(audit.back().who, std::string("gate"));
  }

  void anAdmittedCardStaysAdmittedAndItsEvidenceGrows() {
    Fixture f;
    f.library->setStatus("warp-shuffle", CardStatus::Admitted, "gate", "reproduced");
    f.server.script({ReplayFault::CompileError, ReplayFault::CompileError});
    for (int i = 0; i < 2; ++i) {
      const auto a = f.apply(1);
      QCOMPARE(toString(a.verdict), std::string("compile-error"));
      QCOMPARE(recordApplication(*f.library, a), std::string("evidence added; the card stays admitted"));
    }
    QCOMPARE(kwb::toString(f.library->card("warp-shuffle")->status), std::string("admitted"));
    QCOMPARE(f.applications("warp-shuffle"), std::size_t(2));
  }

  // A reviewer's approval is not overturned by a failed application (the evidence says it).
  void anApprovedCardStaysApprovedWhenAnApplicationFails() {
    Fixture f;
    f.library->setStatus("warp-shuffle", CardStatus::Approved, "reviewer:test", "read it");
    f.server.script({ReplayFault::CompileError});
    const auto a = f.apply(1);
    QCOMPARE(toString(a.verdict), std::string("compile-error"));
    QCOMPARE(recordApplication(*f.library, a), std::string("evidence added; the card stays approved"));
    QCOMPARE(f.applications("warp-shuffle"), std::size_t(1));
  }

  // The effect is judged at the configuration where the card's gain was measured, and the card
  // must not make the kernel slower over all configurations.
  void theEffectIsJudgedWhereTheGainWasMeasured_data() {
    QTest::addColumn<double>("smallAfter");
    QTest::addColumn<double>("largeAfter");
    QTest::addColumn<QString>("verdict");
    QTest::addColumn<QString>("says");
    // before: small 1.0 ms, large 10.0 ms; declared x1.40 at large: x1.20 asked there.
    QTest::newRow("faster at large") << 1.0 << 8.0 << "success" << "x1.25 at large";
    QTest::newRow("short of the gain at large") << 0.5 << 9.0 << "no-effect" << "the declared effect is not there";
    QTest::newRow("faster at large, slower overall") << 1.8 << 8.0 << "no-effect" << "slower over all configurations";
  }
  void theEffectIsJudgedWhereTheGainWasMeasured() {
    QFETCH(double, smallAfter);
    QFETCH(double, largeAfter);
    QFETCH(QString, verdict);
    QFETCH(QString, says);
    auto timed = [](double small, double large) {
      EvaluationResult r;
      r.outcome = Outcome::Correct;
      for (auto [name, ms] : {std::pair{"small", small}, std::pair{"large", large}}) {
        ConfigOutcome c;
        c.config = name;
        c.outcome = Outcome::Correct;
        c.timing = TimingOutcome{};
        c.timing->ok = true;
        c.timing->candidate.median = ms;
        r.configs.push_back(c);
      }
      return r;
    };
    CardApplication a;
    a.declaredSpeedup = 1.40;
    a.declaredWhere = "on layernorm at large";
    a.requiredSpeedup = requiredSpeedup(1.40, 0.5);
    a.gateConfig = "large";
    a.before = timed(1.0, 10.0);
    a.after = timed(smallAfter, largeAfter);
    a.beforeMs = objectiveMs(a.before);
    a.afterMs = objectiveMs(a.after);
    judgeEffect(a, "k.cu");
    QCOMPARE(QString::fromStdString(toString(a.verdict)), verdict);
    QVERIFY2(a.message.find(says.toStdString()) != std::string::npos, a.message.c_str());
    QCOMPARE(*a.gateSpeedup, 10.0 / largeAfter);
  }

  void theGateConfigurationIsTheDeclaredOneOrTheLargest() {
    Fixture f;
    QCOMPARE(gateConfigOf(f.task, "small"), std::string("small"));
    QCOMPARE(gateConfigOf(f.task, "no-such-config"), largestConfiguration(f.task));
    QCOMPARE(gateConfigOf(f.task, ""), largestConfiguration(f.task));
    // The lifted card declares its best lineage-step gain, with where.
    const auto gain = f.card.declaredGain();
    QVERIFY(gain);
    QCOMPARE(gain->task, std::string("layernorm"));
    QVERIFY(gain->speedup > 1.0);
    QCOMPARE(f.card.liftedFrom(), std::vector<std::string>{"layernorm"});
    // ... and its preconditions say the size regime where it helps.
    const bool says = std::any_of(f.card.preconditions.begin(), f.card.preconditions.end(), [&](const std::string &p) {
      return p.rfind("Sizes: helps most at " + gain->config + " (", 0) == 0 && p.find(" median over ") != std::string::npos;
    });
    QVERIFY(says);
  }

  // Admission means reproduced: successes on two tasks the card was not lifted from (its own
  // task does not count); a reviewer's approval is promoted by them too.
  void admissionNeedsTwoOtherTasks() {
    Fixture f;
    auto success = [&](const std::string &task) {
      CardApplication a;
      a.cardId = "warp-shuffle";
      a.task = task;
      a.kernelName = "k.cu";
      a.verdict = ApplicationVerdict::Success;
      a.gateConfig = "large";
      a.gateSpeedup = 1.5;
      a.gateBeforeMs = 3.0;
      a.gateAfterMs = 2.0;
      a.speedup = 1.3;
      a.beforeMs = 1.3;
      a.afterMs = 1.0;
      return a;
    };
    QCOMPARE(recordApplication(*f.library, success("layernorm")),
             std::string("evidence added; the card stays proposed: reproduced on 0 of the 2 tasks it was not lifted from "
                         "that admission asks"));
    QCOMPARE(recordApplication(*f.library, success("softmax")),
             std::string("evidence added; the card stays proposed: reproduced on 1 of the 2 tasks it was not lifted from "
                         "that admission asks (softmax)"));
    QVERIFY(recordApplication(*f.library, success("softmax")).find("reproduced on 1 of the 2") != std::string::npos);  // the same task again
    f.library->setStatus("warp-shuffle", CardStatus::Approved, "reviewer:test", "read it");
    QCOMPARE(recordApplication(*f.library, success("rmsnorm")),
             std::string("evidence added; the card is now admitted (reproduced on rmsnorm, softmax)"));
    const auto stored = f.library->card("warp-shuffle");
    QVERIFY(stored->status == CardStatus::Admitted);
    QCOMPARE(stored->evidence.back().config, std::string("large"));
    QCOMPARE(stored->evidence.back().speedup, 1.5);  // at the gate's configuration, before / after there
    QCOMPARE(stored->evidence.back().beforeMs, 3.0);
    QCOMPARE(stored->evidence.back().afterMs, 2.0);
    QCOMPARE(f.library->audit("warp-shuffle").back().action, std::string("admitted"));
    // Configurable: one task suffices where the user says so.
    Fixture g;
    QCOMPARE(recordApplication(*g.library, success("softmax"), 1),
             std::string("evidence added; the card is now admitted (reproduced on softmax)"));
  }

  void anAnswerWithoutCodeLeavesTheCardAlone_data() {
    QTest::addColumn<int>("fault");
    QTest::addColumn<QString>("outcome");
    QTest::newRow("prose only") << int(ReplayFault::NoCode) << "no-code";
    QTest::newRow("cut off in its code") << int(ReplayFault::Truncated) << "truncated";
  }
  void anAnswerWithoutCodeLeavesTheCardAlone() {
    QFETCH(int, fault);
    QFETCH(QString, outcome);
    Fixture f;
    f.server.script({static_cast<ReplayFault>(fault)});
    const auto a = f.apply(1);
    QCOMPARE(toString(a.verdict), std::string("no-answer"));
    QCOMPARE(QString::fromStdString(a.answerOutcome), outcome);
    QVERIFY(a.source.empty());
    QCOMPARE(recordApplication(*f.library, a), std::string("not recorded (no-answer)"));
    QCOMPARE(kwb::toString(f.library->card("warp-shuffle")->status), std::string("proposed"));
    QCOMPARE(f.applications("warp-shuffle"), std::size_t(0));
  }

  // kwb skills apply, the real program: the same application from the command line, its JSON, its
  // exit status (3: not gated; 1: the gate said no) and the library it wrote.
  void kwbSkillsApplyRecordsTheGatesVerdict() {
    const char *cli = std::getenv("KWB_CLI");
    QVERIFY2(cli && *cli, "run through ctest: KWB_CLI names kwb");
    Fixture f;
    const QString library = f.dir.filePath("library.sqlite");
    const QString step1 = QString::fromStdString(f.lineage.steps.front().file.string());
    auto run = [&](int expectedExit) {
      QProcess p;
      p.start(cli, {"skills", "apply", "warp-shuffle", QString::fromStdString((kKernels / "softmax").string()), step1,
                    "--provider", QString::fromStdString(f.server.baseUrl()), "--library", library, "--json"});
      if (!p.waitForFinished(120000)) return nlohmann::json();
      const auto out = p.readAllStandardOutput().toStdString();
      if (p.exitCode() != expectedExit) qWarning("exit %d: %s %s", p.exitCode(), out.c_str(), p.readAllStandardError().constData());
      return p.exitCode() == expectedExit ? nlohmann::json::parse(out) : nlohmann::json();
    };
    auto j = run(3);  // no GPU here: the edit arrives and compiles, nothing is gated
    QVERIFY(!j.is_null());
    QCOMPARE(j["verdict"].get<std::string>(), std::string("not-gated"));
    QCOMPARE(j["source"].get<std::string>(), f.stepSource(2));
    QCOMPARE(j["status"].get<std::string>(), std::string("proposed"));
    // Where it is judged: the card's declared configuration on softmax, or softmax's largest.
    QCOMPARE(j["gate_config"].get<std::string>(), gateConfigOf(f.task, f.card.declaredGain()->config));
    QVERIFY2(j["declared_where"].get<std::string>().rfind("on layernorm at ", 0) == 0, j.dump().c_str());
    f.server.script({ReplayFault::CompileError});
    j = run(1);
    QVERIFY(!j.is_null());
    QCOMPARE(j["verdict"].get<std::string>(), std::string("compile-error"));
    QCOMPARE(j["status"].get<std::string>(), std::string("rejected"));
    QCOMPARE(j["recorded"].get<std::string>(), std::string("evidence added; the card is now rejected"));
    auto reopened = SkillLibrary::open(library.toStdString());
    QCOMPARE(kwb::toString(reopened->card("warp-shuffle")->status), std::string("rejected"));
  }

  void aServerThatIsNotThereIsNoAnswer() {
    Fixture f;
    f.config.baseUrl = "http://127.0.0.1:9/v1";  // discard port: nothing listens
    const auto a = f.apply(1);
    QCOMPARE(toString(a.verdict), std::string("no-answer"));
    QVERIFY2(a.message.find("did not arrive") != std::string::npos, a.message.c_str());
    QVERIFY(!a.gated());
  }
};

QTEST_GUILESS_MAIN(TestCardApplication)
#include "tst_card_application.moc"
