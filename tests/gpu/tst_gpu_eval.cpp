// On a machine with a GPU: correctness evaluation end to end (kwb::Evaluator → kwb-worker
// `evaluate`). The bundled starters are correct; wrong, partial, input-clobbering, crashing,
// hanging and memory-hungry candidates each end in a result that says what happened, and the
// evaluation after a crash or a hang succeeds on a fresh worker. Skips, saying why, where there
// is no device. $KWB_KERNELS_DIR, when set, names the kernels folder (a bundle run elsewhere).
#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/eval/evaluator.h"
#include "core/gpu/device_info.h"
#include "core/task/manifest_parser.h"

namespace fs = std::filesystem;

namespace {

fs::path kernelsDir() {
  if (const char *env = std::getenv("KWB_KERNELS_DIR"); env && *env) return env;
  return fs::path(KWB_SOURCE_DIR) / "kernels";
}

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The softmax starter with `change` applied (a textual replacement that must match once).
std::string softmaxVariant(const std::string &from, const std::string &to) {
  auto text = readFile(kernelsDir() / "softmax" / "softmax.cu");
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("softmax.cu changed: '" + from + "' not found");
  return text.replace(at, from.size(), to);
}

fs::path outputDir() {
  if (const char *env = std::getenv("KWB_TEST_OUTPUT_DIR"); env && *env) return env;
  return KWB_TEST_OUTPUT_DIR;
}

std::string describe(const kwb::EvaluationResult &r) { return r.toJson().dump(1); }

}  // namespace

class TestGpuEval : public QObject {
  Q_OBJECT

  std::unique_ptr<kwb::Evaluator> evaluator_;
  kwb::Task softmax_, sgemm_;

  kwb::EvaluationResult run(const kwb::Task &task, const std::string &source, std::vector<std::string> configs,
                            std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    kwb::EvaluationOptions o;
    o.configs = std::move(configs);
    o.timeLimit = limit;
    auto r = evaluator_->evaluate(task, source, o);
    std::cerr << task.name << ": " << kwb::toString(r.outcome) << ": " << r.message << " (" << r.seconds << " s)\n";
    return r;
  }

  void expectCorrectStarter(const kwb::Task &task, const std::string &config) {
    const auto r = run(task, readFile(task.folder / task.starterSource()), {config});
    QVERIFY2(r.outcome == kwb::EvalOutcome::Correct, describe(r).c_str());
    QCOMPARE(r.configs.size(), std::size_t(1));
    QCOMPARE(r.configs[0].seeds.size(), task.seeds.size());
    for (const auto &s : r.configs[0].seeds) {
      QVERIFY(s.passed);
      QCOMPARE(s.unwritten, std::uint64_t(0));
      QVERIFY(!s.inputsModified);
      QVERIFY(!s.race);
    }
  }

 private slots:
  void initTestCase() {
    const auto inventory = kwb::probeGpus();
    if (!inventory.hasDevices()) QSKIP(("no CUDA device: " + inventory.problem).c_str());
    const char *worker = std::getenv("KWB_WORKER");
    QVERIFY2(worker && *worker, "run through ctest: KWB_WORKER names kwb-worker");
    kwb::EvaluatorSettings s;
    s.workerPath = worker;
    s.compiler.cacheDirectory = outputDir() / "gpu-eval-compile-cache";
    evaluator_ = std::make_unique<kwb::Evaluator>(s);
    softmax_ = kwb::loadTask(kernelsDir() / "softmax");
    sgemm_ = kwb::loadTask(kernelsDir() / "sgemm");
  }

  void startersAreCorrect() {
    expectCorrectStarter(softmax_, "small");
    expectCorrectStarter(sgemm_, "small");
    expectCorrectStarter(sgemm_, "odd");
  }

