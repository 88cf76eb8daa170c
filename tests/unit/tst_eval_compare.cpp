// Output comparison: a table of single-element cases for every dtype (tolerance boundaries,
// NaN, infinities, signed zero, integers beyond 2^53), the report's figures and coordinates,
// its summary line, the race check between two runs, and the near-constant warning.
#include <QElapsedTimer>
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "core/eval/compare.h"
#include "core/eval/half_float.h"
#include "core/eval/input_generator.h"

using kwb::DType;
using kwb::Tolerance;

namespace {

// One element of `dtype` from text: a number, "nan", "inf", "-0", "true"/"false", or "0x.."
// for raw bits.
std::vector<std::byte> element(DType dtype, const QString &text) {
  const std::size_t size = kwb::dtypeSize(dtype);
  std::vector<std::byte> out(size);
  std::uint64_t bits = 0;
  if (text.startsWith("0x")) {
    bits = text.mid(2).toULongLong(nullptr, 16);
  } else {
    const QByteArray t = text.toLatin1();
    switch (dtype) {
      case DType::F64:
        bits = std::bit_cast<std::uint64_t>(std::strtod(t.constData(), nullptr));
        break;
      case DType::F32:
        bits = std::bit_cast<std::uint32_t>(std::strtof(t.constData(), nullptr));
        break;
      case DType::F16:
        bits = kwb::doubleToHalf(std::strtod(t.constData(), nullptr));
        break;
      case DType::BF16:
        bits = kwb::doubleToBfloat16(std::strtod(t.constData(), nullptr));
        break;
      case DType::Bool:
        bits = text == "true" ? 1 : 0;
        break;
      default:
        bits = std::uint64_t(std::strtoll(t.constData(), nullptr, 10));
        break;
    }
  }
  std::memcpy(out.data(), &bits, size);
  return out;
}

template <class T>
std::vector<std::byte> bytesOf(const std::vector<T> &v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

Tolerance tol(double rtol, double atol) {
  return {false, rtol, atol};
}
const Tolerance kExact{true, 0, 0};

// Large buffers, split over threads: the block of the split (compare.cpp), for placing
// elements at and around chunk boundaries whatever the number of threads.
constexpr std::uint64_t kBlock = std::uint64_t(1) << 16;

// Element i of a buffer of `dtype` as a double, and stores v there (rounded to the dtype;
// integers truncated, v finite).
double get(const std::vector<std::byte> &buffer, DType dtype, std::uint64_t i) {
  const std::size_t size = kwb::dtypeSize(dtype);
  std::uint64_t bits = 0;
  std::memcpy(&bits, buffer.data() + i * size, size);
  switch (dtype) {
    case DType::F64:
      return std::bit_cast<double>(bits);
    case DType::F32:
      return std::bit_cast<float>(std::uint32_t(bits));
    case DType::F16:
      return kwb::halfToFloat(std::uint16_t(bits));
    case DType::BF16:
      return kwb::bfloat16ToFloat(std::uint16_t(bits));
    case DType::I64:
      return double(std::int64_t(bits));
    case DType::I32:
      return double(std::int32_t(std::uint32_t(bits)));
    case DType::I8:
      return double(std::int8_t(std::uint8_t(bits)));
    case DType::U8:
    case DType::Bool:
      return double(bits);
  }
  return 0;
}
void put(std::vector<std::byte> &buffer, DType dtype, std::uint64_t i, double v) {
  const std::size_t size = kwb::dtypeSize(dtype);
  std::uint64_t bits = 0;
  switch (dtype) {
    case DType::F64:
      bits = std::bit_cast<std::uint64_t>(v);
      break;
    case DType::F32:
      bits = std::bit_cast<std::uint32_t>(float(v));
      break;
    case DType::F16:
      bits = kwb::doubleToHalf(v);
      break;
    case DType::BF16:
      bits = kwb::doubleToBfloat16(v);
      break;
    case DType::I64:
    case DType::I32:
    case DType::I8:
      bits = std::uint64_t(std::int64_t(v));
      break;
    case DType::U8:
    case DType::Bool:
      bits = std::uint64_t(v);
      break;
  }
  std::memcpy(buffer.data() + i * size, &bits, size);
}

std::uint64_t bitsOf(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

// Field by field, doubles bit for bit.
void compareMismatchLists(const std::vector<kwb::ElementMismatch> &a, const std::vector<kwb::ElementMismatch> &b) {
  QCOMPARE(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    QCOMPARE(a[i].index, b[i].index);
    QCOMPARE(a[i].coordinates, b[i].coordinates);
    QCOMPARE(bitsOf(a[i].got), bitsOf(b[i].got));
    QCOMPARE(bitsOf(a[i].want), bitsOf(b[i].want));
    QCOMPARE(a[i].gotText, b[i].gotText);
    QCOMPARE(a[i].wantText, b[i].wantText);
  }
}
void compareReports(const kwb::ComparisonReport &a, const kwb::ComparisonReport &b) {
  QCOMPARE(a.dtype, b.dtype);
  QCOMPARE(a.exact, b.exact);
  QCOMPARE(a.checked, b.checked);
  QCOMPARE(a.mismatches, b.mismatches);
  compareMismatchLists(a.firstMismatches, b.firstMismatches);
  if (QTest::currentTestFailed()) return;
  QCOMPARE(bitsOf(a.maxAbsError), bitsOf(b.maxAbsError));
  QCOMPARE(a.maxAbsErrorIndex, b.maxAbsErrorIndex);
  QCOMPARE(bitsOf(a.maxRelError), bitsOf(b.maxRelError));
  QCOMPARE(a.maxRelErrorIndex, b.maxRelErrorIndex);
  QCOMPARE(bitsOf(a.relativeL2Error), bitsOf(b.relativeL2Error));
  QCOMPARE(a.nanInGot, b.nanInGot);
  QCOMPARE(a.nanInReference, b.nanInReference);
  QCOMPARE(a.firstReferenceNaN, b.firstReferenceNaN);
  QCOMPARE(a.summary, b.summary);
}
void compareDifferences(const kwb::RunDifference &a, const kwb::RunDifference &b) {
  QCOMPARE(a.checked, b.checked);
  QCOMPARE(a.differentBits, b.differentBits);
  QCOMPARE(a.beyondRounding, b.beyondRounding);
  compareMismatchLists(a.firstBeyondRounding, b.firstBeyondRounding);
  if (QTest::currentTestFailed()) return;
  QCOMPARE(bitsOf(a.maxAbsDifference), bitsOf(b.maxAbsDifference));
  QCOMPARE(a.summary, b.summary);
}

// A large output (several chunks for any number of threads, a partial last block) with known
// trouble: mismatches on both sides of every block boundary, two elements tied for the largest
// absolute error and two for the largest relative error (the later of each in the last
// chunk), the rest within tolerance (floats: off by up to an ulp or 0.1%). With `nans`
// (floating point only), also NaNs in the candidate's output after odd boundaries, in the
// reference after every fifth, and infinities (two tied mismatches, an equal pair, and a
// -inf/+inf pair).
struct LargeCase {
  std::uint64_t n = 0;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> got, want;
  std::vector<std::uint64_t> mismatches;  // in index order
  std::uint64_t absTie = 0, relTie = 0;   // the first of each tie
};
LargeCase largeCase(DType dtype, bool nans) {
  LargeCase c;
  c.shape = {1500, 2001};
  c.n = 1500 * 2001;
  const bool floating = kwb::dtypeIsFloating(dtype);
  const kwb::Generator generator = floating ? kwb::Generator{kwb::Generator::Kind::Normal, 0, 1, 0}
                                            : kwb::Generator{kwb::Generator::Kind::RandInt, -100, 100, 0};
  c.want = kwb::generateInput(dtype, c.n, generator, 7, "want");
  c.got = c.want;
  if (floating)
    for (std::uint64_t i = 0; i < c.n; i += 3) put(c.got, dtype, i, get(c.want, dtype, i) * (1 + 1e-3));
  const auto set = [&](std::uint64_t i, double want, double got) {
    put(c.want, dtype, i, want);
    put(c.got, dtype, i, got);
  };
  const std::uint64_t blocks = (c.n + kBlock - 1) / kBlock;
  for (std::uint64_t k = 1; k < blocks; ++k) {
    for (std::uint64_t i : {k * kBlock - 1, k * kBlock}) {
      if (floating) {
        const double w = 1 + double(k % 7) * 0.25;
        set(i, w, w * 1.5);  // abs error at most 1.25, rel 0.5
      } else {
        const double w = 1 + double(k % 7);
        set(i, w, w + 3);  // abs 3, rel at most 3
      }
      c.mismatches.push_back(i);
    }
  }
  c.absTie = 2 * kBlock + 100;
  c.relTie = kBlock + 7;
  for (std::uint64_t i : {c.absTie, c.n - 5}) {
    if (floating)
      set(i, 1000, 1100);  // abs 100 (bf16: 104), rel 0.1
    else
      set(i, 50, -50);  // abs 100, rel 2
    c.mismatches.push_back(i);
  }
  for (std::uint64_t i : {c.relTie, c.n - 1000}) {
    if (floating)
      set(i, 0.0009765625, 0.001953125);  // rel 1
    else
      set(i, 1, 5);  // rel 4
    c.mismatches.push_back(i);
  }
  if (nans) {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (std::uint64_t k = 1; k < blocks; ++k) {
      if (k % 2 == 1) {
        put(c.got, dtype, k * kBlock + 1, nan);
        c.mismatches.push_back(k * kBlock + 1);
      }
      if (k % 5 == 0) set(k * kBlock + 2, nan, 1.0);
    }
    for (std::uint64_t i : {3 * kBlock + 3, c.n - 3}) {
      set(i, 1.0, inf);
      c.mismatches.push_back(i);
    }
    set(c.n - 4, -inf, -inf);
    set(c.n - 2, -inf, inf);
    c.mismatches.push_back(c.n - 2);
  }
  std::sort(c.mismatches.begin(), c.mismatches.end());
  return c;
}

}  // namespace

class TestEvalCompare : public QObject {
  Q_OBJECT
 private slots:
  void elements_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<QString>("got");
    QTest::addColumn<QString>("want");
    QTest::addColumn<QString>("tolerance");  // "exact" or "rtol atol"
    QTest::addColumn<QString>("expect");     // pass | fail | broken

    // f32
    QTest::newRow("f32 equal") << "f32"
                               << "1.5"
                               << "1.5"
                               << "exact"
                               << "pass";
    QTest::newRow("f32 -0 equals 0") << "f32"
                                     << "-0"
                                     << "0"
                                     << "exact"
                                     << "pass";
    QTest::newRow("f32 one ulp, exact") << "f32"
                                        << "1.0000001"
                                        << "1"
                                        << "exact"
                                        << "fail";
    QTest::newRow("f32 atol boundary") << "f32"
                                       << "1.5"
                                       << "1"
                                       << "0 0.5"
                                       << "pass";
    QTest::newRow("f32 beyond atol") << "f32"
                                     << "1.5"
                                     << "1"
                                     << "0 0.49"
                                     << "fail";
    QTest::newRow("f32 rtol boundary") << "f32"
                                       << "3"
                                       << "2"
                                       << "0.5 0"
                                       << "pass";
    QTest::newRow("f32 beyond rtol") << "f32"
                                     << "3"
                                     << "2"
                                     << "0.49 0"
                                     << "fail";
    QTest::newRow("f32 rtol scales |want|, low got") << "f32"
                                                     << "2"
                                                     << "3"
                                                     << "0.34 0"
                                                     << "pass";
    QTest::newRow("f32 rtol scales |want|, high got") << "f32"
                                                      << "3"
                                                      << "2"
                                                      << "0.34 0"
                                                      << "fail";
    QTest::newRow("f32 atol + rtol") << "f32"
                                     << "3.5"
                                     << "2"
                                     << "0.5 0.5"
                                     << "pass";
    QTest::newRow("f32 negative values") << "f32"
                                         << "-3"
                                         << "-2"
                                         << "0.5 0"
                                         << "pass";
    QTest::newRow("f32 sign flip") << "f32"
                                   << "-2"
                                   << "2"
                                   << "0.5 0"
                                   << "fail";
    QTest::newRow("f32 NaN never passes") << "f32"
                                          << "nan"
                                          << "1"
                                          << "1e9 1e9"
                                          << "fail";
    QTest::newRow("f32 NaN payload never passes") << "f32"
                                                  << "0xff812345"
                                                  << "1"
                                                  << "1e9 1e9"
                                                  << "fail";
    QTest::newRow("f32 NaN reference") << "f32"
                                       << "1"
                                       << "nan"
                                       << "1e-5 0"
                                       << "broken";
    QTest::newRow("f32 NaN both") << "f32"
                                  << "nan"
                                  << "nan"
                                  << "exact"
                                  << "broken";
    QTest::newRow("f32 inf equal") << "f32"
                                   << "inf"
                                   << "inf"
                                   << "0.1 0"
                                   << "pass";
    QTest::newRow("f32 -inf equal") << "f32"
                                    << "-inf"
                                    << "-inf"
                                    << "exact"
                                    << "pass";
    QTest::newRow("f32 inf vs -inf") << "f32"
                                     << "inf"
                                     << "-inf"
                                     << "1e9 1e9"
                                     << "fail";
    QTest::newRow("f32 inf vs finite") << "f32"
                                       << "inf"
                                       << "1e38"
                                       << "0 1e39"
                                       << "fail";
    QTest::newRow("f32 finite vs inf") << "f32"
                                       << "1e38"
                                       << "inf"
                                       << "0 1e39"
                                       << "fail";
    QTest::newRow("f32 zero tolerance, equal") << "f32"
                                               << "0.1"
                                               << "0.1"
                                               << "0 0"
                                               << "pass";
    // f16 and bf16: decoded exactly, compared in double.
    QTest::newRow("f16 one ulp, exact") << "f16"
                                        << "1.0009765625"
                                        << "1"
                                        << "exact"
                                        << "fail";
    QTest::newRow("f16 one ulp within rtol") << "f16"
                                             << "1.0009765625"
                                             << "1"
                                             << "1e-3 0"
                                             << "pass";
    QTest::newRow("f16 one ulp beyond rtol") << "f16"
                                             << "1.0009765625"
                                             << "1"
                                             << "9e-4 0"
                                             << "fail";
    QTest::newRow("f16 NaN") << "f16"
                             << "nan"
                             << "1"
                             << "1 1"
                             << "fail";
    QTest::newRow("f16 NaN reference") << "f16"
                                       << "0"
                                       << "nan"
                                       << "1 1"
                                       << "broken";
    QTest::newRow("f16 inf") << "f16"
                             << "70000"
                             << "inf"
                             << "exact"
                             << "pass";
    QTest::newRow("f16 subnormal") << "f16"
                                   << "5.9604644775390625e-08"
                                   << "0"
                                   << "0 6e-8"
                                   << "pass";
    QTest::newRow("bf16 within rtol") << "bf16"
                                      << "1.0078125"
                                      << "1"
                                      << "1e-2 0"
                                      << "pass";
    QTest::newRow("bf16 exact") << "bf16"
                                << "1.0078125"
                                << "1"
                                << "exact"
                                << "fail";
    QTest::newRow("bf16 -0 equals 0") << "bf16"
                                      << "-0"
                                      << "0"
                                      << "exact"
                                      << "pass";
    // f64
    QTest::newRow("f64 beyond rtol") << "f64"
                                     << "1.000000000000001"
                                     << "1"
                                     << "1e-15 0"
                                     << "fail";
    QTest::newRow("f64 within rtol") << "f64"
                                     << "1.000000000000001"
                                     << "1"
                                     << "2e-15 0"
                                     << "pass";
    QTest::newRow("f64 NaN") << "f64"
                             << "nan"
                             << "nan"
                             << "1 1"
                             << "broken";
    // Integers and bool: always exact, whatever the tolerance says.
    QTest::newRow("i64 beyond 2^53") << "i64"
                                     << "9007199254740993"
                                     << "9007199254740992"
                                     << "exact"
                                     << "fail";
    QTest::newRow("i64 min") << "i64"
                             << "-9223372036854775808"
                             << "-9223372036854775808"
                             << "exact"
                             << "pass";
    QTest::newRow("i32 equal") << "i32"
                               << "5"
                               << "5"
                               << "exact"
                               << "pass";
    QTest::newRow("i32 off by one") << "i32"
                                    << "5"
                                    << "6"
                                    << "exact"
                                    << "fail";
    QTest::newRow("i32 ignores rtol") << "i32"
                                      << "5"
                                      << "6"
                                      << "1 1"
                                      << "fail";
    QTest::newRow("i32 extremes") << "i32"
                                  << "-2147483648"
                                  << "2147483647"
                                  << "exact"
                                  << "fail";
    QTest::newRow("i8 min") << "i8"
                            << "-128"
                            << "-128"
                            << "exact"
                            << "pass";
    QTest::newRow("i8 extremes") << "i8"
                                 << "127"
                                 << "-128"
                                 << "exact"
                                 << "fail";
    QTest::newRow("u8 equal") << "u8"
                              << "255"
                              << "255"
                              << "exact"
                              << "pass";
    QTest::newRow("u8 differ") << "u8"
                               << "255"
                               << "0"
                               << "exact"
                               << "fail";
    QTest::newRow("bool true") << "bool"
                               << "true"
                               << "true"
                               << "exact"
                               << "pass";
    QTest::newRow("bool differ") << "bool"
                                 << "false"
                                 << "true"
                                 << "exact"
                                 << "fail";
    QTest::newRow("bool invalid byte") << "bool"
                                       << "0x02"
                                       << "true"
                                       << "exact"
                                       << "fail";
  }
  void elements() {
    QFETCH(QString, dtype);
    QFETCH(QString, got);
    QFETCH(QString, want);
    QFETCH(QString, tolerance);
    QFETCH(QString, expect);
    const DType d = *kwb::dtypeFromName(dtype.toStdString());
    Tolerance t = kExact;
    if (tolerance != "exact")
      t = tol(tolerance.section(' ', 0, 0).toDouble(), tolerance.section(' ', 1, 1).toDouble());
    const auto g = element(d, got), w = element(d, want);
    const auto r = kwb::compareOutputs(g, w, d, 1, t);
    QCOMPARE(r.checked, 1ull);
    QCOMPARE(r.passed(), expect == "pass");
    QCOMPARE(r.referenceBroken(), expect == "broken");
    QCOMPARE(r.mismatches, expect == "fail" ? 1ull : 0ull);
    QCOMPARE(r.firstMismatches.size(), std::size_t(expect == "fail" ? 1 : 0));
    QVERIFY(!r.summary.empty());
  }

  void reportFiguresAndSummary() {
    std::vector<float> want(32), got(32);
    for (int i = 0; i < 32; ++i) want[i] = got[i] = i * 0.5f;
    got[10] = 5.25f;   // [1, 2]: want 5
    got[29] = 15.25f;  // [3, 5]: want 14.5
    const std::int64_t shape[] = {4, 8};
    const auto r = kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::F32, 32, tol(0, 0.1), shape);
    QVERIFY(!r.passed());
    QCOMPARE(r.checked, 32ull);
    QCOMPARE(r.mismatches, 2ull);
    QCOMPARE(r.firstMismatches.size(), std::size_t(2));
    QCOMPARE(r.firstMismatches[0].index, 10ull);
    QCOMPARE(r.firstMismatches[0].coordinates, (std::vector<std::int64_t>{1, 2}));
    QCOMPARE(r.firstMismatches[0].got, 5.25);
    QCOMPARE(r.firstMismatches[0].want, 5.0);
    QCOMPARE(r.firstMismatches[0].gotText, std::string("5.25"));
    QCOMPARE(r.firstMismatches[0].wantText, std::string("5"));
    QCOMPARE(r.firstMismatches[1].coordinates, (std::vector<std::int64_t>{3, 5}));
    QCOMPARE(r.maxAbsError, 0.75);
    QCOMPARE(r.maxAbsErrorIndex, 29ull);
    QCOMPARE(r.maxRelError, 0.75 / 14.5);
    QCOMPARE(r.maxRelErrorIndex, 29ull);
    double wantSquares = 0;
    for (float w : want) wantSquares += double(w) * w;
    QVERIFY(std::fabs(r.relativeL2Error - std::sqrt(0.25 * 0.25 + 0.75 * 0.75) / std::sqrt(wantSquares)) <
            1e-15);
    QCOMPARE(r.nanInGot, 0ull);
    QCOMPARE(
        r.summary,
        std::string(
            "2 of 32 elements differ (first at [1, 2]: got 5.25, want 5); max abs err 0.75, rel L2 0.015"));

    // The same with a shape that does not fit: flat indices.
    const std::int64_t wrong[] = {5, 8};
    const auto flat = kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::F32, 32, tol(0, 0.1), wrong);
    QCOMPARE(flat.firstMismatches[0].coordinates, (std::vector<std::int64_t>{10}));

