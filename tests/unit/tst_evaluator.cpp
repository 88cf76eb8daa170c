// The client side of evaluation without a GPU: a candidate that does not compile ends as
// "compile-error" with the compiler's located diagnostic and never reaches a worker; without a
// device the candidate is still compiled, its resources and occupancy are reported and the
// outcome is "not run" (never a number); launch dimensions are evaluated per configuration and
// tunable values.
#include <QtTest>

#include <array>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "core/eval/input_permutation.h"
#include "core/eval/evaluator.h"
#include "core/eval/timing_statistics.h"
#include "core/task/manifest_parser.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;

namespace {

using kwb::test::kernelsDir;
using kwb::test::readFile;

kwb::EvaluatorSettings compileOnly() {
  kwb::EvaluatorSettings s;
  s.useDevice = false;  // the unit suite runs where there is no GPU; this makes sure of it
  s.compiler.cacheDirectory = fs::path(KWB_TEST_OUTPUT_DIR) / "evaluator-compile-cache";
  return s;
}

}  // namespace

class TestEvaluator : public QObject {
  Q_OBJECT

 private slots:
  void compileErrorNeverReachesTheGpu() {
    const auto task = kwb::loadTask(kernelsDir() / "softmax");
    const std::string source =
        "extern \"C\" __global__ void softmax(const float *x, float *y, long long rows, long long cols) {\n"
        "  y[0] = x[0] +  undeclared_thing;\n"
        "}\n";
    kwb::EvaluationOptions options;
    options.sourceName = "broken.cu";
    auto settings = compileOnly();
    settings.useDevice = true;  // even with a device allowed, a compile error stops first
    settings.workerPath = "/nonexistent/kwb-worker";
    const auto result = kwb::evaluate(task, source, options, settings);
    QCOMPARE(std::string(kwb::toString(result.outcome)), std::string("compile-error"));
    QVERIFY(!result.candidate.ok);
    bool located = false;
    for (const auto &d : result.candidate.diagnostics)
      located = located || (d.file == "broken.cu" && d.line == 2 && d.severity == kwb::Diagnostic::Severity::Error &&
                            d.message.find("undeclared_thing") != std::string::npos);
    QVERIFY2(located, result.message.c_str());
    QVERIFY(result.message.find("broken.cu") != std::string::npos);
    QVERIFY(result.configs.empty());  // nothing was launched or even planned
    const nlohmann::json j = result;
    QCOMPARE(j["outcome"].get<std::string>(), std::string("compile-error"));
    QVERIFY(j["compile"]["diagnostics"][0]["line"].get<int>() == 2);
  }

  void noDeviceReportsResourcesAndOccupancyButNoNumbers() {
    const auto task = kwb::loadTask(kernelsDir() / "softmax");
    const auto source = readFile(task.folder / task.starterSource());
    kwb::EvaluationOptions options;
    options.arch = "sm_80";
    options.tunables = {{"BLOCK", 512}};
    const auto result = kwb::evaluate(task, source, options, compileOnly());
    QCOMPARE(std::string(kwb::toString(result.outcome)), std::string("not-run"));
    QVERIFY2(result.message.find(kwb::kNoDeviceMessage) == 0, result.message.c_str());
    QCOMPARE(result.arch, std::string("sm_80"));
    QVERIFY(result.candidate.ok);
    QCOMPARE(result.candidate.kernels.size(), std::size_t(1));
    QVERIFY(result.candidate.kernels[0].registers > 0);
    QCOMPARE(result.candidate.kernels[0].sharedStaticBytes, 512 * 4);  // scratch[BLOCK] floats
    QCOMPARE(result.configs.size(), task.configs.size());
    for (const auto &c : result.configs) {
      QCOMPARE(std::string(kwb::toString(c.outcome)), std::string("not-run"));
      QCOMPARE(c.message, std::string(kwb::kNoDeviceMessage));
      QVERIFY(c.seeds.empty());  // no fake results
      QVERIFY(c.occupancy.has_value());
      QVERIFY(c.occupancy->launchable());
      QVERIFY(c.occupancy->activeBlocksPerSM > 0);
      QCOMPARE(c.candidateLaunch.block[0], std::int64_t(512));
    }
    const nlohmann::json j = result;
    QCOMPARE(j["outcome"].get<std::string>(), std::string("not-run"));
    QVERIFY(j["configs"][0].contains("occupancy"));
  }

