#pragma once
// The poison written into every output buffer before a run, so an element the kernel did not
// write is found afterwards: it still holds the poison. The pattern changes with every run and
// every element, so a kernel cannot leave behind (or replay) values that pass, and no correct
// result can equal it:
//   floating point  a quiet NaN with a per-element sign and payload; never the canonical NaNs
//                   (payload 0 or all ones) that arithmetic produces, and a NaN never passes
//                   the comparison anyway;
//   bool            a byte in [2, 255], never a valid bool;
//   integers        the reference value XOR a nonzero per-element mask, so it differs from the
//                   correct result at every element; without a reference, the mask itself
//                   (then a correct result may equal it by chance: 1 in 256 per i8 element).
//
// Element i's random bits are r = splitmix64(key + i × 0x9E3779B97F4A7C15) (input_generator.h's
// splitmix64, which adds the constant once more: element i is draw i + 1 of the splitmix64
// stream from state `key`), with key = splitmix64(runCounter ^ splitmix64(salt)):
//   f64  sign = r bit 63, payload = (r & (2^51 - 1)) | 1 with bit 50 cleared, exponent all ones,
//        quiet bit set; f32, f16, bf16 alike with 22, 9 and 6 payload bits
//   bool 2 + (r mod 254)
//   ints reference ^ m (or m), m = r's low bits, 1 where those are all zero
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/task/task.h"

namespace kwb {

struct PoisonPattern {
  std::uint64_t key = 0;
  bool operator==(const PoisonPattern &) const = default;
};

// The pattern of one run: a counter the caller increments per run, and a salt chosen at random
// per worker process so the pattern cannot be predicted from the counter.
PoisonPattern poisonPattern(std::uint64_t runCounter, std::uint64_t salt = 0);

// Writes the poison into elements [0, count) of `buffer`. `reference`, when given, holds the
// correct output (count elements of the same dtype); it is used for integer dtypes only.
// Throws std::invalid_argument when a buffer is too small.
void writePoison(std::span<std::byte> buffer, DType dtype, std::uint64_t count, const PoisonPattern &pattern,
                 std::span<const std::byte> reference = {});

struct UnwrittenElements {
  std::uint64_t count = 0;                  // elements still holding the poison
  std::vector<std::uint64_t> firstIndices;  // the first of them, in index order
};

// The elements of `buffer` that still hold `pattern`'s poison after a run; pass the same
// reference as writePoison was given.
UnwrittenElements unwrittenElements(std::span<const std::byte> buffer, DType dtype, std::uint64_t count,
                                    const PoisonPattern &pattern, std::span<const std::byte> reference = {},
                                    std::size_t maxIndices = 10);

// "3 of 1048576 elements were not written (still holding the poison; first at [0, 17])",
// or "every element was written". `shape` gives coordinates (row-major); empty for flat indices.
std::string describeUnwritten(const UnwrittenElements &unwritten, std::uint64_t count,
                              std::span<const std::int64_t> shape = {});

}  // namespace kwb
