#include "core/eval/compare.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <type_traits>

#include "core/eval/parallel_chunks.h"
#include "core/eval/element_coordinates.h"
#include "core/eval/half_float.h"

namespace kwb {

namespace {

using detail::chunkBounds;
using detail::runChunks;

__extension__ typedef __int128 Int128;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Large buffers are split over threads into contiguous chunks of whole blocks. The sums of the
// relative L2 error are taken per block and added in block order, whatever the number of
// threads, so every figure of a report is the same with one thread or many.
constexpr std::uint64_t kBlockElements = std::uint64_t(1) << 16;
constexpr std::uint64_t kParallelMinElements = std::uint64_t(1) << 20;  // fewer: the calling thread only


template <class T>
T load(const std::byte *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// How each dtype's elements are read. Bits is the same-sized unsigned integer, for bitwise tests.
struct ReadF64 {
  using T = double;
  using Bits = std::uint64_t;
  static constexpr bool kFloating = true;
  static double value(T v) { return v; }
  static T encode(double x) { return x; }
};
struct ReadF32 {
  using T = float;
  using Bits = std::uint32_t;
  static constexpr bool kFloating = true;
  static double value(T v) { return v; }
  static T encode(double x) { return float(x); }
};
struct ReadF16 {
  using T = std::uint16_t;
  using Bits = std::uint16_t;
  static constexpr bool kFloating = true;
  static double value(T v) { return halfToFloat(v); }
  static T encode(double x) { return doubleToHalf(x); }
};
struct ReadBF16 {
  using T = std::uint16_t;
  using Bits = std::uint16_t;
  static constexpr bool kFloating = true;
  static double value(T v) { return bfloat16ToFloat(v); }
  static T encode(double x) { return doubleToBfloat16(x); }
};
template <class Int, class Unsigned>
struct ReadInteger {
  using T = Int;
  using Bits = Unsigned;
  static constexpr bool kFloating = false;
  static double value(T v) { return double(v); }
  static double distance(T a, T b) {
    const Int128 d = Int128(a) - Int128(b);
    return double(d < 0 ? -d : d);
  }
};
struct ReadBool {
  using T = std::uint8_t;
  using Bits = std::uint8_t;
  static constexpr bool kFloating = false;
  static double value(T v) { return v; }
  static double distance(T a, T b) { return a > b ? a - b : b - a; }
};

template <class F>
decltype(auto) visitDType(DType dtype, F &&f) {
  switch (dtype) {
    case DType::F64:
      return f(ReadF64{});
    case DType::F32:
      return f(ReadF32{});
    case DType::F16:
      return f(ReadF16{});
    case DType::BF16:
      return f(ReadBF16{});
    case DType::I64:
      return f(ReadInteger<std::int64_t, std::uint64_t>{});
    case DType::I32:
      return f(ReadInteger<std::int32_t, std::uint32_t>{});
    case DType::I8:
      return f(ReadInteger<std::int8_t, std::uint8_t>{});
    case DType::U8:
      return f(ReadInteger<std::uint8_t, std::uint8_t>{});
    case DType::Bool:
      return f(ReadBool{});
  }
  return f(ReadF32{});
}

void checkSize(std::size_t bytes, DType dtype, std::uint64_t count, const char *what) {
  if (count > bytes / dtypeSize(dtype))
    throw std::invalid_argument(std::string(what) + " of " + std::to_string(bytes) +
                                " bytes is too small for " + std::to_string(count) + " " +
                                std::string(dtypeName(dtype)) + " elements");
}

// The shape, when it describes `count` elements; else none (flat indices).
std::span<const std::int64_t> usableShape(std::span<const std::int64_t> shape, std::uint64_t count) {
  if (shape.empty() || shapeElementCount(shape) != count) return {};
  return shape;
}

std::string number(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2g", x);
  return buffer;
}

std::string shortestDouble(double x) {
  char buffer[40];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, result.ptr);
}

std::string plural(std::uint64_t n, const char *one, const char *many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The shortest %g text that encodes back to the same 16-bit pattern.
template <class Encode>
std::string shortest16(double value, std::uint16_t bits, Encode encode) {
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (encode(std::strtod(buffer, nullptr)) == bits) break;
  }
  return buffer;
}

template <class D>
ElementMismatch mismatchAt(std::uint64_t index, const std::byte *got, const std::byte *want, DType dtype,
                           std::span<const std::int64_t> shape) {
  using T = typename D::T;
  const std::size_t size = sizeof(T);
  ElementMismatch m;
  m.index = index;
  m.coordinates = elementCoordinates(index, shape);
  m.got = D::value(load<T>(got + index * size));
  m.want = D::value(load<T>(want + index * size));
  m.gotText = formatElement(got + index * size, dtype);
  m.wantText = formatElement(want + index * size, dtype);
  return m;
}

std::string mismatchClause(std::uint64_t count, std::uint64_t n, const ElementMismatch *first,
                           const char *verb) {
  std::string s = std::to_string(count) + " of " + plural(n, "element", "elements") + " " + verb;
  if (first)
    s += " (first at " + formatCoordinates(first->coordinates) + ": got " + first->gotText + ", want " +
         first->wantText + ")";
  return s;
}

// |got - want| / |want|; against a zero reference, infinite unless the values are equal.
double relativeError(double absError, double want) {
  if (want != 0.0) return absError / std::fabs(want);
  return absError == 0.0 ? 0.0 : kInfinity;
}

// The figures of one chunk of a comparison (all but the sums, which are per block).
struct CompareChunk {
  std::uint64_t mismatches = 0;
  std::vector<ElementMismatch> firstMismatches;
  double maxAbsError = 0.0;
  std::uint64_t maxAbsErrorIndex = 0;
  double maxRelError = 0.0;
  std::uint64_t maxRelErrorIndex = 0;
  std::uint64_t nanInGot = 0;
  std::uint64_t nanInReference = 0;
  std::vector<std::uint64_t> firstReferenceNaN;
};

// Sums of squares: f64 squares can overflow a double (|x| > 1e154), so they add up in long
// double; narrower dtypes' squares stay below 1.2e77 and a double keeps the loop fast.
template <class D>
using SquareSum = std::conditional_t<std::is_same_v<typename D::T, double>, long double, double>;

// Compares elements [first, end) (whole blocks but at the end of the buffer) into `r`, and the
// sums of squares of each block into diffBlocks and wantBlocks (indexed by block). The maxima
// keep the first index that reaches them: a later element replaces one only when strictly
// greater, so the chunks' maxima merge into the same figures in chunk order.
template <class D>
void compareRange(const std::byte *got, const std::byte *want, std::uint64_t first, std::uint64_t end,
                  const Tolerance &tolerance, bool exact, std::span<const std::int64_t> shape,
                  std::size_t maxReported, DType dtype, CompareChunk &r, SquareSum<D> *diffBlocks,
                  SquareSum<D> *wantBlocks) {
  using T = typename D::T;
  using Sum = SquareSum<D>;
  constexpr std::size_t size = sizeof(T);
  const double atol = tolerance.atol, rtol = tolerance.rtol;

  const auto fail = [&](std::uint64_t i) {
    ++r.mismatches;
    if (r.firstMismatches.size() < maxReported)
      r.firstMismatches.push_back(mismatchAt<D>(i, got, want, dtype, shape));
  };
  // Records an element's errors; the relative error (a division) only when it can be a new
  // maximum. rel = absError / |want| rounds above maxRel only if absError > maxRel × |want|
  // exactly, and then the rounded product is at most absError: the test skips no new maximum
  // (it is false for NaN products, i.e. once the maximum is inf against a zero reference, and a
  // zero error is never above the maximum).
  const auto track = [&](std::uint64_t i, double absError, double wantValue) {
    if (absError > r.maxAbsError) {
      r.maxAbsError = absError;
      r.maxAbsErrorIndex = i;
    }
    if (absError > 0 && absError >= r.maxRelError * std::fabs(wantValue)) {
      const double rel = relativeError(absError, wantValue);
      if (rel > r.maxRelError) {
        r.maxRelError = rel;
        r.maxRelErrorIndex = i;
      }
    }
  };

  for (std::uint64_t blockStart = first; blockStart < end; blockStart += kBlockElements) {
    const std::uint64_t blockEnd = std::min(end, blockStart + kBlockElements);
    Sum diffSquares = 0, wantSquares = 0;
    for (std::uint64_t i = blockStart; i < blockEnd; ++i) {
      const T g = load<T>(got + i * size), w = load<T>(want + i * size);
      const double wd = D::value(w);
      if constexpr (!D::kFloating) {
        wantSquares += wd * wd;
        if (g == w) continue;
        const double error = D::distance(g, w);
        diffSquares += Sum(error) * error;
        track(i, error, wd);
        fail(i);
      } else {
        const double gd = D::value(g);
        if (std::isfinite(gd) && std::isfinite(wd)) [[likely]] {
          const double error = std::fabs(gd - wd);
          wantSquares += Sum(wd) * wd;
          diffSquares += Sum(error) * error;
          track(i, error, wd);
          if (exact ? gd != wd : !(error <= atol + rtol * std::fabs(wd))) fail(i);
          continue;
        }
        if (std::isnan(gd)) ++r.nanInGot;
        if (std::isnan(wd)) {
          ++r.nanInReference;
          if (r.firstReferenceNaN.size() < maxReported) r.firstReferenceNaN.push_back(i);
          continue;
        }
        if (std::isnan(gd)) {
          fail(i);
          continue;
        }
        // An infinity on one side or both.
        if (gd == wd) continue;
        if (std::isfinite(wd)) wantSquares += Sum(wd) * wd;
        diffSquares = kInfinity;
        if (!(r.maxAbsError == kInfinity)) r.maxAbsErrorIndex = i;
        r.maxAbsError = kInfinity;
        if (!(r.maxRelError == kInfinity)) r.maxRelErrorIndex = i;
        r.maxRelError = kInfinity;
        fail(i);
      }
    }
    diffBlocks[blockStart / kBlockElements] = diffSquares;
    wantBlocks[blockStart / kBlockElements] = wantSquares;
  }
}

template <class D>
void compareTyped(const std::byte *got, const std::byte *want, std::uint64_t count,
                  const Tolerance &tolerance, std::span<const std::int64_t> shape, std::size_t maxReported,
                  DType dtype, unsigned threads, ComparisonReport &r) {
  using Sum = SquareSum<D>;
  const auto bounds = chunkBounds(count, threads, kBlockElements, kParallelMinElements);
  const std::uint64_t blocks = (count + kBlockElements - 1) / kBlockElements;
  std::vector<Sum> diffBlocks(blocks), wantBlocks(blocks);
  std::vector<CompareChunk> chunks(bounds.size() - 1);
  runChunks(bounds, [&](std::size_t c, std::uint64_t first, std::uint64_t end) {
    CompareChunk local;
    compareRange<D>(got, want, first, end, tolerance, r.exact, shape, maxReported, dtype, local,
                    diffBlocks.data(), wantBlocks.data());
    chunks[c] = std::move(local);
  });

  // Merged in index order: the first reported elements of the whole buffer, and the maxima at
  // the first index that reaches them.
  for (CompareChunk &c : chunks) {
    r.mismatches += c.mismatches;
    r.nanInGot += c.nanInGot;
    r.nanInReference += c.nanInReference;
    for (ElementMismatch &m : c.firstMismatches) {
      if (r.firstMismatches.size() >= maxReported) break;
      r.firstMismatches.push_back(std::move(m));
    }
    for (std::uint64_t i : c.firstReferenceNaN) {
      if (r.firstReferenceNaN.size() >= maxReported) break;
      r.firstReferenceNaN.push_back(i);
    }
    if (c.maxAbsError > r.maxAbsError) {
      r.maxAbsError = c.maxAbsError;
      r.maxAbsErrorIndex = c.maxAbsErrorIndex;
    }
    if (c.maxRelError > r.maxRelError) {
      r.maxRelError = c.maxRelError;
      r.maxRelErrorIndex = c.maxRelErrorIndex;
    }
  }
  Sum diffSquares = 0, wantSquares = 0;
  for (std::uint64_t b = 0; b < blocks; ++b) {
    diffSquares += diffBlocks[b];
    wantSquares += wantBlocks[b];
  }
  if (wantSquares > 0)
    r.relativeL2Error = double(std::sqrt(diffSquares / wantSquares));
  else
    r.relativeL2Error = diffSquares == 0 ? 0.0 : kInfinity;
}

std::string comparisonSummary(const ComparisonReport &r, std::span<const std::int64_t> shape) {
  const bool floating = dtypeIsFloating(r.dtype);
  const std::string errors =
      floating ? "max abs err " + number(r.maxAbsError) + ", rel L2 " + number(r.relativeL2Error)
               : "max abs err " + number(r.maxAbsError);
  if (r.checked == 0) return "no elements to compare";
  std::string s;
  if (r.nanInReference > 0) {
    s = "the reference output holds " + plural(r.nanInReference, "NaN", "NaNs");
    if (!r.firstReferenceNaN.empty())  // none with maxReported 0
      s += " (first at " + formatCoordinates(elementCoordinates(r.firstReferenceNaN.front(), shape)) + ")";
    s += ": the task's reference is broken, not the candidate; fix the reference kernel or the inputs";
    if (r.mismatches > 0)
      s += "; besides, " + mismatchClause(r.mismatches, r.checked - r.nanInReference,
                                          r.firstMismatches.empty() ? nullptr : &r.firstMismatches.front(),
                                          r.mismatches == 1 ? "differs" : "differ");
    return s;
  }
  if (r.mismatches == 0) {
    if (r.exact) return "all " + plural(r.checked, "element matches", "elements match") + " exactly";
    return "all " + plural(r.checked, "element matches", "elements match") + " (" + errors + ")";
  }
  s = mismatchClause(r.mismatches, r.checked,
                     r.firstMismatches.empty() ? nullptr : &r.firstMismatches.front(),
                     r.mismatches == 1 ? "differs" : "differ");
  s += "; " + errors;
  if (r.nanInGot > 0) s += "; " + plural(r.nanInGot, "NaN", "NaNs") + " in the output";
  return s;
}

template <class D>
void differRange(const std::byte *a, const std::byte *b, std::uint64_t first, std::uint64_t end,
                 const Tolerance &tolerance, std::span<const std::int64_t> shape, std::size_t maxReported,
                 DType dtype, RunDifference &r) {
  using T = typename D::T;
  using Bits = typename D::Bits;
  constexpr std::size_t size = sizeof(T);
  const bool exact = tolerance.exact || !D::kFloating;
  for (std::uint64_t i = first; i < end; ++i) {
    if (load<Bits>(a + i * size) == load<Bits>(b + i * size)) continue;
    ++r.differentBits;
    bool beyond = true;
    if constexpr (D::kFloating) {
      const double x = D::value(load<T>(a + i * size)), y = D::value(load<T>(b + i * size));
      if (std::isnan(x) && std::isnan(y)) {
        beyond = false;
      } else if (std::isnan(x) || std::isnan(y)) {
        beyond = true;
      } else if (std::isinf(x) || std::isinf(y)) {
        beyond = x != y;
        if (beyond) r.maxAbsDifference = kInfinity;
      } else {
        const double difference = std::fabs(x - y);
        r.maxAbsDifference = std::max(r.maxAbsDifference, difference);
        beyond =
            exact ? x != y
                  : !(difference <= tolerance.atol + tolerance.rtol * std::max(std::fabs(x), std::fabs(y)));
      }
    } else {
      r.maxAbsDifference =
          std::max(r.maxAbsDifference, D::distance(load<T>(a + i * size), load<T>(b + i * size)));
    }
    if (!beyond) continue;
    ++r.beyondRounding;
    if (r.firstBeyondRounding.size() < maxReported)
      r.firstBeyondRounding.push_back(mismatchAt<D>(i, a, b, dtype, shape));
  }
}

template <class D>
void differTyped(const std::byte *a, const std::byte *b, std::uint64_t count, const Tolerance &tolerance,
                 std::span<const std::int64_t> shape, std::size_t maxReported, DType dtype, unsigned threads,
                 RunDifference &r) {
  const auto bounds = chunkBounds(count, threads, kBlockElements, kParallelMinElements);
  std::vector<RunDifference> chunks(bounds.size() - 1);
  runChunks(bounds, [&](std::size_t c, std::uint64_t first, std::uint64_t end) {
    RunDifference local;
    differRange<D>(a, b, first, end, tolerance, shape, maxReported, dtype, local);
    chunks[c] = std::move(local);
  });
  for (RunDifference &c : chunks) {  // in index order
    r.differentBits += c.differentBits;
    r.beyondRounding += c.beyondRounding;
    r.maxAbsDifference = std::max(r.maxAbsDifference, c.maxAbsDifference);
    for (ElementMismatch &m : c.firstBeyondRounding) {
      if (r.firstBeyondRounding.size() >= maxReported) break;
      r.firstBeyondRounding.push_back(std::move(m));
    }
  }
}

// Whether `c` passes against every element of `want`.
template <class D>
bool constantPasses(double c, const std::byte *want, std::uint64_t count, const Tolerance &tolerance) {
  using T = typename D::T;
  for (std::uint64_t i = 0; i < count; ++i) {
    const double w = D::value(load<T>(want + i * sizeof(T)));
    if (std::isnan(w)) return false;
    if (std::isinf(w)) {
      if (c != w) return false;
      continue;
    }
    if (tolerance.exact || !D::kFloating
            ? c != w
            : !(std::fabs(c - w) <= tolerance.atol + tolerance.rtol * std::fabs(w)))
      return false;
  }
  return true;
}

std::string toleranceText(const Tolerance &t) {
  if (t.exact) return "exact";
  return "rtol " + number(t.rtol) + ", atol " + number(t.atol);
}

template <class D>
ConstantOutputCheck nearConstantTyped(const std::byte *want, std::uint64_t count, const Tolerance &tolerance,
                                      DType dtype, std::string_view tensorName) {
  using T = typename D::T;
  ConstantOutputCheck out;
  double lowest = kInfinity, highest = -kInfinity, largestMagnitude = 0;
  long double sum = 0;
  std::uint64_t finite = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    const double w = D::value(load<T>(want + i * sizeof(T)));
    if (std::isnan(w)) return out;  // the comparison reports a broken reference
    if (!std::isfinite(w)) continue;
    lowest = std::min(lowest, w);
    highest = std::max(highest, w);
    largestMagnitude = std::max(largestMagnitude, std::fabs(w));
    sum += w;
    ++finite;
  }

