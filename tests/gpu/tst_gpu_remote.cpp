// On a machine with a GPU: remote workers (issue 22) against real CUDA. A real OpenSSH server on
// loopback (tests/helpers/loopback_sshd.h) stands for the GPU host: the evaluation pool through
// `ssh` lists the same GPU as a local worker and gives the same timed, correct verdict on it; a
// connection dropped while an evaluation's request is in flight is a lost worker, and the pool
// runs that evaluation again on a fresh worker (a new connection), which ends correct. Then the
// same through Slurm: a one-node cluster (tests/helpers/one_node_slurm.h) whose GPU is this
// machine's own; the pool asks for an allocation with salloc and runs its worker as an srun step
// on that GPU; the step scancelled while an evaluation's request is in flight is a lost worker,
// and the evaluation runs again in a new step, which ends correct. Skips, saying why, where there
// is no device (and the Slurm case where Slurm is not installed or this is not root).
#include <QtTest>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/eval/evaluator_pool.h"
#include "core/eval/sanitizer.h"
#include "core/eval/sanitizer_status.h"
#include "core/gpu/device_info.h"
#include "core/task/manifest_parser.h"
#include "core/worker/worker_launcher.h"
#include "helpers/loopback_sshd.h"
#include "helpers/one_node_slurm.h"
#include "helpers/test_files.h"

using kwb::test::kernelsDir;
using kwb::test::outputDir;
using kwb::test::readFile;

namespace {

std::string describe(const kwb::EvaluationResult &r) { return nlohmann::json(r).dump(1); }

// A file of /proc/PID as its NUL-separated fields.
std::vector<std::string> procFields(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> out;
  for (std::string field; std::getline(in, field, '\0');) out.push_back(field);
  return out;
}

// The relay (kwb-worker --relay) a Slurm step of `job` runs on this machine, and its step
// ("JOB.STEP", from its environment); {-1, ""} when there is none.
std::pair<pid_t, std::string> relayOf(const std::string &job) {
  for (const auto &e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto argv = procFields(e.path() / "cmdline");
    if (std::find(argv.begin(), argv.end(), "--relay") == argv.end()) continue;
    const auto env = procFields(e.path() / "environ");
    if (std::find(env.begin(), env.end(), "SLURM_JOB_ID=" + job) == env.end()) continue;
    for (const auto &v : env)
      if (v.rfind("SLURM_STEP_ID=", 0) == 0) return {std::stoi(name), job + "." + v.substr(14)};
  }
  return {-1, ""};
}

}  // namespace

class TestGpuRemote : public QObject {
  Q_OBJECT

  std::string worker_;
  kwb::Task softmax_;
  std::unique_ptr<kwb::test::LoopbackSshd> sshd_;
  QTemporaryDir runtime_;

  kwb::EvaluatorSettings settings(bool remote) const {
    kwb::EvaluatorSettings s;
    s.compiler.cacheDirectory = outputDir() / "gpu-remote-compile-cache";
    if (!remote) {
      s.workerPath = worker_;
      return s;
    }
    std::string problem;
    s.launcher = *kwb::worker::parseWorkerLauncher("ssh://" + std::string(kwb::test::LoopbackSshd::kHost) + worker_, problem);
    return s;
  }

  static kwb::EvaluationOptions timed() {
    kwb::EvaluationOptions o;
    o.configs = {"small"};
    o.time = true;
    o.timeTorch = false;
    o.timingCap = std::chrono::milliseconds(500);
    return o;
  }

 private slots:
  void initTestCase() {
    const auto inventory = kwb::probeGpus();
    if (!inventory.hasDevices()) QSKIP(("no CUDA device: " + inventory.problem).c_str());
    const char *worker = std::getenv("KWB_WORKER");
    QVERIFY2(worker && *worker, "run through ctest: KWB_WORKER names kwb-worker");
    worker_ = worker;
    QVERIFY(runtime_.isValid());
    qputenv("XDG_RUNTIME_DIR", runtime_.path().toUtf8());  // the shared ssh connections' folder
    sshd_ = std::make_unique<kwb::test::LoopbackSshd>();
    QVERIFY2(sshd_->problem().empty(), sshd_->problem().c_str());
    qputenv("KWB_SSH_COMMAND", QByteArray::fromStdString(sshd_->sshCommand()));
    softmax_ = kwb::loadTask(kernelsDir() / "softmax");
  }

