// Occupancy by NVIDIA's calculator rules, worked by hand, and the per-architecture limits table.
//
// The rules (see core/compile/occupancy.h), with w = ceil(threads / 32):
//   warps      maxWarpsPerSM / w
//   blocks     maxBlocksPerSM
//   registers  R = roundUp(regs × 32, 256) per warp; floor(65536 / 4 / R) × 4 warps fit,
//              / w blocks; impossible when R × roundUp(w, 4) > 65536
//   shared     S = roundUp(static + dynamic + reserved, unit); sharedPerSM / S blocks;
//              impossible when S > opt-in + reserved
// Limits used: sm_90  64 warps, 32 blocks, 228 KiB = 233472 B per SM, 1 KiB reserved, 128 B unit
//              sm_80  64 warps, 32 blocks, 164 KiB = 167936 B
//              sm_86  48 warps, 16 blocks, 100 KiB;  sm_89 48 warps, 24 blocks
//              sm_75  32 warps, 16 blocks, 64 KiB = 65536 B, nothing reserved, 256 B unit
//              sm_70  64 warps, 32 blocks, 96 KiB = 98304 B, nothing reserved, 256 B unit
//              sm_120 48 warps, 24 blocks, 100 KiB = 102400 B
#include <QtTest>

#include "core/compile/arch_limits.h"
#include "core/compile/occupancy.h"

namespace {

kwb::ArchLimits limitsOf(const char *arch) {
  auto found = kwb::archLimits(arch);
  if (!found) qFatal("%s", found.error.c_str());
  return *found.limits;
}

}  // namespace

