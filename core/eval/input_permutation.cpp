#include "core/eval/input_permutation.h"

#include <cstring>
#include <numeric>

namespace kwb {

PermutationKey permutationKey(std::uint64_t n, std::mt19937_64 &rng) {
  if (n <= 1) return {};
  PermutationKey k;
  k.b = std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng);
  if (n >= (std::uint64_t{1} << 32)) return k;
  std::uniform_int_distribution<std::uint64_t> pick(1, n - 1);
  do k.a = pick(rng);
  while (std::gcd(k.a, n) != 1);  // about n / φ(n) draws: a handful at most
  return k;
}

std::uint64_t permutedIndex(std::uint64_t i, std::uint64_t n, PermutationKey key) {
  // a < 2^32 and i < n < 2^32, or a = 1: a·i fits in 64 bits; (a·i mod n) + b < 2n.
  const std::uint64_t j = (key.a * i) % n + key.b;
  return j >= n ? j - n : j;
}

std::vector<std::byte> permuteElements(const std::vector<std::byte> &src, std::size_t elementBytes,
                                       PermutationKey key) {
  std::vector<std::byte> out(src.size());
  if (!elementBytes) return out;
  const std::uint64_t n = src.size() / elementBytes;
  for (std::uint64_t i = 0; i < n; ++i)
    std::memcpy(out.data() + i * elementBytes, src.data() + permutedIndex(i, n, key) * elementBytes, elementBytes);
  return out;
}

}  // namespace kwb
