// Input generation: Philox known answers, determinism (same inputs, same bytes, for any thread
// count or index range), independence of seeds, offsets and names, statistics of 10^6 draws,
// every dtype's encoding of the same underlying values, arange exactness, and throughput.
#include <QElapsedTimer>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "core/eval/half_float.h"
#include "core/eval/input_generator.h"

using kwb::DType;
using kwb::Generator;

namespace {

constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                                DType::I32, DType::I8,  DType::U8,  DType::Bool};

Generator gen(Generator::Kind kind, double a, double b, std::uint64_t offset = 0) {
  Generator g;
  g.kind = kind;
  g.a = a;
  g.b = b;
  g.seedOffset = offset;
  return g;
}

// Element i of a buffer, decoded to double.
double valueAt(const std::vector<std::byte> &buffer, DType dtype, std::size_t i) {
  const std::byte *p = buffer.data() + i * kwb::dtypeSize(dtype);
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (dtype) {
    case DType::F64:
      return load(double{});
    case DType::F32:
      return load(float{});
    case DType::F16:
      return kwb::halfToFloat(load(std::uint16_t{}));
    case DType::BF16:
      return kwb::bfloat16ToFloat(load(std::uint16_t{}));
    case DType::I64:
      return double(load(std::int64_t{}));
    case DType::I32:
      return load(std::int32_t{});
    case DType::I8:
      return load(std::int8_t{});
    case DType::U8:
      return load(std::uint8_t{});
    case DType::Bool:
      return load(std::uint8_t{});
  }
  return 0;
}

std::vector<double> values(const std::vector<std::byte> &buffer, DType dtype) {
  std::vector<double> out(buffer.size() / kwb::dtypeSize(dtype));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = valueAt(buffer, dtype, i);
  return out;
}

struct Moments {
  double mean = 0, stddev = 0, lowest = 0, highest = 0;
};
Moments moments(const std::vector<double> &v) {
  Moments m;
  long double sum = 0, squares = 0;
  for (double x : v) sum += x;
  m.mean = double(sum / v.size());
  for (double x : v) squares += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(double(squares / v.size()));
  m.lowest = *std::min_element(v.begin(), v.end());
  m.highest = *std::max_element(v.begin(), v.end());
  return m;
}

// A generator that suits the dtype (the manifest allows uniform/normal on floats only).
Generator suitable(DType dtype, int variant) {
  const bool floating = kwb::dtypeIsFloating(dtype);
  switch (variant) {
    case 0:
      return floating ? gen(Generator::Kind::Uniform, -1, 1) : gen(Generator::Kind::RandInt, 0, 2);
    case 1:
      return floating ? gen(Generator::Kind::Normal, 0, 1) : gen(Generator::Kind::RandInt, 0, 100);
    default:
      return gen(Generator::Kind::RandInt, 0, 2);
  }
}

}  // namespace

