#include "core/eval/input_generator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/eval/half_float.h"

namespace kwb {

namespace {

__extension__ typedef unsigned __int128 Uint128;
__extension__ typedef __int128 Int128;

constexpr std::uint32_t kPhiloxMultiplier0 = 0xD2511F53u, kPhiloxMultiplier1 = 0xCD9E8D57u;
constexpr std::uint32_t kPhiloxWeyl0 = 0x9E3779B9u, kPhiloxWeyl1 = 0xBB67AE85u;
constexpr double kTwoPi = 6.283185307179586;  // 2π rounded to double
constexpr std::uint64_t kMinElementsPerThread = std::uint64_t(1) << 16;

double unitInterval(std::uint32_t high, std::uint32_t low) {
  // Through int64 (the value fits 53 bits): one conversion instruction on x86-64.
  return double(std::int64_t(((std::uint64_t(high) << 32) | low) >> 11)) * 0x1p-53;
}

// floor(r × n / 2^128) for the 128-bit r = w0:w1:w2:w3.
std::uint64_t scaleToRange(const PhiloxBlock &w, std::uint64_t n) {
  const std::uint64_t rHigh = (std::uint64_t(w[0]) << 32) | w[1];
  const std::uint64_t rLow = (std::uint64_t(w[2]) << 32) | w[3];
  const Uint128 upper = Uint128(rHigh) * n;
  const Uint128 lower = Uint128(rLow) * n;
  return std::uint64_t((upper + (lower >> 64)) >> 64);
}

// The next value below a sign-magnitude 16-bit float (f16 or bf16) that is not NaN.
std::uint16_t nextDown16(std::uint16_t bits) {
  if ((bits & 0x7fff) == 0) return 0x8001;  // ±0 → the negative smallest subnormal
  return (bits & 0x8000) ? std::uint16_t(bits + 1) : std::uint16_t(bits - 1);
}

// Saturating conversions to an integer type.
template <class Int>
Int saturateReal(double x) {
  if (std::isnan(x)) return 0;
  x = std::floor(x);
  constexpr double lowest = double(std::numeric_limits<Int>::lowest());
  // max + 1 is a power of two, so exact in double.
  constexpr double beyond = double(std::numeric_limits<Int>::max() / 2 + 1) * 2.0;
  if (x <= lowest) return std::numeric_limits<Int>::lowest();
  if (x >= beyond) return std::numeric_limits<Int>::max();
  return Int(x);
}

template <class Int>
Int saturateInteger(Int128 k) {
  if (k < Int128(std::numeric_limits<Int>::lowest())) return std::numeric_limits<Int>::lowest();
  if (k > Int128(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
  return Int(k);
}

// How each dtype stores a generated value.
struct StoreF64 {
  using T = double;
  static constexpr bool kFloating = true;
  static T fromReal(double x) { return x; }
  static T fromInteger(Int128 k) { return double(k); }
  static double value(T v) { return v; }
  static T below(T v) { return std::nextafter(v, -std::numeric_limits<double>::infinity()); }
};
struct StoreF32 {
  using T = float;
  static constexpr bool kFloating = true;
  static T fromReal(double x) { return float(x); }
  static T fromInteger(Int128 k) { return float(double(k)); }
  static double value(T v) { return v; }
  static T below(T v) { return std::nextafter(v, -std::numeric_limits<float>::infinity()); }
};
struct StoreF16 {
  using T = std::uint16_t;
  static constexpr bool kFloating = true;
  static T fromReal(double x) { return doubleToHalf(x); }
  static T fromInteger(Int128 k) { return doubleToHalf(double(k)); }
  static double value(T v) { return halfToFloat(v); }
  static T below(T v) { return nextDown16(v); }
};
struct StoreBF16 {
  using T = std::uint16_t;
  static constexpr bool kFloating = true;
  static T fromReal(double x) { return doubleToBfloat16(x); }
  static T fromInteger(Int128 k) { return doubleToBfloat16(double(k)); }
  static double value(T v) { return bfloat16ToFloat(v); }
  static T below(T v) { return nextDown16(v); }
};
template <class Int>
struct StoreInteger {
  using T = Int;
  static constexpr bool kFloating = false;
  static T fromReal(double x) { return saturateReal<Int>(x); }
  static T fromInteger(Int128 k) { return saturateInteger<Int>(k); }
  static double value(T v) { return double(v); }
  static T below(T v) { return v; }
};
struct StoreBool {
  using T = std::uint8_t;
  static constexpr bool kFloating = false;
  static T fromReal(double x) { return x != 0.0 ? 1 : 0; }
  static T fromInteger(Int128 k) { return k != 0 ? 1 : 0; }
  static double value(T v) { return v; }
  static T below(T v) { return v; }
};

PhiloxBlock wordsAt(std::uint64_t index, PhiloxKey key) {
  return philox4x32({std::uint32_t(index), std::uint32_t(index >> 32), 0, 0}, key);
}

// Calls draw(j, words of element first + j) for j in [0, count). Philox runs on blocks of
// kLanes consecutive counters at once: the same words as wordsAt, about twice as fast, since
// the compiler interleaves (and partly vectorizes) the independent lanes.
template <class Draw>
void forEachDraw(std::uint64_t first, std::uint64_t count, PhiloxKey key, Draw &&draw) {
  constexpr int kLanes = 16;
  std::uint64_t j = 0;
  for (; j + kLanes <= count; j += kLanes) {
    std::uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const std::uint64_t index = first + j + std::uint64_t(l);
      c0[l] = std::uint32_t(index);
      c1[l] = std::uint32_t(index >> 32);
      c2[l] = 0;
      c3[l] = 0;
    }
    PhiloxKey k = key;
    for (int round = 0; round < 10; ++round) {
      for (int l = 0; l < kLanes; ++l) {
        const std::uint64_t p0 = std::uint64_t(kPhiloxMultiplier0) * c0[l];
        const std::uint64_t p1 = std::uint64_t(kPhiloxMultiplier1) * c2[l];
        const std::uint32_t n0 = std::uint32_t(p1 >> 32) ^ c1[l] ^ k.k0;
        const std::uint32_t n2 = std::uint32_t(p0 >> 32) ^ c3[l] ^ k.k1;
        c0[l] = n0;
        c1[l] = std::uint32_t(p1);
        c2[l] = n2;
        c3[l] = std::uint32_t(p0);
      }
      k.k0 += kPhiloxWeyl0;
      k.k1 += kPhiloxWeyl1;
    }
    for (int l = 0; l < kLanes; ++l) draw(j + std::uint64_t(l), PhiloxBlock{c0[l], c1[l], c2[l], c3[l]});
  }
  for (; j < count; ++j) draw(j, wordsAt(first + j, key));
}

bool isWholeInt64(double x) {
  return std::isfinite(x) && std::floor(x) == x && x >= -0x1p63 && x < 0x1p63;
}

std::int64_t ceilToInt64(double x) {
  x = std::ceil(x);
  if (!(x > -0x1p62)) return -(std::int64_t(1) << 62);  // NaN too
  if (x > 0x1p62) return std::int64_t(1) << 62;
  return std::int64_t(x);
}

// Element `index`'s place in its matrix (the last two dimensions): row and column.
struct MatrixPlace {
  std::uint64_t row = 0;
  std::uint64_t col = 0;
  std::uint64_t matrixStart = 0;  // the index of the matrix's element (0, 0)
};
MatrixPlace placeOf(std::uint64_t index, MatrixShape shape) {
  const std::uint64_t size = shape.rows * shape.cols;
  const std::uint64_t within = index % size;
  return {within / shape.cols, within % shape.cols, index - within};
}

// Whether element (row, col) is zero in a triangular structure (torch.triu / torch.tril with
// `diagonal`).
bool zeroedByTriangle(const Generator &g, std::uint64_t row, std::uint64_t col) {
  // Both below 2^63 (element indices), so the difference cannot overflow.
  const std::int64_t offset = std::int64_t(col) - std::int64_t(row);
  if (g.matrix == Generator::Matrix::Upper) return offset < g.diagonal;
  if (g.matrix == Generator::Matrix::Lower) return offset > g.diagonal;
  return false;
}

// Fills elements [first, first + count) with valueAt(index, Philox words of index) (`words`:
// whether valueAt reads them), then applies the generator's matrix structure: symmetric elements
// below the diagonal take the value of their mirror above it (computed again from the mirror's own
// index), triangular ones are zero.
template <class S, class ValueAt>
void fillElements(std::byte *out, const Generator &g, PhiloxKey key, std::uint64_t first, std::uint64_t count,
                  MatrixShape matrix, bool words, ValueAt valueAt) {
  using T = typename S::T;
  const auto put = [out](std::uint64_t j, T v) { std::memcpy(out + j * sizeof(T), &v, sizeof(T)); };
  if (words)
    forEachDraw(first, count, key, [&](std::uint64_t j, const PhiloxBlock &w) { put(j, valueAt(first + j, w)); });
  else
    for (std::uint64_t j = 0; j < count; ++j) put(j, valueAt(first + j, PhiloxBlock{}));
  if (g.matrix == Generator::Matrix::None) return;
  const T zero = S::fromInteger(0);
  for (std::uint64_t j = 0; j < count; ++j) {
    const MatrixPlace p = placeOf(first + j, matrix);
    if (g.matrix == Generator::Matrix::Symmetric) {
      if (p.row <= p.col) continue;
      const std::uint64_t mirror = p.matrixStart + p.col * matrix.cols + p.row;
      put(j, valueAt(mirror, words ? wordsAt(mirror, key) : PhiloxBlock{}));
    } else if (zeroedByTriangle(g, p.row, p.col)) {
      put(j, zero);
    }
  }
}

template <class S>
void fillTyped(std::byte *out, const Generator &g, PhiloxKey key, std::uint64_t first, std::uint64_t count,
               MatrixShape matrix) {
  using T = typename S::T;
  // Scale and shift (in double, a multiply and an add rounded separately). The defaults leave the
  // draw untouched, and only then do the stored-value rules below apply.
  const bool transforms = generatorScalesOrShifts(g);
  const double scale = g.scale, shift = g.shift;
  const auto real = [=](double x) { return transforms ? S::fromReal(x * scale + shift) : S::fromReal(x); };
  const auto integer = [=](Int128 k) { return transforms ? S::fromReal(double(k) * scale + shift) : S::fromInteger(k); };
  // Keeps a stored float below `high` (uniform and randint are half-open).
  const auto belowHigh = [transforms](T v, double high) {
    if constexpr (S::kFloating) {
      if (!transforms && S::value(v) >= high) return S::below(v);
    }
    (void)high;
    return v;
  };
  const auto fill = [&](bool words, auto valueAt) {
    fillElements<S>(out, g, key, first, count, matrix, words, valueAt);
  };

  switch (g.kind) {
    case Generator::Kind::Uniform: {
      const double low = g.a, high = g.b, width = high - low;
      const double highest = std::nextafter(high, -std::numeric_limits<double>::infinity());
      return fill(true, [=](std::uint64_t, const PhiloxBlock &w) {
        double x = low + width * unitInterval(w[0], w[1]);
        if (x >= high) x = highest;
        return belowHigh(real(x), high);
      });
    }
    case Generator::Kind::Normal: {
      const double mean = g.a, stddev = g.b;
      return fill(true, [=](std::uint64_t, const PhiloxBlock &w) {
        const double u1 = 1.0 - unitInterval(w[0], w[1]);
        const double u2 = unitInterval(w[2], w[3]);
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
        return real(mean + stddev * z);
      });
    }
    case Generator::Kind::RandInt: {
      const std::int64_t low = ceilToInt64(g.a), high = ceilToInt64(g.b);
      const std::uint64_t n = high > low ? std::uint64_t(high) - std::uint64_t(low) : 0;
      return fill(true, [=](std::uint64_t, const PhiloxBlock &w) {
        const Int128 k = n ? Int128(low) + Int128(scaleToRange(w, n)) : Int128(low);
        return belowHigh(integer(k), double(high));
      });
    }
    case Generator::Kind::Arange: {
      if (!S::kFloating && isWholeInt64(g.a) && isWholeInt64(g.b)) {
        const auto start = std::int64_t(g.a), step = std::int64_t(g.b);
        return fill(false, [=](std::uint64_t index, const PhiloxBlock &) {
          return integer(Int128(start) + Int128(index) * Int128(step));
        });
      }
      const double start = g.a, step = g.b;
      return fill(false, [=](std::uint64_t index, const PhiloxBlock &) {
        const double product = double(index) * step;
        return real(start + product);
      });
    }
    case Generator::Kind::Constant: {
      const T v = real(g.a);
      return fill(false, [=](std::uint64_t, const PhiloxBlock &) { return v; });
    }
  }
}

// A generator with a matrix structure needs the tensor's last two dimensions (symmetric: square
// ones), and a whole tensor (`whole`) `count` whole matrices of them.
void checkMatrixShape(const Generator &g, MatrixShape matrix, std::uint64_t count, bool whole) {
  if (g.matrix == Generator::Matrix::None || count == 0) return;
  const std::string structure(generatorMatrixName(g.matrix));
  if (matrix.rows == 0 || matrix.cols == 0)
    throw std::invalid_argument("a " + structure + " generator needs the tensor's last two dimensions (its shape)");
  if (g.matrix == Generator::Matrix::Symmetric && matrix.rows != matrix.cols)
    throw std::invalid_argument("a symmetric generator needs square matrices, not " + std::to_string(matrix.rows) +
                                " x " + std::to_string(matrix.cols));
  std::uint64_t size = 0;
  if (__builtin_mul_overflow(matrix.rows, matrix.cols, &size) || (whole && count % size != 0))
    throw std::invalid_argument(std::to_string(count) + " elements are not whole " + std::to_string(matrix.rows) +
                                " x " + std::to_string(matrix.cols) + " matrices");
}

}  // namespace

PhiloxBlock philox4x32(PhiloxBlock c, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.k0 += kPhiloxWeyl0;
      key.k1 += kPhiloxWeyl1;
    }
    const std::uint64_t p0 = std::uint64_t(kPhiloxMultiplier0) * c[0];
    const std::uint64_t p1 = std::uint64_t(kPhiloxMultiplier1) * c[2];
    c = {std::uint32_t(p1 >> 32) ^ c[1] ^ key.k0, std::uint32_t(p1), std::uint32_t(p0 >> 32) ^ c[3] ^ key.k1,
         std::uint32_t(p0)};
  }
  return c;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (char c : text) {
    h ^= std::uint8_t(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

PhiloxKey inputKey(std::uint64_t seed, std::uint64_t seedOffset, std::string_view tensorName) {
  std::uint64_t x = splitmix64(fnv1a64(tensorName));
  x = splitmix64(x ^ seed);
  x = splitmix64(x ^ seedOffset);
  return {std::uint32_t(x), std::uint32_t(x >> 32)};
}

void fillInputRange(std::span<std::byte> out, DType dtype, const Generator &generator, PhiloxKey key,
                    std::uint64_t first, std::uint64_t count, MatrixShape matrix) {
  const std::size_t size = dtypeSize(dtype);
  if (count > out.size() / size)
    throw std::invalid_argument("input buffer of " + std::to_string(out.size()) + " bytes is too small for " +
                                std::to_string(count) + " " + std::string(dtypeName(dtype)) + " elements");
  checkMatrixShape(generator, matrix, count, false);
  std::byte *p = out.data();
  switch (dtype) {
    case DType::F64:
      return fillTyped<StoreF64>(p, generator, key, first, count, matrix);
    case DType::F32:
      return fillTyped<StoreF32>(p, generator, key, first, count, matrix);
    case DType::F16:
      return fillTyped<StoreF16>(p, generator, key, first, count, matrix);
    case DType::BF16:
      return fillTyped<StoreBF16>(p, generator, key, first, count, matrix);
    case DType::I64:
      return fillTyped<StoreInteger<std::int64_t>>(p, generator, key, first, count, matrix);
    case DType::I32:
      return fillTyped<StoreInteger<std::int32_t>>(p, generator, key, first, count, matrix);
    case DType::I8:
      return fillTyped<StoreInteger<std::int8_t>>(p, generator, key, first, count, matrix);
    case DType::U8:
      return fillTyped<StoreInteger<std::uint8_t>>(p, generator, key, first, count, matrix);
    case DType::Bool:
      return fillTyped<StoreBool>(p, generator, key, first, count, matrix);
  }
}

void fillInput(std::span<std::byte> out, DType dtype, std::uint64_t count, const Generator &generator,
               std::uint64_t seed, std::string_view tensorName, unsigned threads, MatrixShape matrix) {
  const std::size_t size = dtypeSize(dtype);
  if (count > out.size() / size)
    throw std::invalid_argument("input buffer of " + std::to_string(out.size()) + " bytes is too small for " +
                                std::to_string(count) + " " + std::string(dtypeName(dtype)) + " elements");
  checkMatrixShape(generator, matrix, count, true);
  const PhiloxKey key = inputKey(seed, generator.seedOffset, tensorName);
  std::uint64_t workers = threads;
  if (workers == 0)
    workers = std::min<std::uint64_t>(std::max(1u, std::thread::hardware_concurrency()),
                                      count / kMinElementsPerThread);
  workers = std::clamp<std::uint64_t>(workers, 1, std::max<std::uint64_t>(count, 1));
  const std::uint64_t chunk = (count + workers - 1) / workers;

  std::vector<std::thread> pool;
  for (std::uint64_t w = 1; w < workers; ++w) {
    const std::uint64_t first = w * chunk;
    if (first >= count) break;
    const std::uint64_t n = std::min(chunk, count - first);
    pool.emplace_back(
        [=] { fillInputRange(out.subspan(first * size, n * size), dtype, generator, key, first, n, matrix); });
  }
  fillInputRange(out, dtype, generator, key, 0, std::min(chunk, count), matrix);
  for (auto &t : pool) t.join();
}

std::vector<std::byte> generateInput(DType dtype, std::uint64_t count, const Generator &generator,
                                     std::uint64_t seed, std::string_view tensorName, unsigned threads) {
  std::vector<std::byte> out(count * dtypeSize(dtype));
  fillInput(out, dtype, count, generator, seed, tensorName, threads);
  return out;
}

std::vector<std::byte> generateInput(const Tensor &tensor, std::uint64_t count, std::uint64_t seed,
                                     unsigned threads) {
  return generateInput(tensor.dtype, count, generatorForSeed(tensor, seed), seed, tensor.name, threads);
}

MatrixShape matrixShapeOf(std::span<const std::int64_t> shape) {
  if (shape.size() < 2) return {};
  return {std::uint64_t(shape[shape.size() - 2]), std::uint64_t(shape[shape.size() - 1])};
}

std::uint64_t elementCount(std::span<const std::int64_t> shape) {
  std::uint64_t count = 1;
  for (const std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension " + std::to_string(d) + " in an input's shape");
    if (__builtin_mul_overflow(count, std::uint64_t(d), &count))
      throw std::invalid_argument("an input's element count overflows 64 bits");
  }
  return count;
}

std::vector<std::byte> generateInput(DType dtype, std::span<const std::int64_t> shape, const Generator &generator,
                                     std::uint64_t seed, std::string_view tensorName, unsigned threads) {
  const std::uint64_t count = elementCount(shape);
  std::vector<std::byte> out(count * dtypeSize(dtype));
  fillInput(out, dtype, count, generator, seed, tensorName, threads, matrixShapeOf(shape));
  return out;
}

std::vector<std::byte> generateInput(const Tensor &tensor, std::span<const std::int64_t> shape, std::uint64_t seed,
                                     unsigned threads) {
  return generateInput(tensor.dtype, shape, generatorForSeed(tensor, seed), seed, tensor.name, threads);
}

}  // namespace kwb