  void cleanupTestCase() { sshd_.reset(); }

  // The same GPU, and the same verdict on it, through ssh as here.
  void sameGpuAndVerdictThroughSsh() {
    std::string localProblem, remoteProblem;
    const auto local = kwb::describeVisibleDevices(settings(false), localProblem);
    const auto remote = kwb::describeVisibleDevices(settings(true), remoteProblem);
    QVERIFY2(!remote.empty(), (remoteProblem + "\nsshd: " + sshd_->log()).c_str());
    QCOMPARE(remote.size(), local.size());
    QCOMPARE(remote.front().name, local.front().name);
    QCOMPARE(remote.front().pciBusId, local.front().pciBusId);
    const std::string starter = readFile(softmax_.folder / softmax_.starterSource());
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = settings(true);
    kwb::EvaluatorPool pool(ps);
    QCOMPARE(pool.devices().size(), local.size());
    const auto r = pool.submit(softmax_, starter, timed()).get();
    const auto l = kwb::Evaluator(settings(false)).evaluate(softmax_, starter, timed());
    QVERIFY2(r.outcome == kwb::Outcome::Correct, describe(r).c_str());
    QVERIFY2(l.outcome == kwb::Outcome::Correct, describe(l).c_str());
    QCOMPARE(r.device, l.device);
    QVERIFY(r.configs.at(0).timing && r.configs[0].timing->ok);
    const auto states = pool.devices();
    QVERIFY2(states.at(static_cast<std::size_t>(r.deviceOrdinal)).where.size() > 0, "the pool does not say where");
    std::cerr << "softmax starter at small: ssh median " << r.configs[0].timing->candidate.median * 1000 << " us, local "
              << l.configs.at(0).timing->candidate.median * 1000 << " us; where: " << states[0].where << "\n";
  }

  // The connection drops while the evaluation's first request to the worker is in flight: a lost
  // worker, not the candidate's doing; the pool runs it again on a fresh worker (a new
  // connection), and it ends correct; the GPU stays in the pool and says what happened.
  void droppedConnectionIsRunAgain() {
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = settings(true);
    ps.devices = {0};
    kwb::EvaluatorPool pool(ps);
    const std::string starter = readFile(softmax_.folder / softmax_.starterSource());
    // A first evaluation starts the worker (and the connection) and fills the compile cache.
    QVERIFY(pool.submit(softmax_, starter, timed()).get().outcome == kwb::Outcome::Correct);
    std::atomic<int> dropped{0};
    auto options = timed();
    options.onStep = [&](const kwb::EvalProgress &step) {
      // A seed's result arrives while its evaluate request is still unanswered: drop every
      // connection once, there (the request certainly in flight).
      if (step.stage == "evaluate" && step.text.find(" seed ") != std::string::npos && dropped.fetch_add(1) == 0)
        sshd_->dropConnections();
    };
    const auto r = pool.submit(softmax_, starter, options).get();
    QVERIFY(dropped.load() > 0);
    QVERIFY2(r.outcome == kwb::Outcome::Correct, describe(r).c_str());
    const auto states = pool.devices();
    QCOMPARE(states.size(), std::size_t(1));
    QVERIFY(!states[0].removed);
    QVERIFY2(states[0].message.find("(run again here on a fresh worker)") != std::string::npos, states[0].message.c_str());
    std::cerr << "after the dropped connection: " << states[0].message << "\n";
  }