  // A host launcher compiles with nvcc into a shared library; with no device it is not run,
  // and no occupancy is claimed (kwb_launch chooses its own launches).
  void hostLauncherCompilesAndIsNotRunWithoutADevice() {
    const auto task = kwb::loadTask(kernelsDir() / "softmax");
    const std::string source =
        "#include <cuda_runtime.h>\n"
        "__global__ void k(float *y) { y[threadIdx.x] = 1.0f; }\n"
        "extern \"C\" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {\n"
        "  k<<<1, 32, 0, stream>>>(*static_cast<float *const *>(args[1]));\n"
        "  return cudaGetLastError();\n}\n";
    const auto result = kwb::evaluate(task, source, {}, compileOnly());
    if (!result.candidate.ok && result.message.find("nvcc") != std::string::npos)
      QSKIP(("nvcc is not usable here: " + result.message).c_str());
    QCOMPARE(std::string(kwb::toString(result.outcome)), std::string("not-run"));
    QVERIFY(result.candidate.form == kwb::SourceForm::HostLauncher);
    QVERIFY(result.candidate.ok);
    QVERIFY(!result.candidate.image.empty());
    QVERIFY(result.candidate.image.compare(0, 4, "\x7f" "ELF") == 0);
    for (const auto &c : result.configs) QVERIFY(!c.occupancy.has_value());
    QCOMPARE(nlohmann::json(result)["compile"]["form"].get<std::string>(), std::string("host-launcher"));

    // A launcher that does not compile reports nvcc's diagnostics with lines.
    const auto bad = kwb::evaluate(task, source + "int broken = ;\n", {}, compileOnly());
    QCOMPARE(std::string(kwb::toString(bad.outcome)), std::string("compile-error"));
    QVERIFY(!bad.candidate.diagnostics.empty());
    QCOMPARE(bad.candidate.diagnostics.front().line, 7);
  }

