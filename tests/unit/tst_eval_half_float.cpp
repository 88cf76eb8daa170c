// f16 and bf16 conversions: every one of the 65536 bit patterns decoded and round-tripped,
// every tie between neighbouring values rounded to even, the edges (subnormals, overflow,
// NaN payloads), and where the compiler has _Float16, a cross-check against its conversions.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/eval/half_float.h"

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Independent decoders, from the formats' definitions.
double halfByFormula(std::uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exponent = (h >> 10) & 0x1f;
  const int fraction = h & 0x3ff;
  if (exponent == 0x1f) return fraction ? std::nan("") : sign * kInf;
  if (exponent == 0) return sign * std::ldexp(double(fraction), -24);
  return sign * std::ldexp(1.0 + fraction / 1024.0, exponent - 15);
}

double bfloat16ByFormula(std::uint16_t b) {
  const int sign = (b >> 15) ? -1 : 1;
  const int exponent = (b >> 7) & 0xff;
  const int fraction = b & 0x7f;
  if (exponent == 0xff) return fraction ? std::nan("") : sign * kInf;
  if (exponent == 0) return sign * std::ldexp(double(fraction), -133);
  return sign * std::ldexp(1.0 + fraction / 128.0, exponent - 127);
}

bool isHalfNaN(std::uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}
bool isBfloat16NaN(std::uint16_t b) {
  return (b & 0x7f80) == 0x7f80 && (b & 0x7f);
}

std::uint16_t even(std::uint16_t a, std::uint16_t b) {
  return (a & 1) ? b : a;
}

}  // namespace

class TestEvalHalfFloat : public QObject {
  Q_OBJECT
 private slots:
  void halfDecodeAll() {
    for (std::uint32_t h = 0; h < 65536; ++h) {
      const float f = kwb::halfToFloat(std::uint16_t(h));
      const double expected = halfByFormula(std::uint16_t(h));
      if (std::isnan(expected)) {
        QVERIFY2(std::isnan(f), qPrintable(QString::number(h, 16)));
        // Sign and payload are kept bit for bit.
        const auto bits = std::bit_cast<std::uint32_t>(f);
        QCOMPARE(bits >> 31, h >> 15);
        QCOMPARE((bits >> 13) & 0x3ffu, h & 0x3ffu);
        QCOMPARE(bits & 0x1fffu, 0u);
        continue;
      }
      QVERIFY2(double(f) == expected, qPrintable(QString::number(h, 16)));
      QCOMPARE(std::signbit(f), bool(h >> 15));  // -0 stays -0
    }
  }

  void halfRoundTripAll() {
    for (std::uint32_t h = 0; h < 65536; ++h) {
      const auto bits = std::uint16_t(h);
      const float f = kwb::halfToFloat(bits);
      if (isHalfNaN(bits)) {
        // NaN comes back quiet with its sign and payload.
        QCOMPARE(kwb::floatToHalf(f), std::uint16_t(bits | 0x200));
        QCOMPARE(kwb::doubleToHalf(double(f)), std::uint16_t(bits | 0x200));
        continue;
      }
      QCOMPARE(kwb::floatToHalf(f), bits);
      QCOMPARE(kwb::doubleToHalf(double(f)), bits);
    }
  }

