// The worker's `profile` command and its client without a GPU: the worker lists the command,
// refuses bad requests by name (unknown set, configuration, malformed metrics) and stays usable;
// where there is no CUDA device a well-formed request is answered `no-device`, and
// kwb::profile::profileCandidate compiles the candidate and reports "not run: no CUDA device".
// (Profiling itself is tests/gpu/tst_gpu_profile.cpp.)
#include <QtTest>

#include <chrono>
#include <filesystem>

#include "core/gpu/device_info.h"
#include "core/profile/profiler.h"
#include "core/task/manifest_parser.h"
#include "core/worker/worker_client.h"
#include "helpers/test_files.h"

using namespace std::chrono_literals;
using kwb::test::kernelsDir;
using kwb::test::readFile;
using kwb::worker::Json;
using kwb::worker::WorkerClient;
using kwb::worker::WorkerClientOptions;

namespace {

std::filesystem::path outputDir() {
  if (const char *env = std::getenv("KWB_TEST_OUTPUT_DIR"); env && *env) return env;
  return KWB_TEST_OUTPUT_DIR;
}

// As the client sends it: the manifest's text too, so the worker need not read the task folder
// (which its sandbox hides when the clone lies under /tmp).
Json request(const std::string &config = "small") {
  return {{"task", (kernelsDir() / "softmax").string()},
          {"manifest", readFile(kernelsDir() / "softmax" / "task.toml")},
          {"config", config},
          {"candidate",
           {{"cubin", "AAAA"},
            {"kernel", "softmax"},
            {"grid", {1024, 1, 1}},
            {"block", {256, 1, 1}},
            {"args", {"x", "y", "rows", "cols"}}}}};
}

}  // namespace

class TestProfileWorker : public QObject {
  Q_OBJECT

  std::filesystem::path worker_;
  bool haveDevice_ = false;

  WorkerClientOptions options() const {
    WorkerClientOptions o;
    o.workerPath = worker_;
    o.requestTimeout = 20s;
    o.startTimeout = 20s;
    return o;
  }

 private slots:
  void initTestCase() {
    worker_ = qEnvironmentVariable("KWB_WORKER").toStdString();
    QVERIFY2(!worker_.empty(), "run through ctest: KWB_WORKER names kwb-worker");
    haveDevice_ = kwb::probeGpus().hasDevices();
  }

  void badRequestsAreNamed() {
    WorkerClient client(options());
    client.start();
    QVERIFY2(client.waitUntilReady(20s), client.lastExit() ? client.lastExit()->description.c_str() : "no exit");
    const auto commands = client.hello().value("commands", Json::array());
    QVERIFY2(std::find(commands.begin(), commands.end(), "profile") != commands.end(), commands.dump().c_str());

    auto r = client.call("profile", [] {
      auto j = request();
      j["set"] = "everything";
      return j;
    }());
    QVERIFY(!r.ok);
    QCOMPARE(r.error.kind, std::string("invalid-argument"));
    QVERIFY2(r.error.message.find("'everything'") != std::string::npos &&
                 r.error.message.find("default, detailed") != std::string::npos,
             r.error.message.c_str());

    r = client.call("profile", request("nope"));
    QVERIFY(!r.ok);
    QCOMPARE(r.error.kind, std::string("invalid-argument"));
    QVERIFY2(r.error.message.find("'nope'") != std::string::npos, r.error.message.c_str());

    r = client.call("profile", [] {
      auto j = request();
      j["metrics"] = {"gpu__time_duration.sum", 7};
      return j;
    }());
    QVERIFY(!r.ok);
    QCOMPARE(r.error.kind, std::string("invalid-argument"));
    QVERIFY2(r.error.message.find("'metrics'") != std::string::npos, r.error.message.c_str());

    if (!haveDevice_) {
      r = client.call("profile", request());
      QVERIFY(!r.ok);
      QCOMPARE(r.error.kind, std::string("no-device"));
      QVERIFY2(!r.error.message.empty(), "no-device without a reason");
    }
    // Still serving.
    r = client.call("ping", {{"after", "profile"}});
    QVERIFY(r.ok);
    QCOMPARE(r.result.value("after", ""), std::string("profile"));
  }

  void clientSaysNotRunWithoutDevice() {
    if (haveDevice_) QSKIP("a CUDA device is present: tests/gpu/tst_gpu_profile.cpp profiles on it");
    kwb::EvaluatorSettings settings;
    settings.workerPath = worker_;
    settings.compiler.cacheDirectory = outputDir() / "profile-worker-compile-cache";
    const auto task = kwb::loadTask(kernelsDir() / "softmax");
    kwb::profile::ProfileOptions o;
    o.config = "wide";
    const auto r = kwb::profile::profileCandidate(task, readFile(task.folder / task.starterSource()), o, settings);
    QCOMPARE(QString(kwb::toString(r.outcome)), QString("not-run"));
    QVERIFY2(r.message.rfind("not run: no CUDA device", 0) == 0, r.message.c_str());
    QCOMPARE(r.config, std::string("wide"));
    QCOMPARE(r.arch, std::string("sm_90"));
    QVERIFY(r.metrics.empty());
    QCOMPARE(nlohmann::json(r).value("outcome", ""), std::string("not-run"));

    // A candidate that does not compile says so first, GPU or not.
    const auto bad = kwb::profile::profileCandidate(task, "extern \"C\" __global__ void softmax( { }", o, settings);
    QCOMPARE(QString(kwb::toString(bad.outcome)), QString("compile-error"));
    QVERIFY2(bad.message.find("does not compile") != std::string::npos, bad.message.c_str());

    // Options that do not fit the task are the caller's mistake.
    o.config = "nope";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             kwb::profile::profileCandidate(task, readFile(task.folder / task.starterSource()), o, settings));
  }
};

QTEST_GUILESS_MAIN(TestProfileWorker)
#include "tst_profile_worker.moc"
