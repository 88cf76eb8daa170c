// On a machine with GPUs: the evaluation pool (core/eval/evaluator_pool.h) with real workers.
// Evaluations spread over every visible GPU and each timed result names the one GPU that ran
// both the candidate and the reference; a GPU that is lost (its worker finds no device) is taken
// out with a message while every evaluation still ends correct on the others; and a candidate
// that crashes its worker again and again does not cost the GPU its place (the reference probe
// passes). Skips, saying why, where there is no device (or, for spreading, only one).
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <set>

#include <sys/stat.h>

#include "core/eval/evaluator_pool.h"
#include "core/gpu/device_info.h"
#include "core/task/manifest_parser.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;
using kwb::test::kernelsDir;
using kwb::test::readFile;

namespace {

using kwb::test::outputDir;

std::string describe(const kwb::EvaluationResult &r) { return nlohmann::json(r).dump(1); }

}  // namespace

class TestGpuPool : public QObject {
  Q_OBJECT

  std::string worker_;
  std::size_t gpus_ = 0;
  kwb::Task softmax_;

  kwb::EvaluatorPoolSettings settings(const std::string &workerPath) {
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator.workerPath = workerPath;
    ps.evaluator.compiler.cacheDirectory = outputDir() / "gpu-pool-compile-cache";
    return ps;
  }

  kwb::EvaluationOptions small(bool time) {
    kwb::EvaluationOptions o;
    o.configs = {"small"};
    o.time = time;
    o.timingCap = std::chrono::milliseconds(500);
    return o;
  }

 private slots:
  void initTestCase() {
    const auto inventory = kwb::probeGpus();
    if (!inventory.hasDevices()) QSKIP(("no CUDA device: " + inventory.problem).c_str());
    gpus_ = inventory.devices.size();
    const char *worker = std::getenv("KWB_WORKER");
    QVERIFY2(worker && *worker, "run through ctest: KWB_WORKER names kwb-worker");
    worker_ = worker;
    softmax_ = kwb::loadTask(kernelsDir() / "softmax");
  }

  // Eight timed evaluations over every GPU: each GPU takes some, each result is correct and
  // timed, and names a GPU of the pool.
  void spreadsOverEveryGpu() {
    if (gpus_ < 2) QSKIP("one GPU here: spreading needs two or more");
    kwb::EvaluatorPool pool(settings(worker_));
    QCOMPARE(pool.devices().size(), gpus_);
    const std::string starter = readFile(softmax_.folder / softmax_.starterSource());
    std::vector<std::future<kwb::EvaluationResult>> futures;
    for (int i = 0; i < 8; ++i) futures.push_back(pool.submit(softmax_, starter, small(true)));
    std::set<int> used;
    for (auto &f : futures) {
      const auto r = f.get();
      QVERIFY2(r.outcome == kwb::Outcome::Correct, describe(r).c_str());
      QVERIFY2(r.deviceOrdinal >= 0 && r.deviceOrdinal < static_cast<int>(gpus_), describe(r).c_str());
      QVERIFY2(r.configs.size() == 1 && r.configs[0].timing && r.configs[0].timing->ok, describe(r).c_str());
      QVERIFY(nlohmann::json(r).value("device_ordinal", -1) == r.deviceOrdinal);
      used.insert(r.deviceOrdinal);
    }
    QCOMPARE(used.size(), gpus_);
    for (const auto &d : pool.devices()) {
      std::cerr << "GPU " << d.device << ": " << d.done << " evaluations\n";
      QVERIFY(d.done >= 1 && !d.removed);
    }
  }

  // GPU 1 is "lost": a wrapper starts its worker on a device that does not exist. The pool
  // takes it out after two failures, says so once, and every evaluation still ends correct on
  // GPU 0 (those that met GPU 1 are moved, not failed).
  void lostGpuIsTakenOutAndWorkMovesOn() {
    const fs::path wrapper = outputDir() / "kwb-worker-gpu1-lost.sh";
    std::ofstream(wrapper) << "#!/bin/sh\n# GPU 1 is gone: its worker is pointed at a device that does not exist.\n"
                              "prev=\nfor a in \"$@\"; do\n  shift\n"
                              "  if [ \"$prev\" = --device ] && [ \"$a\" = 1 ]; then a=99; fi\n"
                              "  set -- \"$@\" \"$a\"\n  prev=$a\ndone\nexec \""
                           << worker_ << "\" \"$@\"\n";
    QVERIFY(::chmod(wrapper.c_str(), 0755) == 0);
    auto ps = settings(wrapper.string());
    ps.evaluator.sandbox = kwb::worker::SandboxPreference::None;  // the wrapper script lives in the test folder
    ps.devices = {0, 1};
    ps.maxConsecutiveFailures = 2;
    std::mutex m;
    std::vector<std::string> messages;
    kwb::EvaluatorPool pool(ps, [&](const std::string &text) {
      std::lock_guard lock(m);
      messages.push_back(text);
    });
    const std::string starter = readFile(softmax_.folder / softmax_.starterSource());
    std::vector<std::future<kwb::EvaluationResult>> futures;
    for (int i = 0; i < 6; ++i) futures.push_back(pool.submit(softmax_, starter, small(false)));
    for (auto &f : futures) {
      const auto r = f.get();
      QVERIFY2(r.outcome == kwb::Outcome::Correct, describe(r).c_str());
      QCOMPARE(r.deviceOrdinal, 0);
    }
    const auto devices = pool.devices();
    QCOMPARE(devices.size(), std::size_t(2));
    QVERIFY2(!devices[0].removed, devices[0].message.c_str());
    QVERIFY2(devices[1].removed, devices[1].message.c_str());
    QVERIFY2(devices[1].message.find("GPU 1 taken out of the pool after 2 failures in a row") != std::string::npos,
             devices[1].message.c_str());
    std::cerr << devices[1].message << "\n";
    std::lock_guard lock(m);
    QCOMPARE(messages.size(), std::size_t(1));
  }

  // A host launcher that aborts kills its own process (not the worker) three times in a row on a
  // pool of one GPU with a limit of two failures: each result says that process died, the GPU
  // stays, and a correct candidate then runs on it.
  void crashingCandidateKeepsItsGpu() {
    auto ps = settings(worker_);
    ps.devices = {0};
    ps.maxConsecutiveFailures = 2;
    kwb::EvaluatorPool pool(ps);
    const std::string crash = "#include <cstdlib>\n#include <cuda_runtime.h>\n"
                              "extern \"C\" cudaError_t kwb_launch(void *const *, cudaStream_t) { std::abort(); }\n";
    for (int i = 0; i < 3; ++i) {
      const auto r = pool.submit(softmax_, crash, small(false)).get();
      QVERIFY2(r.outcome == kwb::Outcome::RuntimeError, describe(r).c_str());
      QVERIFY2(!r.configs.empty() && r.configs[0].errorName == "host-launcher-died", describe(r).c_str());
      QVERIFY2(r.message.find("SIGABRT") != std::string::npos, r.message.c_str());
      QVERIFY2(!pool.devices()[0].removed, pool.devices()[0].message.c_str());
    }
    const auto r = pool.submit(softmax_, readFile(softmax_.folder / softmax_.starterSource()), small(false)).get();
    QVERIFY2(r.outcome == kwb::Outcome::Correct, describe(r).c_str());
    QCOMPARE(pool.devices()[0].done, std::size_t(4));
  }
};

QTEST_GUILESS_MAIN(TestGpuPool)
#include "tst_gpu_pool.moc"
