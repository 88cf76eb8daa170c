#include "core/eval/half_float.h"

#include <bit>

namespace kwb {

namespace {

// Rounds a double to a binary format with ExpBits exponent and FracBits fraction bits (at most
// 16 bits in all), to nearest with ties to even, straight from the double's 53-bit significand.
template <int ExpBits, int FracBits>
std::uint16_t roundDouble(double value) {
  static_assert(ExpBits + FracBits == 15);
  constexpr std::uint32_t kMaxExponent = (1u << ExpBits) - 1;  // all ones: infinity and NaN
  constexpr int kBias = (1 << (ExpBits - 1)) - 1;
  constexpr std::uint16_t kInfinity = std::uint16_t(kMaxExponent << FracBits);

  const auto bits = std::bit_cast<std::uint64_t>(value);
  const auto sign = std::uint16_t((bits >> 63) << 15);
  const int exponent = int((bits >> 52) & 0x7ff);
  const std::uint64_t fraction = bits & ((std::uint64_t(1) << 52) - 1);

  if (exponent == 0x7ff) {
    if (fraction == 0) return sign | kInfinity;
    // NaN: keep the top payload bits, set the quiet bit.
    const auto payload = std::uint16_t((fraction >> (52 - FracBits)) | (1u << (FracBits - 1)));
    return sign | kInfinity | payload;
  }
  // Zero, and double subnormals (below 2^-1022): far under half the smallest subnormal of both
  // formats, so they round to a signed zero.
  if (exponent == 0) return sign;

  // The target's biased exponent, were the value normal there.
  const int target = exponent - 1023 + kBias;
  const std::uint64_t significand = fraction | (std::uint64_t(1) << 52);
  int shift = 52 - FracBits;
  if (target <= 0) shift += 1 - target;  // subnormal in the target: fewer fraction bits survive
  if (shift > 63) return sign;           // below half the smallest subnormal

  std::uint64_t rounded = significand >> shift;
  const std::uint64_t rest = significand & ((std::uint64_t(1) << shift) - 1);
  const std::uint64_t halfway = std::uint64_t(1) << (shift - 1);
  if (rest > halfway || (rest == halfway && (rounded & 1))) ++rounded;

  // A normal value's `rounded` holds the implicit bit, so adding it to (exponent - 1) lets a
  // carry out of the fraction step the exponent up; a subnormal that rounds up to 2^FracBits
  // becomes the smallest normal the same way.
  const std::uint64_t field = target <= 0 ? rounded : (std::uint64_t(target - 1) << FracBits) + rounded;
  if (field >= kInfinity) return sign | kInfinity;
  return sign | std::uint16_t(field);
}

}  // namespace

float halfToFloat(std::uint16_t bits) {
  const std::uint32_t sign = std::uint32_t(bits & 0x8000) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1f;
  std::uint32_t fraction = bits & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (fraction << 13));
  if (exponent == 0) {
    if (fraction == 0) return std::bit_cast<float>(sign);
    // Subnormal: fraction × 2^-24; normalize it into a float.
    int e = -14;
    while (!(fraction & 0x400)) {
      fraction <<= 1;
      --e;
    }
    fraction &= 0x3ff;
    return std::bit_cast<float>(sign | (std::uint32_t(e + 127) << 23) | (fraction << 13));
  }
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (fraction << 13));
}

std::uint16_t floatToHalf(float value) {
  return roundDouble<5, 10>(double(value));
}

std::uint16_t doubleToHalf(double value) {
  return roundDouble<5, 10>(value);
}

float bfloat16ToFloat(std::uint16_t bits) {
  return std::bit_cast<float>(std::uint32_t(bits) << 16);
}

std::uint16_t floatToBfloat16(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((bits >> 16) | 0x40);  // quiet NaN
  // Round to nearest even on the low 16 bits; a carry may run into the exponent (up to infinity).
  bits += 0x7fffu + ((bits >> 16) & 1);
  return std::uint16_t(bits >> 16);
}

std::uint16_t doubleToBfloat16(double value) {
  return roundDouble<8, 7>(value);
}

}  // namespace kwb
