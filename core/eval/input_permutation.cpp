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

void drawRelabelling(PermutationKey &key, const Generator &generator, DType dtype, std::mt19937_64 &rng) {
  const bool integer = dtype == DType::I64 || dtype == DType::I32 || dtype == DType::I8 || dtype == DType::U8 ||
                       dtype == DType::Bool;
  if (!integer || generator.kind != Generator::Kind::RandInt) return;
  const auto low = static_cast<std::int64_t>(generator.a), high = static_cast<std::int64_t>(generator.b);
  if (high - low < 2) return;
  const std::size_t bits = 8 * dtypeSize(dtype);
  key.mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  key.low = static_cast<std::uint64_t>(low) & key.mask;
  key.span = static_cast<std::uint64_t>(high - low);
  key.shift = std::uniform_int_distribution<std::uint64_t>(1, key.span - 1)(rng);
}

std::uint64_t relabelled(std::uint64_t value, const PermutationKey &key) {
  if (!key.shift) return value;
  std::uint64_t w = ((value - key.low) & key.mask) + key.shift;
  if (w >= key.span) w -= key.span;
  return (w + key.low) & key.mask;
}

std::vector<std::byte> permuteElements(const std::vector<std::byte> &src, std::size_t elementBytes,
                                       PermutationKey key) {
  std::vector<std::byte> out(src.size());
  if (!elementBytes) return out;
  const std::uint64_t n = src.size() / elementBytes;
  const bool relabel = key.shift && elementBytes <= 8;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::byte *to = out.data() + i * elementBytes;
    std::memcpy(to, src.data() + permutedIndex(i, n, key) * elementBytes, elementBytes);
    if (!relabel) continue;
    std::uint64_t v = 0;
    std::memcpy(&v, to, elementBytes);  // little-endian: the low bytes
    v = relabelled(v, key);
    std::memcpy(to, &v, elementBytes);
  }
  return out;
}

}  // namespace kwb
