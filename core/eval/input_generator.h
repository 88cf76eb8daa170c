#pragma once
// Input tensors filled from their manifest generator, the same bytes on every machine and for
// any number of threads: element i depends only on (seed, seed offset, tensor name, i), so any
// element, range or GPU thread can compute its own value.
//
// The recipe (a GPU implementation reproduces it exactly with the same steps):
//   key      = inputKey(seed, seedOffset, name): name hashed with 64-bit FNV-1a, then
//              x = splitmix64(hash); x = splitmix64(x ^ seed); x = splitmix64(x ^ seedOffset);
//              key = {low 32 bits of x, high 32 bits of x}
//   words    = philox4x32(counter = {low 32 bits of i, high 32 bits of i, 0, 0}, key):
//              Philox-4x32 with 10 rounds (Salmon et al. 2011; cuRAND's and Random123's)
//   u(w, v)  = ((w << 32 | v) >> 11) × 2^-53, a double in [0, 1)
//   uniform  x = low + (high - low) × u(w0, w1)
//   normal   x = mean + std × sqrt(-2 ln u1) × cos(2π u2), u1 = 1 - u(w0, w1) in (0, 1],
//            u2 = u(w2, w3) (Box–Muller, cosine branch)
//   randint  k = ceil(low) + floor(r × n / 2^128), r = w0:w1:w2:w3 as a 128-bit integer and
//            n = ceil(high) - ceil(low): every integer in [low, high), bias below n / 2^128
//   arange   x = start + i × step (in 64-bit integers when the tensor is integral and start
//            and step are integers, else in double)
//   constant x = value
//   scale and shift (Generator::scale, ::shift): x = x × scale + shift, where they are not 1 and 0
//            (randint's and integral arange's integer k first becomes the double k)
// Doubles are computed with separate multiply and add roundings (no fused multiply-add; on a
// GPU use __dmul_rn / __dadd_rn) and then stored in the tensor's dtype:
//   f64 as is; f32 by a C cast; f16 and bf16 rounded to nearest even in one step (half_float.h);
//   integers rounded toward negative infinity and saturated to the dtype's range (NaN gives 0);
//   bool as 1 when nonzero, else 0.
// Uniform and randint values never reach `high`: a uniform x that rounds to `high` in double
// becomes the double just below it, and a stored float value that rounds up to `high` or beyond
// is replaced by the dtype's next value below it. With a scale or shift only the first rule holds
// (on the draw, before scale and shift); the stored value is the transformed double's, which may
// round to high × scale + shift (as `torch.rand(n) * scale` may reach `scale`).
// A matrix structure (Generator::matrix) over the last two dimensions (R rows, C columns), where
// element i is row r = (i mod RC) div C and column c = i mod C of its matrix:
//   symmetric  an element with r > c is element i + (c - r) × C + (r - c) (its mirror (c, r) in
//              the same matrix), computed from the mirror's index as above
//   upper      an element with c - r < diagonal is 0 (torch.triu)
//   lower      an element with c - r > diagonal is 0 (torch.tril)
// Normal draws call the C library's log, sqrt and cos: the GPU's may differ in the last bit of
// the double, rarely in the stored f32 or narrower value.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/task/task.h"

namespace kwb {

struct PhiloxKey {
  std::uint32_t k0 = 0;
  std::uint32_t k1 = 0;
  bool operator==(const PhiloxKey &) const = default;
};
using PhiloxBlock = std::array<std::uint32_t, 4>;

// Philox-4x32-10: four 32-bit words from a 128-bit counter and a 64-bit key.
PhiloxBlock philox4x32(PhiloxBlock counter, PhiloxKey key);

std::uint64_t splitmix64(std::uint64_t x);
std::uint64_t fnv1a64(std::string_view text);

// The key of one input tensor's stream.
PhiloxKey inputKey(std::uint64_t seed, std::uint64_t seedOffset, std::string_view tensorName);

// A tensor's last two dimensions, which a generator's matrix structure needs; {0, 0}: unknown.
struct MatrixShape {
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
};
// The last two of a shape's dimensions ({0, 0} for fewer than two).
MatrixShape matrixShapeOf(std::span<const std::int64_t> shape);

// Fills elements [first, first + count) of a tensor into `out` (count × dtypeSize bytes from
// its start). Throws std::invalid_argument when `out` is too small, or when the generator has a
// matrix structure and `matrix` is unknown (or not square for symmetric).
void fillInputRange(std::span<std::byte> out, DType dtype, const Generator &generator, PhiloxKey key,
                    std::uint64_t first, std::uint64_t count, MatrixShape matrix = {});

// Fills a whole tensor of `count` elements: the key from (seed, generator.seedOffset,
// tensorName), the work split into contiguous index ranges over `threads` threads (0: as many
// as the machine has, fewer for small tensors). The bytes do not depend on `threads`.
void fillInput(std::span<std::byte> out, DType dtype, std::uint64_t count, const Generator &generator,
               std::uint64_t seed, std::string_view tensorName, unsigned threads = 0, MatrixShape matrix = {});

// The same into a new buffer of count × dtypeSize bytes (no matrix structure: that needs the
// shape, the overloads below).
std::vector<std::byte> generateInput(DType dtype, std::uint64_t count, const Generator &generator,
                                     std::uint64_t seed, std::string_view tensorName, unsigned threads = 0);

// A manifest tensor's input from the generator `seed` picks (generatorForSeed); throws
// std::invalid_argument when it has no generator.
std::vector<std::byte> generateInput(const Tensor &tensor, std::uint64_t count, std::uint64_t seed,
                                     unsigned threads = 0);

// The same for a tensor of `shape` (its dimensions in a configuration): what every caller with a
// task uses, since a matrix structure needs the last two dimensions.
std::vector<std::byte> generateInput(DType dtype, std::span<const std::int64_t> shape, const Generator &generator,
                                     std::uint64_t seed, std::string_view tensorName, unsigned threads = 0);
std::vector<std::byte> generateInput(const Tensor &tensor, std::span<const std::int64_t> shape, std::uint64_t seed,
                                     unsigned threads = 0);

}  // namespace kwb
