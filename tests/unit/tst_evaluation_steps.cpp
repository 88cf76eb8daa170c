// The evaluation's named steps alone (core/eval/evaluation_steps.h): configurations resolved,
// launches planned with occupancy, the worker's replies read into outcomes, and the verdict of
// the whole, as tables of cases. No worker, no GPU: replies are made as the worker makes them.
#include <QtTest>

#include "core/eval/evaluation_steps.h"
#include "core/task/manifest_parser.h"
#include "helpers/test_files.h"

using kwb::ConfigOutcome;
using kwb::Outcome;

namespace {

kwb::worker::Reply ok(const nlohmann::json &result) { return kwb::worker::Reply::success(1, result); }
kwb::worker::Reply failed(const char *kind, const std::string &message) {
  return kwb::worker::Reply::failure(1, {kind, message, nlohmann::json::object()});
}

ConfigOutcome config(const std::string &name, Outcome outcome, const std::string &message = {},
                     const std::string &errorName = {}) {
  ConfigOutcome c;
  c.config = name;
  c.outcome = outcome;
  c.message = message;
  c.errorName = errorName;
  return c;
}

}  // namespace

class TestEvaluationSteps : public QObject {
  Q_OBJECT

 private slots:
  void configurationsResolve() {
    const auto task = kwb::loadTask(kwb::test::kernelsDir() / "softmax");
    QCOMPARE(kwb::resolveConfigurations(task, {}).size(), task.configs.size());
    const auto two = kwb::resolveConfigurations(task, {"h200", "small"});
    QCOMPARE(two.at(0)->name, std::string("h200"));
    QCOMPARE(two.at(1)->name, std::string("small"));
    try {
      kwb::resolveConfigurations(task, {"huge"});
      QFAIL("an unknown configuration was accepted");
    } catch (const std::invalid_argument &e) {
      QVERIFY2(std::string(e.what()).find("no size configuration 'huge' (its configurations: small") !=
                   std::string::npos,
               e.what());
    }
  }

  void launchesArePlannedWithOccupancy() {
    const auto task = kwb::loadTask(kwb::test::kernelsDir() / "softmax");
    kwb::CompileResult compiled;
    compiled.ok = true;
    compiled.kernels.push_back({"softmax", 32, 512, 0, 0, 0, 0, 0});
    const auto configs = kwb::resolveConfigurations(task, {"small"});
    const auto planned = kwb::planLaunches(task, configs, {{"BLOCK", 256}}, compiled, "sm_90");
    QCOMPARE(planned.size(), std::size_t(1));
    QCOMPARE(planned[0].outcome, Outcome::NotRun);
    QCOMPARE(planned[0].candidateLaunch.block[0], std::int64_t(256));
    QCOMPARE(planned[0].candidateLaunch.grid[0], std::int64_t(1024));  // one block per row
    QVERIFY(planned[0].occupancy.has_value() && planned[0].occupancy->launchable());
    // A host launcher chooses its own launches: no occupancy is claimed.
    compiled.form = kwb::SourceForm::HostLauncher;
    QVERIFY(!kwb::planLaunches(task, configs, {{"BLOCK", 256}}, compiled, "sm_90")[0].occupancy.has_value());
    // A launch that does not evaluate is this configuration's error, in words.
    const auto bad = kwb::planLaunches(task, configs, {{"BLOCK", 0}}, compiled, "sm_90");
    QCOMPARE(bad[0].outcome, Outcome::Error);
    QVERIFY2(bad[0].message.find("block[0]") != std::string::npos, bad[0].message.c_str());
  }

