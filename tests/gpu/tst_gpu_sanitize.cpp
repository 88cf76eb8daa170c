// On a machine with a GPU: kwb eval --sanitize (issue 15, gap 6). Each of compute-sanitizer's
// tools gets a candidate with the defect it exists for, and must name the candidate's source
// line: a softmax whose barrier after the row maximum is gone (racecheck; the double run of the
// correctness check does not see it), a read one element past the input (memcheck), a host
// launcher reading scratch memory it never wrote (initcheck), a warp barrier whose mask leaves
// out the calling lane (synccheck). The bundled starter is clean under all four. Skips, saying
// why, where there is no device.
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "core/eval/evaluator.h"
#include "core/eval/sanitizer.h"
#include "core/gpu/device_info.h"
#include "core/task/manifest_parser.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;

namespace {

using kwb::test::kernelsDir;
using kwb::test::readFile;

using kwb::test::outputDir;

// The softmax starter with one textual replacement (which must match).
std::string softmaxVariant(const std::string &from, const std::string &to) {
  return kwb::test::fileVariant(kernelsDir() / "softmax" / "softmax.cu", from, to);
}

// The 1-based line of the first line of `source` containing `text`; 0 when none does.
int lineOf(const std::string &source, const std::string &text) {
  const auto at = source.find(text);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

std::string describe(const kwb::SanitizeResult &r) { return nlohmann::json(r).dump(1); }

const kwb::SanitizerReport *reportOf(const kwb::SanitizeResult &r, kwb::SanitizerTool tool) {
  for (const auto &report : r.reports)
    if (report.tool == tool) return &report;
  return nullptr;
}

// Whether a finding of the candidate's, from `tool`, points at `file`:`line`.
bool pointsAt(const kwb::SanitizeResult &r, kwb::SanitizerTool tool, const std::string &file, int line) {
  const auto *report = reportOf(r, tool);
  if (!report) return false;
  for (const auto &f : report->findings) {
    if (f.origin != kwb::SanitizerOrigin::Candidate) continue;
    for (const auto &l : f.locations)
      if (fs::path(l.file).filename() == fs::path(file).filename() && l.line == line) return true;
  }
  return false;
}

}  // namespace

class TestGpuSanitize : public QObject {
  Q_OBJECT

  std::unique_ptr<kwb::Evaluator> evaluator_;
  kwb::Task softmax_;

  kwb::SanitizeResult sanitize(const std::string &source, const std::string &name,
                               std::vector<kwb::SanitizerTool> tools = kwb::allSanitizerTools(),
                               std::chrono::milliseconds limit = std::chrono::seconds(90)) {
    kwb::SanitizeOptions o;
    o.tools = std::move(tools);
    o.timeLimit = limit;
    o.sourceName = name;
    o.onProgress = [](const std::string &line) { std::cerr << line << "\n"; };
    auto r = evaluator_->sanitize(softmax_, source, o);
    std::cerr << name << ": " << r.summary() << " (" << r.seconds << " s)\n";
    // The tools' reports as written, for tests/fixtures/sanitizer (the parser's unit test).
    if (const char *dir = std::getenv("KWB_SANITIZER_LOG_DIR"); dir && *dir) {
      fs::create_directories(dir);
      for (const auto &report : r.reports) {
        std::ofstream log(fs::path(dir) / (fs::path(name).stem().string() + "-" + kwb::sanitizerToolName(report.tool) + ".log"));
        for (const auto &line : report.log) log << line << "\n";
      }
    }
    return r;
  }

 private slots:
  void initTestCase() {
    const auto inventory = kwb::probeGpus();
    if (!inventory.hasDevices()) QSKIP(("no CUDA device: " + inventory.problem).c_str());
    if (kwb::findComputeSanitizer().empty())
      QSKIP("no compute-sanitizer in the CUDA toolkit here (KWB_COMPUTE_SANITIZER names one)");
    const char *worker = std::getenv("KWB_WORKER");
    QVERIFY2(worker && *worker, "run through ctest: KWB_WORKER names kwb-worker");
    kwb::EvaluatorSettings s;
    s.workerPath = worker;
    s.compiler.cacheDirectory = outputDir() / "gpu-sanitize-compile-cache";
    evaluator_ = std::make_unique<kwb::Evaluator>(s);
    softmax_ = kwb::loadTask(kernelsDir() / "softmax");
  }

  void smallestConfigurationIsChosen() {
    const auto *smallest = kwb::smallestConfiguration(softmax_);
    QVERIFY(smallest);
    QCOMPARE(smallest->name, std::string("small"));
  }

  void starterIsClean() {
    const auto r = sanitize(readFile(kernelsDir() / "softmax" / "softmax.cu"), "softmax.cu");
    QVERIFY2(r.clean(), describe(r).c_str());
    QCOMPARE(r.reports.size(), std::size_t{4});
    QCOMPARE(r.config, std::string("small"));
    for (const auto &report : r.reports) {
      QVERIFY2(report.evaluation.rfind("correct", 0) == 0, describe(r).c_str());
      std::cerr << "  " << kwb::sanitizerToolName(report.tool) << ": " << report.seconds << " s\n";
    }
  }