  void unnormalisedSoftmaxIsIncorrect() {
    const auto r = run(softmax_, softmaxVariant("* inv;", ";"), {"small"});
    QVERIFY2(r.outcome == kwb::EvalOutcome::Incorrect, describe(r).c_str());
    QCOMPARE(r.configs[0].reason, std::string("mismatch"));
    const auto &seed = r.configs[0].seeds.at(0);
    QVERIFY(!seed.passed);
    const auto &cmp = seed.detail["outputs"][0]["comparison"];
    QVERIFY(cmp["mismatches"].get<std::uint64_t>() > 0);
    QVERIFY(!cmp["first_mismatches"].empty());
    QVERIFY(cmp["first_mismatches"][0].contains("coordinates"));
    QVERIFY2(seed.summary.find("differ") != std::string::npos, seed.summary.c_str());
  }

  void halfTheOutputIsUnwritten() {
    const auto r = run(softmax_, softmaxVariant("if (row >= rows) return;", "if (row >= rows / 2) return;"),
                       {"small"});
    QVERIFY2(r.outcome == kwb::EvalOutcome::Incorrect, describe(r).c_str());
    QCOMPARE(r.configs[0].reason, std::string("unwritten"));
    const auto &seed = r.configs[0].seeds.at(0);
    QCOMPARE(seed.unwritten, std::uint64_t(512 * 1024));
    QVERIFY2(seed.summary.find("not written") != std::string::npos, seed.summary.c_str());
  }

  void modifyingTheInputIsCaught() {
    const auto r = run(softmax_,
                       softmaxVariant("for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = __expf(in[c] - rowMax) * inv;",
                                      "for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = __expf(in[c] - rowMax) * inv;\n"
                                      "  __syncthreads();\n"
                                      "  for (long long c = threadIdx.x; c < cols; c += BLOCK) const_cast<float *>(in)[c] = 0.0f;"),
                       {"small"});
    QVERIFY2(r.outcome == kwb::EvalOutcome::Incorrect, describe(r).c_str());
    QCOMPARE(r.configs[0].reason, std::string("inputs-modified"));
    QVERIFY(r.configs[0].seeds.at(0).inputsModified);
  }

  void wildWriteIsARuntimeErrorAndTheNextRunWorks() {
    const auto r = run(softmax_,
                       softmaxVariant("if (row >= rows) return;",
                                      "if (row >= rows) return;\n"
                                      "  reinterpret_cast<float *>(0xdead00000000ull)[threadIdx.x] = 1.0f;"),
                       {"small"});
    QVERIFY2(r.outcome == kwb::EvalOutcome::RuntimeError, describe(r).c_str());
    QVERIFY2(r.configs[0].errorName.find("CUDA_ERROR_ILLEGAL_ADDRESS") == 0 ||
                 r.configs[0].errorName.find("CUDA_ERROR_") == 0,
             describe(r).c_str());
    QVERIFY2(r.message.find("CUDA_ERROR_") != std::string::npos, r.message.c_str());
    expectCorrectStarter(softmax_, "small");  // on a fresh worker
  }

  void hangIsATimeoutAndTheNextRunWorks() {
    const auto r = run(softmax_, softmaxVariant("if (row >= rows) return;", "while (true) {}"), {"small"},
                       std::chrono::seconds(5));
    QVERIFY2(r.outcome == kwb::EvalOutcome::Timeout, describe(r).c_str());
    QVERIFY(r.message.find("timeout") != std::string::npos);
    expectCorrectStarter(softmax_, "small");
  }

