#include "core/eval/poison.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/eval/parallel_chunks.h"
#include "core/eval/element_coordinates.h"
#include "core/eval/input_generator.h"

namespace kwb {

namespace {

using detail::chunkBounds;
using detail::runChunks;

static_assert(std::endian::native == std::endian::little, "element bytes are read as little-endian integers");

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// Large buffers are split over threads into contiguous chunks of whole blocks; every element's
// poison depends on its index only, and the chunks' findings merge in index order, so the
// results do not depend on the number of threads.
constexpr std::uint64_t kBlockElements = std::uint64_t(1) << 16;
constexpr std::uint64_t kParallelMinElements = std::uint64_t(1) << 20;  // fewer: the calling thread only

std::vector<std::uint64_t> chunkBounds(std::uint64_t count, unsigned threads) {
  return detail::chunkBounds(count, threads, kBlockElements, kParallelMinElements);
}

// A quiet NaN with `payloadBits` payload bits below the quiet bit: exponent and quiet bit set,
// payload never 0 (bit 0 set) and never all ones (its top bit clear), sign from r.
[[gnu::always_inline]] inline std::uint64_t quietNaN(std::uint64_t r, int totalBits, int payloadBits) {
  const std::uint64_t payloadMask = (std::uint64_t(1) << payloadBits) - 1;
  std::uint64_t payload = (r & payloadMask) | 1;
  payload &= ~(std::uint64_t(1) << (payloadBits - 1));
  const std::uint64_t sign = (r >> 63) << (totalBits - 1);
  const std::uint64_t exponentAndQuiet = ((std::uint64_t(1) << (totalBits - payloadBits - 1)) - 1)
                                         << payloadBits;
  return sign | exponentAndQuiet | payload;
}

// dtypeSize, known to the compiler.
constexpr std::size_t elementSize(DType dtype) {
  switch (dtype) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::I8:
    case DType::U8:
    case DType::Bool:
      return 1;
  }
  return 1;
}

[[gnu::always_inline]] inline std::uint64_t loadBits(const std::byte *p, std::size_t size) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, size);
  return v;
}

// The integer mask of element i under `key`: r's low bits, 1 where those are all zero.
[[gnu::always_inline]] inline std::uint64_t integerMask(std::uint64_t r, std::size_t size) {
  const std::uint64_t mask = size == 8 ? ~std::uint64_t(0) : (std::uint64_t(1) << (8 * size)) - 1;
  const std::uint64_t m = r & mask;
  return m == 0 ? 1 : m;
}

// Element i's poison under one key, in the low dtypeSize bytes.
[[gnu::always_inline]] inline std::uint64_t keyPoisonBits(DType dtype, std::uint64_t key, std::uint64_t index, const std::byte *reference) {
  const std::uint64_t r = splitmix64(key + index * kGolden);
  switch (dtype) {
    case DType::F64:
      return quietNaN(r, 64, 51);
    case DType::F32:
      return quietNaN(r, 32, 22);
    case DType::F16:
      return quietNaN(r, 16, 9);
    case DType::BF16:
      return quietNaN(r, 16, 6);
    case DType::Bool:
      return 2 + r % 254;
    case DType::I64:
    case DType::I32:
    case DType::I8:
    case DType::U8: {
      const std::size_t size = elementSize(dtype);
      const std::uint64_t m = integerMask(r, size);
      return reference ? (loadBits(reference + index * size, size) ^ m) : m;
    }
  }
  return 0;
}

