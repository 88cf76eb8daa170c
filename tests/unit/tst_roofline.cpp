// The roofline (core/eval/roofline.h): placing a candidate under measured ceilings and saying the
// gap in words; the per-device cache file; and the ceiling kernels compiled for real by NVRTC
// (both kernels present for sm_90, no spills; only the FMA one does work below sm_80).
#include <QtTest>

#include <filesystem>

#include "core/compile/compiler.h"
#include "core/eval/roofline.h"

namespace fs = std::filesystem;

namespace {

kwb::DeviceCeilings h200Like() {
  kwb::DeviceCeilings c;
  c.device = "NVIDIA H200";
  c.key = "NVIDIA H200 | 0000:19:00.0 | 13000";
  c.copyBytesPerS = 4.25e12;
  c.fp32FlopsPerS = 60e12;
  c.tensorFlopsPerS = 600e12;
  return c;
}

}  // namespace

class TestRoofline : public QObject {
  Q_OBJECT

 private slots:
  void memoryBoundPlacement() {
    // Softmax 8192^2: 512 MiB moved, ~5 flops per element, 150 us.
    const double bytes = 2.0 * 4 * 8192 * 8192, flops = 5.0 * 8192 * 8192;
    const auto p = kwb::placeOnRoofline(flops, bytes, 150e-6, h200Like());
    QVERIFY(p.has_value());
    QCOMPARE(p->bound, std::string("memory"));
    QVERIFY(std::abs(p->floorSeconds - bytes / 4.25e12) < 1e-12);
    QVERIFY(std::abs(p->fractionOfBound - (bytes / 4.25e12) / 150e-6) < 1e-9);
    QVERIFY(std::abs(p->headroom * p->fractionOfBound - 1.0) < 1e-9);
    QCOMPARE(p->words, std::string("at 84% of the memory bound; 1.2x headroom"));
    QVERIFY(std::abs(p->intensity - flops / bytes) < 1e-12);
  }

  void computeBoundPlacementAndTensorCeiling() {
    // SGEMM 4096^3 in 3.07 ms: 44.8 TFLOP/s against a 60 TFLOP/s f32 ceiling.
    const double n = 4096, flops = 2 * n * n * n, bytes = 3 * 4 * n * n;
    const auto p = kwb::placeOnRoofline(flops, bytes, 3.07e-3, h200Like());
    QVERIFY(p.has_value());
    QCOMPARE(p->bound, std::string("compute"));
    QVERIFY2(p->words.rfind("at 75% of the f32 compute bound; 1.3x headroom", 0) == 0, p->words.c_str());
    // The same work on tensor cores is measured against the tensor ceiling.
    const auto t = kwb::placeOnRoofline(flops, bytes, 3.07e-3, h200Like(), true);
    QVERIFY(t->words.find("tensor-core compute bound") != std::string::npos);
    QVERIFY(t->headroom > 9.0);
  }

  void fasterThanTheFloorIsNamed() {
    // A kernel whose data fit in L2 can beat the DRAM floor: said, not hidden.
    const auto p = kwb::placeOnRoofline(0, 8e6, 1e-6, h200Like());
    QVERIFY(p->fractionOfBound > 1.0);
    QVERIFY2(p->words.find("faster than the memory bound") == 0, p->words.c_str());
  }

  void nothingToPlace() {
    QVERIFY(!kwb::placeOnRoofline(0, 0, 1e-3, h200Like()));
    QVERIFY(!kwb::placeOnRoofline(1e9, 1e9, 0, h200Like()));
    QVERIFY(!kwb::placeOnRoofline(1e9, 1e9, 1e-3, kwb::DeviceCeilings{}));
  }

  void cacheRoundTrips() {
    const fs::path file = fs::path(KWB_TEST_OUTPUT_DIR) / "roofline" / "ceilings.json";
    fs::remove_all(file.parent_path());
    QVERIFY(!kwb::cachedCeilings("x", file));
    auto a = h200Like();
    kwb::storeCeilings(a, file);
    auto b = h200Like();
    b.key = "NVIDIA H100 80GB HBM3 | 0000:1a:00.0 | 13000";
    b.copyBytesPerS = 3.0e12;
    kwb::storeCeilings(b, file);
    const auto ra = kwb::cachedCeilings(a.key, file);
    const auto rb = kwb::cachedCeilings(b.key, file);
    QVERIFY(ra && rb);
    QCOMPARE(ra->copyBytesPerS, 4.25e12);
    QCOMPARE(rb->copyBytesPerS, 3.0e12);
    QCOMPARE(ra->toJson(), a.toJson());
  }

  void ceilingKernelsCompile() {
    kwb::CompilerOptions o;
    o.cacheDirectory = fs::path(KWB_TEST_OUTPUT_DIR) / "roofline" / "compile-cache";
    kwb::Compiler compiler(o);
    for (const char *arch : {"sm_90", "sm_75"}) {
      kwb::CompileRequest r;
      r.source = kwb::ceilingKernelsSource();
      r.sourceName = "kwb-ceilings.cu";
      r.arch = arch;
      r.expectedKernels = {"kwb_ceiling_fma", "kwb_ceiling_mma"};
      const auto result = compiler.compile(r);
      QVERIFY2(result.ok, (std::string(arch) + ": " + result.log).c_str());
      QCOMPARE(result.kernels.size(), std::size_t(2));
      for (const auto &k : result.kernels) {
        QCOMPARE(k.spillStoreBytes, 0);
        QVERIFY(k.registers > 0);
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestRoofline)
#include "tst_roofline.moc"