    // Passing: the figures are still there.
    const auto pass = kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::F32, 32, tol(0, 1), shape);
    QVERIFY(pass.passed());
    QCOMPARE(pass.summary, std::string("all 32 elements match (max abs err 0.75, rel L2 0.015)"));
  }

  void nanAndInfinityFigures() {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    const std::vector<float> want{1, 2, 3, 4, inf, 6};
    const std::vector<float> got{nan, 2, nan, 4, inf, 6.5f};
    const auto r = kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::F32, 6, tol(0, 0.1));
    QCOMPARE(r.mismatches, 3ull);
    QCOMPARE(r.nanInGot, 2ull);
    QCOMPARE(r.maxAbsError, 0.5);  // NaN elements are left out of the figures
    QCOMPARE(r.firstMismatches[0].gotText, std::string("NaN"));
    QCOMPARE(r.summary,
             std::string("3 of 6 elements differ (first at [0]: got NaN, want 1); max abs err 0.5, "
                         "rel L2 0.067; 2 NaNs in the output"));
    // An infinity against a finite value: infinite error.
    const std::vector<float> got2{1, 2, 3, -inf, inf, 6};
    const auto r2 = kwb::compareOutputs(bytesOf(got2), bytesOf(want), DType::F32, 6, tol(0, 0.1));
    QCOMPARE(r2.mismatches, 1ull);
    QCOMPARE(r2.maxAbsError, double(inf));
    QCOMPARE(r2.maxAbsErrorIndex, 3ull);
    QCOMPARE(r2.relativeL2Error, double(inf));
    QCOMPARE(r2.firstMismatches[0].gotText, std::string("-inf"));
  }

  void brokenReference() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> want{1, 2, nan, 4, 5, 6};
    std::vector<float> got = want;
    got[2] = 3;
    const std::int64_t shape[] = {2, 3};
    auto r = kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::F32, 6, tol(1e-5, 0), shape);
    QVERIFY(!r.passed());
    QVERIFY(r.referenceBroken());
    QCOMPARE(r.mismatches, 0ull);
    QCOMPARE(r.nanInReference, 1ull);
    QCOMPARE(r.firstReferenceNaN, (std::vector<std::uint64_t>{2}));
    QCOMPARE(r.summary,
             std::string("the reference output holds 1 NaN (first at [0, 2]): the task's reference is "
                         "broken, not the candidate; fix the reference kernel or the inputs"));
    got[4] = 7;
    r = kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::F32, 6, tol(1e-5, 0), shape);
    QCOMPARE(r.mismatches, 1ull);
    QVERIFY(QString::fromStdString(r.summary).endsWith(
        "; besides, 1 of 5 elements differs (first at [1, 1]: got 7, want 5)"));
  }

  void integersSummary() {
    const std::vector<std::int32_t> want{1, 2, 3, 4}, got{1, 2, 9, 4};
    const auto r = kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::I32, 4, kExact);
    QCOMPARE(r.summary, std::string("1 of 4 elements differs (first at [2]: got 9, want 3); max abs err 6"));
    QCOMPARE(kwb::compareOutputs(bytesOf(want), bytesOf(want), DType::I32, 4, kExact).summary,
             std::string("all 4 elements match exactly"));
    // i64 values beyond 2^53 are printed exactly.
    const std::vector<std::int64_t> big{9007199254740993}, big2{9007199254740992};
    const auto b = kwb::compareOutputs(bytesOf(big), bytesOf(big2), DType::I64, 1, kExact);
    QCOMPARE(b.firstMismatches[0].gotText, std::string("9007199254740993"));
    QCOMPARE(b.maxAbsError, 1.0);
  }

  void reportsAtMostN() {
    std::vector<double> want(1000, 1.0), got(1000, 1.0);
    for (int i = 0; i < 100; ++i) got[i * 10 + 3] = 2.0;
    const auto r = kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::F64, 1000, tol(0, 0.5), {}, 10);
    QCOMPARE(r.mismatches, 100ull);
    QCOMPARE(r.firstMismatches.size(), std::size_t(10));
    QCOMPARE(r.firstMismatches[9].index, 93ull);
    QCOMPARE(kwb::compareOutputs(bytesOf(got), bytesOf(want), DType::F64, 1000, tol(0, 0.5), {}, 0)
                 .firstMismatches.size(),
             std::size_t(0));
  }

  void relativeL2EdgeCases() {
    const std::vector<float> zeros(8, 0.0f);
    std::vector<float> small(8, 0.0f);
    small[3] = 1e-9f;
    QCOMPARE(kwb::compareOutputs(bytesOf(zeros), bytesOf(zeros), DType::F32, 8, tol(0, 0)).relativeL2Error,
             0.0);
    const auto r = kwb::compareOutputs(bytesOf(small), bytesOf(zeros), DType::F32, 8, tol(0, 1e-6));
    QVERIFY(r.passed());
    QCOMPARE(r.relativeL2Error, std::numeric_limits<double>::infinity());
    QCOMPARE(r.maxRelError, std::numeric_limits<double>::infinity());  // against a zero reference
  }

  void shortestText() {
    auto text = [](DType d, const QString &v) { return kwb::formatElement(element(d, v).data(), d); };
    QCOMPARE(text(DType::F32, "0.51"), std::string("0.51"));
    QCOMPARE(text(DType::F32, "-0"), std::string("-0"));
    QCOMPARE(text(DType::F64, "0.1"), std::string("0.1"));
    QCOMPARE(text(DType::F16, "0.1"), std::string("0.1"));  // 0.0999755859375: "0.1" reads back as it
    QCOMPARE(text(DType::F16, "65504"), std::string("6.55e+04"));
    QCOMPARE(text(DType::BF16, "3.140625"), std::string("3.14"));
    QCOMPARE(text(DType::F16, "inf"), std::string("inf"));
    QCOMPARE(text(DType::BF16, "-inf"), std::string("-inf"));
    QCOMPARE(text(DType::F16, "nan"), std::string("NaN"));
    QCOMPARE(text(DType::I8, "-128"), std::string("-128"));
    QCOMPARE(text(DType::U8, "200"), std::string("200"));
    QCOMPARE(text(DType::Bool, "false"), std::string("false"));
    QCOMPARE(text(DType::Bool, "0x02"), std::string("0x02"));
  }

  void sameBitsCases() {
    const std::vector<std::byte> a{std::byte{1}, std::byte{2}}, b{std::byte{1}, std::byte{3}};
    QVERIFY(kwb::sameBits(a, a));
    QVERIFY(!kwb::sameBits(a, b));
    QVERIFY(!kwb::sameBits(a, std::span(a).first(1)));
    QVERIFY(kwb::sameBits({}, {}));
  }

  void raceCheck_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<QString>("run1");
    QTest::addColumn<QString>("run2");
    QTest::addColumn<QString>("tolerance");
    QTest::addColumn<int>("differentBits");
    QTest::addColumn<int>("beyond");
    QTest::newRow("identical") << "f32"
                               << "1.5"
                               << "1.5"
                               << "1e-5 0" << 0 << 0;
    QTest::newRow("one ulp within rtol") << "f32"
                                         << "1.0000001"
                                         << "1"
                                         << "1e-5 0" << 1 << 0;
    QTest::newRow("one ulp, exact") << "f32"
                                    << "1.0000001"
                                    << "1"
                                    << "exact" << 1 << 1;
    QTest::newRow("beyond rtol") << "f32"
                                 << "1.01"
                                 << "1"
                                 << "1e-5 0" << 1 << 1;
    QTest::newRow("symmetric rtol") << "f32"
                                    << "1"
                                    << "1.01"
                                    << "1e-5 0" << 1 << 1;
    QTest::newRow("NaN payloads differ") << "f32"
                                         << "0x7fc00001"
                                         << "0x7fc00002"
                                         << "exact" << 1 << 0;
    QTest::newRow("NaN vs number") << "f32"
                                   << "nan"
                                   << "1"
                                   << "1 1" << 1 << 1;
    QTest::newRow("-0 vs 0") << "f32"
                             << "-0"
                             << "0"
                             << "exact" << 1 << 0;
    QTest::newRow("inf vs max") << "f32"
                                << "inf"
                                << "3.4e38"
                                << "1 1" << 1 << 1;
    QTest::newRow("f16 one ulp within") << "f16"
                                        << "1.0009765625"
                                        << "1"
                                        << "1e-3 0" << 1 << 0;
    QTest::newRow("i32 differ") << "i32"
                                << "7"
                                << "8"
                                << "1 1" << 1 << 1;
    QTest::newRow("bool same") << "bool"
                               << "true"
                               << "true"
                               << "exact" << 0 << 0;
  }
  void raceCheck() {
    QFETCH(QString, dtype);
    QFETCH(QString, run1);
    QFETCH(QString, run2);
    QFETCH(QString, tolerance);
    QFETCH(int, differentBits);
    QFETCH(int, beyond);
    const DType d = *kwb::dtypeFromName(dtype.toStdString());
    Tolerance t = kExact;
    if (tolerance != "exact")
      t = tol(tolerance.section(' ', 0, 0).toDouble(), tolerance.section(' ', 1, 1).toDouble());
    const auto r = kwb::differenceBeyondRounding(element(d, run1), element(d, run2), d, 1, t);
    QCOMPARE(r.differentBits, std::uint64_t(differentBits));
    QCOMPARE(r.beyondRounding, std::uint64_t(beyond));
    QCOMPARE(r.race(), beyond > 0);
    QCOMPARE(kwb::sameBits(element(d, run1), element(d, run2)), differentBits == 0);
  }

  void raceSummary() {
    std::vector<float> a(64), b(64);
    for (int i = 0; i < 64; ++i) a[i] = b[i] = float(i);
    QCOMPARE(kwb::differenceBeyondRounding(bytesOf(a), bytesOf(b), DType::F32, 64, tol(1e-5, 0)).summary,
             std::string("the two runs agree bit for bit"));
    b[9] = std::nextafter(9.0f, 10.0f);
    QCOMPARE(
        kwb::differenceBeyondRounding(bytesOf(a), bytesOf(b), DType::F32, 64, tol(1e-5, 0)).summary,
        std::string(
            "the two runs differ in 1 of 64 elements, all within rounding (largest difference 9.5e-07)"));
    b[17] = 0;
    b[40] = 1;
    const std::int64_t shape[] = {8, 8};
    const auto r = kwb::differenceBeyondRounding(bytesOf(a), bytesOf(b), DType::F32, 64, tol(1e-5, 0), shape);
    QCOMPARE(r.differentBits, 3ull);
    QCOMPARE(r.beyondRounding, 2ull);
    QCOMPARE(r.firstBeyondRounding[0].coordinates, (std::vector<std::int64_t>{2, 1}));
    QCOMPARE(r.summary,
             std::string("the two runs differ beyond rounding in 2 of 64 elements (first at [2, 1]: 17, "
                         "then 0): a race between threads or a read of uninitialized memory"));
  }

  void nearConstant() {
    const Tolerance t = tol(1e-5, 1e-7);
    {  // All zeros.
      const std::vector<float> zeros(1000, 0.0f);
      const auto c = kwb::isNearConstant(bytesOf(zeros), DType::F32, 1000, t, "y");
      QVERIFY(c.nearConstant);
      QCOMPARE(c.constant, 0.0);
      QCOMPARE(c.warning,
               std::string("output 'y': every element of the reference output is 0, so a kernel that "
                           "writes 0 everywhere passes. Change the inputs or the tolerance so the "
                           "correct output varies."));
    }
    {  // Tiny values under atol: an all-zero kernel passes.
      auto v =
          kwb::generateInput(DType::F32, 1000, {kwb::Generator::Kind::Uniform, -5e-8, 5e-8, 0}, 1, "tiny");
      const auto c = kwb::isNearConstant(v, DType::F32, 1000, t, "y");
      QVERIFY(c.nearConstant);
      QCOMPARE(c.constant, 0.0);
      QVERIFY2(QString::fromStdString(c.warning).startsWith(
                   "output 'y': a kernel that writes only zeros would pass: "
                   "every element of the reference output is within "
                   "tolerance of 0 (largest magnitude 5e-08; rtol 1e-05, "
                   "atol 1e-07)."),
               c.warning.c_str());
    }
    {  // 1 ± 1e-6 under rtol 1e-5: a constant kernel passes.
      auto v = kwb::generateInput(DType::F64, 1000, {kwb::Generator::Kind::Uniform, 1 - 1e-6, 1 + 1e-6, 0}, 1,
                                  "one");
      const auto c = kwb::isNearConstant(v, DType::F64, 1000, t, "y");
      QVERIFY(c.nearConstant);
      QVERIFY(std::fabs(c.constant - 1) < 2e-6);
      QVERIFY2(QString::fromStdString(c.warning).contains("everywhere would pass"), c.warning.c_str());
    }
    {  // Real outputs are not flagged.
      auto v = kwb::generateInput(DType::F32, 100000, {kwb::Generator::Kind::Normal, 0, 1, 0}, 1, "real");
      const auto c = kwb::isNearConstant(v, DType::F32, 100000, t, "y");
      QVERIFY(!c.nearConstant);
      QVERIFY(c.warning.empty());
    }
    {  // Softmax-sized values (about 1e-3) under a loose atol of 1e-2: zeros pass.
      auto v = kwb::generateInput(DType::F32, 4096, {kwb::Generator::Kind::Uniform, 0, 2e-3, 0}, 1, "soft");
      QVERIFY(kwb::isNearConstant(v, DType::F32, 4096, tol(0, 1e-2), "y").nearConstant);
      QVERIFY(!kwb::isNearConstant(v, DType::F32, 4096, tol(1e-5, 1e-7), "y").nearConstant);
    }
    {  // Integers: only an output where every element is the same value.
      const std::vector<std::int32_t> sevens(100, 7);
      const auto c = kwb::isNearConstant(bytesOf(sevens), DType::I32, 100, kExact, "idx");
      QVERIFY(c.nearConstant);
      QCOMPARE(c.constant, 7.0);
      QVERIFY(QString::fromStdString(c.warning).startsWith(
          "output 'idx': every element of the reference output is "
          "7, so a kernel that writes 7 everywhere passes."));
      std::vector<std::int32_t> varied = sevens;
      varied[50] = 8;
      QVERIFY(!kwb::isNearConstant(bytesOf(varied), DType::I32, 100, kExact, "idx").nearConstant);
    }
    {  // bool all false; f16 all equal.
      const std::vector<std::uint8_t> falses(64, 0);
      QVERIFY(kwb::isNearConstant(bytesOf(falses), DType::Bool, 64, kExact).nearConstant);
      const std::vector<std::uint16_t> halves(64, kwb::doubleToHalf(0.5));
      const auto c = kwb::isNearConstant(bytesOf(halves), DType::F16, 64, t);
      QVERIFY(c.nearConstant);
      QCOMPARE(c.constant, 0.5);
    }
    {  // Nothing to check.
      const auto c = kwb::isNearConstant({}, DType::F32, 0, t, "y");
      QVERIFY(c.nearConstant);
      QVERIFY(QString::fromStdString(c.warning).contains("no elements"));
    }
    {  // A NaN reference is the comparison's business (a broken task), not flagged here.
      const std::vector<float> nans(4, std::numeric_limits<float>::quiet_NaN());
      QVERIFY(!kwb::isNearConstant(bytesOf(nans), DType::F32, 4, t).nearConstant);
    }
  }

  void errors() {
    std::vector<std::byte> small(4), big(8);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::compareOutputs(small, big, DType::F32, 2, kExact));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::compareOutputs(big, small, DType::F32, 2, kExact));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             kwb::differenceBeyondRounding(big, small, DType::I32, 2, kExact));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::isNearConstant(small, DType::F64, 1, kExact));
  }

  // Large outputs compared over several threads: every field of the reports, the race check's
  // and sameBits's answers are those of one thread.
  void parallelMatchesOneThread_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<bool>("nans");
    for (const char *d : {"f32", "f16", "bf16", "f64"}) {
      QTest::newRow(d) << d << false;
      QTest::newRow((std::string(d) + " NaN inf").c_str()) << d << true;
    }
    QTest::newRow("i32") << "i32" << false;
    QTest::newRow("i8") << "i8" << false;
  }
  void parallelMatchesOneThread() {
    QFETCH(QString, dtype);
    QFETCH(bool, nans);
    const DType d = *kwb::dtypeFromName(dtype.toStdString());
    const LargeCase c = largeCase(d, nans);
    const bool floating = kwb::dtypeIsFloating(d);
    const Tolerance t = floating ? tol(1e-2, 1e-5) : kExact;

    // One thread: the expected figures.
    const auto one = kwb::compareOutputs(c.got, c.want, d, c.n, t, c.shape, 10, 1);
    QCOMPARE(one.mismatches, std::uint64_t(c.mismatches.size()));
    QCOMPARE(one.firstMismatches.size(), std::size_t(10));
    for (std::size_t i = 0; i < 10; ++i) QCOMPARE(one.firstMismatches[i].index, c.mismatches[i]);
    QCOMPARE(one.firstMismatches[1].coordinates, (std::vector<std::int64_t>{32, 1504}));  // 65536
    if (nans) {
      QCOMPARE(one.maxAbsError, std::numeric_limits<double>::infinity());
      QCOMPARE(one.maxAbsErrorIndex, 3 * kBlock + 3);
      QCOMPARE(one.maxRelErrorIndex, 3 * kBlock + 3);
      QCOMPARE(one.nanInReference, std::uint64_t(9));
      QCOMPARE(one.firstReferenceNaN.front(), 5 * kBlock + 2);
      QCOMPARE(one.nanInGot, std::uint64_t(23));
      QVERIFY(one.referenceBroken());
    } else {
      QCOMPARE(one.maxAbsErrorIndex, c.absTie);
      QCOMPARE(one.maxRelErrorIndex, c.relTie);
      QCOMPARE(one.maxRelError, floating ? 1.0 : 4.0);
      QVERIFY(one.relativeL2Error > 0 && std::isfinite(one.relativeL2Error));
      QCOMPARE(one.nanInReference, std::uint64_t(0));
    }

    // The same with any number of threads, any number of reported elements.
    for (std::size_t reported : {std::size_t(10), std::size_t(0), std::size_t(1000)}) {
      const auto base = kwb::compareOutputs(c.got, c.want, d, c.n, t, c.shape, reported, 1);
      QCOMPARE(base.firstMismatches.size(), std::min(reported, c.mismatches.size()));
      for (unsigned threads : {0u, 2u, 3u, 7u, 16u, 64u}) {
        compareReports(base, kwb::compareOutputs(c.got, c.want, d, c.n, t, c.shape, reported, threads));
        if (QTest::currentTestFailed()) qWarning("compareOutputs: %u threads, %zu reported", threads, reported);
        QVERIFY(!QTest::currentTestFailed());
      }
    }
    // Flat indices, and counts that end inside a block.
    for (std::uint64_t n : {c.n - 1, std::uint64_t(40 * kBlock + 1), std::uint64_t(2 * kBlock)}) {
      const auto base = kwb::compareOutputs(c.got, c.want, d, n, t, {}, 10, 1);
      for (unsigned threads : {0u, 5u}) {
        compareReports(base, kwb::compareOutputs(c.got, c.want, d, n, t, {}, 10, threads));
        if (QTest::currentTestFailed()) qWarning("compareOutputs: %llu elements, %u threads", (unsigned long long)n, threads);
        QVERIFY(!QTest::currentTestFailed());
      }
    }

    // The race check: candidate vs reference as two runs.
    const auto race = kwb::differenceBeyondRounding(c.got, c.want, d, c.n, t, c.shape, 10, 1);
    QCOMPARE(race.beyondRounding, nans ? std::uint64_t(c.mismatches.size() + 9) : std::uint64_t(c.mismatches.size()));
    for (std::size_t reported : {std::size_t(10), std::size_t(1000)}) {
      const auto base = kwb::differenceBeyondRounding(c.got, c.want, d, c.n, t, c.shape, reported, 1);
      for (unsigned threads : {0u, 2u, 7u, 16u}) {
        compareDifferences(base, kwb::differenceBeyondRounding(c.got, c.want, d, c.n, t, c.shape, reported, threads));
        if (QTest::currentTestFailed()) qWarning("differenceBeyondRounding: %u threads", threads);
        QVERIFY(!QTest::currentTestFailed());
      }
    }

    // sameBits: equal buffers, and one byte off at the start, at a chunk boundary, at the end.
    auto copy = c.got;
    for (unsigned threads : {0u, 1u, 3u, 16u}) QVERIFY(kwb::sameBits(c.got, copy, threads));
    for (std::size_t at : {std::size_t(0), std::size_t(2 << 20), copy.size() / 2, copy.size() - 1}) {
      copy[at] ^= std::byte{1};
      for (unsigned threads : {0u, 1u, 3u, 16u}) QVERIFY(!kwb::sameBits(c.got, copy, threads));
      copy[at] ^= std::byte{1};
    }
    QVERIFY(!kwb::sameBits(c.got, std::span(copy).first(copy.size() - 1), 4));
  }

  // Single against multi-threaded time, for the report (no assertion on it): 8 Mi f32.
  void parallelSpeed() {
    const std::uint64_t n = std::uint64_t(8) << 20;
    const auto want = kwb::generateInput(DType::F32, n, {kwb::Generator::Kind::Normal, 0, 1, 0}, 1, "want");
    auto got = kwb::generateInput(DType::F32, n, {kwb::Generator::Kind::Normal, 0, 1, 0}, 2, "got");
    const Tolerance t = tol(1e-5, 1e-7);
    const auto time = [](auto &&f) {
      QElapsedTimer timer;
      timer.start();
      f();
      return timer.nsecsElapsed() / 1e6;
    };
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    kwb::ComparisonReport a, b;
    const double compare1 = time([&] { a = kwb::compareOutputs(got, want, DType::F32, n, t, {}, 10, 1); });
    const double compareN = time([&] { b = kwb::compareOutputs(got, want, DType::F32, n, t, {}, 10, 0); });
    compareReports(a, b);
    kwb::RunDifference x, y;
    const double differ1 = time([&] { x = kwb::differenceBeyondRounding(got, want, DType::F32, n, t, {}, 10, 1); });
    const double differN = time([&] { y = kwb::differenceBeyondRounding(got, want, DType::F32, n, t, {}, 10, 0); });
    compareDifferences(x, y);
    const auto same = want;
    bool s1 = false, sN = false;
    const double same1 = time([&] { s1 = kwb::sameBits(want, same, 1); });
    const double sameN = time([&] { sN = kwb::sameBits(want, same, 0); });
    QVERIFY(s1 && sN);
    qInfo("8 Mi f32, 1 thread vs %u: compareOutputs %.1f vs %.1f ms, differenceBeyondRounding %.1f vs %.1f ms, "
          "sameBits %.1f vs %.1f ms",
          hardware, compare1, compareN, differ1, differN, same1, sameN);
  }

  // Not a benchmark, a sanity figure for the report: 16 Mi f32 elements.
  void throughput() {
    const std::uint64_t n = std::uint64_t(16) << 20;
    const auto want = kwb::generateInput(DType::F32, n, {kwb::Generator::Kind::Normal, 0, 1, 0}, 1, "want");
    auto got = want;
    QElapsedTimer timer;
    timer.start();
    const auto r = kwb::compareOutputs(got, want, DType::F32, n, tol(1e-5, 1e-7));
    const double seconds = timer.nsecsElapsed() / 1e9;
    QVERIFY(r.passed());
    qInfo("compare f32, 16 Mi elements: %.3f s (%.0f M/s)", seconds, n / seconds / 1e6);
  }
};

QTEST_APPLESS_MAIN(TestEvalCompare)
#include "tst_eval_compare.moc"
