// Remote workers through Slurm (issue 22): a real one-node cluster from Debian's packages
// (tests/helpers/one_node_slurm.h), started by the test: workers as `srun` job steps, their device
// lists and compile-only evaluations as a local worker's, and a step cancelled with `scancel` while
// a request is in flight: a lost worker (not the candidate's doing), whose worker there goes with
// it, and a fresh step for the next request.
#include <QtTest>

#include <signal.h>

#include <chrono>
#include <memory>

#include "core/eval/evaluator.h"
#include "core/eval/evaluator_pool.h"
#include "core/task/manifest_parser.h"
#include "core/worker/worker_client.h"
#include "helpers/one_node_slurm.h"
#include "helpers/process_wait.h"
#include "helpers/test_files.h"
#include "helpers/worker_replies.h"

using namespace kwb::worker;
using namespace std::chrono_literals;
using kwb::test::Replies;

class TestSlurmWorkers : public QObject {
  Q_OBJECT

  std::unique_ptr<kwb::test::OneNodeSlurm> cluster_;
  std::string worker_;

  WorkerLauncher launcher() const {
    std::string problem;
    const auto l = parseWorkerLauncher(std::string("slurm:partition=") + kwb::test::OneNodeSlurm::kPartition +
                                           ",gpus=0,time=00:10:00,worker=" + worker_,
                                       problem);
    if (!l) qFatal("%s", problem.c_str());
    return *l;
  }

 private slots:
  void initTestCase() {
    worker_ = qEnvironmentVariable("KWB_WORKER").toStdString();
    QVERIFY2(!worker_.empty(), "run through ctest: KWB_WORKER names kwb-worker");
    cluster_ = std::make_unique<kwb::test::OneNodeSlurm>();
    // packaging/install-deps.sh installs Slurm and munge; CI runs as root: no reason to skip.
    QVERIFY2(cluster_->problem().empty(), cluster_->problem().c_str());
  }

  void cleanupTestCase() { cluster_.reset(); }

  void devicesAndCompileOnlyEvaluationThroughSrun() {
    kwb::EvaluatorSettings remote;
    remote.launcher = launcher();
    kwb::EvaluatorSettings local;
    local.workerPath = worker_;
    std::string problem, localProblem;
    const auto devices = kwb::describeVisibleDevices(remote, problem);
    const auto localDevices = kwb::describeVisibleDevices(local, localProblem);
    QCOMPARE(devices.size(), localDevices.size());
    QCOMPARE(problem, localProblem);
    const auto task = kwb::loadTask(kwb::test::kernelsDir() / "sgemm");
    const auto source = kwb::test::readFile(task.folder / task.starterSource());
    kwb::EvaluationOptions o;
    o.configs = {"small"};
    const auto r = kwb::Evaluator(remote).evaluate(task, source, o);
    const auto l = kwb::Evaluator(local).evaluate(task, source, o);
    QCOMPARE(kwb::toString(r.outcome), kwb::toString(l.outcome));
    QCOMPARE(r.message, l.message);
    QVERIFY2(r.candidate.ok, r.candidate.log.c_str());
  }

  void scancelledStepIsALostWorkerAndANewStepAnswers() {
    WorkerClientOptions o;
    o.launcher = launcher();
    o.startTimeout = 60s;
    WorkerClient client(o);
    client.start();
    QVERIFY2(client.waitUntilReady(70s), cluster_->logs().c_str());
    QVERIFY2(!client.sandbox().host.empty(), client.hello().dump().c_str());
    const pid_t remote = client.hello()["relay"].value("worker_pid", -1);
    QVERIFY(remote > 0);
    const auto steps = cluster_->steps();
    QCOMPARE(steps.size(), std::size_t(1));
    QCOMPARE(::kill(remote, SIGSTOP), 0);  // the request stays in flight
    Replies replies;
    client.send("ping", Json::object(), replies.handlers());
    const auto said = cluster_->cancel(steps.front());
    QVERIFY2(said.empty(), said.c_str());
    QVERIFY(replies.waitFor(1, 60s));
    QCOMPARE(replies.inOrder[0].error.kind, std::string("worker-lost"));
    QVERIFY2(replies.inOrder[0].error.message.find("slurm") != std::string::npos &&
                 replies.inOrder[0].error.message.find("job step") != std::string::npos,
             replies.inOrder[0].error.message.c_str());
    QVERIFY2(kwb::test::waitForExit(remote, 30s), "the worker outlived its cancelled step");
    // Requeued: the next request gets a fresh step.
    client.restart();
    QVERIFY2(client.waitUntilReady(70s), cluster_->logs().c_str());
    const auto pong = client.call("ping", {{"again", true}});
    QVERIFY2(pong.ok, pong.error.message.c_str());
    const auto now = cluster_->steps();
    QCOMPARE(now.size(), std::size_t(1));
    QVERIFY(now.front() != steps.front());
  }
};

QTEST_GUILESS_MAIN(TestSlurmWorkers)
#include "tst_slurm_workers.moc"