class TestOccupancy : public QObject {
  Q_OBJECT
 private slots:
  void occupancy_data() {
    QTest::addColumn<QString>("arch");
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("registers");
    QTest::addColumn<qint64>("shared");
    QTest::addColumn<int>("blocks");
    QTest::addColumn<int>("warps");
    QTest::addColumn<double>("occupancy");
    QTest::addColumn<QString>("limiter");  // the primary one; "none" for an impossible launch
    QTest::addColumn<QString>("error");    // a part of the reason when impossible

    // w=8. warps 64/8=8; R=1024: 16 warps per sub-partition, 64 warps, 8 blocks; shared
    // 1 KiB reserved → 228. Warps and registers both allow 8: full occupancy.
    QTest::newRow("sm_90 256t 32r") << "sm_90" << 256 << 32 << qint64(0) << 8 << 64 << 1.0 << "warps" << "";
    // R=2048: 8 per sub-partition, 32 warps → 4 blocks of 8 warps.
    QTest::newRow("sm_90 256t 64r") << "sm_90" << 256 << 64 << qint64(0) << 4 << 32 << 0.5 << "registers" << "";
    // w=32: warps allow 2; R=2048 → 32 warps → 1 block; 2048 × 32 = 65536 fits the block limit.
    QTest::newRow("sm_90 1024t 64r") << "sm_90" << 1024 << 64 << qint64(0) << 1 << 32 << 0.5 << "registers" << "";
    // 65 × 32 = 2080 → R=2304; 2304 × 32 = 73728 > 65536: no block can launch.
    QTest::newRow("sm_90 1024t 65r") << "sm_90" << 1024 << 65 << qint64(0) << 0 << 0 << 0.0 << "none"
                                     << "needs 73728 registers";
    // Shared 49152 + 1024 = 50176 (a multiple of 128); 233472 / 50176 = 4.65 → 4 blocks of 4 warps.
    QTest::newRow("sm_90 128t 48KiB") << "sm_90" << 128 << 32 << qint64(48 * 1024) << 4 << 16 << 0.25
                                      << "shared memory" << "";
    // The reservation costs a block: 32768 + 1024 = 33792; 233472 / 33792 = 6.9 → 6 (7 without it).
    QTest::newRow("sm_90 128t 32KiB reserved") << "sm_90" << 128 << 32 << qint64(32 * 1024) << 6 << 24 << 0.375
                                               << "shared memory" << "";
    // The 128-byte unit costs a block: 7000 + 1024 = 8024 → 8064; 233472 / 8064 = 28.95 → 28
    // (8024 would give 29). w=1, so warps allow 64, blocks 32, R=512 → 128.
    QTest::newRow("sm_90 32t 7000B rounded") << "sm_90" << 32 << 16 << qint64(7000) << 28 << 28 << 28.0 / 64
                                             << "shared memory" << "";
    // w=1: warps allow 64, R=512 → 128, shared 228: the 32-block cap binds at 32 warps.
    QTest::newRow("sm_90 32t 16r") << "sm_90" << 32 << 16 << qint64(0) << 32 << 32 << 0.5 << "blocks" << "";
    // w=24: warps allow 64/24 = 2; R=512 → 128/24 = 5: 2 blocks, 48 warps.
    QTest::newRow("sm_90 768t 16r") << "sm_90" << 768 << 16 << qint64(0) << 2 << 48 << 0.75 << "warps" << "";
    // w=4 (100 threads round up to 4 warps); R=4096 → 4 per sub-partition, 16 warps → 4 blocks.
    QTest::newRow("sm_90 100t 128r") << "sm_90" << 100 << 128 << qint64(0) << 4 << 16 << 0.25 << "registers" << "";
    // 255 × 32 = 8160 → R=8192: 2 per sub-partition, 8 warps → 2 blocks of 4 warps.
    QTest::newRow("sm_90 128t 255r") << "sm_90" << 128 << 255 << qint64(0) << 2 << 8 << 0.125 << "registers" << "";
    // w=25, R=2304 (72 regs): 25 × 2304 = 57600 and 28 × 2304 = 64512 fit; 16384 / 2304 = 7
    // per sub-partition, 28 warps → 1 block (warps would allow 2).
    QTest::newRow("sm_90 800t 72r") << "sm_90" << 800 << 72 << qint64(0) << 1 << 25 << 25.0 / 64 << "registers"
                                    << "";
    // w=25, R=2560 (80 regs): 25 × 2560 = 64000 fits, but the hardware counts 28 warps:
    // 28 × 2560 = 71680 > 65536, so the launch fails. The fix: 72 registers or 768 threads.
    QTest::newRow("sm_90 800t 80r") << "sm_90" << 800 << 80 << qint64(0) << 0 << 0 << 0.0 << "none"
                                    << "use at most 72 registers per thread";
    // The opt-in maximum exactly: 232448 + 1024 = 233472 = the whole SM: 1 block of 4 warps.
    QTest::newRow("sm_90 227KiB") << "sm_90" << 128 << 32 << qint64(227 * 1024) << 1 << 4 << 4.0 / 64
                                  << "shared memory" << "";
    // One byte more: 233473 → 233600 > 233472.
    QTest::newRow("sm_90 227KiB+1") << "sm_90" << 128 << 32 << qint64(227 * 1024 + 1) << 0 << 0 << 0.0 << "none"
                                    << "a block may opt in to";
    QTest::newRow("sm_90 1025t") << "sm_90" << 1025 << 32 << qint64(0) << 0 << 0 << 0.0 << "none"
                                 << "a block of 1025 threads is more than the 1024";
    QTest::newRow("sm_90 256r") << "sm_90" << 128 << 256 << qint64(0) << 0 << 0 << 0.0 << "none"
                                << "256 registers per thread is more than the 255";
    QTest::newRow("sm_90 0t") << "sm_90" << 0 << 32 << qint64(0) << 0 << 0 << 0.0 << "none" << "at least 1 thread";
    // Blackwell B200 has Hopper's limits.
    QTest::newRow("sm_100 256t 64r") << "sm_100" << 256 << 64 << qint64(0) << 4 << 32 << 0.5 << "registers" << "";
    // sm_80: w=8; R=1280 (40 regs): 16384 / 1280 = 12 per sub-partition, 48 warps → 6 blocks;
    // shared 12288 + 1024 = 13312 → 167936 / 13312 = 12.6 → 12; warps 8.
    QTest::newRow("sm_80 256t 40r 12KiB") << "sm_80" << 256 << 40 << qint64(12 * 1024) << 6 << 48 << 0.75
                                          << "registers" << "";
    // A 1-thread block with no registers or shared memory: only the 32-block cap binds.
    QTest::newRow("sm_80 1t 0r") << "sm_80" << 1 << 0 << qint64(0) << 32 << 32 << 0.5 << "blocks" << "";
    // sm_86 holds 48 warps: a 1024-thread block fits once (R=1024 would allow 2).
    QTest::newRow("sm_86 1024t 32r") << "sm_86" << 1024 << 32 << qint64(0) << 1 << 32 << 32.0 / 48 << "warps" << "";
    // sm_86 w=2: warps allow 24, R=1024 → 32, but 16 blocks at most.
    QTest::newRow("sm_86 64t 32r") << "sm_86" << 64 << 32 << qint64(0) << 16 << 32 << 32.0 / 48 << "blocks" << "";
    // sm_89 allows 24 blocks: 24 × 2 warps = 48, the whole SM.
    QTest::newRow("sm_89 64t 32r") << "sm_89" << 64 << 32 << qint64(0) << 24 << 48 << 1.0 << "warps" << "";
    // sm_75: 256-byte unit, nothing reserved: 20000 → 20224; 65536 / 20224 = 3.2 → 3 blocks of
    // 8 warps of 32. (Warps would allow 4.)
    QTest::newRow("sm_75 256t 20000B") << "sm_75" << 256 << 32 << qint64(20000) << 3 << 24 << 0.75
                                       << "shared memory" << "";
    // sm_70: 49152 (a multiple of 256, nothing reserved) → 98304 / 49152 = 2 blocks of 4 warps.
    QTest::newRow("sm_70 128t 48KiB") << "sm_70" << 128 << 32 << qint64(48 * 1024) << 2 << 8 << 0.125
                                      << "shared memory" << "";
    // sm_120: 40960 + 1024 = 41984; 102400 / 41984 = 2.4 → 2 blocks of 4 warps out of 48.
    QTest::newRow("sm_120 128t 40KiB") << "sm_120" << 128 << 32 << qint64(40 * 1024) << 2 << 8 << 8.0 / 48
                                       << "shared memory" << "";
    // sm_120: 100 KiB is over the 99 KiB opt-in maximum.
    QTest::newRow("sm_120 100KiB") << "sm_120" << 128 << 32 << qint64(100 * 1024) << 0 << 0 << 0.0 << "none"
                                   << "99 KiB (101376 bytes) a block may opt in to";
  }

