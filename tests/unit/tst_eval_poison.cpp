// Output poison: NaN patterns that change per run and element and are never a canonical NaN,
// integer patterns that differ from the reference at every element, bool bytes that are never
// a bool, and the count and first indices of elements a run left unwritten.
#include <QElapsedTimer>
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <set>
#include <span>
#include <thread>

#include "core/eval/half_float.h"
#include "core/eval/input_generator.h"
#include "core/eval/poison.h"

using kwb::DType;

namespace {

constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                                DType::I32, DType::I8,  DType::U8,  DType::Bool};

std::uint64_t bitsAt(const std::vector<std::byte> &buffer, DType dtype, std::size_t i) {
  std::uint64_t v = 0;
  std::memcpy(&v, buffer.data() + i * kwb::dtypeSize(dtype), kwb::dtypeSize(dtype));
  return v;
}

bool isNaNBits(std::uint64_t bits, DType dtype) {
  switch (dtype) {
    case DType::F64:
      return std::isnan(std::bit_cast<double>(bits));
    case DType::F32:
      return std::isnan(std::bit_cast<float>(std::uint32_t(bits)));
    case DType::F16:
      return std::isnan(kwb::halfToFloat(std::uint16_t(bits)));
    case DType::BF16:
      return std::isnan(kwb::bfloat16ToFloat(std::uint16_t(bits)));
    default:
      return false;
  }
}

// A plausible correct output: random values of the dtype (0/1 for bool).
std::vector<std::byte> correctOutput(DType dtype, std::uint64_t n) {
  kwb::Generator g;
  if (kwb::dtypeIsFloating(dtype)) {
    g.kind = kwb::Generator::Kind::Normal;
    g.a = 0;
    g.b = 1;
  } else {
    g.kind = kwb::Generator::Kind::RandInt;
    g.a = dtype == DType::Bool ? 0 : (dtype == DType::U8 ? 0 : -100);
    g.b = dtype == DType::Bool ? 2 : 100;
  }
  return kwb::generateInput(dtype, n, g, 1, "reference");
}

}  // namespace

class TestEvalPoison : public QObject {
  Q_OBJECT
 private slots:
  void patternChangesPerRunAndSalt() {
    QCOMPARE(kwb::poisonPattern(1), kwb::poisonPattern(1));
    QVERIFY(!(kwb::poisonPattern(1) == kwb::poisonPattern(2)));
    QVERIFY(!(kwb::poisonPattern(1, 0) == kwb::poisonPattern(1, 99)));
    QVERIFY(!(kwb::poisonPattern(0, 1) == kwb::poisonPattern(1, 0)));
  }