  void evaluateRepliesBecomeOutcomes_data() {
    QTest::addColumn<int>("replyIndex");
    QTest::addColumn<int>("outcome");
    QTest::addColumn<bool>("stops");
    QTest::addColumn<QString>("message");
    QTest::newRow("correct") << 0 << int(Outcome::Correct) << false << QStringLiteral("correct on 2 seed(s)");
    QTest::newRow("incorrect") << 1 << int(Outcome::Incorrect) << false << QStringLiteral("seed 2: y: 3 of 64 differ");
    QTest::newRow("forbidden library") << 2 << int(Outcome::Incorrect) << false
                                       << QStringLiteral("the candidate loaded cublas");
    QTest::newRow("load error") << 3 << int(Outcome::LoadError) << true << QStringLiteral("no kernel 'k'");
    QTest::newRow("runtime error") << 4 << int(Outcome::RuntimeError) << true << QStringLiteral("illegal address");
    QTest::newRow("timeout") << 5 << int(Outcome::Timeout) << true
                             << QStringLiteral("timeout: the evaluation ran past its limit of 2 s (a kernel that never "
                                               "returns?); the worker was stopped");
    QTest::newRow("worker died") << 6 << int(Outcome::RuntimeError) << true
                                 << QStringLiteral("the GPU worker died: killed by signal SIGKILL");
    QTest::newRow("no device") << 7 << int(Outcome::NotRun) << false
                               << QStringLiteral("no CUDA device here, compiled only (no CUDA driver)");
  }

  void evaluateRepliesBecomeOutcomes() {
    QFETCH(int, replyIndex);
    QFETCH(int, outcome);
    QFETCH(bool, stops);
    QFETCH(QString, message);
    const nlohmann::json seeds = nlohmann::json::array(
        {{{"seed", 1}, {"passed", true}, {"summary", "all match"}},
         {{"seed", 2}, {"passed", false}, {"summary", "y: 3 of 64 differ"}}});
    const std::vector<kwb::worker::Reply> replies = {
        ok({{"verdict", "correct"}, {"seeds", {{{"seed", 1}, {"passed", true}}, {{"seed", 2}, {"passed", true}}}}}),
        ok({{"verdict", "incorrect"}, {"reason", "mismatch"}, {"seeds", seeds}}),
        ok({{"verdict", "incorrect"}, {"reason", "forbidden-library"}, {"forbidden_message", "the candidate loaded cublas"},
            {"seeds", nlohmann::json::array()}}),
        ok({{"verdict", "load-error"}, {"reason", "no kernel 'k'"}}),
        ok({{"verdict", "runtime-error"}, {"reason", "illegal address"}, {"error_name", "CUDA_ERROR_ILLEGAL_ADDRESS"}}),
        failed(kwb::worker::error_kind::kTimeout, "no reply"),
        failed(kwb::worker::error_kind::kWorkerDied, "killed by signal SIGKILL"),
        failed("no-device", "no CUDA driver"),
    };
    ConfigOutcome co;
    QCOMPARE(kwb::readEvaluateReply(replies.at(replyIndex), std::chrono::seconds(2), co), stops);
    QCOMPARE(int(co.outcome), outcome);
    QCOMPARE(QString::fromStdString(co.message), message);
    if (replyIndex == 1) {
      QCOMPARE(co.reason, std::string("mismatch"));
      QCOMPARE(co.seeds.size(), std::size_t(2));
    }
    if (replyIndex == 4) QCOMPARE(co.errorName, std::string("CUDA_ERROR_ILLEGAL_ADDRESS"));
  }