  void occupancy() {
    QFETCH(QString, arch);
    QFETCH(int, threads);
    QFETCH(int, registers);
    QFETCH(qint64, shared);
    QFETCH(int, blocks);
    QFETCH(int, warps);
    QFETCH(double, occupancy);
    QFETCH(QString, limiter);
    QFETCH(QString, error);

    const auto limits = limitsOf(arch.toUtf8().constData());
    const auto o = kwb::computeOccupancy(limits, threads, registers, shared);
    const QString explanation = QString::fromStdString(o.explanation);
    QCOMPARE(o.activeBlocksPerSM, blocks);
    QCOMPARE(o.activeWarpsPerSM, warps);
    QCOMPARE(o.maxWarpsPerSM, limits.maxWarpsPerSM);
    QVERIFY2(qAbs(o.occupancy - occupancy) < 1e-12, qPrintable(explanation));
    QCOMPARE(QString(kwb::toString(o.limiter)), limiter);
    if (error.isEmpty()) {
      QVERIFY2(o.launchable(), o.error.c_str());
      QVERIFY(o.limitedBy(o.limiter));
      QVERIFY(explanation.startsWith(QString("%1 block").arg(blocks)));
    } else {
      QVERIFY(!o.launchable());
      QVERIFY2(QString::fromStdString(o.error).contains(error), o.error.c_str());
      QVERIFY2(explanation.startsWith("cannot launch on " + arch + ": "), qPrintable(explanation));
      QCOMPARE(o.limiters, 0u);
    }
  }

  void explanationsSayWhatLimits() {
    const auto h = limitsOf("sm_90");
    QCOMPARE(kwb::computeOccupancy(h, 256, 64, 0).explanation,
             std::string("4 blocks of 256 threads per SM (50%); limited by registers: 64 per thread"));
    QCOMPARE(kwb::computeOccupancy(h, 256, 32, 0).explanation, std::string("8 blocks of 256 threads per SM (100%)"));
    QCOMPARE(kwb::computeOccupancy(h, 128, 32, 48 * 1024).explanation,
             std::string("4 blocks of 128 threads per SM (25%); limited by shared memory: 49 KiB per block "
                         "(1 KiB reserved) of 228 KiB per SM"));
    QCOMPARE(kwb::computeOccupancy(h, 768, 16, 0).explanation,
             std::string("2 blocks of 768 threads per SM (75%); limited by warps: 24 warps per block, 64 per SM"));
    QCOMPARE(kwb::computeOccupancy(h, 32, 16, 0).explanation,
             std::string("32 blocks of 32 threads per SM (50%); limited by blocks: at most 32 per SM"));
    QCOMPARE(kwb::computeOccupancy(limitsOf("sm_86"), 1024, 32, 0).explanation,
             std::string("1 block of 1024 threads per SM (66.7%); limited by warps: 32 warps per block, 48 per SM"));
    // Two resources running out together are both named: w=24 with R=1024 gives 64/24 = 2 by
    // registers and 64/24 = 2 by warps.
    const auto tie = kwb::computeOccupancy(h, 768, 32, 0);
    QCOMPARE(tie.limiter, kwb::OccupancyLimiter::Warps);
    QVERIFY(tie.limitedBy(kwb::OccupancyLimiter::Registers));
    QCOMPARE(tie.explanation, std::string("2 blocks of 768 threads per SM (75%); limited by warps: 24 warps per "
                                          "block, 64 per SM and by registers: 32 per thread"));
    const auto impossible = kwb::computeOccupancy(h, 1024, 65, 0);
    QVERIFY2(impossible.explanation.rfind("cannot launch on sm_90: a block of 1024 threads at 65 registers per "
                                          "thread needs 73728 registers",
                                          0) == 0,
             impossible.explanation.c_str());
    QVERIFY2(impossible.error.find("use at most 64 registers per thread") != std::string::npos, impossible.error.c_str());
    QVERIFY2(impossible.error.find("at most 896 threads per block") != std::string::npos, impossible.error.c_str());
  }