// Element i's poison under `pattern`: a second run's never equals the first run's.
[[gnu::always_inline]] inline std::uint64_t poisonBits(DType dtype, const PoisonPattern &pattern, std::uint64_t index, const std::byte *reference) {
  const std::uint64_t bits = keyPoisonBits(dtype, pattern.key, index, reference);
  if (!pattern.second) return bits;
  const std::uint64_t first = keyPoisonBits(dtype, pattern.firstKey, index, reference);
  if (bits != first) return bits;
  switch (dtype) {
    case DType::F64:
      return bits ^ (std::uint64_t(1) << 63);  // the same unusual NaN, other sign
    case DType::F32:
      return bits ^ (std::uint64_t(1) << 31);
    case DType::F16:
    case DType::BF16:
      return bits ^ (std::uint64_t(1) << 15);
    case DType::Bool:
      return 2 + (bits - 1) % 254;  // the next byte in [2, 255], wrapping
    case DType::I64:
    case DType::I32:
    case DType::I8:
    case DType::U8: {
      // Equal poisons mean equal masks m; take another nonzero mask, so the value differs from
      // both the first poison and the reference.
      const std::size_t size = elementSize(dtype);
      const std::uint64_t m = integerMask(splitmix64(pattern.firstKey + index * kGolden), size);
      const std::uint64_t other = m == 1 ? 2 : 1;
      return reference ? (loadBits(reference + index * size, size) ^ other) : other;
    }
  }
  return bits;
}

void checkSize(std::size_t bytes, DType dtype, std::uint64_t count, const char *what) {
  if (count > bytes / dtypeSize(dtype))
    throw std::invalid_argument(std::string(what) + " of " + std::to_string(bytes) +
                                " bytes is too small for " + std::to_string(count) + " " +
                                std::string(dtypeName(dtype)) + " elements");
}

// Calls f(std::integral_constant<DType, dtype>{}), so the per-element code is compiled per dtype.
template <class F>
decltype(auto) withDType(DType dtype, F &&f) {
  switch (dtype) {
    case DType::F64:
      return f(std::integral_constant<DType, DType::F64>{});
    case DType::F32:
      return f(std::integral_constant<DType, DType::F32>{});
    case DType::F16:
      return f(std::integral_constant<DType, DType::F16>{});
    case DType::BF16:
      return f(std::integral_constant<DType, DType::BF16>{});
    case DType::I64:
      return f(std::integral_constant<DType, DType::I64>{});
    case DType::I32:
      return f(std::integral_constant<DType, DType::I32>{});
    case DType::I8:
      return f(std::integral_constant<DType, DType::I8>{});
    case DType::U8:
      return f(std::integral_constant<DType, DType::U8>{});
    case DType::Bool:
      return f(std::integral_constant<DType, DType::Bool>{});
  }
  return f(std::integral_constant<DType, DType::F32>{});
}

}  // namespace

PoisonPattern poisonPattern(std::uint64_t runCounter, std::uint64_t salt) {
  return {splitmix64(runCounter ^ splitmix64(salt))};
}

PoisonPattern poisonPatternAfter(const PoisonPattern &first, std::uint64_t runCounter, std::uint64_t salt) {
  if (first.second) throw std::invalid_argument("poisonPatternAfter needs a first run's pattern (from poisonPattern)");
  PoisonPattern p = poisonPattern(runCounter, salt);
  p.firstKey = first.key;
  p.second = true;
  return p;
}

void writePoison(std::span<std::byte> buffer, DType dtype, std::uint64_t count, const PoisonPattern &pattern,
                 std::span<const std::byte> reference, unsigned threads) {
  checkSize(buffer.size(), dtype, count, "output buffer");
  if (!reference.empty()) checkSize(reference.size(), dtype, count, "reference buffer");
  const std::byte *ref = reference.empty() ? nullptr : reference.data();
  std::byte *out = buffer.data();
  withDType(dtype, [&](auto d) {
    constexpr DType kDType = decltype(d)::value;
    constexpr std::size_t size = elementSize(kDType);
    runChunks(chunkBounds(count, threads), [&](std::size_t, std::uint64_t first, std::uint64_t end) {
      const PoisonPattern p = pattern;
      for (std::uint64_t i = first; i < end; ++i) {
        const std::uint64_t bits = poisonBits(kDType, p, i, ref);
        std::memcpy(out + i * size, &bits, size);
      }
    });
  });
}

