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
// A single run cannot tell "not written" from "written with a value that happens to equal the
// poison" (for 8-bit integers without a reference that is 1 in 256; with a reference it only
// happens to a wrong value, which then reads as unwritten rather than as a mismatch). The
// evaluation runs each candidate twice on the same inputs (the race check), so the second run
// takes poisonPatternAfter(first): its poison differs from the first run's at every element,
// for every dtype (and from the reference, as always). unwrittenInBothRuns then counts an element
// only where it holds the poison in both runs: a value the kernel wrote deterministically cannot
// equal two different poisons, so it is never reported unwritten; a kernel that writes an element
// in one run only is caught by the race check.
//
// Element i's random bits are r = splitmix64(key + i × 0x9E3779B97F4A7C15) (input_generator.h's
// splitmix64, which adds the constant once more: element i is draw i + 1 of the splitmix64
// stream from state `key`), with key = splitmix64(runCounter ^ splitmix64(salt)):
//   f64  sign = r bit 63, payload = (r & (2^51 - 1)) | 1 with bit 50 cleared, exponent all ones,
//        quiet bit set; f32, f16, bf16 alike with 22, 9 and 6 payload bits
//   bool 2 + (r mod 254)
//   ints reference ^ m (or m), m = r's low bits, 1 where those are all zero
// A pattern made by poisonPatternAfter(first) computes the same from its own key and, at an
// element where that equals the first pattern's poison, uses instead: floats the same NaN with
// the sign flipped; bool 2 + ((p - 1) mod 254) for the first's byte p; ints m = 2 if the
// first's mask is 1, else 1.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/task/task.h"

namespace kwb {

struct PoisonPattern {
  std::uint64_t key = 0;
  std::uint64_t firstKey = 0;  // poisonPatternAfter: the key of the first run's pattern
  bool second = false;         // made by poisonPatternAfter: differs from that pattern everywhere
  bool operator==(const PoisonPattern &) const = default;
};

// The pattern of one run: a counter the caller increments per run, and a salt chosen at random
// per worker process so the pattern cannot be predicted from the counter.
PoisonPattern poisonPattern(std::uint64_t runCounter, std::uint64_t salt = 0);

// The pattern of a second run on the same inputs (and reference) as the run poisoned with
// `first`: as unpredictable as poisonPattern(runCounter, salt), and at every element different
// from `first`'s poison. `first` must come from poisonPattern (std::invalid_argument otherwise).
PoisonPattern poisonPatternAfter(const PoisonPattern &first, std::uint64_t runCounter, std::uint64_t salt = 0);

// Writes the poison into elements [0, count) of `buffer`. `reference`, when given, holds the
// correct output (count elements of the same dtype); it is used for integer dtypes only.
// Throws std::invalid_argument when a buffer is too small.
//
// This and the functions below split the work into contiguous index ranges over `threads`
// threads (0: one per hardware thread from 2^20 elements on, else the calling thread only);
// their results do not depend on `threads`.
void writePoison(std::span<std::byte> buffer, DType dtype, std::uint64_t count, const PoisonPattern &pattern,
                 std::span<const std::byte> reference = {}, unsigned threads = 0);

struct UnwrittenElements {
  std::uint64_t count = 0;                  // elements still holding the poison
  std::vector<std::uint64_t> firstIndices;  // the first of them, in index order
};

// The elements of `buffer` that still hold `pattern`'s poison after a run; pass the same
// reference as writePoison was given.
UnwrittenElements unwrittenElements(std::span<const std::byte> buffer, DType dtype, std::uint64_t count,
                                    const PoisonPattern &pattern, std::span<const std::byte> reference = {},
                                    std::size_t maxIndices = 10, unsigned threads = 0);

// The elements that hold the poison after both runs: `firstOutput` from the run poisoned with
// `firstPattern`, `secondOutput` from the run poisoned with `secondPattern` =
// poisonPatternAfter(firstPattern, ...), on the same inputs; `reference` as given to writePoison
// for both. An element written with the same value in both runs is never counted, whatever the
// value. Throws std::invalid_argument when a buffer is too small or secondPattern was not made
// from firstPattern.
UnwrittenElements unwrittenInBothRuns(std::span<const std::byte> firstOutput, const PoisonPattern &firstPattern,
                                      std::span<const std::byte> secondOutput, const PoisonPattern &secondPattern,
                                      DType dtype, std::uint64_t count, std::span<const std::byte> reference = {},
                                      std::size_t maxIndices = 10, unsigned threads = 0);

// "3 of 1048576 elements were not written (still holding the poison; first at [0, 17])",
// or "every element was written". `shape` gives coordinates (row-major); empty for flat indices.
std::string describeUnwritten(const UnwrittenElements &unwritten, std::uint64_t count,
                              std::span<const std::int64_t> shape = {});

}  // namespace kwb
