// Lineage by de-optimization (issue 18, 2) without a GPU: the replay LLM server in backward mode
// (shown softmax lineage step k, it answers step k-1 with "Removed: <step k's title>"; shown step
// 1, "NOTHING LEFT") over a real loopback socket in OpenAI's streamed format; each answer compiled
// by the real compiler (the gate here: it compiles; on a GPU: correct and timed). The accepted
// versions, written forward, read back as a lineage whose steps add what was taken out.
#include <QtTest>
#include <QProcess>
#include <QTemporaryDir>

#include <cstdlib>
#include <fstream>
#include <set>
#include <iterator>

#include "core/agent/deoptimize.h"
#include "core/lineage/kernel_features.h"
#include "core/lineage/lineage.h"
#include "core/llm/provider_config.h"
#include "core/task/manifest_parser.h"
#include "helpers/replay_llm_server.h"

using namespace kwb;
using namespace kwb::agent;
using kwb::test::ReplayFault;
using kwb::test::ReplayLlmServer;

namespace {

const std::filesystem::path kSoftmax = std::filesystem::path(KWB_SOURCE_DIR) / "kernels" / "softmax";

struct Fixture {
  ReplayLlmServer server{kSoftmax};
  Task task = loadTask(kSoftmax);
  Evaluator evaluator{[] {
    EvaluatorSettings s;
    s.useDevice = false;
    return s;
  }()};
  llm::ProviderConfig config = llm::adHocProvider(server.baseUrl());
  std::vector<std::string> lines;
  std::vector<std::size_t> versionsSeen;  // onStep: the versions after each answer
  Fixture() {
    server.setBackward(true);
    config.retry.maxAttempts = 1;
  }
  Deoptimization run(int expertStep, int maxSteps = 15) {
    llm::Provider provider(config, "");
    DeoptimizeServices services;
    services.provider = &provider;
    services.evaluator = &evaluator;
    services.onProgress = [this](const std::string &line) { lines.push_back(line); };
    services.onStep = [this](const Deoptimization &d) { versionsSeen.push_back(d.versions.size()); };
    DeoptimizeSettings settings;
    settings.maxSteps = maxSteps;
    return deoptimize(task, server.stepSource(static_cast<std::size_t>(expertStep)), services, settings);
  }
};

}  // namespace

class TestDeoptimize : public QObject {
  Q_OBJECT

 private slots:
  void downToNothingLeftThenForward() {
    Fixture f;
    const auto d = f.run(4);  // softmax step 5 launches differently: step 4 is the expert here
    QCOMPARE(d.stopReason, std::string("nothing left"));
    QVERIFY(!d.onGpu);
    QCOMPARE(d.steps.size(), std::size_t(3));
    for (const auto &s : d.steps) QVERIFY2(s.accepted, s.reason.c_str());
    QCOMPARE(d.versions.size(), std::size_t(4));
    for (int v = 0; v < 4; ++v) QCOMPARE(d.versions[static_cast<std::size_t>(v)], f.server.stepSource(static_cast<std::size_t>(4 - v)));
    const std::vector<std::string> techniques = {f.server.stepTitle(4), f.server.stepTitle(3), f.server.stepTitle(2)};
    QCOMPARE(d.techniques, techniques);
    QCOMPARE(f.server.answeredSteps(), (std::vector<std::size_t>{3, 2, 1, 0}));
    QCOMPARE(f.versionsSeen, (std::vector<std::size_t>{2, 3, 4}));  // after each ruled answer
    QVERIFY(!f.lines.empty());

    QTemporaryDir dir;
    const auto files = writeForwardVersions(d, dir.filePath("forward").toStdString(), "04-float4.cu", {{"BLOCK", 512}});
    QCOMPARE(files.size(), std::size_t(4));
    QCOMPARE(files.front().filename().string(), std::string("01-plainest.cu"));
    QCOMPARE(files.back().filename().string(), std::string("04-expert.cu"));
    QVERIFY(std::filesystem::exists(dir.filePath("forward/deoptimize.json").toStdString()));
    // Read back as `kwb lineage build --from-versions` reads it (its lineage.toml): step k adds
    // what request (n - k) took out, its title is that technique, and its code is that version.
    Lineage forward;
    try {
      forward = loadLineageFrom(f.task, dir.filePath("forward").toStdString());
    } catch (const std::exception &e) {
      QFAIL(e.what());
    }
    QCOMPARE(forward.steps.size(), std::size_t(4));
    for (std::size_t k = 2; k <= 4; ++k) {
      const auto &step = forward.steps[k - 1];
      QCOMPARE(step.title, f.server.stepTitle(k));
      QCOMPARE(step.tunables.at("BLOCK"), std::int64_t(512));
      QVERIFY2(step.adds == f.server.stepTitle(k), (step.adds + " / " + f.server.stepTitle(k)).c_str());
      // Relies on: the features of the step before that this step keeps, by name, so that the
      // card lifted from it has them as `requires` (issue 47, 4; was "step k-1").
      const auto before = detectFeatures(f.server.stepSource(k - 1)), after = detectFeatures(f.server.stepSource(k));
      std::set<std::string> kept;
      for (const auto &x : before)
        if (after.count(x)) kept.insert(x);
      QVERIFY2(step.reliesOn.find("step ") == std::string::npos, step.reliesOn.c_str());
      QCOMPARE(featuresNamedIn(step.reliesOn, before), kept);
      if (kept.empty()) QCOMPARE(step.reliesOn, std::string("nothing"));
      std::ifstream in(step.file);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      QVERIFY(text.size() > f.server.stepSource(k).size());
      QCOMPARE(text.substr(text.size() - f.server.stepSource(k).size()), f.server.stepSource(k));
    }
  }