namespace {

// Counts the elements where unwritten(i) holds, over `threads` threads, keeping the first
// maxIndices in index order.
template <class Unwritten>
UnwrittenElements findUnwritten(std::uint64_t count, std::size_t maxIndices, unsigned threads,
                                const Unwritten &unwritten) {
  const auto bounds = chunkBounds(count, threads);
  std::vector<UnwrittenElements> chunks(bounds.size() - 1);
  runChunks(bounds, [&](std::size_t c, std::uint64_t first, std::uint64_t end) {
    const Unwritten isUnwritten = unwritten;  // a copy per thread, in registers
    UnwrittenElements local;
    for (std::uint64_t i = first; i < end; ++i) {
      if (!isUnwritten(i)) continue;
      ++local.count;
      if (local.firstIndices.size() < maxIndices) local.firstIndices.push_back(i);
    }
    chunks[c] = std::move(local);
  });
  UnwrittenElements out;
  for (const UnwrittenElements &c : chunks) {  // in index order
    out.count += c.count;
    for (std::uint64_t i : c.firstIndices) {
      if (out.firstIndices.size() >= maxIndices) break;
      out.firstIndices.push_back(i);
    }
  }
  return out;
}

}  // namespace

UnwrittenElements unwrittenElements(std::span<const std::byte> buffer, DType dtype, std::uint64_t count,
                                    const PoisonPattern &pattern, std::span<const std::byte> reference,
                                    std::size_t maxIndices, unsigned threads) {
  checkSize(buffer.size(), dtype, count, "output buffer");
  if (!reference.empty()) checkSize(reference.size(), dtype, count, "reference buffer");
  const std::byte *ref = reference.empty() ? nullptr : reference.data();
  return withDType(dtype, [&](auto d) {
    constexpr DType kDType = decltype(d)::value;
    constexpr std::size_t size = elementSize(kDType);
    const std::byte *data = buffer.data();
    const PoisonPattern p = pattern;
    return findUnwritten(count, maxIndices, threads, [data, p, ref](std::uint64_t i) {
      return loadBits(data + i * size, size) == poisonBits(kDType, p, i, ref);
    });
  });
}

UnwrittenElements unwrittenInBothRuns(std::span<const std::byte> firstOutput, const PoisonPattern &firstPattern,
                                      std::span<const std::byte> secondOutput, const PoisonPattern &secondPattern,
                                      DType dtype, std::uint64_t count, std::span<const std::byte> reference,
                                      std::size_t maxIndices, unsigned threads) {
  if (firstPattern.second || !secondPattern.second || secondPattern.firstKey != firstPattern.key)
    throw std::invalid_argument("unwrittenInBothRuns: the second pattern must be poisonPatternAfter(first pattern)");
  checkSize(firstOutput.size(), dtype, count, "first run's output buffer");
  checkSize(secondOutput.size(), dtype, count, "second run's output buffer");
  if (!reference.empty()) checkSize(reference.size(), dtype, count, "reference buffer");
  const std::byte *ref = reference.empty() ? nullptr : reference.data();
  return withDType(dtype, [&](auto d) {
    constexpr DType kDType = decltype(d)::value;
    constexpr std::size_t size = elementSize(kDType);
    const std::byte *data1 = firstOutput.data(), *data2 = secondOutput.data();
    const PoisonPattern p1 = firstPattern, p2 = secondPattern;
    return findUnwritten(count, maxIndices, threads, [data1, data2, p1, p2, ref](std::uint64_t i) {
      return loadBits(data1 + i * size, size) == poisonBits(kDType, p1, i, ref) &&
             loadBits(data2 + i * size, size) == poisonBits(kDType, p2, i, ref);
    });
  });
}

std::string describeUnwritten(const UnwrittenElements &unwritten, std::uint64_t count,
                              std::span<const std::int64_t> shape) {
  if (unwritten.count == 0) return "every element was written";
  std::string text = std::to_string(unwritten.count) + " of " + std::to_string(count) +
                     (count == 1 ? " element " : " elements ") + (unwritten.count == 1 ? "was" : "were") +
                     " not written (still holding the poison";
  if (!unwritten.firstIndices.empty()) {
    const auto coordinates = elementCoordinates(unwritten.firstIndices.front(), shape);
    text += unwritten.count == 1 ? "; at " : "; first at ";
    text += formatCoordinates(coordinates);
  }
  return text + ")";
}

}  // namespace kwb