  void perBlockFiguresFollowTheRounding() {
    const auto h = limitsOf("sm_90");
    const auto o = kwb::computeOccupancy(h, 100, 33, 1);
    QCOMPARE(o.warpsPerBlock, 4);
    QCOMPARE(o.registersPerBlock, 4 * 1280);          // 33 × 32 = 1056 → 1280 per warp
    QCOMPARE(o.sharedBytesPerBlock, qint64(1152));    // 1 + 1024 → 1152
    QCOMPARE(o.blockLimitWarps, 16);
    QCOMPARE(o.blockLimitBlocks, 32);
    QCOMPARE(o.blockLimitRegisters, 12);              // 16384 / 1280 = 12 per sub-partition → 48 / 4
    QCOMPARE(o.blockLimitSharedMemory, 202);          // 233472 / 1152
    QVERIFY(!o.needsSharedMemoryOptIn);
    QVERIFY(kwb::computeOccupancy(h, 128, 32, 48 * 1024 + 1).needsSharedMemoryOptIn);
    // No registers and no shared memory on Volta (nothing reserved there): neither binds.
    const auto v = kwb::computeOccupancy(limitsOf("sm_70"), 64, 0, 0);
    QCOMPARE(v.blockLimitRegisters, kwb::Occupancy::kUnlimited);
    QCOMPARE(v.blockLimitSharedMemory, kwb::Occupancy::kUnlimited);
    QCOMPARE(v.activeBlocksPerSM, 32);
  }

