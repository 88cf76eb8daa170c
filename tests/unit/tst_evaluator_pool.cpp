// The evaluation pool (core/eval/evaluator_pool.h) without a GPU: evaluations spread over the
// devices, a device whose worker cannot give it a GPU is taken out with a message and its work
// goes elsewhere, and with no device left every submission ends in a result saying so.
#include <QtTest>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>

#include "core/eval/evaluator_pool.h"
#include "core/task/manifest_parser.h"

namespace fs = std::filesystem;

namespace {
fs::path kernelsDir() { return fs::path(KWB_SOURCE_DIR) / "kernels"; }
}  // namespace

class TestEvaluatorPool : public QObject {
  Q_OBJECT

  kwb::Task softmax_;

  kwb::EvaluatorSettings compileOnly() {
    kwb::EvaluatorSettings s;
    s.useDevice = false;
    s.compiler.cacheDirectory = fs::path(KWB_TEST_OUTPUT_DIR) / "pool-compile-cache";
    return s;
  }

 private slots:
  void initTestCase() { softmax_ = kwb::loadTask(kernelsDir() / "softmax"); }

  // Nine candidates that fail to compile (no GPU needed, and not the device's fault) over three
  // devices: each device takes its share, none is removed.
  void evaluationsSpreadOverTheDevices() {
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = compileOnly();
    ps.evaluator.compiler.useCache = false;
    ps.devices = {2, 0, 1, 1};
    kwb::EvaluatorPool pool(ps);
    QCOMPARE(pool.devices().size(), std::size_t(3));
    std::vector<std::future<kwb::EvaluationResult>> results;
    for (int i = 0; i < 9; ++i)
      results.push_back(pool.submit(softmax_, "extern \"C\" __global__ void softmax() { int x = ; }\n// " +
                                                  std::to_string(i) + "\n"));
    for (auto &f : results) QCOMPARE(std::string(kwb::toString(f.get().outcome)), std::string("compile-error"));
    std::size_t total = 0;
    for (const auto &d : pool.devices()) {
      QVERIFY2(d.done >= 2, ("device " + std::to_string(d.device) + " did " + std::to_string(d.done)).c_str());
      QVERIFY(!d.removed);
      QVERIFY(!d.busy);
      total += d.done;
    }
    QCOMPARE(total, std::size_t(9));
  }

  // Workers that cannot start: each device is taken out after two failures in a row, saying
  // why; everything submitted gets a result; then the pool says no GPU is left.
  void failingDevicesAreTakenOut() {
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = compileOnly();
    ps.evaluator.useDevice = true;
    ps.evaluator.workerPath = fs::path(KWB_TEST_OUTPUT_DIR) / "no-such-kwb-worker";
    ps.evaluator.workerStartTimeout = std::chrono::seconds(5);
    ps.devices = {0, 1};
    ps.maxConsecutiveFailures = 2;
    std::mutex m;
    std::vector<std::string> messages;
    kwb::EvaluatorPool pool(ps, [&](const std::string &text) {
      std::lock_guard lock(m);
      messages.push_back(text);
    });
    const std::string source = "extern \"C\" __global__ void softmax(const float *x, float *y, long long r, long long c) {}\n";
    std::vector<std::future<kwb::EvaluationResult>> results;
    for (int i = 0; i < 6; ++i) results.push_back(pool.submit(softmax_, source));
    std::size_t given = 0;  // results a device gave (not those failed for want of one)
    for (auto &f : results) {
      const auto r = f.get();
      QVERIFY2(r.outcome == kwb::Outcome::NotRun || r.outcome == kwb::Outcome::Error, r.message.c_str());
      QVERIFY2(r.deviceOrdinal == -1, "a result that did not run claims a device");
      if (r.message.find("no GPU left in the evaluation pool") == std::string::npos) ++given;
    }
    // An evaluation that failed on one device and moved to the other is counted once, where its
    // result was given (issue 49: nothing counted twice).
    std::size_t done = 0;
    for (const auto &d : pool.devices()) done += d.done;
    QCOMPARE(done, given);
    for (const auto &d : pool.devices()) {
      QVERIFY2(d.removed, d.message.c_str());
      QVERIFY2(d.message.find("taken out of the pool") != std::string::npos, d.message.c_str());
    }
    {
      std::lock_guard lock(m);
      QCOMPARE(messages.size(), std::size_t(2));
    }
    const auto after = pool.submit(softmax_, source).get();
    QCOMPARE(std::string(kwb::toString(after.outcome)), std::string("error"));
    QVERIFY2(after.message.find("no GPU left") != std::string::npos, after.message.c_str());
  }