  void tooMuchMemoryIsOutOfMemoryWithoutLosingTheWorker() {
    // A copy of softmax with a configuration of 2^40 floats per tensor.
    const fs::path dir = outputDir() / "gpu-eval-huge-softmax";
    fs::create_directories(dir);
    for (const char *f : {"task.toml", "reference.cu", "softmax.cu"})
      fs::copy_file(kernelsDir() / "softmax" / f, dir / f, fs::copy_options::overwrite_existing);
    {
      std::ofstream m(dir / "task.toml", std::ios::app);
      m << "\n[[configs]]\nname = \"huge\"\nrows = 1048576\ncols = 1048576\n";
    }
    // TOML tables after [[configs]] would be wrong; re-read it to make sure it parses.
    kwb::Task huge;
    try {
      huge = kwb::loadTask(dir);
    } catch (const std::exception &e) {
      QSKIP((std::string("could not make the huge task: ") + e.what()).c_str());
    }
    const auto r = run(huge, readFile(dir / "softmax.cu"), {"huge"});
    QVERIFY2(r.outcome == kwb::EvalOutcome::RuntimeError, describe(r).c_str());
    QCOMPARE(r.configs[0].errorName, std::string("CUDA_ERROR_OUT_OF_MEMORY"));
    expectCorrectStarter(softmax_, "small");
  }

  // Timing: the softmax reference timed against itself is a wash (speedup ~1, small spread);
  // the sgemm starter on its small configuration gives a positive median and a speedup.
  void timingReferenceAgainstItselfAndSgemm() {
    auto timed = [&](const kwb::Task &task, const std::string &source, const std::string &config) {
      kwb::EvaluationOptions o;
      o.configs = {config};
      o.time = true;
      auto r = evaluator_->evaluate(task, source, o);
      QString table = QString::fromStdString(task.name + " " + config + ": " + kwb::toString(r.outcome));
      for (const auto &c : r.configs)
        if (c.timing) {
          const auto &t = *c.timing;
          table += QString::asprintf(
              "\n  candidate %.4g ms +-%.2f%% (n=%zu, min %.4g, mean %.4g), reference %.4g ms +-%.2f%% (n=%zu), "
              "speedup %.3f, stop %s%s%s",
              t.candidate.median, 100 * t.candidate.relativeSpread, t.candidate.count, t.candidate.min,
              t.candidate.mean, t.reference.median, 100 * t.reference.relativeSpread, t.reference.count, t.speedup,
              t.stopReason.c_str(), t.suspicious ? ", SUSPICIOUS: " : "", t.suspiciousReason.c_str());
          if (!t.ok) table += QString::fromStdString("\n  not timed: " + t.error);
        }
      qInfo().noquote() << table;
      return r;
    };

    // The reference as the candidate: the task's [launch] replaced by the reference's.
    kwb::Task selfTask = softmax_;
    selfTask.launch.reset();
    const auto self = timed(selfTask, readFile(softmax_.folder / softmax_.reference.source), "small");
    QVERIFY2(self.outcome == kwb::EvalOutcome::Correct, describe(self).c_str());
    QVERIFY(self.configs.at(0).timing.has_value());
    const auto &st = *self.configs[0].timing;
    QVERIFY2(st.ok, st.error.c_str());
    QCOMPARE(st.timer, std::string("cuda-events"));
    QVERIFY(st.candidate.count >= 10 && st.reference.count >= 10);
    QVERIFY2(st.speedup >= 0.95 && st.speedup <= 1.05, describe(self).c_str());
    QVERIFY2(st.candidate.relativeSpread < 0.05, describe(self).c_str());
    QVERIFY2(st.reference.relativeSpread < 0.05, describe(self).c_str());
    QVERIFY(!st.suspicious);

    const auto gemm = timed(sgemm_, readFile(sgemm_.folder / sgemm_.starterSource()), "small");
    QVERIFY2(gemm.outcome == kwb::EvalOutcome::Correct, describe(gemm).c_str());
    const auto &gt = *gemm.configs.at(0).timing;
    QVERIFY2(gt.ok, gt.error.c_str());
    QVERIFY(gt.candidate.median > 0);
    QVERIFY(gt.reference.median > 0);
    QVERIFY(gt.speedup > 0 && std::isfinite(gt.speedup));
    const auto j = gemm.toJson();
    QVERIFY(j["configs"][0].contains("timing"));
    QVERIFY(j["configs"][0]["timing"]["speedup"].is_number());
  }
};

QTEST_GUILESS_MAIN(TestGpuEval)
#include "tst_gpu_eval.moc"