  std::vector<double> candidates{0.0, D::value(load<T>(want))};
  if constexpr (D::kFloating) {
    if (finite > 0) {
      candidates.push_back(D::value(D::encode(lowest / 2 + highest / 2)));
      candidates.push_back(D::value(D::encode(double(sum / finite))));
    }
  }
  const std::string name = "output '" + std::string(tensorName) + "'";
  for (double c : candidates) {
    if (!constantPasses<D>(c, want, count, tolerance)) continue;
    out.nearConstant = true;
    out.constant = c;
    if ((lowest == highest || finite == 0) && c == D::value(load<T>(want))) {
      const std::string value = formatElement(want, dtype);
      out.warning = name + ": every element of the reference output is " + value +
                    ", so a kernel that writes " + value + " everywhere passes.";
    } else if (c == 0.0) {
      out.warning = name +
                    ": a kernel that writes only zeros would pass: every element of the reference output "
                    "is within tolerance of 0 (largest magnitude " +
                    number(largestMagnitude) + "; " + toleranceText(tolerance) + ").";
    } else {
      const std::string value = shortestDouble(c);
      out.warning = name + ": a kernel that writes " + value +
                    " everywhere would pass: every element of the "
                    "reference output is within tolerance of " +
                    value + " (values from " + number(lowest) + " to " + number(highest) + "; " +
                    toleranceText(tolerance) + ").";
    }
    out.warning += " Change the inputs or the tolerance so the correct output varies.";
    return out;
  }
  return out;
}

}  // namespace