  // Other work (a profile, the ceilings) runs on the chosen device's own evaluator, whose worker
  // answers it; a device not in the pool runs nothing.
  void workRunsOnTheDevicesEvaluator() {
    const char *worker = std::getenv("KWB_WORKER");
    if (!worker || !*worker) QSKIP("run through ctest: KWB_WORKER names kwb-worker");
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = compileOnly();
    ps.evaluator.workerPath = worker;
    ps.devices = {0, 1};
    kwb::EvaluatorPool pool(ps);
    int ranOn = -1;
    std::string device, problem;
    bool pinged = false;
    auto work = [&](kwb::Evaluator &evaluator) {
      ranOn = evaluator.settings().device;
      device = evaluator.device().problem;  // compile-only: no device use
      pinged = evaluator.withWorker(
          [&](kwb::worker::WorkerClient &client) { pinged = client.call("ping", {{"n", 1}}).ok; }, problem);
    };
    QVERIFY(pool.submitWork(work, 1).get());
    QCOMPARE(ranOn, 1);
    QCOMPARE(device, std::string("no device use requested"));
    QVERIFY2(pinged, problem.c_str());
    ranOn = -1;
    QVERIFY(!pool.submitWork(work, 7).get());
    QCOMPARE(ranOn, -1);
    QVERIFY(pool.submitWork(work).get());
    QVERIFY(ranOn == 0 || ranOn == 1);
  }

  // With no device list, the pool asks a worker which devices it sees: none here.
  void noDeviceHereMeansAnEmptyPool() {
    const char *worker = std::getenv("KWB_WORKER");
    if (!worker || !*worker) QSKIP("run through ctest: KWB_WORKER names kwb-worker");
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = compileOnly();
    ps.evaluator.workerPath = worker;
    kwb::EvaluatorPool pool(ps);
    if (!pool.devices().empty()) QSKIP("this machine has a CUDA device");
    QVERIFY(!pool.problem().empty());
    const auto r = pool.submit(softmax_, "").get();
    QVERIFY2(r.message.find("no GPU left") != std::string::npos, r.message.c_str());
    QVERIFY2(r.message.find(pool.problem()) != std::string::npos, r.message.c_str());
    QVERIFY(!pool.submitWork([](kwb::Evaluator &) {}).get());
  }

  // Several hosts (issue 49): the GPUs dock's line per host, from its GPUs' states and what
  // ensureSshMaster recorded of its shared connection.
  void eachHostIsSummedAndSaid() {
    std::vector<kwb::PoolDeviceState> states(3);
    states[0].host = states[1].host = "ssh://gpu-a";
    states[2].host = "ssh://gpu-b";
    states[0].done = 5;
    states[1].done = 4;
    states[1].busy = true;
    states[1].queued = 2;
    states[2].done = 1;
    states[2].removed = true;
    states[2].movedAway = 3;
    states[2].lostWorkers = 2;
    const auto hosts = kwb::poolHosts(states);
    QCOMPARE(hosts.size(), std::size_t(2));
    QCOMPARE(hosts[0].host, std::string("ssh://gpu-a"));
    QCOMPARE(hosts[0].gpus, 2);
    QCOMPARE(hosts[0].done, std::size_t(9));
    QCOMPARE(hosts[1].gpusLeft, 0);
    kwb::worker::SshConnectionStats up;
    up.asked = up.up = true;
    up.started = 1;
    up.reused = 11;
    up.lastSetupMs = 182.4;
    QCOMPARE(kwb::describePoolHost(hosts[0], up),
             std::string("ssh://gpu-a: 2 GPUs · 1 busy · 2 queued · 9 done · shared connection up (set up in 182 ms, "
                         "reused 11 times)"));
    kwb::worker::SshConnectionStats down;
    down.asked = true;
    down.problem = "ssh could not connect to gpu-b: Connection refused";
    QCOMPARE(kwb::describePoolHost(hosts[1], down),
             std::string("ssh://gpu-b: 1 GPU (1 taken out) · 1 done · 3 moved away or run again (2 lost workers) · shared connection "
                         "down: ssh could not connect to gpu-b: Connection refused"));
    QCOMPARE(kwb::describePoolHost(hosts[1], {}), std::string("ssh://gpu-b: 1 GPU (1 taken out) · 1 done · 3 moved away or run again (2 lost workers)"));
    QVERIFY(kwb::poolHosts(std::vector<kwb::PoolDeviceState>(2)).empty());  // one host: no lines
  }
};

QTEST_GUILESS_MAIN(TestEvaluatorPool)
#include "tst_evaluator_pool.moc"
