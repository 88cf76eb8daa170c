// On a machine with a GPU: the measured roofline (core/eval/roofline.h, the worker's `ceilings`
// command). Copy bandwidth, the f32 FMA rate and the tensor-core rate come out in plausible
// ranges for a data-centre GPU, tensor cores beat the f32 pipes, and a second ask is served from
// the cache without measuring again. Skips, saying why, where there is no device.
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/eval/roofline.h"
#include "core/gpu/device_info.h"

namespace fs = std::filesystem;

class TestGpuCeilings : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    const auto inventory = kwb::probeGpus();
    if (!inventory.hasDevices()) QSKIP(("no CUDA device: " + inventory.problem).c_str());
  }

  void measuredOnceThenCached() {
    const char *worker = std::getenv("KWB_WORKER");
    QVERIFY2(worker && *worker, "run through ctest: KWB_WORKER names kwb-worker");
    const char *out = std::getenv("KWB_TEST_OUTPUT_DIR");
    const fs::path dir = fs::path(out && *out ? out : KWB_TEST_OUTPUT_DIR) / "gpu-ceilings";
    fs::remove_all(dir);
    qputenv("XDG_CACHE_HOME", QByteArray::fromStdString(dir.string()));
    kwb::EvaluatorSettings settings;
    settings.workerPath = worker;
    settings.compiler.cacheDirectory = dir / "compile-cache";
    std::string problem;
    const auto c = kwb::deviceCeilings(settings, 0, problem);
    QVERIFY2(c.has_value(), problem.c_str());
    std::cerr << c->device << ": copy " << c->copyBytesPerS / 1e9 << " GB/s, f32 " << c->fp32FlopsPerS / 1e12
              << " TFLOP/s, bf16 mma.sync " << c->tensorFlopsPerS / 1e12 << " TFLOP/s\n";
    QVERIFY2(c->copyBytesPerS > 0.2e12 && c->copyBytesPerS < 20e12, c->toJson().dump().c_str());
    QVERIFY2(c->fp32FlopsPerS > 5e12 && c->fp32FlopsPerS < 200e12, c->toJson().dump().c_str());
    QVERIFY2(c->tensorFlopsPerS > 2 * c->fp32FlopsPerS, c->toJson().dump().c_str());
    QVERIFY(fs::exists(kwb::ceilingsCachePath()));
    const auto again = kwb::deviceCeilings(settings, 0, problem);
    QVERIFY(again.has_value());
    QCOMPARE(again->measuredAt, c->measuredAt);  // from the cache
    const auto fresh = kwb::deviceCeilings(settings, 0, problem, true);
    QVERIFY(fresh.has_value());
    QVERIFY(fresh->measuredAt != c->measuredAt || fresh->copyBytesPerS != c->copyBytesPerS);
    QVERIFY(std::abs(fresh->copyBytesPerS / c->copyBytesPerS - 1.0) < 0.2);  // repeatable within 20%
  }
};

QTEST_GUILESS_MAIN(TestGpuCeilings)
#include "tst_gpu_ceilings.moc"