std::string formatElement(const std::byte *element, DType dtype) {
  switch (dtype) {
    case DType::F64:
    case DType::F32: {
      const double v = dtype == DType::F64 ? load<double>(element) : double(load<float>(element));
      if (std::isnan(v)) return "NaN";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      char buffer[40];
      const auto result = dtype == DType::F64
                              ? std::to_chars(buffer, buffer + sizeof buffer, v)
                              : std::to_chars(buffer, buffer + sizeof buffer, load<float>(element));
      return std::string(buffer, result.ptr);
    }
    case DType::F16:
    case DType::BF16: {
      const auto bits = load<std::uint16_t>(element);
      const double v = dtype == DType::F16 ? halfToFloat(bits) : bfloat16ToFloat(bits);
      if (std::isnan(v)) return "NaN";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return dtype == DType::F16 ? shortest16(v, bits, doubleToHalf) : shortest16(v, bits, doubleToBfloat16);
    }
    case DType::I64:
      return std::to_string(load<std::int64_t>(element));
    case DType::I32:
      return std::to_string(load<std::int32_t>(element));
    case DType::I8:
      return std::to_string(int(load<std::int8_t>(element)));
    case DType::U8:
      return std::to_string(unsigned(load<std::uint8_t>(element)));
    case DType::Bool: {
      const auto b = load<std::uint8_t>(element);
      if (b <= 1) return b ? "true" : "false";
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "0x%02x", unsigned(b));
      return buffer;
    }
  }
  return "?";
}

