// Remote workers through Slurm (issue 22): a real one-node cluster from Debian's packages
// (tests/helpers/one_node_slurm.h), started by the test: workers as `srun` job steps, their device
// lists and compile-only evaluations as a local worker's, and a step cancelled with `scancel` while
// a request is in flight: a lost worker (not the candidate's doing), whose worker there goes with
// it, and a fresh step for the next request.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "core/eval/evaluator.h"
#include "core/eval/evaluator_pool.h"
#include "core/process/child_process.h"
#include "core/worker/slurm_allocation.h"
#include "core/worker/worker_launcher.h"
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

  // `worker`: the far side's program, kwb-worker when empty.
  WorkerLauncher launcher(const std::string &options = "gpus=0", const std::string &worker = {}) const {
    std::string problem;
    const auto l = parseWorkerLauncher(std::string("slurm:partition=") + kwb::test::OneNodeSlurm::kPartition + "," +
                                           options + ",time=00:10:00,worker=" + (worker.empty() ? worker_ : worker),
                                       problem);
    if (!l) qFatal("%s", problem.c_str());
    return *l;
  }

  // Whether `job` still holds or waits for its resources (squeue's state RUNNING or PENDING; a
  // cancelled job may still be listed a moment as COMPLETING, holding nothing new).
  bool held(const std::string &job) const {
    for (const auto &line : cluster_->jobs())
      if (line.rfind(job + " ", 0) == 0 &&
          (line.find(" RUNNING") != std::string::npos || line.find(" PENDING") != std::string::npos))
        return true;
    return false;
  }

  static std::size_t countPrefixed(const std::vector<std::string> &lines, const std::string &prefix) {
    std::size_t n = 0;
    for (const auto &l : lines) n += l.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
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

  // gpus=2 without jobid=: the pool asks Slurm for one allocation of two GPUs (salloc), runs one
  // worker step per device inside it, each with a GPU of its own, both at once; the allocation
  // goes with the pool.
  void poolOfTwoGpusRunsInOneAllocation() {
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator.launcher = launcher("gpus=2");
    ps.evaluator.workerStartTimeout = 60s;
    ps.devices = {0, 1};  // the node's GPUs have no CUDA device behind them: named, not discovered
    std::vector<std::string> messages;
    std::string job;
    {
      kwb::EvaluatorPool pool(ps, [&](const std::string &m) { messages.push_back(m); });
      job = pool.allocation();
      QVERIFY2(!job.empty(), (pool.problem() + "\n" + cluster_->logs()).c_str());
      QVERIFY(!messages.empty() && messages.front().find("asking Slurm for 2 worker(s)") != std::string::npos);
      QCOMPARE(countPrefixed(cluster_->jobs(), job + " kwb-workers-"), std::size_t(1));
      kwb::worker::Json hellos[2];
      std::future<bool> done[2];
      for (int i = 0; i < 2; ++i)
        done[i] = pool.submitWork(
            [&hellos, i](kwb::Evaluator &e) {
              std::string problem;
              if (!e.withWorker([&](WorkerClient &c) { hellos[i] = c.hello(); }, problem)) throw std::runtime_error(problem);
            },
            i);
      for (auto &d : done) QVERIFY(d.get());
      const auto first = hellos[0]["relay"], second = hellos[1]["relay"];
      const std::string step0 = first.value("slurm_step", ""), step1 = second.value("slurm_step", "");
      QVERIFY2(step0.rfind(job + ".", 0) == 0 && step1.rfind(job + ".", 0) == 0, (step0 + " " + step1).c_str());
      QVERIFY(step0 != step1);
      const std::string gpu0 = first.value("cuda_visible_devices", ""), gpu1 = second.value("cuda_visible_devices", "");
      QVERIFY2(!gpu0.empty() && !gpu1.empty() && gpu0 != gpu1, (gpu0 + " / " + gpu1).c_str());
      // Both workers live at once, inside the one job.
      QCOMPARE(countPrefixed(cluster_->steps(), job + "."), std::size_t(2));
      const auto states = pool.devices();
      QCOMPARE(states.size(), std::size_t(2));
      QVERIFY2(states[0].where.find("Slurm step " + step0) != std::string::npos, states[0].where.c_str());
      QVERIFY2(states[1].where.find("CUDA_VISIBLE_DEVICES=" + gpu1) != std::string::npos, states[1].where.c_str());
    }
    QVERIFY2(!held(job), "the pool's allocation outlived the pool");
  }

  // Issue 45, 7: `worker=--prolog=SCRIPT` never reaches srun as an option: a spec holding it is
  // refused when parsed, a launcher made otherwise before srun starts (and salloc is not asked),
  // and the script never runs.
  void workerThatIsAnSrunOptionNeverReachesSrun() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path evil = dir.filePath("evil.sh").toStdString(), ran = dir.filePath("ran").toStdString();
    kwb::test::writeScript(evil, "touch '" + ran.string() + "'");
    std::string problem;
    QVERIFY(!parseWorkerLauncher(std::string("slurm:partition=") + kwb::test::OneNodeSlurm::kPartition +
                                     ",gpus=0,time=00:10:00,worker=--prolog=" + evil.string(),
                                 problem));
    QVERIFY2(problem.find("worker must be the absolute path") != std::string::npos, problem.c_str());
    kwb::EvaluatorSettings s;
    s.launcher = launcher("gpus=0");
    s.launcher.remoteWorker = s.launcher.slurm["worker"] = "--prolog=" + evil.string();
    s.workerStartTimeout = 60s;
    problem.clear();
    QVERIFY(!kwb::startWorker(s, std::nullopt, problem));
    QVERIFY2(problem.find("worker must be the absolute path") != std::string::npos, problem.c_str());
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = s;
    ps.devices = {0};
    kwb::EvaluatorPool pool(ps);
    QVERIFY(pool.allocation().empty());
    QVERIFY2(pool.problem().find("worker must be the absolute path") != std::string::npos, pool.problem().c_str());
    QVERIFY2(!std::filesystem::exists(ran), "srun ran the worker= value as its --prolog");
  }

  // No gpus= in the spec: one worker with one GPU, the allocation asking for it as the step does.
  void withoutGpusTheWorkerStillGetsOne() {
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator.launcher = launcher("wait=30");
    ps.evaluator.workerStartTimeout = 60s;
    ps.devices = {0};
    kwb::EvaluatorPool pool(ps);
    QVERIFY2(!pool.allocation().empty(), pool.problem().c_str());
    kwb::worker::Json hello;
    QVERIFY(pool.submitWork(
                    [&hello](kwb::Evaluator &e) {
                      std::string problem;
                      if (!e.withWorker([&](WorkerClient &c) { hello = c.hello(); }, problem)) throw std::runtime_error(problem);
                    },
                    0)
                .get());
    QVERIFY2(hello["relay"].value("slurm_step", "").rfind(pool.allocation() + ".", 0) == 0, hello.dump().c_str());
    QVERIFY2(!hello["relay"].value("cuda_visible_devices", "").empty(), hello.dump().c_str());
  }

  // Without a device named, the pool looks through one step inside its allocation: no CUDA
  // device there gives the same problem as a local worker's, and the allocation is given back.
  void poolWithoutADeviceGivesItsAllocationBack() {
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator.launcher = launcher("gpus=2");
    ps.evaluator.workerStartTimeout = 60s;
    kwb::EvaluatorSettings local;
    local.workerPath = worker_;
    std::string localProblem;
    const auto localDevices = kwb::describeVisibleDevices(local, localProblem);
    if (!localDevices.empty()) QSKIP("this machine has a CUDA device: the node's stand-in GPUs would not be honest");
    kwb::EvaluatorPool pool(ps);
    QVERIFY(pool.devices().empty());
    QCOMPARE(pool.problem(), localProblem);
    QVERIFY(pool.allocation().empty());
    for (const auto &line : cluster_->jobs()) {
      const std::string job = line.substr(0, line.find(' '));
      QVERIFY2(line.find(" kwb-workers-") == std::string::npos || !held(job), line.c_str());
    }
  }

  // salloc's refusal is the pool's problem, in salloc's words; a request still queued when the
  // wait runs out is cancelled, never granted later to hold GPUs for nothing.
  void allocationRefusedOrNotGrantedInTime() {
    {
      std::string problem;
      auto l = parseWorkerLauncher("slurm:partition=nosuch,gpus=1,time=00:10:00,worker=" + worker_, problem);
      kwb::EvaluatorPoolSettings ps;
      ps.evaluator.launcher = *l;
      kwb::EvaluatorPool pool(ps);
      QVERIFY(pool.devices().empty());
      QVERIFY2(pool.problem().rfind("salloc refused the allocation", 0) == 0 &&
                   pool.problem().find("partition") != std::string::npos,
               pool.problem().c_str());
    }
    kwb::EvaluatorPoolSettings all;
    all.evaluator.launcher = launcher("gpus=" + std::to_string(kwb::test::OneNodeSlurm::kGpus));
    all.devices = {0};
    kwb::EvaluatorPool holder(all);  // every GPU of the node
    QVERIFY2(!holder.allocation().empty(), holder.problem().c_str());
    kwb::EvaluatorPoolSettings more;
    more.evaluator.launcher = launcher("gpus=1,wait=2");
    more.devices = {0};
    kwb::EvaluatorPool waiting(more);
    QVERIFY(waiting.devices().empty());
    QVERIFY2(waiting.problem().find("did not grant 1 worker(s) within 2 s") != std::string::npos,
             waiting.problem().c_str());
    // Given up while waiting (a cancel, the window closing): the same, at once.
    kwb::EvaluatorPoolSettings given;
    given.evaluator.launcher = launcher("gpus=1");  // the default wait: 600 s
    given.devices = {0};
    given.cancelled = [] { return true; };
    kwb::EvaluatorPool gaveUp(given);
    QVERIFY(gaveUp.devices().empty());
    QCOMPARE(gaveUp.problem(), std::string("cancelled while waiting for a Slurm allocation"));
    for (const auto &line : cluster_->jobs())
      QVERIFY2(line.rfind(holder.allocation() + " ", 0) == 0 || line.find(" kwb-workers-") == std::string::npos ||
                   (line.find(" RUNNING") == std::string::npos && line.find(" PENDING") == std::string::npos),
               line.c_str());
  }

  // Tune and optimize choose GPUs by number and need their names: through Slurm the pool's
  // allocation comes first and the GPUs are looked at inside it, not by a job of its own (on a
  // busy cluster that one would wait in the queue). Job ids are handed out in order: between two
  // jobs asked for by hand, exactly one (the allocation) was made.
  void chosenDevicesAreLookedAtInsideTheAllocation() {
    kwb::EvaluatorSettings local;
    local.workerPath = worker_;
    std::string localProblem;
    if (!kwb::describeVisibleDevices(local, localProblem).empty())
      QSKIP("this machine has a CUDA device: the node's stand-in GPUs would not be honest");
    const auto jobId = [&] {
      kwb::ChildProcessRequest r;
      r.argv = {*launcherProgram("salloc"), "--no-shell", "--job-name=by-hand", "--ntasks=1",
                std::string("--partition=") + kwb::test::OneNodeSlurm::kPartition, "--time=00:01:00"};
      r.timeout = 30s;
      const auto run = kwb::runChildProcess(r);
      const auto at = run.output.find("Granted job allocation ");
      if (!run.succeeded() || at == std::string::npos) qFatal("salloc: %s", run.output.c_str());
      const std::string id = run.output.substr(at + 23, run.output.find_first_not_of("0123456789", at + 23) - at - 23);
      cluster_->cancel(id);
      return std::stol(id);
    };
    const long before = jobId();
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator.launcher = launcher("gpus=2");
    ps.evaluator.workerStartTimeout = 60s;
    std::vector<kwb::VisibleDevice> described;
    std::string problem;
    const auto pool = kwb::poolOfChosenDevices(ps, {}, described, problem);
    QVERIFY(!pool);  // the stand-in GPUs have no CUDA device behind them
    QVERIFY(described.empty());
    QCOMPARE(problem, localProblem);
    QCOMPARE(jobId(), before + 2);
    // ... and that one was the pool's allocation (salloc's job name), not a look of its own.
    kwb::ChildProcessRequest show;
    show.argv = {*launcherProgram("scontrol"), "show", "job", std::to_string(before + 1)};
    show.timeout = 30s;
    const auto shown = kwb::runChildProcess(show);
    QVERIFY2(shown.output.find("JobName=kwb-workers-") != std::string::npos, shown.output.c_str());
  }

  // `kwb optimize` through Slurm while every GPU is held: it waits for its allocation; Ctrl+C
  // ends the wait (the queued request cancelled, never granted later), and the session ends
  // paused, resumable, having asked the LLM nothing.
  void optimizeCtrlCEndsTheWaitForSlurm() {
    const QString kwb = qEnvironmentVariable("KWB_CLI");
    QVERIFY2(!kwb.isEmpty(), "run through ctest: KWB_CLI names kwb");
    kwb::EvaluatorPoolSettings all;
    all.evaluator.launcher = launcher("gpus=" + std::to_string(kwb::test::OneNodeSlurm::kGpus));
    all.devices = {0};
    kwb::EvaluatorPool holder(all);
    QVERIFY2(!holder.allocation().empty(), holder.problem().c_str());
    const auto waiting = [&] {
      for (const auto &line : cluster_->jobs())
        if (line.find(" kwb-workers-") != std::string::npos && line.rfind(holder.allocation() + " ", 0) != 0 &&
            line.find(" PENDING") != std::string::npos)
          return true;
      return false;
    };
    QTemporaryDir dir;
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("HOME"), dir.path());  // its experience memory and settings there
    p.setProcessEnvironment(env);
    p.start(kwb, {QStringLiteral("optimize"), QString::fromStdString((kwb::test::kernelsDir() / "softmax").string()),
                  QStringLiteral("--provider"), QStringLiteral("http://127.0.0.1:9/v1"), QStringLiteral("--workers"),
                  QString::fromStdString(launcher("gpus=1").spec()), QStringLiteral("-G"), QStringLiteral("2"),
                  QStringLiteral("-K"), QStringLiteral("1"), QStringLiteral("--groups"), QStringLiteral("1"),
                  QStringLiteral("--workspace"), dir.filePath(QStringLiteral("ws.kwb"))});
    QVERIFY(p.waitForStarted());
    QTRY_VERIFY_WITH_TIMEOUT(waiting() || p.state() == QProcess::NotRunning, 60000);
    QVERIFY2(p.state() == QProcess::Running, p.readAll().constData());
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(60000));
    const QByteArray out = p.readAll();
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QVERIFY2(p.exitCode() == 5, out.constData());  // paused
    QVERIFY2(out.contains("cancelled while waiting for a Slurm allocation"), out.constData());
    QVERIFY2(out.contains("session paused: interrupted (Ctrl+C)"), out.constData());
    QVERIFY(!waiting());
  }

  // A crash or a kill leaves the allocation held until its time limit; the next pool made on
  // this host releases the ones whose process is gone (the name carries host and process) and
  // says so; one whose process still runs stays.
  void allocationLeftByAGoneProcessIsReleased() {
    const pid_t gone = ::fork();
    if (gone == 0) ::_exit(0);
    QVERIFY(gone > 0);
    ::waitpid(gone, nullptr, 0);
    const std::string here = slurmJobPrefix();  // kwb-workers-HOST-NS
    const auto hold = [&](pid_t pid, const std::string &prefix) {
      kwb::ChildProcessRequest r;
      r.argv = {*launcherProgram("salloc"), "--no-shell", "--job-name=" + prefix + "-" + std::to_string(pid) + "-7",
                "--ntasks=1", std::string("--partition=") + kwb::test::OneNodeSlurm::kPartition, "--time=00:10:00"};
      r.timeout = 30s;
      const auto run = kwb::runChildProcess(r);
      const auto at = run.output.find("Granted job allocation ");
      if (!run.succeeded() || at == std::string::npos) qFatal("salloc: %s", run.output.c_str());
      return run.output.substr(at + 23, run.output.find_first_not_of("0123456789", at + 23) - at - 23);
    };
    // Another host or PID namespace ("HOST-NS-2": a host named like this one plus "-NS", or
    // NS2): its processes are not for this one to judge.
    const std::string orphan = hold(gone, here), mine = hold(::getpid(), here), elsewhere = hold(gone, here + "-2");
    QVERIFY(held(orphan) && held(mine) && held(elsewhere));
    std::mutex lock;  // the pool's threads may speak too
    std::vector<std::string> messages;
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator.launcher = launcher("gpus=1");
    ps.devices = {0};
    {
      kwb::EvaluatorPool pool(ps, [&](const std::string &m) {
        const std::lock_guard<std::mutex> hold(lock);
        messages.push_back(m);
      });
      QVERIFY2(!pool.allocation().empty(), pool.problem().c_str());
      QVERIFY(!held(orphan));
      QVERIFY(held(mine));
      QVERIFY(held(elsewhere));
    }
    bool said = false;
    for (const auto &m : messages) said = said || m.rfind("released Slurm job " + orphan + " (", 0) == 0;
    QVERIFY2(said, messages.empty() ? "no message" : messages.front().c_str());
    QVERIFY(cluster_->cancel(mine).empty());
    QVERIFY(cluster_->cancel(elsewhere).empty());
  }

  // A request past its limit through Slurm: the client kills its srun; the step ends with it
  // (its relay sees its input close and stops the worker) and its GPU is free for the next step
  // of the same one-GPU allocation, which could not start otherwise.
  void stepPastItsLimitFreesItsGpuForTheNext() {
    std::string problem;
    const auto allocation = SlurmAllocation::request(launcher("gpus=1"), problem);
    QVERIFY2(allocation, problem.c_str());
    WorkerClientOptions o;
    o.launcher = allocation->inside(launcher("gpus=1"));
    o.startTimeout = 60s;
    WorkerClient client(o);
    client.start();
    QVERIFY2(client.waitUntilReady(70s), cluster_->logs().c_str());
    const pid_t remote = client.hello()["relay"].value("worker_pid", -1);
    QVERIFY(remote > 0);
    QCOMPARE(::kill(remote, SIGSTOP), 0);  // a hang: alive, silent
    Replies replies;
    client.send("ping", Json::object(), replies.handlers(), 1500ms);
    QVERIFY(replies.waitFor(1, 30s));
    QCOMPARE(replies.inOrder[0].error.kind, std::string("timeout"));
    QVERIFY2(kwb::test::waitForExit(remote, 30s), "the worker outlived its killed srun");
    client.restart();
    QVERIFY2(client.waitUntilReady(40s), ("the next step did not get the GPU\n" + cluster_->logs()).c_str());
    QVERIFY(client.call("ping").ok);
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
    QVERIFY2(replies.inOrder[0].error.kind == "worker-lost",
             (replies.inOrder[0].error.kind + ": " + replies.inOrder[0].error.message).c_str());
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

  // The order a cancelled step may take: its worker killed first, the relay saying "worker-died",
  // then the relay killed before it ends on its own (here a wrapper kills itself after the relay
  // returns). srun's status is then not the relay's: a lost worker, not the candidate's doing.
  void relayKilledAfterItsWorkerDiedIsALostWorker() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string wrapper = dir.path().toStdString() + "/killed-relay";
    kwb::test::writeScript(wrapper, "'" + worker_ + "' \"$@\"\nkill -KILL $$");
    WorkerClientOptions o;
    o.launcher = launcher("gpus=0", wrapper);
    o.startTimeout = 60s;
    WorkerClient client(o);
    client.start();
    QVERIFY2(client.waitUntilReady(70s), cluster_->logs().c_str());
    Replies replies;
    const auto failed = kwb::test::pingThenKillTheRemoteWorker(client, replies);
    QVERIFY2(failed.empty(), failed.c_str());
    QVERIFY(replies.waitFor(1, 60s));
    const auto &r = replies.inOrder[0];
    QVERIFY2(r.error.kind == "worker-lost", (r.error.kind + ": " + r.error.message).c_str());
    QVERIFY2(r.error.message.find("job step") != std::string::npos &&
                 r.error.message.find("its relay said") != std::string::npos,
             r.error.message.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSlurmWorkers)
#include "tst_slurm_workers.moc"