  // The race: without the barrier after the maximum is read, a thread's store of its
  // partial sum can overwrite scratch[0] before a slower thread has read the maximum from it.
  void missingBarrierIsARace() {
    const std::string source = softmaxVariant("  const float rowMax = scratch[0];\n  __syncthreads();\n",
                                              "  const float rowMax = scratch[0];\n");
    const auto r = sanitize(source, "racy-softmax.cu", {kwb::SanitizerTool::Racecheck, kwb::SanitizerTool::Memcheck});
    const auto *race = reportOf(r, kwb::SanitizerTool::Racecheck);
    QVERIFY2(race && race->completed && race->candidateErrors() > 0, describe(r).c_str());
    QVERIFY2(pointsAt(r, kwb::SanitizerTool::Racecheck, "racy-softmax.cu", lineOf(source, "const float rowMax = scratch[0];")),
             describe(r).c_str());
    QVERIFY2(pointsAt(r, kwb::SanitizerTool::Racecheck, "racy-softmax.cu", lineOf(source, "scratch[threadIdx.x] = sum;")),
             describe(r).c_str());
    const auto *mem = reportOf(r, kwb::SanitizerTool::Memcheck);
    QVERIFY2(mem && mem->completed && mem->candidateErrors() == 0, describe(r).c_str());
    QVERIFY(!r.clean());
  }

  // One element past each row: for the last row, past the end of x.
  void readPastTheEndIsOutOfBounds() {
    const std::string source = softmaxVariant("out[c] = __expf(in[c] - rowMax) * inv;",
                                              "out[c] = __expf(in[c + 1] - rowMax) * inv;");
    const auto r = sanitize(source, "overrun-softmax.cu", {kwb::SanitizerTool::Memcheck});
    const auto *mem = reportOf(r, kwb::SanitizerTool::Memcheck);
    QVERIFY2(mem && mem->completed && mem->candidateErrors() > 0, describe(r).c_str());
    QVERIFY2(pointsAt(r, kwb::SanitizerTool::Memcheck, "overrun-softmax.cu", lineOf(source, "in[c + 1]")),
             describe(r).c_str());
  }

  // A host launcher whose extra kernel reads a scratch buffer it allocated and never wrote; the
  // softmax itself is right. Its kernels run in the host launcher's own process.
  void uninitializedScratchIsReported() {
    const std::string source =
        "#include <cuda_runtime.h>\n" + readFile(kernelsDir() / "softmax" / "softmax.cu") +
        "\n__device__ float kwb_sink;\n"
        "__global__ void peek(const float *scratch) { kwb_sink = scratch[threadIdx.x]; }\n"
        "extern \"C\" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {\n"
        "  const float *x = *static_cast<const float *const *>(args[0]);\n"
        "  float *y = *static_cast<float *const *>(args[1]);\n"
        "  const long long rows = *static_cast<const long long *>(args[2]);\n"
        "  const long long cols = *static_cast<const long long *>(args[3]);\n"
        "  static float *scratch = nullptr;\n"
        "  if (!scratch && cudaMalloc(&scratch, 256 * sizeof(float)) != cudaSuccess) return cudaErrorMemoryAllocation;\n"
        "  peek<<<1, 32, 0, stream>>>(scratch);\n"
        "  softmax<<<(unsigned)rows, BLOCK, 0, stream>>>(x, y, rows, cols);\n"
        "  return cudaGetLastError();\n"
        "}\n";
    const auto r = sanitize(source, "uninit-launcher.cu", {kwb::SanitizerTool::Initcheck});
    const auto *init = reportOf(r, kwb::SanitizerTool::Initcheck);
    QVERIFY2(init && init->completed && init->candidateErrors() > 0, describe(r).c_str());
    QVERIFY2(pointsAt(r, kwb::SanitizerTool::Initcheck, "uninit-launcher.cu", lineOf(source, "kwb_sink = scratch")),
             describe(r).c_str());
    // Only there: the inputs the worker shares with the launcher's process are written (its
    // initcheck did not see the worker write them; the launcher's process marks them).
    QVERIFY2(!pointsAt(r, kwb::SanitizerTool::Initcheck, "uninit-launcher.cu", lineOf(source, "m = fmaxf(m, in[c])")),
             describe(r).c_str());
  }

  // __syncwarp with a mask that leaves out lane 0, called by lane 0.
  void warpBarrierWithoutItsOwnLane() {
    const std::string source = softmaxVariant("  float sum = 0.0f;\n", "  __syncwarp(0xfffffffeu);\n  float sum = 0.0f;\n");
    const auto r = sanitize(source, "syncwarp-softmax.cu", {kwb::SanitizerTool::Synccheck});
    const auto *sync = reportOf(r, kwb::SanitizerTool::Synccheck);
    QVERIFY2(sync && sync->completed && sync->candidateErrors() > 0, describe(r).c_str());
    QVERIFY2(pointsAt(r, kwb::SanitizerTool::Synccheck, "syncwarp-softmax.cu", lineOf(source, "__syncwarp(0xfffffffeu)")),
             describe(r).c_str());
  }
};

QTEST_GUILESS_MAIN(TestGpuSanitize)
#include "tst_gpu_sanitize.moc"