ComparisonReport compareOutputs(std::span<const std::byte> got, std::span<const std::byte> want, DType dtype,
                                std::uint64_t count, const Tolerance &tolerance,
                                std::span<const std::int64_t> shape, std::size_t maxReported, unsigned threads) {
  checkSize(got.size(), dtype, count, "candidate output");
  checkSize(want.size(), dtype, count, "reference output");
  shape = usableShape(shape, count);
  ComparisonReport r;
  r.dtype = dtype;
  r.exact = tolerance.exact || !dtypeIsFloating(dtype);
  r.checked = count;
  visitDType(dtype, [&](auto d) {
    compareTyped<decltype(d)>(got.data(), want.data(), count, tolerance, shape, maxReported, dtype, threads, r);
  });
  r.summary = comparisonSummary(r, shape);
  return r;
}

bool sameBits(std::span<const std::byte> a, std::span<const std::byte> b, unsigned threads) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  // Bytes, in blocks of 1 MiB; every chunk stops at its next block once one found a difference.
  constexpr std::uint64_t kBlockBytes = std::uint64_t(1) << 20;
  const auto bounds = chunkBounds(a.size(), threads, kBlockBytes, 4 * kParallelMinElements);
  if (bounds.size() == 2) return std::memcmp(a.data(), b.data(), a.size()) == 0;
  std::atomic<bool> differ{false};
  runChunks(bounds, [&](std::size_t, std::uint64_t first, std::uint64_t end) {
    for (std::uint64_t start = first; start < end && !differ.load(std::memory_order_relaxed); start += kBlockBytes) {
      const std::uint64_t n = std::min(end - start, kBlockBytes);
      if (std::memcmp(a.data() + start, b.data() + start, n) != 0) differ.store(true, std::memory_order_relaxed);
    }
  });
  return !differ.load();
}

