// On a machine with a GPU: a gated application of a skill card (core/agent/card_application.h),
// end to end. The layernorm lineage's warp-shuffle card is applied to the softmax lineage's naive
// kernel by the replay LLM server (it answers with softmax step 2, the warp-shuffle version: a
// real edit), checked on every configuration and seed and timed against the naive kernel in the
// same worker. The verdict must be the gate's (success or no effect, with a measured speedup),
// the card admitted or rejected by "gate" accordingly, with the measurement in its evidence; a
// wrong answer must come back incorrect and reject the card. The figures go to
// card-application.json in the test's output folder. Skips, saying why, without a GPU.
#include <QtTest>
#include <QTemporaryDir>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/agent/card_application.h"
#include "core/lineage/lineage.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "core/llm/provider_config.h"
#include "core/task/manifest_parser.h"
#include "helpers/measured_lineage.h"
#include "helpers/replay_llm_server.h"
#include "helpers/gpu_test.h"
#include "helpers/test_files.h"

using namespace kwb;
using namespace kwb::agent;
using kwb::test::kernelsDir;
using kwb::test::outputDir;
using kwb::test::ReplayFault;
using kwb::test::ReplayLlmServer;

class TestGpuCardApplication : public QObject {
  Q_OBJECT
  std::string worker_;
  nlohmann::json report_ = nlohmann::json::object();

  CardApplication apply(ReplayLlmServer &server, SkillLibrary &library, const SkillCard &card) {
    const Task task = loadTask(kernelsDir() / "softmax");
    const Lineage lineage = loadLineage(task);
    EvaluatorSettings es;
    es.workerPath = worker_;
    Evaluator evaluator(es);
    auto config = llm::adHocProvider(server.baseUrl());
    config.retry.maxAttempts = 1;
    llm::Provider provider(config, "");
    CardApplicationServices services;
    services.provider = &provider;
    services.evaluator = &evaluator;
    services.onProgress = [](const std::string &line) { qInfo("%s", line.c_str()); };
    CardApplicationSettings settings;
    settings.timingCap = std::chrono::milliseconds(300);
    auto a = applyCard(card, taskForStep(task, lineage.steps.front()), server.stepSource(1), "01-naive.cu", services,
                       settings);
    qInfo("%s: %s", toString(a.verdict).c_str(), a.message.c_str());
    qInfo("%s", recordApplication(library, a).c_str());
    return a;
  }

  static SkillCard warpShuffleCard() { return test::liftedCard("layernorm", "warp-shuffle"); }

 private slots:
  void initTestCase() {
    KWB_REQUIRE_GPU_WORKER(worker_);
  }

  void theGateRulesOnARealEdit() {
    QTemporaryDir dir;
    auto library = SkillLibrary::open(dir.filePath("library.sqlite").toStdString());
    const SkillCard card = warpShuffleCard();
    library->proposeCard(card, "test", "from the layernorm lineage");
    ReplayLlmServer server(kernelsDir() / "softmax");
    const auto a = apply(server, *library, card);
    QVERIFY2(a.verdict == ApplicationVerdict::Success || a.verdict == ApplicationVerdict::NoEffect, a.message.c_str());
    QCOMPARE(a.source, server.stepSource(2));
    QVERIFY(a.beforeMs && a.afterMs && a.speedup);
    QVERIFY(*a.speedup > 0);
    // Judged at the configuration where the card's gain was measured (or the task's largest),
    // and never slower over all of them.
    QVERIFY(a.gateSpeedup && !a.gateConfig.empty());
    QCOMPARE(a.verdict == ApplicationVerdict::Success, *a.gateSpeedup >= a.requiredSpeedup && *a.speedup >= 1.0);
    const auto stored = library->card(card.id);
    // One task reproduced is not admission (two are asked): a success leaves it proposed.
    QVERIFY(stored->status == (a.verdict == ApplicationVerdict::Success ? CardStatus::Proposed : CardStatus::Rejected));
    const auto &e = stored->evidence.back();
    QCOMPARE(e.kind, std::string("application"));
    QCOMPARE(e.success, a.verdict == ApplicationVerdict::Success);
    QVERIFY(std::abs(e.speedup - *a.gateSpeedup) < 1e-9);
    QCOMPARE(e.config, a.gateConfig);
    QVERIFY(!e.device.empty());
    QCOMPARE(library->audit(card.id).back().who, std::string("gate"));
    report_["real_edit"] = {{"verdict", toString(a.verdict)}, {"before_ms", *a.beforeMs}, {"after_ms", *a.afterMs},
                            {"speedup", *a.speedup}, {"gate_config", a.gateConfig}, {"gate_speedup", *a.gateSpeedup}, {"declared", a.declaredSpeedup}, {"required", a.requiredSpeedup},
                            {"device", a.device}, {"status", toString(stored->status)}};
  }

  void aWrongAnswerIsRejectedByTheGate() {
    QTemporaryDir dir;
    auto library = SkillLibrary::open(dir.filePath("library.sqlite").toStdString());
    const SkillCard card = warpShuffleCard();
    library->proposeCard(card, "test", "from the layernorm lineage");
    ReplayLlmServer server(kernelsDir() / "softmax");
    server.script({ReplayFault::WrongAnswer});
    const auto a = apply(server, *library, card);
    QCOMPARE(toString(a.verdict), std::string("incorrect"));
    QVERIFY2(a.message.find("incorrect") != std::string::npos, a.message.c_str());
    QCOMPARE(kwb::toString(library->card(card.id)->status), std::string("rejected"));
    QVERIFY(!library->card(card.id)->evidence.back().success);
    report_["wrong_answer"] = {{"verdict", toString(a.verdict)}, {"message", a.message}};
  }

  void cleanupTestCase() {
    if (report_.empty()) return;
    std::ofstream(outputDir() / "card-application.json") << report_.dump(2) << "\n";
  }
};

QTEST_GUILESS_MAIN(TestGpuCardApplication)
#include "tst_gpu_card_application.moc"
