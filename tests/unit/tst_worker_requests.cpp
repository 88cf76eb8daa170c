// The worker's device commands read typed requests (core/worker/commands.h): what the client
// builds with the structs reaches the worker as the same struct, and a request a buggy or hostile
// client makes up is refused with invalid-argument naming the field, by a real kwb-worker (no
// GPU needed: requests are checked before a CUDA context is made), which keeps serving.
#include <QtTest>

#include <chrono>
#include <string>

#include "core/eval/evaluation_steps.h"
#include "core/worker/commands.h"
#include "core/worker/worker_client.h"
#include "helpers/test_files.h"

using namespace std::chrono_literals;
using kwb::test::kernelsDir;
using kwb::test::readFile;
using kwb::worker::Json;
using kwb::worker::WorkerClient;
using kwb::worker::WorkerClientOptions;

namespace {

kwb::worker::LaunchRequest softmaxLaunch() {
  kwb::worker::LaunchRequest l;
  l.cubin = "AAAA";
  l.kernel = "softmax";
  l.grid = {1024, 1, 1};
  l.block = {256, 1, 1};
  l.args = {"x", "y", "rows", "cols"};
  return l;
}

kwb::worker::EvaluateRequest evaluateRequest() {
  kwb::worker::EvaluateRequest r;
  r.task = (kernelsDir() / "softmax").string();
  r.manifest = readFile(kernelsDir() / "softmax" / "task.toml");
  r.config = "small";
  r.seeds = {1, 2};
  r.reference = r.candidate = softmaxLaunch();
  return r;
}

}  // namespace

class TestWorkerRequests : public QObject {
  Q_OBJECT

  WorkerClientOptions options() const {
    WorkerClientOptions o;
    o.workerPath = qEnvironmentVariable("KWB_WORKER").toStdString();
    o.requestTimeout = 20s;
    o.startTimeout = 20s;
    return o;
  }

  // The worker's answer to `params` for `cmd`: must be refused as invalid-argument with a message
  // holding every one of `words`.
  static void expectRefused(WorkerClient &client, const std::string &cmd, const Json &params,
                            std::initializer_list<const char *> words) {
    const auto r = client.call(cmd, params);
    QVERIFY2(!r.ok, (cmd + " accepted " + params.dump().substr(0, 200)).c_str());
    QCOMPARE(r.error.kind, std::string("invalid-argument"));
    for (const char *w : words)
      QVERIFY2(r.error.message.find(w) != std::string::npos, (r.error.message + " lacks " + w).c_str());
    QVERIFY2(r.error.message.find("[json.exception") == std::string::npos, r.error.message.c_str());
  }

 private slots:
  void initTestCase() { QVERIFY2(!options().workerPath.empty(), "run through ctest: KWB_WORKER names kwb-worker"); }

  // Every field the client sets survives the trip through JSON, both ways.
  void requestsRoundTrip() {
    const auto e = evaluateRequest();
    const auto back = Json(e).get<kwb::worker::EvaluateRequest>();
    QCOMPARE(back.task, e.task);
    QCOMPARE(back.config, e.config);
    QCOMPARE(back.manifest, e.manifest);
    QCOMPARE(back.seeds, e.seeds);
    QCOMPARE(back.candidate.grid, e.candidate.grid);
    QCOMPARE(back.candidate.args, e.candidate.args);
    QVERIFY(!back.candidate.hostLauncher());

    kwb::worker::TimeRequest t;
    t.task = "/k";
    t.config = "c";
    t.seed = 4;
    t.timeCapMs = 250;
    t.flops = 1e9;
    t.timeReference = false;
    t.candidate.library = "AAAA";
    t.candidate.args = {"x"};
    const Json tj = t;
    QCOMPARE(tj.at("time_reference").get<bool>(), false);
    QVERIFY(!tj.at("candidate").contains("grid"));  // a host launcher carries no launch
    const auto tb = tj.get<kwb::worker::TimeRequest>();
    QCOMPARE(tb.seed, std::uint64_t{4});
    QCOMPARE(tb.timeCapMs, 250.0);
    QCOMPARE(tb.flops, 1e9);
    QVERIFY(!tb.timeReference);
    QVERIFY(tb.candidate.hostLauncher());

    kwb::worker::CeilingsRequest c;
    c.fma = {"AAAA", "kwb_ceiling_fma", 8, 256, 2048, 64};
    const auto cb = Json(c).get<kwb::worker::CeilingsRequest>();
    QVERIFY(!cb.mma);
    QCOMPARE(cb.fma.kernel, std::string("kwb_ceiling_fma"));
    QCOMPARE(cb.fma.flopsPerThreadIter, 64.0);
  }