RunDifference differenceBeyondRounding(std::span<const std::byte> run1, std::span<const std::byte> run2,
                                       DType dtype, std::uint64_t count, const Tolerance &tolerance,
                                       std::span<const std::int64_t> shape, std::size_t maxReported,
                                       unsigned threads) {
  checkSize(run1.size(), dtype, count, "first run's output");
  checkSize(run2.size(), dtype, count, "second run's output");
  shape = usableShape(shape, count);
  RunDifference r;
  r.checked = count;
  visitDType(dtype, [&](auto d) {
    differTyped<decltype(d)>(run1.data(), run2.data(), count, tolerance, shape, maxReported, dtype, threads, r);
  });
  if (r.differentBits == 0) {
    r.summary = "the two runs agree bit for bit";
  } else if (r.beyondRounding == 0) {
    r.summary = "the two runs differ in " + std::to_string(r.differentBits) + " of " +
                plural(count, "element", "elements") + ", all within rounding (largest difference " +
                number(r.maxAbsDifference) + ")";
  } else {
    const ElementMismatch &first = r.firstBeyondRounding.front();
    r.summary = "the two runs differ beyond rounding in " + std::to_string(r.beyondRounding) + " of " +
                plural(count, "element", "elements") + " (first at " + formatCoordinates(first.coordinates) +
                ": " + first.gotText + ", then " + first.wantText +
                "): a race between threads or a read of "
                "uninitialized memory";
  }
  return r;
}

ConstantOutputCheck isNearConstant(std::span<const std::byte> reference, DType dtype, std::uint64_t count,
                                   const Tolerance &tolerance, std::string_view tensorName) {
  checkSize(reference.size(), dtype, count, "reference output");
  if (count == 0) {
    ConstantOutputCheck out;
    out.nearConstant = true;
    out.warning = "output '" + std::string(tensorName) +
                  "' has no elements: any kernel passes. Use sizes that "
                  "give it elements.";
    return out;
  }
  return visitDType(dtype, [&](auto d) {
    return nearConstantTyped<decltype(d)>(reference.data(), count, tolerance, dtype, tensorName);
  });
}

}  // namespace kwb