  // Floats: quiet NaNs, never the canonical ones (payload 0 or all ones: 0x7fc00000,
  // 0xffc00000, 0x7fffffff for f32), varying per element and per run.
  void floatPoisonIsUnusualNaN() {
    const std::uint64_t n = 100000;
    for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
      const int payloadBits = dtype == DType::F64   ? 51
                              : dtype == DType::F32 ? 22
                              : dtype == DType::F16 ? 9
                                                    : 6;
      const std::uint64_t payloadMask = (std::uint64_t(1) << payloadBits) - 1;
      const std::uint64_t quiet = std::uint64_t(1) << payloadBits;
      std::vector<std::byte> run1(n * kwb::dtypeSize(dtype)), run2(run1.size());
      kwb::writePoison(run1, dtype, n, kwb::poisonPattern(1));
      kwb::writePoison(run2, dtype, n, kwb::poisonPattern(2));
      std::set<std::uint64_t> distinct;
      std::size_t sameAcrossRuns = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t b = bitsAt(run1, dtype, i);
        QVERIFY(isNaNBits(b, dtype));
        QVERIFY(b & quiet);
        const std::uint64_t payload = b & payloadMask;
        QVERIFY(payload != 0 && payload != payloadMask);
        distinct.insert(b);
        sameAcrossRuns += b == bitsAt(run2, dtype, i);
      }
      // Per element: f16 has 2^8 patterns (7 free payload bits and the sign), bf16 2^5.
      const std::size_t patterns = std::min<std::size_t>(std::size_t(1) << std::min(payloadBits - 1, 20), n);
      QVERIFY2(distinct.size() >= patterns / 2, qPrintable(QString::number(distinct.size())));
      QVERIFY2(sameAcrossRuns < n / 16, qPrintable(QString::number(sameAcrossRuns)));
    }
  }

  // Integers with the reference: the poison differs from the correct value at every element.
  void integerPoisonNeverEqualsReference() {
    const std::uint64_t n = 200000;
    for (DType dtype : {DType::I64, DType::I32, DType::I8, DType::U8}) {
      const auto reference = correctOutput(dtype, n);
      for (std::uint64_t run = 0; run < 4; ++run) {
        std::vector<std::byte> out(reference.size());
        kwb::writePoison(out, dtype, n, kwb::poisonPattern(run), reference);
        for (std::uint64_t i = 0; i < n; ++i)
          if (bitsAt(out, dtype, i) == bitsAt(reference, dtype, i)) QFAIL("poison equals the reference");
        // A correct kernel leaves nothing flagged.
        QCOMPARE(kwb::unwrittenElements(reference, dtype, n, kwb::poisonPattern(run), reference).count, 0ull);
      }
      // Without a reference the pattern still varies per element and per run.
      std::vector<std::byte> a(reference.size()), b(reference.size());
      kwb::writePoison(a, dtype, n, kwb::poisonPattern(1));
      kwb::writePoison(b, dtype, n, kwb::poisonPattern(2));
      std::set<std::uint64_t> distinct;
      std::size_t same = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        distinct.insert(bitsAt(a, dtype, i));
        same += bitsAt(a, dtype, i) == bitsAt(b, dtype, i);
      }
      QVERIFY(distinct.size() >= (kwb::dtypeSize(dtype) == 1 ? 250u : n / 2));
      QVERIFY2(same < n / 100, qPrintable(QString::number(same)));
    }
  }

  void boolPoisonIsNeverABool() {
    const std::uint64_t n = 100000;
    std::vector<std::byte> out(n);
    kwb::writePoison(out, DType::Bool, n, kwb::poisonPattern(7));
    std::set<unsigned> seen;
    for (std::byte b : out) {
      QVERIFY(unsigned(b) >= 2);
      seen.insert(unsigned(b));
    }
    QCOMPARE(int(seen.size()), 254);
  }

  // A run that writes every element leaves nothing flagged, for every dtype.
  void fullyWrittenOutputs() {
    const std::uint64_t n = 50000;
    for (DType dtype : kAllDTypes) {
      const auto reference = correctOutput(dtype, n);
      std::vector<std::byte> out(reference.size());
      const auto pattern = kwb::poisonPattern(11, 0xfeed);
      kwb::writePoison(out, dtype, n, pattern, reference);
      QCOMPARE(kwb::unwrittenElements(out, dtype, n, pattern, reference).count, n);
      out = reference;  // the kernel's writes
      const auto unwritten = kwb::unwrittenElements(out, dtype, n, pattern, reference);
      QCOMPARE(unwritten.count, 0ull);
      QVERIFY(unwritten.firstIndices.empty());
    }
  }

  void partialWritesFound() {
    const std::uint64_t n = 4096;
    for (DType dtype : kAllDTypes) {
      const std::size_t size = kwb::dtypeSize(dtype);
      const auto reference = correctOutput(dtype, n);
      std::vector<std::byte> out(reference.size());
      const auto pattern = kwb::poisonPattern(3);
      kwb::writePoison(out, dtype, n, pattern, reference);
      // The kernel writes everything but elements 5, 77, 1000 and the last.
      for (std::uint64_t i = 0; i < n; ++i)
        if (i != 5 && i != 77 && i != 1000 && i != n - 1)
          std::memcpy(out.data() + i * size, reference.data() + i * size, size);
      auto unwritten = kwb::unwrittenElements(out, dtype, n, pattern, reference);
      QCOMPARE(unwritten.count, 4ull);
      QCOMPARE(unwritten.firstIndices, (std::vector<std::uint64_t>{5, 77, 1000, n - 1}));
      unwritten = kwb::unwrittenElements(out, dtype, n, pattern, reference, 2);
      QCOMPARE(unwritten.count, 4ull);
      QCOMPARE(unwritten.firstIndices, (std::vector<std::uint64_t>{5, 77}));
    }
  }

  // A kernel that leaves the previous run's poison (or replays a stale buffer) is not fooled
  // into "written": the elements are NaN (floats) and fail the comparison; with f32 and f64 the
  // new run's pattern never matches the old one.
  void staleBufferFromAnotherRun() {
    const std::uint64_t n = 100000;
    for (DType dtype : {DType::F64, DType::F32}) {
      std::vector<std::byte> out(n * kwb::dtypeSize(dtype));
      kwb::writePoison(out, dtype, n, kwb::poisonPattern(1));
      QCOMPARE(kwb::unwrittenElements(out, dtype, n, kwb::poisonPattern(2)).count, 0ull);
      QCOMPARE(kwb::unwrittenElements(out, dtype, n, kwb::poisonPattern(1)).count, n);
    }
  }

  void description() {
    kwb::UnwrittenElements u;
    QCOMPARE(kwb::describeUnwritten(u, 100), std::string("every element was written"));
    u.count = 3;
    u.firstIndices = {37, 40, 99};
    const std::int64_t shape[] = {10, 10};
    QCOMPARE(kwb::describeUnwritten(u, 100, shape),
             std::string("3 of 100 elements were not written (still holding the poison; first at [3, 7])"));
    QCOMPARE(kwb::describeUnwritten(u, 100),
             std::string("3 of 100 elements were not written (still holding the poison; first at [37])"));
    u.count = 1;
    u.firstIndices = {0};
    QCOMPARE(kwb::describeUnwritten(u, 100, shape),
             std::string("1 of 100 elements was not written (still holding the poison; at [0, 0])"));
  }

  void errors() {
    std::vector<std::byte> small(6);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             kwb::writePoison(small, DType::F32, 2, kwb::poisonPattern(1)));
    std::vector<std::byte> enough(16);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             kwb::writePoison(enough, DType::I32, 4, kwb::poisonPattern(1), small));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             kwb::unwrittenElements(small, DType::F64, 1, kwb::poisonPattern(1)));
  }

  // The race-check run's pattern differs from the first run's at every element, for every dtype,
  // with and without a reference, and keeps the properties of a poison (unusual NaN, a byte that
  // is no bool, never the reference). Many elements: 8-bit masks and bf16 payloads collide often
  // enough that the collision rule is exercised thousands of times.
  void secondRunPoisonDiffersEverywhere() {
    const std::uint64_t n = 200000;
    for (DType dtype : kAllDTypes) {
      const auto reference = correctOutput(dtype, n);
      for (const bool withReference : {false, true}) {
        const std::span<const std::byte> ref = withReference ? std::span<const std::byte>(reference) : std::span<const std::byte>();
        for (std::uint64_t salt : {0ull, 0xabcdefull}) {
          const auto first = kwb::poisonPattern(41, salt);
          const auto second = kwb::poisonPatternAfter(first, 42, salt);
          QVERIFY(!(first == second));
          std::vector<std::byte> a(reference.size()), b(reference.size()), plain(reference.size());
          kwb::writePoison(a, dtype, n, first, ref);
          kwb::writePoison(b, dtype, n, second, ref);
          kwb::writePoison(plain, dtype, n, kwb::poisonPattern(42, salt), ref);
          std::size_t adjusted = 0;
          for (std::uint64_t i = 0; i < n; ++i) {
            const auto x = bitsAt(a, dtype, i), y = bitsAt(b, dtype, i);
            if (x == y) QFAIL(qPrintable(QString("%1: element %2 has the same poison in both runs").arg(kwb::dtypeName(dtype).data()).arg(i)));
            adjusted += y != bitsAt(plain, dtype, i);
            if (kwb::dtypeIsFloating(dtype) && !isNaNBits(y, dtype)) QFAIL("second poison is not a NaN");
            if (dtype == DType::Bool && y < 2) QFAIL("second poison is a bool");
            if (withReference && dtype != DType::Bool && !kwb::dtypeIsFloating(dtype) && y == bitsAt(reference, dtype, i))
              QFAIL("second poison equals the reference");
          }
          // Only where the two patterns collided does the second differ from a plain pattern.
          if (dtype == DType::I8 || dtype == DType::U8 || dtype == DType::Bool || dtype == DType::BF16)
            QVERIFY2(adjusted > 0 && adjusted < n / 10, qPrintable(QString::number(adjusted)));
          if (dtype == DType::F64 || dtype == DType::I64) QCOMPARE(adjusted, std::size_t(0));
        }
      }
    }
  }

  // The point of two runs: a kernel that writes the first run's poison value (by chance: 1 in
  // 256 per 8-bit element without a reference) is not reported unwritten, because it writes the
  // same value in the second run, where the poison is different. Here the worst case: every
  // element written with exactly the first run's poison.
  void valueEqualToPoisonIsNotUnwritten() {
    const std::uint64_t n = 10000;
    for (DType dtype : kAllDTypes) {
      const auto reference = correctOutput(dtype, n);
      for (const bool withReference : {false, true}) {
        const std::span<const std::byte> ref = withReference ? std::span<const std::byte>(reference) : std::span<const std::byte>();
        const auto first = kwb::poisonPattern(7, 99);
        const auto second = kwb::poisonPatternAfter(first, 8, 99);
        std::vector<std::byte> written(reference.size());
        kwb::writePoison(written, dtype, n, first, ref);  // what the kernel writes, both runs
        // One run alone cannot tell: all of it looks unwritten.
        QCOMPARE(kwb::unwrittenElements(written, dtype, n, first, ref).count, n);
        const auto both = kwb::unwrittenInBothRuns(written, first, written, second, dtype, n, ref);
        QCOMPARE(both.count, 0ull);
        QVERIFY(both.firstIndices.empty());
      }
    }
  }

  // Elements left unwritten in both runs are found, with their indices, among written ones
  // (some of which carry the first poison's value); an element written in one run only is not
  // counted (the race check compares the runs and catches it).
  void unwrittenInBothRunsCounts() {
    const std::uint64_t n = 4096;
    for (DType dtype : kAllDTypes) {
      const std::size_t size = kwb::dtypeSize(dtype);
      const auto reference = correctOutput(dtype, n);
      const auto first = kwb::poisonPattern(100, 5);
      const auto second = kwb::poisonPatternAfter(first, 101, 5);
      std::vector<std::byte> run1(reference.size()), run2(reference.size()), p1(reference.size());
      kwb::writePoison(run1, dtype, n, first);
      kwb::writePoison(run2, dtype, n, second);
      p1 = run1;
      // The kernel writes every element but 3, 300 and the last, in both runs; it writes the
      // first run's poison value at 10..19, and leaves 50 unwritten in the first run only.
      for (std::uint64_t i = 0; i < n; ++i) {
        if (i == 3 || i == 300 || i == n - 1) continue;
        const std::byte *value = (i >= 10 && i < 20) ? p1.data() + i * size : reference.data() + i * size;
        std::memcpy(run2.data() + i * size, value, size);
        if (i != 50) std::memcpy(run1.data() + i * size, value, size);
      }
      auto u = kwb::unwrittenInBothRuns(run1, first, run2, second, dtype, n);
      QCOMPARE(u.count, 3ull);
      QCOMPARE(u.firstIndices, (std::vector<std::uint64_t>{3, 300, n - 1}));
      u = kwb::unwrittenInBothRuns(run1, first, run2, second, dtype, n, {}, 1);
      QCOMPARE(u.count, 3ull);
      QCOMPARE(u.firstIndices, (std::vector<std::uint64_t>{3}));
      // One run alone counts the poison-valued writes and the one-run gap as unwritten too (and,
      // for 8-bit integers, correct values that happen to equal the poison).
      QVERIFY(kwb::unwrittenElements(run1, dtype, n, first).count >= 3ull + 10 + 1);
    }
  }

  // Large outputs over several threads (whole blocks of 2^16 elements per thread, poison.cpp):
  // the same poison bytes, and the same unwritten count and first indices, as one thread, with
  // unwritten elements on both sides of every block boundary.
  void parallelMatchesOneThread() {
    constexpr std::uint64_t kBlock = std::uint64_t(1) << 16;
    const std::uint64_t n = 2500003;
    const std::uint64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<std::uint64_t> both{0, n - 1}, firstOnly;
    for (std::uint64_t k = 1; k < blocks; ++k) {
      both.push_back(k * kBlock - 1);
      both.push_back(k * kBlock);
      firstOnly.push_back(k * kBlock + 1);
    }
    std::sort(both.begin(), both.end());
    std::vector<std::uint64_t> inFirst = both;
    inFirst.insert(inFirst.end(), firstOnly.begin(), firstOnly.end());
    std::sort(inFirst.begin(), inFirst.end());

    for (DType dtype : kAllDTypes) {
      const QByteArray name(kwb::dtypeName(dtype).data(), qsizetype(kwb::dtypeName(dtype).size()));
      const std::size_t size = kwb::dtypeSize(dtype);
      const auto reference = correctOutput(dtype, n);
      const auto first = kwb::poisonPattern(200, 9);
      const auto second = kwb::poisonPatternAfter(first, 201, 9);

      std::vector<std::byte> p1(reference.size()), p2(reference.size()), other(reference.size());
      kwb::writePoison(p1, dtype, n, first, reference, 1);
      kwb::writePoison(p2, dtype, n, second, reference, 1);
      for (unsigned threads : {0u, 3u, 16u}) {
        kwb::writePoison(other, dtype, n, first, reference, threads);
        QVERIFY2(other == p1, name.constData());
        kwb::writePoison(other, dtype, n, second, reference, threads);
        QVERIFY2(other == p2, name.constData());
      }
      std::vector<std::byte> noReference(reference.size());
      kwb::writePoison(noReference, dtype, n, first, {}, 1);
      kwb::writePoison(other, dtype, n, first, {}, 7);
      QVERIFY2(other == noReference, name.constData());

      // Both runs write the correct output but at `both`; the first also leaves `firstOnly`.
      auto run1 = reference, run2 = reference;
      for (std::uint64_t i : inFirst) std::memcpy(run1.data() + i * size, p1.data() + i * size, size);
      for (std::uint64_t i : both) std::memcpy(run2.data() + i * size, p2.data() + i * size, size);

      for (std::size_t maxIndices : {std::size_t(10), std::size_t(0), std::size_t(1000)}) {
        const auto one = kwb::unwrittenInBothRuns(run1, first, run2, second, dtype, n, reference, maxIndices, 1);
        QCOMPARE(one.count, std::uint64_t(both.size()));
        QCOMPARE(one.firstIndices,
                 std::vector<std::uint64_t>(both.begin(), both.begin() + std::min(maxIndices, both.size())));
        const auto single = kwb::unwrittenElements(run1, dtype, n, first, reference, maxIndices, 1);
        QCOMPARE(single.count, std::uint64_t(inFirst.size()));
        QCOMPARE(single.firstIndices,
                 std::vector<std::uint64_t>(inFirst.begin(), inFirst.begin() + std::min(maxIndices, inFirst.size())));
        for (unsigned threads : {0u, 2u, 3u, 16u, 64u}) {
          const auto many = kwb::unwrittenInBothRuns(run1, first, run2, second, dtype, n, reference, maxIndices, threads);
          QVERIFY2(many.count == one.count && many.firstIndices == one.firstIndices, name.constData());
          const auto manySingle = kwb::unwrittenElements(run1, dtype, n, first, reference, maxIndices, threads);
          QVERIFY2(manySingle.count == single.count && manySingle.firstIndices == single.firstIndices,
                   name.constData());
        }
      }
      // A count that ends inside a block.
      const std::uint64_t m = 20 * kBlock + 5;
      const auto one = kwb::unwrittenInBothRuns(run1, first, run2, second, dtype, m, reference, 100, 1);
      const auto many = kwb::unwrittenInBothRuns(run1, first, run2, second, dtype, m, reference, 100, 6);
      QCOMPARE(one.count, std::uint64_t(1 + 2 * 20));  // 0 and both sides of 20 boundaries
      QVERIFY2(many.count == one.count && many.firstIndices == one.firstIndices, name.constData());
    }
  }

  // Single against multi-threaded time, for the report (no assertion on it): 8 Mi f32.
  void parallelSpeed() {
    const std::uint64_t n = std::uint64_t(8) << 20;
    const auto reference = correctOutput(DType::F32, n);
    const auto first = kwb::poisonPattern(1), second = kwb::poisonPatternAfter(first, 2);
    std::vector<std::byte> run1(reference.size()), run2(reference.size());
    const auto time = [](auto &&f) {
      QElapsedTimer timer;
      timer.start();
      f();
      return timer.nsecsElapsed() / 1e6;
    };
    const double write1 = time([&] { kwb::writePoison(run1, DType::F32, n, first, reference, 1); });
    const double writeN = time([&] { kwb::writePoison(run1, DType::F32, n, first, reference, 0); });
    kwb::writePoison(run2, DType::F32, n, second, reference);
    std::memcpy(run1.data() + 4096, reference.data() + 4096, run1.size() - 8192);  // written but the ends
    std::memcpy(run2.data() + 4096, reference.data() + 4096, run2.size() - 8192);
    kwb::UnwrittenElements a, b;
    const double both1 = time([&] { a = kwb::unwrittenInBothRuns(run1, first, run2, second, DType::F32, n, reference, 10, 1); });
    const double bothN = time([&] { b = kwb::unwrittenInBothRuns(run1, first, run2, second, DType::F32, n, reference, 10, 0); });
    QCOMPARE(a.count, std::uint64_t(2048));
    QVERIFY(a.count == b.count && a.firstIndices == b.firstIndices);
    const double single1 = time([&] { a = kwb::unwrittenElements(run1, DType::F32, n, first, reference, 10, 1); });
    const double singleN = time([&] { b = kwb::unwrittenElements(run1, DType::F32, n, first, reference, 10, 0); });
    QVERIFY(a.count == b.count && a.firstIndices == b.firstIndices);
    qInfo("8 Mi f32, 1 thread vs %u: writePoison %.1f vs %.1f ms, unwrittenInBothRuns %.1f vs %.1f ms, "
          "unwrittenElements %.1f vs %.1f ms",
          std::max(1u, std::thread::hardware_concurrency()), write1, writeN, both1, bothN, single1, singleN);
  }

  void twoRunErrors() {
    const auto first = kwb::poisonPattern(1);
    const auto second = kwb::poisonPatternAfter(first, 2);
    const auto unrelated = kwb::poisonPatternAfter(kwb::poisonPattern(5), 6);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::poisonPatternAfter(second, 3));
    std::vector<std::byte> buffer(64), small(6);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             kwb::unwrittenInBothRuns(buffer, first, buffer, unrelated, DType::F32, 4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             kwb::unwrittenInBothRuns(buffer, first, buffer, first, DType::F32, 4));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             kwb::unwrittenInBothRuns(buffer, first, small, second, DType::F32, 4));
    QCOMPARE(kwb::unwrittenInBothRuns(buffer, first, buffer, second, DType::F32, 4).count, 0ull);
  }
};

QTEST_APPLESS_MAIN(TestEvalPoison)
#include "tst_eval_poison.moc"