  void architecturesParse_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("cc");  // empty: not found
    QTest::addColumn<QString>("error");
    QTest::newRow("sm_90") << "sm_90" << "9.0" << "";
    QTest::newRow("9.0") << "9.0" << "9.0" << "";
    QTest::newRow("sm_90a") << "sm_90a" << "9.0" << "";
    QTest::newRow("compute_90") << "compute_90" << "9.0" << "";
    QTest::newRow("90") << "90" << "9.0" << "";
    QTest::newRow("sm_100") << "sm_100" << "10.0" << "";
    QTest::newRow("sm_100f") << "sm_100f" << "10.0" << "";
    QTest::newRow("sm_103") << "sm_103" << "10.3" << "";
    QTest::newRow("10.3") << "10.3" << "10.3" << "";
    QTest::newRow("sm_120") << "sm_120" << "12.0" << "";
    QTest::newRow("sm_75") << "sm_75" << "7.5" << "";
    QTest::newRow("7.2") << " 7.2 " << "7.2" << "";
    QTest::newRow("sm_61") << "sm_61" << "" << "unknown architecture sm_61";
    QTest::newRow("11.0") << "11.0" << "" << "unknown architecture sm_110";
    QTest::newRow("sm_101") << "sm_101" << "" << "unknown architecture sm_101";
    QTest::newRow("hopper") << "hopper" << "" << "not an architecture: 'hopper'";
    QTest::newRow("empty") << "" << "" << "not an architecture";
    QTest::newRow("sm_9") << "sm_9" << "" << "not an architecture";
    QTest::newRow("9.") << "9." << "" << "not an architecture";
  }

  void architecturesParse() {
    QFETCH(QString, name);
    QFETCH(QString, cc);
    QFETCH(QString, error);
    const auto found = kwb::archLimits(name.toStdString());
    if (cc.isEmpty()) {
      QVERIFY(!found);
      QVERIFY2(QString::fromStdString(found.error).contains(error), found.error.c_str());
    } else {
      QVERIFY2(found, found.error.c_str());
      QCOMPARE(QString::fromStdString(found.limits->computeCapability()), cc);
    }
  }

  void architectureSpecificTargets_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("target");
    QTest::newRow("sm_90") << "sm_90" << "sm_90a";
    QTest::newRow("compute_90") << "compute_90" << "compute_90a";
    QTest::newRow("sm_100") << "sm_100" << "sm_100a";
    QTest::newRow("sm_103") << "sm_103" << "sm_103a";
    QTest::newRow("sm_120") << "sm_120" << "sm_120a";
    QTest::newRow("sm_90a kept") << "sm_90a" << "sm_90a";
    QTest::newRow("sm_100f kept") << "sm_100f" << "sm_100f";
    QTest::newRow("sm_89 has none") << "sm_89" << "sm_89";
    QTest::newRow("sm_80 has none") << "sm_80" << "sm_80";
    QTest::newRow("sm_9 is not sm_90") << "sm_9" << "sm_9";
    QTest::newRow("sm_900 is not sm_90") << "sm_900" << "sm_900";
  }

  void architectureSpecificTargets() {
    QFETCH(QString, name);
    QFETCH(QString, target);
    QCOMPARE(QString::fromStdString(kwb::archSpecificTarget(name.toStdString())), target);
    QVERIFY(kwb::sameArchitecture(name.toStdString(), target.toStdString()));
  }

  void sameArchitectureIgnoresOnlyTheSuffix() {
    QVERIFY(kwb::sameArchitecture("sm_90", "sm_90a"));
    QVERIFY(kwb::sameArchitecture("sm_100f", "sm_100a"));
    QVERIFY(!kwb::sameArchitecture("sm_90", "sm_89"));
    QVERIFY(!kwb::sameArchitecture("sm_90", "sm_100"));
  }

  void unknownArchitectureListsTheKnownOnes() {
    const auto found = kwb::archLimits(6, 1);
    QVERIFY(!found);
    QCOMPARE(found.error, std::string("unknown architecture sm_61 (compute capability 6.1); known: sm_70, sm_72, "
                                      "sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_103, sm_120"));
  }

  void tableHoldsTheProgrammingGuideFigures() {
    const auto all = kwb::knownArchitectures();
    QCOMPARE(all.size(), std::size_t(11));
    for (const auto &a : all) {
      const QByteArray name = QByteArray::fromStdString(a.arch());
      QVERIFY2(a.maxWarpsPerSM * a.warpSize == a.maxThreadsPerSM, name);
      QVERIFY2(a.maxThreadsPerBlock == 1024, name);
      QVERIFY2(a.registersPerSM == 65536 && a.maxRegistersPerBlock == 65536, name);
      QVERIFY2(a.maxRegistersPerThread == 255 && a.registerAllocationUnit == 256, name);
      QVERIFY2(a.warpAllocationGranularity == 4, name);
      QVERIFY2(a.sharedPerBlockOptIn + a.sharedReservedPerBlock <= a.sharedPerSM, name);
      QVERIFY2(a.sharedPerBlockDefault == 48 * 1024, name);
      QVERIFY2(a.sharedReservedPerBlock == (a.ccMajor >= 8 ? 1024 : 0), name);
      QVERIFY2(a.sharedAllocationUnit == (a.ccMajor >= 8 ? 128 : 256), name);
      QCOMPARE(kwb::archLimits(a.arch()).limits->computeCapability(), a.computeCapability());
    }
    struct Row {
      const char *arch;
      int threads, blocks;
      int sharedKiB, optInKiB;
    };
    const Row rows[] = {{"sm_70", 2048, 32, 96, 96},   {"sm_72", 2048, 32, 96, 96},   {"sm_75", 1024, 16, 64, 64},
                        {"sm_80", 2048, 32, 164, 163}, {"sm_86", 1536, 16, 100, 99},  {"sm_87", 1536, 16, 164, 163},
                        {"sm_89", 1536, 24, 100, 99},  {"sm_90", 2048, 32, 228, 227}, {"sm_100", 2048, 32, 228, 227},
                        {"sm_103", 2048, 32, 228, 227}, {"sm_120", 1536, 24, 100, 99}};
    for (const auto &r : rows) {
      const auto a = limitsOf(r.arch);
      QCOMPARE(a.maxThreadsPerSM, r.threads);
      QCOMPARE(a.maxBlocksPerSM, r.blocks);
      QCOMPARE(a.sharedPerSM, qint64(r.sharedKiB) * 1024);
      QCOMPARE(a.sharedPerBlockOptIn, qint64(r.optInKiB) * 1024);
    }
  }
};

QTEST_GUILESS_MAIN(TestOccupancy)
#include "tst_occupancy.moc"
