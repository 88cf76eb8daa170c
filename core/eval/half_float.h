#pragma once
// IEEE binary16 (f16) and bfloat16 (bf16) as 16-bit patterns, converted exactly to and from
// float and double: decoding is exact (every f16 and bf16 value is a float), encoding rounds to
// nearest, ties to even, in one step (no double rounding through float), and handles signed
// zeros, subnormals, overflow to infinity and NaN. A NaN keeps its sign and the top bits of its
// payload and comes out quiet, as NVIDIA's and x86's F16C conversions do.
//
//   f16:  1 sign, 5 exponent (bias 15), 10 fraction bits; largest finite 65504, smallest
//         subnormal 2^-24
//   bf16: 1 sign, 8 exponent (bias 127), 7 fraction bits: the top half of a float
#include <cstdint>

namespace kwb {

float halfToFloat(std::uint16_t bits);
std::uint16_t floatToHalf(float value);
std::uint16_t doubleToHalf(double value);

float bfloat16ToFloat(std::uint16_t bits);
std::uint16_t floatToBfloat16(float value);
std::uint16_t doubleToBfloat16(double value);

}  // namespace kwb