  void rejectedStepsAreRecordedAndAskedAgain() {
    Fixture f;
    f.server.script({ReplayFault::None, ReplayFault::CompileError, ReplayFault::NoCode});
    const auto d = f.run(4);
    QCOMPARE(d.stopReason, std::string("nothing left"));
    QCOMPARE(d.steps.size(), std::size_t(5));
    QVERIFY(d.steps[0].accepted);
    QVERIFY(!d.steps[1].accepted);
    QCOMPARE(d.steps[1].outcome, std::string("compile-error"));
    QVERIFY2(d.steps[1].reason.find("compile-error") == 0, d.steps[1].reason.c_str());
    QVERIFY(!d.steps[2].accepted);
    QVERIFY2(d.steps[2].reason.find("no usable code") != std::string::npos, d.steps[2].reason.c_str());
    QVERIFY(d.steps[3].accepted && d.steps[4].accepted);
    QCOMPARE(d.versions.size(), std::size_t(4));  // the rejected ones are not versions
    QCOMPARE(d.versions.back(), f.server.stepSource(1));
    QCOMPARE(d.steps[1].fromVersion, 1);
    // Written forward, the rejected answer with code is a risk of the step whose kernel it was
    // asked of (versions[1]: forward step 3); the one without code says nothing of the kernel.
    QTemporaryDir dir;
    writeForwardVersions(d, dir.filePath("forward").toStdString(), "04-float4.cu");
    const Lineage forward = loadLineageFrom(f.task, dir.filePath("forward").toStdString());
    QCOMPARE(forward.steps.at(2).risks.size(), std::size_t(1));
    QVERIFY2(forward.steps.at(2).risks[0].find("de-optimization request 2") == 0 &&
                 forward.steps.at(2).risks[0].find("compile-error") != std::string::npos,
             forward.steps.at(2).risks[0].c_str());
    for (std::size_t k : {0, 1, 3}) QVERIFY(forward.steps.at(k).risks.empty());
    // The prompt after a rejection names it.
    const auto messages = deoptimizeMessages(f.task, f.server.stepSource(3), {d.steps[1], d.steps[2]});
    QVERIFY(messages.at(1).content.find("were rejected") != std::string::npos);
    QVERIFY(messages.at(1).content.find("compile-error") != std::string::npos);
    QVERIFY(messages.at(1).content.find(f.server.stepSource(3)) != std::string::npos);
  }

  void theStepLimitStops() {
    Fixture f;
    const auto d = f.run(4, 2);
    QCOMPARE(d.stopReason, std::string("step limit (2)"));
    QCOMPARE(d.versions.size(), std::size_t(3));
    QCOMPARE(d.steps.size(), std::size_t(2));
  }

  // kwb lineage build --deoptimize, the real program: without a GPU the versions are written
  // forward (exit status 3, nothing stored), ready for --from-versions on a GPU.
  void kwbLineageBuildDeoptimize() {
    const char *cli = std::getenv("KWB_CLI");
    QVERIFY2(cli && *cli, "run through ctest: KWB_CLI names kwb");
    Fixture f;
    QTemporaryDir dir;
    const QString out = dir.filePath("versions");
    QProcess p;
    p.setProcessEnvironment([&] {
      auto env = QProcessEnvironment::systemEnvironment();
      env.insert(QStringLiteral("KWB_LIBRARY"), dir.filePath("library.sqlite"));
      return env;
    }());
    p.start(cli, {"lineage", "build", QString::fromStdString(kSoftmax.string()), "--deoptimize",
                  QString::fromStdString((kSoftmax / "lineage" / "04-float4.cu").string()), "--provider",
                  QString::fromStdString(f.server.baseUrl()), "--out", out});
    QVERIFY(p.waitForFinished(180000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 3);
    QVERIFY2(err.contains(QStringLiteral("stopped: nothing left; 3 of 3 answers accepted")), qPrintable(err));
    QVERIFY2(err.contains(QStringLiteral("--from-versions")), qPrintable(err));
    const Lineage forward = loadLineageFrom(f.task, out.toStdString());
    QCOMPARE(forward.steps.size(), std::size_t(4));
    QCOMPARE(forward.steps.back().tunables.at("BLOCK"), std::int64_t(512));  // the expert step's
    QVERIFY(!std::filesystem::exists(dir.filePath("library.sqlite").toStdString()));
  }

  void aDeadServerStopsWithItsReason() {
    Fixture f;
    f.config.baseUrl = "http://127.0.0.1:9/v1";
    const auto d = f.run(4);
    QVERIFY2(d.stopReason.find("did not arrive") != std::string::npos, d.stopReason.c_str());
    QCOMPARE(d.versions.size(), std::size_t(1));
  }
};

QTEST_GUILESS_MAIN(TestDeoptimize)
#include "tst_deoptimize.moc"
