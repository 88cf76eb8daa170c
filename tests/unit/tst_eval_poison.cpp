// Output poison: NaN patterns that change per run and element and are never a canonical NaN,
// integer patterns that differ from the reference at every element, bool bytes that are never
// a bool, and the count and first indices of elements a run left unwritten.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <set>

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
};

QTEST_APPLESS_MAIN(TestEvalPoison)
#include "tst_eval_poison.moc"