  void bfloat16DecodeAll() {
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const float f = kwb::bfloat16ToFloat(std::uint16_t(b));
      QCOMPARE(std::bit_cast<std::uint32_t>(f), b << 16);
      const double expected = bfloat16ByFormula(std::uint16_t(b));
      if (std::isnan(expected))
        QVERIFY(std::isnan(f));
      else
        QVERIFY2(double(f) == expected, qPrintable(QString::number(b, 16)));
    }
  }

  void bfloat16RoundTripAll() {
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const auto bits = std::uint16_t(b);
      const float f = kwb::bfloat16ToFloat(bits);
      if (isBfloat16NaN(bits)) {
        QCOMPARE(kwb::floatToBfloat16(f), std::uint16_t(bits | 0x40));
        QCOMPARE(kwb::doubleToBfloat16(double(f)), std::uint16_t(bits | 0x40));
        continue;
      }
      QCOMPARE(kwb::floatToBfloat16(f), bits);
      QCOMPARE(kwb::doubleToBfloat16(double(f)), bits);
    }
  }

  // Every midpoint between two neighbouring finite values (and between the largest finite
  // value and the next power of two, which is where overflow starts) ties to the even pattern;
  // the smallest step either side of it goes to the nearer one. Negative values mirror.
  void halfTiesToEven() {
    for (std::uint16_t lo = 0; lo < 0x7c00; ++lo) {
      const std::uint16_t hi = lo + 1;  // 0x7c00 is infinity: 65520 ties to it
      const double a = halfByFormula(lo);
      const double b = hi == 0x7c00 ? 65536.0 : halfByFormula(hi);
      const double mid = (a + b) / 2;  // exact: 12 significant bits at most
      for (const double sign : {1.0, -1.0}) {
        const std::uint16_t s = sign < 0 ? 0x8000 : 0;
        const double m = sign * mid;
        QCOMPARE(kwb::doubleToHalf(m), std::uint16_t(s | even(lo, hi)));
        QCOMPARE(kwb::floatToHalf(float(m)), std::uint16_t(s | even(lo, hi)));
        // Just above / below the midpoint, in double: a single rounding gets these right where
        // rounding through float first would land on the tie.
        const double up = std::nextafter(mid, kInf) * sign, down = std::nextafter(mid, 0.0) * sign;
        QCOMPARE(kwb::doubleToHalf(up), std::uint16_t(s | hi));
        QCOMPARE(kwb::doubleToHalf(down), std::uint16_t(s | lo));
        QCOMPARE(kwb::floatToHalf(std::nextafter(float(mid), std::numeric_limits<float>::infinity()) *
                                  float(sign)),
                 std::uint16_t(s | hi));
        QCOMPARE(kwb::floatToHalf(std::nextafter(float(mid), 0.0f) * float(sign)), std::uint16_t(s | lo));
      }
    }
  }

  void bfloat16TiesToEven() {
    for (std::uint16_t lo = 0; lo < 0x7f80; ++lo) {
      const std::uint16_t hi = lo + 1;
      const double a = bfloat16ByFormula(lo);
      const double b = hi == 0x7f80 ? std::ldexp(1.0, 128) : bfloat16ByFormula(hi);
      const double mid = (a + b) / 2;
      for (const double sign : {1.0, -1.0}) {
        const std::uint16_t s = sign < 0 ? 0x8000 : 0;
        const double m = sign * mid;
        QCOMPARE(kwb::doubleToBfloat16(m), std::uint16_t(s | even(lo, hi)));
        QCOMPARE(kwb::doubleToBfloat16(std::nextafter(mid, kInf) * sign), std::uint16_t(s | hi));
        QCOMPARE(kwb::doubleToBfloat16(std::nextafter(mid, 0.0) * sign), std::uint16_t(s | lo));
        if (hi != 0x7f80) {  // 2^128 midpoint region is beyond float; float(m) would be inf
          QCOMPARE(kwb::floatToBfloat16(float(m)), std::uint16_t(s | even(lo, hi)));
          QCOMPARE(kwb::floatToBfloat16(std::nextafter(float(mid), std::numeric_limits<float>::infinity()) *
                                        float(sign)),
                   std::uint16_t(s | hi));
          QCOMPARE(kwb::floatToBfloat16(std::nextafter(float(mid), 0.0f) * float(sign)),
                   std::uint16_t(s | lo));
        }
      }
    }
  }

  void halfEdges_data() {
    QTest::addColumn<double>("value");
    QTest::addColumn<int>("bits");
    QTest::newRow("+0") << 0.0 << 0x0000;
    QTest::newRow("-0") << -0.0 << 0x8000;
    QTest::newRow("1") << 1.0 << 0x3c00;
    QTest::newRow("-2") << -2.0 << 0xc000;
    QTest::newRow("0.1") << 0.1 << 0x2e66;
    QTest::newRow("max 65504") << 65504.0 << 0x7bff;
    QTest::newRow("65519.99 rounds down") << 65519.99 << 0x7bff;
    QTest::newRow("65520 ties up to inf") << 65520.0 << 0x7c00;
    QTest::newRow("-65520 to -inf") << -65520.0 << 0xfc00;
    QTest::newRow("1e10 overflows") << 1e10 << 0x7c00;
    QTest::newRow("DBL_MAX overflows") << std::numeric_limits<double>::max() << 0x7c00;
    QTest::newRow("inf") << kInf << 0x7c00;
    QTest::newRow("-inf") << -kInf << 0xfc00;
    QTest::newRow("min normal 2^-14") << std::ldexp(1.0, -14) << 0x0400;
    QTest::newRow("max subnormal") << std::ldexp(1023.0, -24) << 0x03ff;
    QTest::newRow("max subnormal + half ulp ties to min normal") << std::ldexp(1023.5, -24) << 0x0400;
    QTest::newRow("min subnormal 2^-24") << std::ldexp(1.0, -24) << 0x0001;
    QTest::newRow("2^-25 ties to 0") << std::ldexp(1.0, -25) << 0x0000;
    QTest::newRow("-2^-25 ties to -0") << -std::ldexp(1.0, -25) << 0x8000;
    QTest::newRow("just above 2^-25") << std::nextafter(std::ldexp(1.0, -25), 1.0) << 0x0001;
    QTest::newRow("1.5 × 2^-24 ties to 2") << std::ldexp(1.5, -24) << 0x0002;
    QTest::newRow("2.5 × 2^-24 ties to 2") << std::ldexp(2.5, -24) << 0x0002;
    QTest::newRow("1e-30 underflows") << 1e-30 << 0x0000;
    QTest::newRow("double subnormal") << std::numeric_limits<double>::denorm_min() << 0x0000;
    QTest::newRow("1 + 2^-11 ties to 1") << 1.0 + std::ldexp(1.0, -11) << 0x3c00;
    QTest::newRow("1 + 3 × 2^-11 ties to 1 + 2^-9") << 1.0 + 3 * std::ldexp(1.0, -11) << 0x3c02;
    QTest::newRow("2047.5 → 2048") << 2047.5 << 0x6800;
    QTest::newRow("2049 ties to 2048") << 2049.0 << 0x6800;
    QTest::newRow("2051 ties to 2052") << 2051.0 << 0x6802;
  }
  void halfEdges() {
    QFETCH(double, value);
    QFETCH(int, bits);
    QCOMPARE(int(kwb::doubleToHalf(value)), bits);
    if (std::fabs(value) <= double(std::numeric_limits<float>::max()) && double(float(value)) == value)
      QCOMPARE(int(kwb::floatToHalf(float(value))), bits);
  }

  void bfloat16Edges_data() {
    QTest::addColumn<double>("value");
    QTest::addColumn<int>("bits");
    QTest::newRow("1") << 1.0 << 0x3f80;
    QTest::newRow("-0") << -0.0 << 0x8000;
    QTest::newRow("pi") << 3.141592653589793 << 0x4049;
    QTest::newRow("max finite") << 3.3895313892515355e38 << 0x7f7f;
    QTest::newRow("FLT_MAX overflows") << double(std::numeric_limits<float>::max()) << 0x7f80;
    QTest::newRow("1e39 overflows") << 1e39 << 0x7f80;
    QTest::newRow("min subnormal 2^-133") << std::ldexp(1.0, -133) << 0x0001;
    QTest::newRow("2^-134 ties to 0") << std::ldexp(1.0, -134) << 0x0000;
    QTest::newRow("min normal 2^-126") << std::ldexp(1.0, -126) << 0x0080;
    QTest::newRow("1 + 2^-8 ties to 1") << 1.0 + std::ldexp(1.0, -8) << 0x3f80;
    QTest::newRow("1 + 3 × 2^-8 ties up") << 1.0 + 3 * std::ldexp(1.0, -8) << 0x3f82;
    QTest::newRow("257 ties to 256") << 257.0 << 0x4380;
  }
  void bfloat16Edges() {
    QFETCH(double, value);
    QFETCH(int, bits);
    QCOMPARE(int(kwb::doubleToBfloat16(value)), bits);
    if (std::fabs(value) <= double(std::numeric_limits<float>::max()) && double(float(value)) == value)
      QCOMPARE(int(kwb::floatToBfloat16(float(value))), bits);
  }

  void nanPayloads() {
    // A quiet float NaN keeps its sign and top payload bits.
    const float payload = std::bit_cast<float>(0xffd54000u);  // -NaN, payload 0x154000
    QCOMPARE(kwb::floatToHalf(payload), std::uint16_t(0xfe00 | (0x154000u >> 13)));
    QCOMPARE(kwb::floatToBfloat16(payload), std::uint16_t(0xffd5));
    // A payload only in bits the narrow format drops still comes out NaN (quiet).
    const float low = std::bit_cast<float>(0x7f800001u);
    QCOMPARE(kwb::floatToHalf(low), std::uint16_t(0x7e00));
    QCOMPARE(kwb::floatToBfloat16(low), std::uint16_t(0x7fc0));
    QCOMPARE(kwb::doubleToBfloat16(std::bit_cast<double>(0x7ff0000000000001ull)), std::uint16_t(0x7fc0));
    QCOMPARE(kwb::doubleToHalf(std::nan("")), std::uint16_t(0x7e00));
  }

  // Two implementations of float → bf16 (the bit trick and the general rounding) agree on a
  // stride through every float exponent and fraction pattern.
  void bfloat16FromFloatAgrees() {
    for (std::uint64_t i = 0; i < (std::uint64_t(1) << 32); i += 251) {
      const float f = std::bit_cast<float>(std::uint32_t(i));
      const std::uint16_t a = kwb::floatToBfloat16(f), b = kwb::doubleToBfloat16(double(f));
      if (a != b)
        QFAIL(qPrintable(QString("float 0x%1: %2 vs %3").arg(i, 8, 16).arg(a, 0, 16).arg(b, 0, 16)));
    }
  }

  // GCC's _Float16 converts in software (libgcc) without F16C: an independent implementation.
  void halfAgreesWithCompiler() {
#if defined(__FLT16_MAX__)
    for (std::uint64_t i = 0; i < (std::uint64_t(1) << 32); i += 253) {
      const float f = std::bit_cast<float>(std::uint32_t(i));
      const auto expected = std::bit_cast<std::uint16_t>(static_cast<_Float16>(f));
      if (std::isnan(f)) {
        QVERIFY(isHalfNaN(kwb::floatToHalf(f)));
        continue;
      }
      const std::uint16_t got = kwb::floatToHalf(f);
      if (got != expected)
        QFAIL(qPrintable(QString("float 0x%1: %2 vs %3").arg(i, 8, 16).arg(got, 0, 16).arg(expected, 0, 16)));
    }
    // Doubles straight to f16 (no double rounding through float).
    std::uint64_t x = 0x243F6A8885A308D3ull;
    for (int n = 0; n < 2000000; ++n) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      // Exponents around f16's range: 2^-30 to 2^17.
      const std::uint64_t exponent = 1023 - 30 + (x >> 58) % 48;
      const double d = std::bit_cast<double>((x & 0x800fffffffffffffull) | (exponent << 52));
      const auto expected = std::bit_cast<std::uint16_t>(static_cast<_Float16>(d));
      const std::uint16_t got = kwb::doubleToHalf(d);
      if (got != expected)
        QFAIL(qPrintable(
            QString("double %1: %2 vs %3").arg(d, 0, 'g', 17).arg(got, 0, 16).arg(expected, 0, 16)));
    }
#else
    QSKIP("the compiler has no _Float16");
#endif
  }
};

QTEST_APPLESS_MAIN(TestEvalHalfFloat)
#include "tst_eval_half_float.moc"