class TestEvalInputGenerator : public QObject {
  Q_OBJECT
 private slots:
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  void philoxKnownAnswers() {
    using B = kwb::PhiloxBlock;
    QCOMPARE(kwb::philox4x32(B{0, 0, 0, 0}, {0, 0}), (B{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
    QCOMPARE(kwb::philox4x32(B{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
             (B{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
    QCOMPARE(kwb::philox4x32(B{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
             (B{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  }

  void keyDependsOnEveryPart() {
    const auto k = kwb::inputKey(1, 0, "x");
    QCOMPARE(kwb::inputKey(1, 0, "x"), k);
    QVERIFY(!(kwb::inputKey(2, 0, "x") == k));
    QVERIFY(!(kwb::inputKey(1, 1, "x") == k));
    QVERIFY(!(kwb::inputKey(1, 0, "y") == k));
    QVERIFY(!(kwb::inputKey(0, 1, "x") == kwb::inputKey(1, 0, "x")));
    // FNV-1a and splitmix64 reference values.
    QCOMPARE(kwb::fnv1a64(""), 0xcbf29ce484222325ull);
    QCOMPARE(kwb::fnv1a64("a"), 0xaf63dc4c8601ec8cull);
    QCOMPARE(kwb::splitmix64(0), 0xe220a8397b1dcdafull);
  }

  // The recipe in input_generator.h, step by step, so a GPU implementation can follow it.
  void followsTheDocumentedRecipe() {
    std::uint64_t x = kwb::splitmix64(kwb::fnv1a64("x"));
    x = kwb::splitmix64(x ^ 5);
    x = kwb::splitmix64(x ^ 2);
    const kwb::PhiloxKey key{std::uint32_t(x), std::uint32_t(x >> 32)};
    QCOMPARE(kwb::inputKey(5, 2, "x"), key);
    const auto u = [](std::uint32_t hi, std::uint32_t lo) {
      return double(((std::uint64_t(hi) << 32) | lo) >> 11) * 0x1p-53;
    };
    const auto uniform = values(
        kwb::generateInput(DType::F64, 1000, gen(Generator::Kind::Uniform, -2, 3, 2), 5, "x"), DType::F64);
    const auto normal = values(
        kwb::generateInput(DType::F64, 1000, gen(Generator::Kind::Normal, 1, 2, 2), 5, "x"), DType::F64);
    const auto randint = values(
        kwb::generateInput(DType::I64, 1000, gen(Generator::Kind::RandInt, -7, 1000, 2), 5, "x"), DType::I64);
    for (std::uint32_t i : {0u, 1u, 15u, 16u, 17u, 500u, 999u}) {
      const auto w = kwb::philox4x32({i, 0, 0, 0}, key);
      QCOMPARE(uniform[i], -2 + 5 * u(w[0], w[1]));
      QCOMPARE(normal[i], 1 + 2 * (std::sqrt(-2 * std::log(1 - u(w[0], w[1]))) *
                                   std::cos(6.283185307179586 * u(w[2], w[3]))));
      const double high64 = double((std::uint64_t(w[0]) << 32) | w[1]);
      QCOMPARE(randint[i], -7 + std::floor(std::ldexp(high64, -64) * 1007));
    }
  }

  void deterministic() {
    for (DType dtype : kAllDTypes)
      for (int variant = 0; variant < 3; ++variant) {
        const Generator g = suitable(dtype, variant);
        const auto a = kwb::generateInput(dtype, 10007, g, 42, "x");
        const auto b = kwb::generateInput(dtype, 10007, g, 42, "x");
        QVERIFY(a == b);
        QCOMPARE(a.size(), 10007 * kwb::dtypeSize(dtype));
      }
  }

  void seedsOffsetsAndNamesDiffer() {
    for (DType dtype : {DType::F32, DType::F16, DType::I32, DType::U8}) {
      const Generator g = suitable(dtype, 1);
      Generator shifted = g;
      shifted.seedOffset = 1;
      const auto base = values(kwb::generateInput(dtype, 100000, g, 1, "x"), dtype);
      const std::vector<std::vector<double>> others{
          values(kwb::generateInput(dtype, 100000, g, 2, "x"), dtype),
          values(kwb::generateInput(dtype, 100000, shifted, 1, "x"), dtype),
          values(kwb::generateInput(dtype, 100000, g, 1, "y"), dtype),
      };
      for (const auto &other : others) {
        std::size_t same = 0;
        for (std::size_t i = 0; i < base.size(); ++i) same += base[i] == other[i];
        // Independent draws agree only by chance: randint [0, 100) 1%, f16 normals well under 1%.
        QVERIFY2(same < base.size() / 50, qPrintable(QString("%1 equal of %2").arg(same).arg(base.size())));
      }
    }
  }

  // Element i depends on i alone: any thread count and any index range give the same bytes.
  void independentOfThreadsAndRanges() {
    for (DType dtype : kAllDTypes) {
      const Generator g = suitable(dtype, 1);
      const std::uint64_t n = 200003;
      const auto one = kwb::generateInput(dtype, n, g, 7, "w", 1);
      for (unsigned threads : {2u, 3u, 7u, 0u})
        QVERIFY(kwb::generateInput(dtype, n, g, 7, "w", threads) == one);
      const std::size_t size = kwb::dtypeSize(dtype);
      std::vector<std::byte> part(777 * size);
      // 123457 is not a multiple of the 16 counters generated together, 777 not either.
      kwb::fillInputRange(part, dtype, g, kwb::inputKey(7, 0, "w"), 123457, 777);
      QVERIFY(std::equal(part.begin(), part.end(), one.begin() + 123457 * size));
    }
    // More threads than elements, and nothing at all.
    const auto g = gen(Generator::Kind::Uniform, 0, 1);
    QVERIFY(kwb::generateInput(DType::F32, 3, g, 1, "t", 8) ==
            kwb::generateInput(DType::F32, 3, g, 1, "t", 1));
    QVERIFY(kwb::generateInput(DType::F32, 0, g, 1, "t").empty());
  }

  void uniformStatistics() {
    const auto v = values(
        kwb::generateInput(DType::F64, 1000000, gen(Generator::Kind::Uniform, -2, 3), 1, "u"), DType::F64);
    const Moments m = moments(v);
    // Standard error of the mean: 5 / sqrt(12) / 1000 = 0.0014.
    QVERIFY2(std::fabs(m.mean - 0.5) < 0.01, qPrintable(QString::number(m.mean)));
    QVERIFY2(std::fabs(m.stddev - 5 / std::sqrt(12.0)) < 0.01, qPrintable(QString::number(m.stddev)));
    QVERIFY(m.lowest >= -2 && m.lowest < -1.999);
    QVERIFY(m.highest < 3 && m.highest > 2.999);
    // Ten equal bins, each 10% ± 0.3% (about 10 standard deviations).
    std::vector<int> bins(10);
    for (double x : v) ++bins[std::min(9, int((x + 2) / 0.5))];
    for (int count : bins) QVERIFY2(std::abs(count - 100000) < 3000, qPrintable(QString::number(count)));
  }

  void normalStatistics() {
    for (DType dtype : {DType::F64, DType::F32}) {
      const auto v =
          values(kwb::generateInput(dtype, 1000000, gen(Generator::Kind::Normal, 1.5, 4), 3, "n"), dtype);
      const Moments m = moments(v);
      QVERIFY2(std::fabs(m.mean - 1.5) < 0.03, qPrintable(QString::number(m.mean)));
      QVERIFY2(std::fabs(m.stddev - 4) < 0.03, qPrintable(QString::number(m.stddev)));
      std::size_t within1 = 0, within2 = 0, within3 = 0;
      for (double x : v) {
        const double z = std::fabs(x - 1.5) / 4;
        within1 += z < 1;
        within2 += z < 2;
        within3 += z < 3;
      }
      QVERIFY2(std::fabs(within1 / 1e6 - 0.682689) < 0.004, qPrintable(QString::number(within1)));
      QVERIFY2(std::fabs(within2 / 1e6 - 0.954500) < 0.002, qPrintable(QString::number(within2)));
      QVERIFY2(std::fabs(within3 / 1e6 - 0.997300) < 0.0005, qPrintable(QString::number(within3)));
      QVERIFY(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
    }
  }

  void randintCoversRangeNeverHigh() {
    {
      const auto v = values(
          kwb::generateInput(DType::I32, 1000000, gen(Generator::Kind::RandInt, -3, 5), 1, "r"), DType::I32);
      std::map<int, int> counts;
      for (double x : v) ++counts[int(x)];
      QCOMPARE(int(counts.size()), 8);
      QCOMPARE(counts.begin()->first, -3);
      QCOMPARE(counts.rbegin()->first, 4);
      for (const auto &[value, count] : counts)  // 125000 each, standard deviation 331
        QVERIFY2(std::abs(count - 125000) < 2500, qPrintable(QString("%1: %2").arg(value).arg(count)));
    }
    {  // The whole u8 range, [0, 256).
      const auto v = values(
          kwb::generateInput(DType::U8, 100000, gen(Generator::Kind::RandInt, 0, 256), 1, "b"), DType::U8);
      QCOMPARE(int(std::set<double>(v.begin(), v.end()).size()), 256);
    }
    {  // i8 [-128, 128).
      const auto v = values(
          kwb::generateInput(DType::I8, 100000, gen(Generator::Kind::RandInt, -128, 128), 1, "c"), DType::I8);
      const std::set<double> seen(v.begin(), v.end());
      QCOMPARE(int(seen.size()), 256);
    }
    {  // A wide i64 range: never high, mean near the middle.
      const double lo = -std::ldexp(1.0, 53), hi = std::ldexp(1.0, 53);
      const auto buffer =
          kwb::generateInput(DType::I64, 1000000, gen(Generator::Kind::RandInt, lo, hi), 1, "w");
      std::int64_t lowest = INT64_MAX, highest = INT64_MIN;
      long double sum = 0;
      for (std::size_t i = 0; i < 1000000; ++i) {
        std::int64_t x;
        std::memcpy(&x, buffer.data() + i * 8, 8);
        lowest = std::min(lowest, x);
        highest = std::max(highest, x);
        sum += x;
      }
      QVERIFY(lowest >= -(std::int64_t(1) << 53));
      QVERIFY(highest < (std::int64_t(1) << 53));
      QVERIFY(std::fabs(double(sum / 1e6) / std::ldexp(1.0, 53)) < 0.01);
      QVERIFY(highest - lowest > (std::int64_t(1) << 53));
    }
    {  // bool randint [0, 2): about half true, only 0 and 1 stored.
      const auto v = values(
          kwb::generateInput(DType::Bool, 100000, gen(Generator::Kind::RandInt, 0, 2), 1, "m"), DType::Bool);
      const auto ones = std::count(v.begin(), v.end(), 1.0);
      QCOMPARE(std::size_t(ones + std::count(v.begin(), v.end(), 0.0)), v.size());
      QVERIFY(std::abs(ones - 50000) < 1500);
    }
    {  // One value only.
      const auto v = values(
          kwb::generateInput(DType::I32, 1000, gen(Generator::Kind::RandInt, 9, 10), 1, "o"), DType::I32);
      QVERIFY(std::all_of(v.begin(), v.end(), [](double x) { return x == 9; }));
    }
  }

  // Rounding to a narrow float can reach `high`; the generator steps back below it.
  void uniformStaysBelowHighInEveryFloat() {
    const struct {
      DType dtype;
      double largestBelowOne;
    } cases[] = {{DType::F16, 1 - std::ldexp(1.0, -11)},
                 {DType::BF16, 1 - std::ldexp(1.0, -8)},
                 {DType::F32, 1 - std::ldexp(1.0, -24)}};
    for (const auto &c : cases) {
      const auto v =
          values(kwb::generateInput(c.dtype, 1000000, gen(Generator::Kind::Uniform, 0, 1), 5, "h"), c.dtype);
      const Moments m = moments(v);
      QVERIFY(m.lowest >= 0);
      QVERIFY2(m.highest < 1, qPrintable(QString::number(m.highest, 'g', 17)));
      if (c.dtype != DType::F32) QCOMPARE(m.highest, c.largestBelowOne);  // reached in 10^6 draws
      QVERIFY(std::fabs(m.mean - 0.5) < 0.01);
    }
    // Negative high: the next value down is more negative.
    const auto v = values(
        kwb::generateInput(DType::F16, 100000, gen(Generator::Kind::Uniform, -3, -1), 5, "g"), DType::F16);
    QVERIFY(*std::max_element(v.begin(), v.end()) < -1);
  }

  // The same generator and key in every dtype draw the same underlying values: f64 holds them
  // exactly, the others are its roundings.
  void dtypeEncodingsOfTheSameDraws() {
    const std::uint64_t n = 100000;
    for (const Generator &g : {gen(Generator::Kind::Normal, 0.25, 3), gen(Generator::Kind::Uniform, -5, 7),
                               gen(Generator::Kind::Arange, -1000.3, 0.01)}) {
      const auto f64 = kwb::generateInput(DType::F64, n, g, 9, "e");
      const auto f32 = kwb::generateInput(DType::F32, n, g, 9, "e");
      const auto f16 = kwb::generateInput(DType::F16, n, g, 9, "e");
      const auto bf16 = kwb::generateInput(DType::BF16, n, g, 9, "e");
      // Uniform values that round up to `high` are stepped back below it.
      const double high = g.kind == Generator::Kind::Uniform ? g.b : std::numeric_limits<double>::infinity();
      std::size_t steppedBack = 0;
      for (std::size_t i = 0; i < n; ++i) {
        double x;
        float f;
        std::uint16_t h, b;
        std::memcpy(&x, f64.data() + 8 * i, 8);
        std::memcpy(&f, f32.data() + 4 * i, 4);
        std::memcpy(&h, f16.data() + 2 * i, 2);
        std::memcpy(&b, bf16.data() + 2 * i, 2);
        QCOMPARE(f, float(x) >= high ? std::nextafter(float(x), -1e30f) : float(x));
        if (kwb::halfToFloat(kwb::doubleToHalf(x)) >= high) {
          QCOMPARE(h, std::uint16_t(kwb::doubleToHalf(x) - 1));
          ++steppedBack;
        } else {
          QCOMPARE(h, kwb::doubleToHalf(x));
        }
        if (kwb::bfloat16ToFloat(kwb::doubleToBfloat16(x)) >= high) {
          QCOMPARE(b, std::uint16_t(kwb::doubleToBfloat16(x) - 1));
          ++steppedBack;
        } else {
          QCOMPARE(b, kwb::doubleToBfloat16(x));
        }
      }
      if (g.kind == Generator::Kind::Uniform) QVERIFY(steppedBack > 0);  // the rule was exercised
    }
    // randint: every integer dtype and every float holds the same integers.
    const auto g = gen(Generator::Kind::RandInt, -100, 100);
    const auto reference = values(kwb::generateInput(DType::I64, n, g, 9, "k"), DType::I64);
    for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I32, DType::I8})
      QVERIFY(values(kwb::generateInput(dtype, n, g, 9, "k"), dtype) == reference);
    // Real draws on an integer dtype round toward negative infinity.
    const auto reals =
        values(kwb::generateInput(DType::F64, n, gen(Generator::Kind::Normal, 0, 50), 9, "k"), DType::F64);
    const auto floored =
        values(kwb::generateInput(DType::I32, n, gen(Generator::Kind::Normal, 0, 50), 9, "k"), DType::I32);
    for (std::size_t i = 0; i < n; ++i) QCOMPARE(floored[i], std::floor(reals[i]));
  }

  void arangeIsExact() {
    {  // f32 integers are exact to 2^24; beyond, each is the rounding of start + i·step.
      const std::uint64_t n = (1u << 24) + 16;
      const auto buffer = kwb::generateInput(DType::F32, n, gen(Generator::Kind::Arange, 0, 1), 1, "a");
      for (std::uint64_t i = 0; i < n; ++i) {
        float f;
        std::memcpy(&f, buffer.data() + 4 * i, 4);
        if (f != float(double(i))) QFAIL(qPrintable(QString("element %1 is %2").arg(i).arg(f)));
      }
      float last;
      std::memcpy(&last, buffer.data() + 4 * (1u << 24), 4);
      QCOMPARE(double(last), std::ldexp(1.0, 24));
    }
    {  // i64 beyond 2^53 in integer arithmetic.
      const double start = -std::ldexp(1.0, 53);
      const auto buffer =
          kwb::generateInput(DType::I64, 1000, gen(Generator::Kind::Arange, start, 3), 1, "a");
      for (std::int64_t i = 0; i < 1000; ++i) {
        std::int64_t x;
        std::memcpy(&x, buffer.data() + 8 * i, 8);
        QCOMPARE(x, -(std::int64_t(1) << 53) + 3 * i);
      }
    }
    const struct {
      DType dtype;
      double start, step;
      std::uint64_t n;
    } exact[] = {{DType::F64, 0.5, 0.25, 100000}, {DType::F16, 0, 1, 2049},
                 {DType::F16, -1024, 0.5, 4096},  {DType::BF16, 0, 1, 257},
                 {DType::I32, 5, -2, 100000},     {DType::U8, 0, 1, 256},
                 {DType::I8, -128, 1, 256},       {DType::F32, -3, 0.125, 1000}};
    for (const auto &c : exact) {
      const auto v = values(
          kwb::generateInput(c.dtype, c.n, gen(Generator::Kind::Arange, c.start, c.step), 1, "a"), c.dtype);
      for (std::uint64_t i = 0; i < c.n; ++i) QCOMPARE(v[i], c.start + double(i) * c.step);
    }
    // Integers saturate at the dtype's limits.
    const auto saturated =
        values(kwb::generateInput(DType::I8, 300, gen(Generator::Kind::Arange, -128, 1), 1, "s"), DType::I8);
    QCOMPARE(saturated[255], 127.0);
    QCOMPARE(saturated[299], 127.0);
  }

  void constants() {
    for (DType dtype : kAllDTypes) {
      const double value = dtype == DType::Bool ? 1 : (dtype == DType::U8 ? 200 : -5);
      const auto v =
          values(kwb::generateInput(dtype, 1000, gen(Generator::Kind::Constant, value, 0), 1, "c"), dtype);
      QVERIFY(std::all_of(v.begin(), v.end(), [&](double x) { return x == value; }));
    }
    const auto half = values(
        kwb::generateInput(DType::F16, 10, gen(Generator::Kind::Constant, 0.1, 0), 1, "c"), DType::F16);
    QCOMPARE(half[3], double(kwb::halfToFloat(kwb::doubleToHalf(0.1))));
  }

  // Issue 46's additions leave every existing generator's bytes as they were: FNV-1a of 1000
  // elements in every dtype (seed 5, tensor "golden"), measured on the code before scale, shift and
  // matrix existed.
  void existingGeneratorsKeepTheirBytes() {
    struct Case {
      Generator::Kind kind;
      double a, b;
      std::uint64_t offset, hash;
    };
    using K = Generator::Kind;
    const Case cases[] = {
        {K::Uniform, -1, 1, 0, 0x7a11754ae2e1c42bull},  {K::Uniform, 0, 1, 3, 0x727688b37e2961d7ull},
        {K::Uniform, -3, -1, 0, 0x4374b8783adbfee8ull}, {K::Normal, 0, 1, 0, 0x35443952145e545aull},
        {K::Normal, 1.5, 40, 2, 0x43364b09fb33f497ull}, {K::RandInt, 0, 2, 0, 0xecb43643e6c4a4b9ull},
        {K::RandInt, -300, 300, 1, 0x6fa54b4868164ae7ull}, {K::RandInt, -7, 1000, 0, 0x5864f85b257120eaull},
        {K::Arange, 0, 1, 0, 0x2e4f0c5b3b28f6bbull},    {K::Arange, -5, 0.25, 0, 0xd8aec0a110fce885ull},
        {K::Arange, 100, -3, 0, 0x839248f011abf573ull}, {K::Constant, 0.1, 0, 0, 0xd62db1d3f637aaddull},
        {K::Constant, 7, 0, 0, 0xffb4c4c93eb9ecddull},
    };
    for (const Case &c : cases) {
      std::string bytes;
      for (DType dtype : kAllDTypes) {
        const auto b = kwb::generateInput(dtype, 1000, gen(c.kind, c.a, c.b, c.offset), 5, "golden", 1);
        bytes.append(reinterpret_cast<const char *>(b.data()), b.size());
      }
      QVERIFY2(kwb::fnv1a64(bytes) == c.hash, qPrintable(QString("%1(%2, %3)").arg(int(c.kind)).arg(c.a).arg(c.b)));
      // The shape overload without a structure: the same bytes.
      const std::vector<std::int64_t> shape{10, 20, 5};
      QVERIFY(kwb::generateInput(DType::F32, shape, gen(c.kind, c.a, c.b, c.offset), 5, "golden") ==
              kwb::generateInput(DType::F32, 1000, gen(c.kind, c.a, c.b, c.offset), 5, "golden"));
    }
  }

  // x = draw * scale + shift, in double, then stored as the dtype stores any value.
  void scaleAndShift() {
    Generator bits = gen(Generator::Kind::RandInt, 0, 2);
    Generator sign = bits;  // torch.randint(0, 2, s).float() * 2 - 1
    sign.scale = 2;
    sign.shift = -1;
    const std::uint64_t n = 10000;
    const auto k = values(kwb::generateInput(DType::I32, n, bits, 3, "s"), DType::I32);
    const auto x = values(kwb::generateInput(DType::F32, n, sign, 3, "s"), DType::F32);
    std::map<double, int> seen;
    for (std::uint64_t i = 0; i < n; ++i) {
      QCOMPARE(x[i], 2 * k[i] - 1);  // exactly -1 or 1
      ++seen[x[i]];
    }
    QCOMPARE(seen.size(), std::size_t(2));
    QVERIFY(seen[-1.0] > 4500 && seen[1.0] > 4500);
    // The same in every dtype that holds -1 and 1; bool stores nonzero as 1, so every element.
    for (DType dtype : {DType::F64, DType::F16, DType::BF16, DType::I64, DType::I8})
      QVERIFY(values(kwb::generateInput(dtype, n, sign, 3, "s"), dtype) == x);
    QVERIFY(values(kwb::generateInput(DType::Bool, n, sign, 3, "s"), DType::Bool) == std::vector<double>(n, 1.0));
    // Integers: an integer scale and shift on randint and arange; u8 saturates at 0.
    Generator r = gen(Generator::Kind::RandInt, 0, 10);
    r.scale = 3;
    r.shift = -4;
    const auto k10 = values(kwb::generateInput(DType::I64, n, gen(Generator::Kind::RandInt, 0, 10), 3, "r"), DType::I64);
    const auto scaled = values(kwb::generateInput(DType::I32, n, r, 3, "r"), DType::I32);
    const auto saturated = values(kwb::generateInput(DType::U8, n, r, 3, "r"), DType::U8);
    for (std::uint64_t i = 0; i < n; ++i) {
      QCOMPARE(scaled[i], 3 * k10[i] - 4);
      QCOMPARE(saturated[i], std::max(0.0, 3 * k10[i] - 4));
    }
    Generator a = gen(Generator::Kind::Arange, 5, 2);
    a.scale = -1;
    a.shift = 0.5;  // i64: rounded toward negative infinity
    const auto arange = values(kwb::generateInput(DType::I64, 100, a, 1, "a"), DType::I64);
    for (int i = 0; i < 100; ++i) QCOMPARE(arange[i], std::floor(-(5 + 2.0 * i) + 0.5));
    // Reals: the f64 draw with one multiply and one add; narrower dtypes round that double once.
    for (const Generator &base : {gen(Generator::Kind::Uniform, -2, 3), gen(Generator::Kind::Normal, 1, 2),
                                  gen(Generator::Kind::Constant, 0.1, 0)}) {
      Generator g = base;
      g.scale = 0.3;
      g.shift = 7.25;
      const auto draw = values(kwb::generateInput(DType::F64, n, base, 9, "u"), DType::F64);
      const auto f64 = values(kwb::generateInput(DType::F64, n, g, 9, "u"), DType::F64);
      const auto f32 = values(kwb::generateInput(DType::F32, n, g, 9, "u"), DType::F32);
      const auto f16 = kwb::generateInput(DType::F16, n, g, 9, "u");
      for (std::uint64_t i = 0; i < n; ++i) {
        volatile double product = draw[i] * 0.3;  // no fused multiply-add
        const double want = product + 7.25;
        QCOMPARE(f64[i], want);
        QCOMPARE(f32[i], double(float(want)));
        std::uint16_t h;
        std::memcpy(&h, f16.data() + 2 * i, 2);
        QCOMPARE(h, kwb::doubleToHalf(want));
      }
    }
    // Uniform keeps the draw below high before scale and shift; the stored value then may reach
    // high * scale + shift (as torch.rand(n) * scale may): uniform [0, 1) * 2048 in f16 rounds
    // draws near 1 up to 2048.
    Generator u = gen(Generator::Kind::Uniform, 0, 1);
    u.scale = 2048;
    const auto wide = values(kwb::generateInput(DType::F16, 1000000, u, 1, "w"), DType::F16);
    QCOMPARE(*std::max_element(wide.begin(), wide.end()), 2048.0);
    // Without a scale the stored value stays below high.
    const auto plain = values(kwb::generateInput(DType::F16, 1000000, gen(Generator::Kind::Uniform, 0, 2048), 1, "w"), DType::F16);
    QVERIFY(*std::max_element(plain.begin(), plain.end()) < 2048.0);
  }

  // Symmetric: element (m, r, c) with r > c is element (m, c, r), which is the unstructured draw.
  void symmetricMatrices() {
    const std::vector<std::int64_t> shape{3, 7, 7};
    const std::uint64_t n = 3 * 7 * 7;
    for (const auto &[dtype, base] :
         std::vector<std::pair<DType, Generator>>{{DType::F32, gen(Generator::Kind::Normal, 0, 1)},
                                                  {DType::F16, gen(Generator::Kind::Uniform, -1, 1)},
                                                  {DType::F64, gen(Generator::Kind::Uniform, 0, 1, 4)},
                                                  {DType::I32, gen(Generator::Kind::RandInt, -50, 50)},
                                                  {DType::BF16, gen(Generator::Kind::Arange, 0, 1)},
                                                  {DType::Bool, gen(Generator::Kind::RandInt, 0, 2)}}) {
      Generator g = base;
      g.matrix = Generator::Matrix::Symmetric;
      const auto plain = values(kwb::generateInput(dtype, n, base, 11, "a"), dtype);
      const auto bytes = kwb::generateInput(dtype, shape, g, 11, "a");
      const auto sym = values(bytes, dtype);
      for (int m = 0; m < 3; ++m)
        for (int r = 0; r < 7; ++r)
          for (int c = 0; c < 7; ++c) {
            const int i = m * 49 + r * 7 + c;
            QCOMPARE(sym[i], sym[m * 49 + c * 7 + r]);
            QCOMPARE(sym[i], plain[r <= c ? i : m * 49 + c * 7 + r]);
          }
      if (dtype != DType::Bool && dtype != DType::BF16)  // the matrices differ from each other
        QVERIFY(!std::equal(sym.begin(), sym.begin() + 49, sym.begin() + 49));
      // Any thread count and any index range: the same bytes.
      const auto large = std::vector<std::int64_t>{5, 300, 300};
      const auto one = kwb::generateInput(dtype, large, g, 2, "big", 1);
      QVERIFY(kwb::generateInput(dtype, large, g, 2, "big", 3) == one);
      const std::size_t size = kwb::dtypeSize(dtype);
      std::vector<std::byte> part(70001 * size);
      kwb::fillInputRange(part, dtype, g, kwb::inputKey(2, 4 * (dtype == DType::F64), "big"), 123457, 70001, {300, 300});
      QVERIFY(std::equal(part.begin(), part.end(), one.begin() + 123457 * size));
    }
    // With scale and shift: the mirror is transformed the same way.
    Generator g = gen(Generator::Kind::Normal, 0, 1);
    g.matrix = Generator::Matrix::Symmetric;
    g.scale = 3;
    g.shift = 1;
    const auto sym = values(kwb::generateInput(DType::F32, std::vector<std::int64_t>{4, 4}, g, 1, "t"), DType::F32);
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) QCOMPARE(sym[r * 4 + c], sym[c * 4 + r]);
  }

  // Upper and lower as torch.triu(A, diagonal) and torch.tril(A, diagonal), over 2 matrices of 3 x 4
  // (and a 4 x 3 one): the zeros written out by hand; every other element is the unstructured draw.
  void triangularMatrices() {
    struct Case {
      Generator::Matrix matrix;
      std::int64_t diagonal;
      const char *kept;  // rows of a 3 x 4 matrix: 1 kept, 0 zero
    };
    using M = Generator::Matrix;
    const Case cases[] = {
        {M::Upper, 0, "1111 0111 0011"},  {M::Upper, 1, "0111 0011 0001"},  {M::Upper, -1, "1111 1111 0111"},
        {M::Upper, 4, "0000 0000 0000"},  {M::Upper, -3, "1111 1111 1111"}, {M::Lower, 0, "1000 1100 1110"},
        {M::Lower, 1, "1100 1110 1111"},  {M::Lower, -1, "0000 1000 1100"}, {M::Lower, -3, "0000 0000 0000"},
        {M::Lower, 3, "1111 1111 1111"},
    };
    const std::vector<std::int64_t> shape{2, 3, 4};
    for (DType dtype : {DType::F32, DType::F16, DType::I64, DType::U8}) {
      const Generator base = kwb::dtypeIsFloating(dtype) ? gen(Generator::Kind::Uniform, 1, 2) : gen(Generator::Kind::RandInt, 1, 9);
      const auto plain = values(kwb::generateInput(dtype, 24, base, 3, "t"), dtype);
      for (const Case &c : cases) {
        Generator g = base;
        g.matrix = c.matrix;
        g.diagonal = c.diagonal;
        const auto got = values(kwb::generateInput(dtype, shape, g, 3, "t"), dtype);
        const std::string kept = QString(c.kept).remove(' ').toStdString();
        for (int i = 0; i < 24; ++i) {
          const bool keep = kept[i % 12] == '1';
          QVERIFY2(got[i] == (keep ? plain[i] : 0.0),
                   qPrintable(QString("matrix %1 diagonal %2 element %3").arg(int(c.matrix)).arg(c.diagonal).arg(i)));
        }
      }
    }
    // 4 x 3 (more rows than columns), triu with diagonal -1 and tril with diagonal 0.
    Generator up = gen(Generator::Kind::Constant, 5, 0);
    up.matrix = M::Upper;
    up.diagonal = -1;
    QCOMPARE(values(kwb::generateInput(DType::F32, std::vector<std::int64_t>{4, 3}, up, 1, "t"), DType::F32),
             (std::vector<double>{5, 5, 5, 5, 5, 5, 0, 5, 5, 0, 0, 5}));
    Generator low = up;
    low.matrix = M::Lower;
    low.diagonal = 0;
    QCOMPARE(values(kwb::generateInput(DType::F32, std::vector<std::int64_t>{4, 3}, low, 1, "t"), DType::F32),
             (std::vector<double>{5, 0, 0, 5, 5, 0, 5, 5, 5, 5, 5, 5}));
    // The zeros are +0 in every float dtype.
    Generator neg = gen(Generator::Kind::Constant, -1, 0);
    neg.matrix = M::Upper;
    const auto f16 = kwb::generateInput(DType::F16, std::vector<std::int64_t>{2, 2}, neg, 1, "z");
    std::uint16_t below;
    std::memcpy(&below, f16.data() + 4, 2);
    QCOMPARE(below, std::uint16_t(0));
  }

  // A structure needs the shape: the count-only entry points refuse it, as do shapes that do not fit.
  void matrixNeedsTheShape() {
    Generator g = gen(Generator::Kind::Uniform, 0, 1);
    g.matrix = Generator::Matrix::Symmetric;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::generateInput(DType::F32, 16, g, 1, "x"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::generateInput(DType::F32, std::vector<std::int64_t>{4, 5}, g, 1, "x"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::generateInput(DType::F32, std::vector<std::int64_t>{16}, g, 1, "x"));
    std::vector<std::byte> out(4 * 10);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::fillInput(out, DType::F32, 10, g, 1, "x", 1, {3, 3}));
    g.matrix = Generator::Matrix::Upper;
    QVERIFY(kwb::generateInput(DType::F32, std::vector<std::int64_t>{4, 5}, g, 1, "x").size() == 80);
    QVERIFY(kwb::generateInput(DType::F32, std::vector<std::int64_t>{0, 5}, g, 1, "x").empty());  // nothing to fill
    kwb::Tensor t;
    t.name = "x";
    t.init = g;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::generateInput(t, 20, 1));
    QCOMPARE(kwb::generateInput(t, std::vector<std::int64_t>{4, 5}, 1),
             kwb::generateInput(DType::F32, std::vector<std::int64_t>{4, 5}, g, 1, "x"));
  }

  void errors() {
    std::vector<std::byte> small(10);
    QVERIFY_THROWS_EXCEPTION(
        std::invalid_argument,
        kwb::fillInput(small, DType::F32, 3, gen(Generator::Kind::Uniform, 0, 1), 1, "x"));
    kwb::Tensor out;
    out.name = "y";
    out.role = kwb::TensorRole::Out;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::generateInput(out, 10, 1));
    kwb::Tensor in = out;
    in.name = "x";
    in.init = gen(Generator::Kind::Uniform, 0, 1);
    QVERIFY(kwb::generateInput(in, 10, 1) == kwb::generateInput(DType::F32, 10, *in.init, 1, "x"));
  }

  // 64 Mi f32 elements (256 MiB): time one thread and all of them; the bytes must agree.
  void throughput() {
    const std::uint64_t n = std::uint64_t(64) << 20;
    std::vector<std::byte> one(n * 4), all(n * 4);
    const auto g = gen(Generator::Kind::Uniform, -1, 1);
    QElapsedTimer timer;
    timer.start();
    kwb::fillInput(one, DType::F32, n, g, 1, "speed", 1);
    const double oneSeconds = timer.nsecsElapsed() / 1e9;
    timer.restart();
    kwb::fillInput(all, DType::F32, n, g, 1, "speed", 0);
    const double allSeconds = timer.nsecsElapsed() / 1e9;
    QVERIFY(one == all);
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    qInfo("uniform f32, 64 Mi elements: 1 thread %.3f s (%.0f M/s); %u threads %.3f s (%.0f M/s)", oneSeconds,
          n / oneSeconds / 1e6, threads, allSeconds, n / allSeconds / 1e6);

    const std::uint64_t m = std::uint64_t(16) << 20;
    timer.restart();
    kwb::fillInput(std::span(all).first(m * 4), DType::F32, m, gen(Generator::Kind::Normal, 0, 1), 1, "speed",
                   0);
    const double normalSeconds = timer.nsecsElapsed() / 1e9;
    qInfo("normal f32, 16 Mi elements: %u threads %.3f s (%.0f M/s)", threads, normalSeconds,
          m / normalSeconds / 1e6);
  }
};

QTEST_APPLESS_MAIN(TestEvalInputGenerator)
#include "tst_eval_input_generator.moc"