  // Several hosts in one pool (issue 49): two sshd servers stand for two GPU hosts, both this
  // machine's GPU(s). A batch of 24 evaluations over both; once the second host has given a result
  // it is killed (its server stopped, its connections dropped): what ran and waited there
  // finishes on the first host, every evaluation ends correct exactly once, and the pool's counts
  // add up to 24 (nothing counted twice).
  void aHostKilledMidBatchFinishesOnTheOther() {
    auto second = std::make_unique<kwb::test::LoopbackSshd>("kwbtest-b");
    QVERIFY2(second->problem().empty(), second->problem().c_str());
    QTemporaryDir both;
    QVERIFY(both.isValid());
    qputenv("KWB_SSH_COMMAND", QByteArray::fromStdString(kwb::test::LoopbackSshd::sshCommandFor(
                                   {sshd_.get(), second.get()}, std::filesystem::path(both.path().toStdString()))));
    std::string problem;
    const auto hosts = kwb::worker::parseWorkerLaunchers(
        "ssh://" + sshd_->alias() + worker_ + ",ssh://" + second->alias() + worker_, problem);
    QVERIFY2(hosts, problem.c_str());
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = settings(true);
    ps.evaluator.hosts = *hosts;
    std::mutex m;
    std::vector<std::string> messages;
    kwb::EvaluatorPool pool(ps, [&](const std::string &text) {
      std::lock_guard lock(m);
      messages.push_back(text);
    });
    const auto states = pool.devices();
    std::string local;
    const std::size_t perHost = kwb::describeVisibleDevices(settings(false), local).size();
    QCOMPARE(states.size(), 2 * perHost);
    QCOMPARE(states.front().host, std::string("ssh://kwbtest"));
    QCOMPARE(states.back().host, std::string("ssh://kwbtest-b"));
    const std::string starter = readFile(softmax_.folder / softmax_.starterSource());
    std::atomic<bool> killed{false};
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::future<kwb::EvaluationResult>> results;
    for (int i = 0; i < 24; ++i) {
      auto options = timed();
      options.onStep = [&](const kwb::EvalProgress &step) {
        // While the second host runs an evaluation, it is killed (its request in flight).
        if (step.stage == "evaluate" && step.text.find(" seed ") != std::string::npos) {
          for (const auto &d : pool.devices())
            if (d.host == "ssh://kwbtest-b" && d.busy && !killed.exchange(true)) {
              second->stop();
              break;
            }
        }
      };
      results.push_back(pool.submit(softmax_, starter, options));
    }
    int correct = 0;
    for (auto &f : results) {
      const auto r = f.get();
      QVERIFY2(r.outcome == kwb::Outcome::Correct, describe(r).c_str());
      ++correct;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    QVERIFY(killed.load());
    QCOMPARE(correct, 24);
    std::size_t done = 0, doneOnB = 0;
    std::string lost;
    for (const auto &d : pool.devices()) {
      done += d.done;
      if (d.host == "ssh://kwbtest-b") {
        doneOnB += d.done;
        lost += d.message + " ";
      }
    }
    QCOMPARE(done, std::size_t(24));
    QVERIFY2(lost.find("moved to GPU") != std::string::npos, lost.c_str());
    // The dock's line per host: the second's work moved away, its workers lost.
    const auto eachHost = kwb::poolHosts(pool.devices());
    QCOMPARE(eachHost.size(), std::size_t(2));
    QVERIFY(eachHost[1].movedAway >= 1 && eachHost[1].lostWorkers >= 1);
    QCOMPARE(eachHost[0].done + eachHost[1].done, std::size_t(24));
    for (std::size_t i = 0; i < eachHost.size(); ++i)
      std::cerr << "  " << kwb::describePoolHost(eachHost[i], kwb::worker::sshConnectionStats((*hosts)[i])) << "\n";
    std::cerr << "two hosts, the second killed mid-batch: 24 correct in " << seconds << " s; " << doneOnB
              << " finished on the second host before it went; its GPUs say: " << lost << "\n";
    qputenv("KWB_SSH_COMMAND", QByteArray::fromStdString(sshd_->sshCommand()));
  }

  // --sanitize on a remote worker (issue 49, 3): the far side's relay runs its worker under that
  // host's compute-sanitizer. The starter is clean under memcheck and racecheck; a softmax that
  // reads one element past each row is out of bounds at its line, in the candidate's file; the
  // tool's own exit status comes back through the relay (kSanitizerErrorStatus: errors found).
  void sanitizerRunsOnTheFarSide() {
    if (kwb::findComputeSanitizer().empty())
      QSKIP("no compute-sanitizer in the CUDA toolkit here (KWB_COMPUTE_SANITIZER names one)");
    kwb::Evaluator evaluator(settings(true));
    auto sanitize = [&](const std::string &source, const std::string &name, std::vector<kwb::SanitizerTool> tools) {
      kwb::SanitizeOptions o;
      o.tools = std::move(tools);
      o.timeLimit = std::chrono::seconds(90);
      o.sourceName = name;
      o.onProgress = [](const std::string &line) { std::cerr << line << "\n"; };
      auto r = evaluator.sanitize(softmax_, source, o);
      std::cerr << name << " through ssh: " << r.summary() << " (" << r.seconds << " s; " << r.program << ")\n";
      return r;
    };
    const std::string starter = readFile(softmax_.folder / softmax_.starterSource());
    const auto clean = sanitize(starter, "softmax.cu", {kwb::SanitizerTool::Memcheck, kwb::SanitizerTool::Racecheck});
    QVERIFY2(clean.clean(), nlohmann::json(clean).dump(1).c_str());
    QCOMPARE(clean.reports.size(), std::size_t{2});
    QVERIFY2(clean.program.find(" on ssh://kwbtest") != std::string::npos, clean.program.c_str());
    for (const auto &report : clean.reports) {
      QVERIFY2(report.evaluation.rfind("correct", 0) == 0, report.evaluation.c_str());
      QVERIFY2(std::find(report.notes.begin(), report.notes.end(), "compute-sanitizer exited with status 0") != report.notes.end(),
               nlohmann::json(report.notes).dump().c_str());
    }
    const std::string from = "out[c] = __expf(in[c] - rowMax) * inv;";
    std::string overrun = starter;
    const auto at = overrun.find(from);
    QVERIFY2(at != std::string::npos, "the softmax starter changed: the test's edit no longer applies");
    overrun.replace(at, from.size(), "out[c] = __expf(in[c + 1] - rowMax) * inv;");
    const auto bad = sanitize(overrun, "overrun-softmax.cu", {kwb::SanitizerTool::Memcheck});
    QCOMPARE(bad.reports.size(), std::size_t{1});
    const auto &mem = bad.reports.front();
    QVERIFY2(mem.completed && mem.problem.empty() && mem.candidateErrors() > 0, nlohmann::json(bad).dump(1).c_str());
    const int line = 1 + static_cast<int>(std::count(overrun.begin(), overrun.begin() + static_cast<long>(at), '\n'));
    // (The report names the file as compiled: a path whose last part is the candidate's name.)
    const bool pointed = std::any_of(mem.findings.begin(), mem.findings.end(), [&](const kwb::SanitizerFinding &f) {
      return f.origin == kwb::SanitizerOrigin::Candidate &&
             std::any_of(f.locations.begin(), f.locations.end(), [&](const kwb::SanitizerLocation &l) {
               return std::filesystem::path(l.file).filename() == "overrun-softmax.cu" && l.line == line;
             });
    });
    QVERIFY2(pointed, nlohmann::json(bad).dump(1).c_str());
    QVERIFY2(std::find(mem.notes.begin(), mem.notes.end(),
                       "compute-sanitizer exited with status " + std::to_string(kwb::kSanitizerErrorStatus)) != mem.notes.end(),
             nlohmann::json(mem.notes).dump().c_str());
  }

  // Through Slurm, on this machine's GPU: a step scancelled while an evaluation's request is in
  // flight (as a preempted or timed-out step would end) is a lost worker; the pool runs the
  // evaluation again in a new step of its allocation, and it ends correct on the same GPU.
  void scancelledSlurmStepIsRunAgain() {
    kwb::test::OneNodeSlurm cluster(kwb::test::OneNodeSlurm::Gpus::Machine);
    const std::string &problem = cluster.problem();
    if (problem.find("is not installed") != std::string::npos || problem.find("needs root") != std::string::npos)
      QSKIP(problem.c_str());
    QVERIFY2(problem.empty(), problem.c_str());
    std::string parseProblem;
    const auto launcher = kwb::worker::parseWorkerLauncher(std::string("slurm:partition=") +
                                                               kwb::test::OneNodeSlurm::kPartition +
                                                               ",gpus=1,time=00:10:00,wait=60,worker=" + worker_,
                                                           parseProblem);
    QVERIFY2(launcher, parseProblem.c_str());
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = settings(false);
    ps.evaluator.workerPath.clear();
    ps.evaluator.launcher = *launcher;
    kwb::EvaluatorPool pool(ps);
    const auto before = pool.devices();
    QVERIFY2(before.size() == 1, (pool.problem() + "\n" + cluster.logs()).c_str());
    const std::string starter = readFile(softmax_.folder / softmax_.starterSource());
    const auto first = pool.submit(softmax_, starter, timed()).get();
    QVERIFY2(first.outcome == kwb::Outcome::Correct, (describe(first) + "\n" + cluster.logs()).c_str());
    const auto local = kwb::Evaluator(settings(false)).evaluate(softmax_, starter, timed());
    QCOMPARE(first.device, local.device);
    QVERIFY(first.configs.at(0).timing && first.configs[0].timing->ok && local.configs.at(0).timing);
    const std::string whereBefore = pool.devices().at(0).where;
    QVERIFY2(whereBefore.find("Slurm step") != std::string::npos, whereBefore.c_str());
    // The worker's step, and its relay (kwb-worker --relay, on this machine). As the evaluation
    // is about to send its evaluate request, the relay is stopped; once the request waits in the
    // relay's input (a pipe from slurmstepd), the step is cancelled: the request is certainly
    // unanswered, as when a step is preempted mid-request.
    const auto [relay, cancelledStep] = relayOf(pool.allocation());
    QVERIFY2(relay > 0, ("no kwb-worker --relay with SLURM_JOB_ID=" + pool.allocation()).c_str());
    QVERIFY2(whereBefore.find(cancelledStep) != std::string::npos, (whereBefore + " vs " + cancelledStep).c_str());
    std::atomic<int> cancelled{0};
    std::string cancelProblem;
    std::thread canceller;
    auto options = timed();
    options.onStep = [&](const kwb::EvalProgress &step) {
      if (step.stage != "evaluate" || step.text.rfind("evaluating configuration", 0) != 0 || cancelled.fetch_add(1) != 0)
        return;
      ::kill(relay, SIGSTOP);
      canceller = std::thread([&, relay = relay, step = cancelledStep] {
        const int input = ::open(("/proc/" + std::to_string(relay) + "/fd/0").c_str(), O_RDONLY | O_NONBLOCK);
        int waiting = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (input >= 0 && waiting == 0 && std::chrono::steady_clock::now() < deadline) {
          if (::ioctl(input, FIONREAD, &waiting) != 0) break;
          if (waiting == 0) ::poll(nullptr, 0, 2);
        }
        if (input >= 0) ::close(input);
        if (waiting == 0) cancelProblem = "the evaluate request never reached the relay's input";
        const std::string said = cluster.cancel(step);
        if (!said.empty()) cancelProblem += said;
      });
    };
    const auto r = pool.submit(softmax_, starter, options).get();
    if (canceller.joinable()) canceller.join();
    QVERIFY(cancelled.load() > 0);
    QVERIFY2(cancelProblem.empty(), cancelProblem.c_str());
    QVERIFY2(r.outcome == kwb::Outcome::Correct, (describe(r) + "\n" + cluster.logs()).c_str());
    QCOMPARE(r.device, local.device);
    const auto states = pool.devices();
    QCOMPARE(states.size(), std::size_t(1));
    QVERIFY(!states[0].removed);
    QVERIFY2(states[0].message.find("(run again here on a fresh worker)") != std::string::npos, states[0].message.c_str());
    QVERIFY2(states[0].where != whereBefore, ("the same step after scancel: " + states[0].where).c_str());
    QVERIFY2(states[0].where.find("Slurm step") != std::string::npos, states[0].where.c_str());
    std::cerr << "scancel " << cancelledStep << ": " << states[0].message << "\nwhere before: " << whereBefore
              << "\nwhere after: " << states[0].where << "\nsoftmax starter at small through srun: median "
              << first.configs.at(0).timing->candidate.median * 1000 << " us, local "
              << local.configs.at(0).timing->candidate.median * 1000 << " us\n";
  }
};

QTEST_GUILESS_MAIN(TestGpuRemote)
#include "tst_gpu_remote.moc"