  void launchExpressionsPerConfigAndTunables() {
    const auto task = kwb::loadTask(kernelsDir() / "sgemm");
    const auto *odd = task.config("odd");
    QVERIFY(odd);
    auto tunables = kwb::effectiveTunables(task, {});
    QCOMPARE(tunables.at("TILE"), std::int64_t(8));  // the first value by default
    auto d = kwb::evaluateLaunch(*task.launch, *odd, tunables);
    QCOMPARE(d.grid[0], std::int64_t((1100 + 7) / 8));
    QCOMPARE(d.grid[1], std::int64_t((1000 + 7) / 8));
    QCOMPARE(d.grid[2], std::int64_t(1));
    QCOMPARE(d.block[0], std::int64_t(8));
    QCOMPARE(d.block[1], std::int64_t(8));
    QCOMPARE(d.sharedBytes, std::int64_t(0));

    tunables = kwb::effectiveTunables(task, {{"TILE", 32}});
    d = kwb::evaluateLaunch(*task.launch, *task.config("small"), tunables);
    QCOMPARE(d.grid[0], std::int64_t(16));
    QCOMPARE(d.grid[1], std::int64_t(16));
    QCOMPARE(d.threadsPerBlock(), std::int64_t(1024));

    const auto ref = kwb::evaluateLaunch(task.reference.launch, *odd, tunables);
    QCOMPARE(ref.grid[0], std::int64_t(69));  // ceil_div(1100, 16)
    QCOMPARE(ref.grid[1], std::int64_t(63));  // ceil_div(1000, 16)
    QCOMPARE(ref.block[0], std::int64_t(16));

    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::effectiveTunables(task, {{"NOPE", 1}}));
    // A launch that names an unknown value, or evaluates to zero threads, is refused with words.
    kwb::Launch broken = *task.launch;
    broken.block = {kwb::Expression::parse("TILE - 8")};
    try {
      kwb::evaluateLaunch(broken, *odd, kwb::effectiveTunables(task, {{"TILE", 8}}));
      QFAIL("expected an error");
    } catch (const std::invalid_argument &e) {
      QVERIFY2(std::string(e.what()).find("block[0]") != std::string::npos, e.what());
    }
    broken.block = {kwb::Expression::parse("WIDTH")};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::evaluateLaunch(broken, *odd, tunables));
  }

  void unknownConfigIsTheCallersMistake() {
    const auto task = kwb::loadTask(kernelsDir() / "softmax");
    kwb::EvaluationOptions options;
    options.configs = {"huge"};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::evaluate(task, "x", options, compileOnly()));
  }

  // Timing statistics: quartiles by linear interpolation, IQR / median, the stop rule, the
  // roofline floor.
  void timingStatistics() {
    const auto s = kwb::summarizeSamples({5, 1, 4, 2, 3});
    QCOMPARE(s.count, std::size_t(5));
    QCOMPARE(s.median, 3.0);
    QCOMPARE(s.q1, 2.0);
    QCOMPARE(s.q3, 4.0);
    QCOMPARE(s.iqr, 2.0);
    QCOMPARE(s.min, 1.0);
    QCOMPARE(s.max, 5.0);
    QCOMPARE(s.mean, 3.0);
    QCOMPARE(s.relativeSpread, 2.0 / 3.0);
    const auto even = kwb::summarizeSamples({1, 2, 3, 4});
    QCOMPARE(even.median, 2.5);
    QCOMPARE(even.q1, 1.75);
    QCOMPARE(even.q3, 3.25);
    const auto withNan = kwb::summarizeSamples({1, std::nan(""), 3});
    QCOMPARE(withNan.count, std::size_t(2));
    QCOMPARE(withNan.median, 2.0);
    const auto empty = kwb::summarizeSamples({});
    QCOMPARE(empty.count, std::size_t(0));
    QCOMPARE(empty.relativeSpread, 0.0);
  }

  void timingStopRule() {
    kwb::StopRule rule;  // 10 minimum, 1% target, 3 s cap, 1000 max
    std::vector<double> tight(10, 1.0);
    tight[9] = 1.001;
    const auto t = kwb::summarizeSamples(tight);
    const auto loose = kwb::summarizeSamples({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    const auto few = kwb::summarizeSamples({1, 1, 1});
    QVERIFY(kwb::shouldStopSampling(few, t, 100.0, rule) == kwb::StopReason::Continue);  // minimum first
    QVERIFY(kwb::shouldStopSampling(t, t, 0.0, rule) == kwb::StopReason::Converged);
    QVERIFY(kwb::shouldStopSampling(t, loose, 0.1, rule) == kwb::StopReason::Continue);  // both must converge
    QVERIFY(kwb::shouldStopSampling(t, loose, 3.0, rule) == kwb::StopReason::TimeCap);
    rule.maxSamples = 10;
    QVERIFY(kwb::shouldStopSampling(loose, loose, 0.1, rule) == kwb::StopReason::MaxSamples);
    QCOMPARE(std::string(kwb::toString(kwb::StopReason::TimeCap)), std::string("time-cap"));

    // A wide distribution (IQR / median ~ 4%) whose median becomes well known: 400 samples
    // spread evenly over ±4% of 1.0. n/2 ± 0.98·√400 = ranks 181..220: a half-width of ~0.4%.
    std::vector<double> wide;
    for (int i = 0; i < 400; ++i) wide.push_back(0.96 + 0.08 * i / 399.0);
    const auto w = kwb::summarizeSamples(wide);
    QVERIFY(w.relativeSpread > 0.03);
    QVERIFY2(w.medianUncertainty > 0.003 && w.medianUncertainty < 0.005, std::to_string(w.medianUncertainty).c_str());
    rule.maxSamples = 1000;
    QVERIFY(kwb::shouldStopSampling(w, t, 0.1, rule) == kwb::StopReason::Converged);
    // The same spread with 20 samples: the median is not known well enough yet.
    std::vector<double> wideFew;
    for (int i = 0; i < 20; ++i) wideFew.push_back(0.96 + 0.08 * i / 19.0);
    const auto wf = kwb::summarizeSamples(wideFew);
    QVERIFY(wf.medianUncertainty > 0.01);
    QVERIFY(kwb::shouldStopSampling(wf, t, 0.1, rule) == kwb::StopReason::Continue);
    QCOMPARE(kwb::summarizeSamples({}).medianUncertainty, 0.0);
  }

  // Fresh inputs per timed sample: every key is a bijection on [0, n), keeps the multiset of
  // values, and successive keys differ (a memoizer keyed on its inputs never sees one twice).
  void inputPermutations() {
    std::mt19937_64 rng(42);
    for (std::uint64_t n : {1ull, 2ull, 7ull, 1024ull, 4096ull * 3, 1000003ull}) {
      const auto key = kwb::permutationKey(n, rng);
      QVERIFY(key.b < n);
      QVERIFY(n == 1 || std::gcd(key.a, n) == 1);
      std::vector<bool> seen(n);
      for (std::uint64_t i = 0; i < n; ++i) {
        const auto j = kwb::permutedIndex(i, n, key);
        QVERIFY(j < n && !seen[j]);
        seen[j] = true;
      }
    }
    std::vector<std::byte> src(4 * 4096);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i * 7 + i / 4);
    std::set<std::vector<std::byte>> variants;
    for (int k = 0; k < 16; ++k) {
      const auto out = kwb::permuteElements(src, 4, kwb::permutationKey(4096, rng));
      auto a = out, b = src;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      QVERIFY(a == b);
      variants.insert(out);
    }
    QCOMPARE(variants.size(), std::size_t(16));
    // Elements move whole: element i of the result is element (a·i + b) mod n of the source.
    const kwb::PermutationKey key{3, 5};
    const auto out = kwb::permuteElements(src, 4, key);
    QVERIFY(std::equal(out.begin() + 4 * 10, out.begin() + 4 * 11, src.begin() + 4 * ((3 * 10 + 5) % 4096)));
    // Beyond 2^32 elements the key is a rotation (no overflow in a·i).
    const auto big = kwb::permutationKey(std::uint64_t{1} << 33, rng);
    QCOMPARE(big.a, std::uint64_t(1));
  }

  // Integer inputs drawn by randint are relabelled within their range as well: a histogram of
  // the values changes (its counts move to other bins), every value stays in range, and the
  // relabelling is a bijection on the range, negative values and 8-byte elements included.
  void randintValuesAreRelabelled() {
    std::mt19937_64 rng(7);
    kwb::Generator bytes{kwb::Generator::Kind::RandInt, 0, 4};
    std::vector<std::byte> src(1000);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::byte(i % 10 == 0 ? 3 : i % 3);  // skewed counts
    auto counts = [](const std::vector<std::byte> &v) {
      std::array<int, 256> c{};
      for (auto b : v) ++c[std::to_integer<unsigned>(b)];
      return c;
    };
    std::set<std::array<int, 256>> histograms;
    for (int k = 0; k < 12; ++k) {
      kwb::PermutationKey key = kwb::permutationKey(src.size(), rng);
      kwb::drawRelabelling(key, bytes, kwb::DType::U8, rng);
      QVERIFY(key.shift >= 1 && key.shift < 4);
      const auto out = kwb::permuteElements(src, 1, key);
      for (auto b : out) QVERIFY(std::to_integer<unsigned>(b) < 4);
      histograms.insert(counts(out));
    }
    QVERIFY2(histograms.size() == 3, "the three shifts give three different histograms");
    // Signed values: [-5, 5) in i32 and i64, each shift a bijection on the range.
    for (auto dtype : {kwb::DType::I32, kwb::DType::I64}) {
      kwb::PermutationKey key;
      kwb::drawRelabelling(key, kwb::Generator{kwb::Generator::Kind::RandInt, -5, 5}, dtype, rng);
      QVERIFY(key.shift >= 1 && key.shift < 10);
      std::set<std::int64_t> images;
      for (std::int64_t v = -5; v < 5; ++v) {
        const std::uint64_t bits = static_cast<std::uint64_t>(v) & key.mask;
        std::uint64_t r = kwb::relabelled(bits, key);
        const std::int64_t back = dtype == kwb::DType::I32 ? std::int64_t(std::int32_t(std::uint32_t(r)))
                                                            : std::int64_t(r);
        QVERIFY(back >= -5 && back < 5);
        QCOMPARE(back, (v + 5 + std::int64_t(key.shift)) % 10 - 5);
        images.insert(back);
      }
      QCOMPARE(images.size(), std::size_t(10));
    }
    // Not relabelled: floats, other generators, a range of one value.
    kwb::PermutationKey none;
    kwb::drawRelabelling(none, bytes, kwb::DType::F32, rng);
    kwb::drawRelabelling(none, kwb::Generator{kwb::Generator::Kind::Constant, 255, 1}, kwb::DType::U8, rng);
    kwb::drawRelabelling(none, kwb::Generator{kwb::Generator::Kind::RandInt, 3, 4}, kwb::DType::I32, rng);
    QCOMPARE(none.shift, std::uint64_t(0));
    QCOMPARE(kwb::relabelled(200, none), std::uint64_t(200));
  }

  void rooflineFloor() {
    // The bound: the larger of bytes / bandwidth and flops / rate, named by its side.
    auto b = kwb::rooflineBound(0, 1e9, 1e12, 0, "f32");
    QCOMPARE(b.seconds, 1e-3);
    QCOMPARE(b.bound, std::string("memory"));
    b = kwb::rooflineBound(1e12, 1e9, 1e12, 64.6e12, "f32");
    QCOMPARE(b.seconds, 1e12 / 64.6e12);
    QCOMPARE(b.bound, std::string("f32 compute"));
    QCOMPARE(kwb::rooflineBound(0, 0, 1e12, 1e12, "f32").bound, std::string());
    QCOMPARE(kwb::rooflineBound(0, 1e9, 0, 0, "f32").seconds, 0.0);  // unknown bandwidth: no floor from bytes

    // The floor: each side over its slack. An f32 GEMM at 4096^3 on an H200's measured ceilings
    // (64.6 TFLOP/s): 76 TFLOP/s (the memoizer of issue 15) is below it, 64 TFLOP/s is not.
    const double flops = 2.0 * 4096 * 4096 * 4096, bytes = 4.0 * 3 * 4096 * 4096;
    const auto f = kwb::rooflineFloor(flops, bytes, 4233e9, 64.6e12, "f32");
    QCOMPARE(f.bound, std::string("f32 compute"));
    QVERIFY(flops / 76e12 < f.seconds);
    QVERIFY(flops / 64e12 > f.seconds);
    // bf16 on tensor cores: the gemm-bf16 expert (497 TFLOP/s at 8192^3, over the mma.sync
    // ceiling of 641 at 78%) and a wgmma kernel at the H200's 989 dense peak stay above it.
    const double bf = 2.0 * 8192 * 8192 * 8192;
    const auto t = kwb::rooflineFloor(bf, 0, 4233e9, 641e12, "tensor-core");
    QCOMPARE(t.bound, std::string("tensor-core compute"));
    QVERIFY(bf / 989e12 > t.seconds);
    QVERIFY(bf / 497e12 > t.seconds);
    // Memory: the reduce-sum expert read at 1.064x the copy ceiling and still passes.
    const auto m = kwb::rooflineFloor(1, 1e9, 4233e9, 64.6e12, "f32");
    QCOMPARE(m.bound, std::string("memory"));
    QVERIFY(1e9 / (1.064 * 4233e9) > m.seconds);
    QVERIFY(1e9 / (1.3 * 4233e9) < m.seconds);
  }
};

QTEST_GUILESS_MAIN(TestEvaluator)
#include "tst_evaluator.moc"