  void timeRepliesBecomeTimings() {
    ConfigOutcome co = config("small", Outcome::Correct, "correct on 3 seed(s)");
    const auto timed = kwb::readTimeReply(
        ok({{"verdict", "timed"}, {"timer", "cupti"}, {"speedup", 2.0}, {"stop_reason", "converged"},
            {"candidate", {{"median_ms", 0.5}, {"samples", 40}, {"throttled_samples", 2}, {"events", {{"median_ms", 0.52}}}}},
            {"reference", {{"median_ms", 1.0}, {"samples", 40}}},
            {"roofline", {{"flops", 1e6}, {"bytes", 2e6}, {"floor_ms", 0.01}}},
            {"warmup", {{"candidate", {{"launches", 11}}}}},
            {"seconds", 1.5}}),
        co);
    QVERIFY(timed.ok);
    QCOMPARE(timed.candidate.median, 0.5);
    QCOMPARE(timed.throttledSamples, std::size_t(2));
    QCOMPARE(timed.eventsCandidate->medianMs, 0.52);
    QVERIFY(timed.referenceTimed);
    QCOMPARE(timed.speedup, 2.0);
    QCOMPARE(timed.roofline->floorMs, 0.01);
    QCOMPARE(timed.warmupCandidate->launches, std::uint64_t(11));
    QVERIFY(!timed.warmupReference.has_value());
    QCOMPARE(timed.seconds, 1.5);
    QCOMPARE(co.outcome, Outcome::Correct);

    // Wrong while timed: the configuration becomes incorrect, with why.
    const auto copied = kwb::readTimeReply(
        ok({{"verdict", "incorrect"}, {"reason", "reference-buffer-copied"}, {"reason_detail", "output 'y' holds the scrub bytes"}}),
        co);
    QVERIFY(!copied.ok);
    QCOMPARE(co.outcome, Outcome::Incorrect);
    QCOMPARE(co.reason, std::string("reference-buffer-copied"));
    QCOMPARE(co.message, std::string("output 'y' holds the scrub bytes"));
    QCOMPARE(copied.error, std::string("incorrect while timed: output 'y' holds the scrub bytes"));

    ConfigOutcome other = config("small", Outcome::Correct);
    QCOMPARE(kwb::readTimeReply(failed(kwb::worker::error_kind::kTimeout, "no reply"), other).error,
             std::string("timeout: no reply"));
    QCOMPARE(kwb::readTimeReply(ok({{"verdict", "runtime-error"}, {"reason", "launch failed"}}), other).error,
             std::string("runtime-error: launch failed"));
    QCOMPARE(other.outcome, Outcome::Correct);

    // A remote worker lost while it timed (a dropped connection, a scancelled Slurm step): the
    // configuration is an error named worker-lost (a pool runs the evaluation again), not
    // "correct, not timed".
    ConfigOutcome lost = config("small", Outcome::Correct);
    QCOMPARE(kwb::readTimeReply(failed(kwb::worker::error_kind::kWorkerLost, "the Slurm step ended"), lost).error,
             std::string(kwb::worker::error_kind::kWorkerLost) + ": the Slurm step ended");
    QCOMPARE(lost.outcome, Outcome::Error);
    QCOMPARE(lost.errorName, std::string("worker-lost"));
    QCOMPARE(kwb::verdict({lost}, 3).message, std::string("small: worker-lost: the GPU worker was lost while timing: the Slurm step ended"));
  }

  void verdictIsTheWorstConfiguration() {
    using V = std::vector<ConfigOutcome>;
    QCOMPARE(kwb::verdict({}, 3).outcome, Outcome::Error);
    const auto allCorrect = kwb::verdict(V{config("a", Outcome::Correct), config("b", Outcome::Correct)}, 3);
    QCOMPARE(allCorrect.outcome, Outcome::Correct);
    QCOMPARE(allCorrect.message, std::string("correct on 2 configuration(s) × 3 seed(s)"));
    const auto mixed = kwb::verdict(V{config("a", Outcome::Correct), config("b", Outcome::Incorrect, "seed 1: y differs"),
                                      config("c", Outcome::NotRun, "not run")},
                                    3);
    QCOMPARE(mixed.outcome, Outcome::Incorrect);
    QCOMPARE(mixed.message, std::string("b: seed 1: y differs"));
    const auto crash = kwb::verdict(
        V{config("a", Outcome::Timeout, "ran past"),
          config("b", Outcome::RuntimeError, "illegal address", "CUDA_ERROR_ILLEGAL_ADDRESS")},
        3);
    QCOMPARE(crash.outcome, Outcome::RuntimeError);
    QCOMPARE(crash.message, std::string("b: CUDA_ERROR_ILLEGAL_ADDRESS: illegal address"));
    // A dead worker's name is not repeated in front of its message.
    QCOMPARE(kwb::verdict(V{config("a", Outcome::RuntimeError, "the GPU worker died: x", "worker-died")}, 1).message,
             std::string("a: the GPU worker died: x"));
    QCOMPARE(kwb::verdict(V{config("a", Outcome::Error, "e"), config("b", Outcome::Cancelled, "cancelled")}, 1).outcome,
             Outcome::Cancelled);
  }
};

QTEST_GUILESS_MAIN(TestEvaluationSteps)
#include "tst_evaluation_steps.moc"