  // Reading is strict about numbers: no negative counts, no fractions for integers, no
  // booleans for numbers; the message names the field.
  void readingChecksTypes() {
    auto j = Json(evaluateRequest());
    j["seeds"] = {1, -2};
    try {
      (void)j.get<kwb::worker::EvaluateRequest>();
      QFAIL("a negative seed was read");
    } catch (const Json::exception &e) {
      const auto text = kwb::worker::describeJsonError(e);
      QVERIFY2(text.find("'seeds'") != std::string::npos && text.find("non-negative") != std::string::npos,
               text.c_str());
    }
    j = Json(evaluateRequest());
    j["candidate"]["grid"] = {1024.5, 1, 1};
    QVERIFY_THROWS_EXCEPTION(Json::exception, (void)j.get<kwb::worker::EvaluateRequest>());
    kwb::worker::TimeRequest t;
    Json tj = t;
    tj["time_cap_ms"] = true;
    QVERIFY_THROWS_EXCEPTION(Json::exception, (void)tj.get<kwb::worker::TimeRequest>());
  }

  void workerRefusesBadRequestsByField() {
    WorkerClient client(options());
    client.start();
    QVERIFY(client.waitUntilReady(20s));
    const Json good = evaluateRequest();

    auto with = [&](auto edit) {
      Json j = good;
      edit(j);
      return j;
    };
    expectRefused(client, "evaluate", with([](Json &j) { j["seeds"] = {1, -2}; }), {"evaluate", "'seeds'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["seeds"] = "1,2"; }), {"'seeds'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["candidate"]["grid"] = {0, 1, 1}; }),
                  {"candidate", "'grid'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["candidate"]["grid"] = {1, 1, 1, 1}; }), {"'grid'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["candidate"]["grid"] = "big"; }), {"'grid'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["candidate"].erase("kernel"); }), {"'kernel'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["candidate"]["cubin"] = "not base64!"; }), {"'cubin'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["reference"]["shared_bytes"] = -1; }),
                  {"reference", "'shared_bytes'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["candidate"]["args"] = {"x", "nope"}; }), {"'nope'"});
    expectRefused(client, "evaluate", with([](Json &j) { j.erase("task"); }), {"'task'"});
    expectRefused(client, "evaluate", with([](Json &j) { j["config"] = "huge"; }), {"'huge'"});

    Json time = good;
    time.erase("seeds");
    auto timeWith = [&](const char *key, const Json &value) {
      Json j = time;
      j[key] = value;
      return j;
    };
    expectRefused(client, "time", timeWith("time_cap_ms", 0), {"time", "'time_cap_ms'"});
    expectRefused(client, "time", timeWith("seed", -4), {"'seed'"});
    expectRefused(client, "time", timeWith("time_reference", "no"), {"'time_reference'"});
    expectRefused(client, "time", timeWith("max_samples", 1e9), {"'max_samples'"});

    // Still serving.
    const auto r = client.call("ping", {{"after", "refusals"}});
    QVERIFY(r.ok);
  }

  // The client's request builders: device code carries its launch, a host launcher only its
  // library and arguments.
  void clientBuildsLaunches() {
    kwb::Launch launch;
    launch.kernel = "k";
    launch.args = {"x", "n"};
    kwb::LaunchDims dims;
    dims.grid = {4, 2, 1};
    dims.block = {128, 1, 1};
    dims.sharedBytes = 1024;
    const auto device = kwb::kernelLaunch("QUJD", launch, dims);
    QCOMPARE(device.grid, (std::vector<std::int64_t>{4, 2, 1}));
    QCOMPARE(device.sharedBytes, std::int64_t{1024});
    QVERIFY(!device.hostLauncher());
    const auto host = kwb::hostLaunch("QUJD", launch);
    QVERIFY(host.hostLauncher());
    QVERIFY(host.grid.empty() && host.kernel.empty());
    QCOMPARE(host.args, launch.args);
  }
};

QTEST_GUILESS_MAIN(TestWorkerRequests)
#include "tst_worker_requests.moc"
