#pragma once
// Fresh inputs for every timed sample (issue 15, memoization): each input tensor is rewritten
// before a sample as a permutation of its generated elements, element i taking element
// (a·i + b) mod n, with a coprime to n and (a, b) drawn anew per tensor and sample. The values
// stay the same (f32 values are scaled by a factor in [0.75, 1.25] as well); their places do
// not, so a kernel that remembers results keyed on its inputs never sees the same input twice.
// Integer values drawn by `randint` are also relabelled within their range (v -> low + (v - low +
// shift) mod span), so that results which depend on the values but not on their places (a
// histogram's counts) change from sample to sample as well.
// The worker applies it on the device (core/worker/server/time_command.cpp); this is the host's
// statement of the same arithmetic, which the unit tests hold it to. No GPU, no I/O.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/task/task.h"

namespace kwb {

struct PermutationKey {
  std::uint64_t a = 1, b = 0;  // i -> (a·i + b) mod n
  // The worker also multiplies f32 values by this (0: not at all), so that what does not depend
  // on the order (a sum) changes too; permuteElements below moves elements only.
  float scale = 0.0f;
  // Integer values in [low, low + span) move by `shift` within that range (0: not relabelled).
  // `low` and the arithmetic are modulo 2^bits of the element (`mask` = 2^bits - 1).
  std::uint64_t low = 0, span = 0, shift = 0, mask = ~std::uint64_t{0};
};

// For an integer tensor whose values `generator` draws with randint (low inclusive, high
// exclusive), `key` with a relabelling drawn: shift uniform in [1, span). Any other tensor, or a
// range of one value, keeps `key` as it is.
void drawRelabelling(PermutationKey &key, const Generator &generator, DType dtype, std::mt19937_64 &rng);

// One element's value (its bytes as an unsigned integer, zero-extended) after key's relabelling.
std::uint64_t relabelled(std::uint64_t value, const PermutationKey &key);

// A key for n elements: b uniform in [0, n); a uniform among values in [1, n) coprime to n, below
// 2^32 (so a·i stays within 64 bits for i < 2^32); for n >= 2^32, a = 1 (a rotation). n <= 1:
// the identity.
PermutationKey permutationKey(std::uint64_t n, std::mt19937_64 &rng);

// The element (a·i + b) mod n, without overflow for the keys permutationKey draws.
std::uint64_t permutedIndex(std::uint64_t i, std::uint64_t n, PermutationKey key);

// `src` (n elements of `elementBytes` each) permuted by `key`: out[i] = src[(a·i + b) mod n],
// relabelled when key.shift is set (elements of 1, 2, 4 or 8 bytes, little-endian).
std::vector<std::byte> permuteElements(const std::vector<std::byte> &src, std::size_t elementBytes,
                                       PermutationKey key);

}  // namespace kwb
