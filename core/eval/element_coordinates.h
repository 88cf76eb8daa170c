#pragma once
// Where a flat element index lies in a row-major tensor, for messages: [row, column, ...].
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kwb {

// The row-major coordinates of element `index` in a tensor of `shape`; just {index} when the
// shape is empty (a scalar or an unknown shape) or does not hold `index`.
std::vector<std::int64_t> elementCoordinates(std::uint64_t index, std::span<const std::int64_t> shape);

// "[3, 17]"
std::string formatCoordinates(std::span<const std::int64_t> coordinates);

// The number of elements of a shape (1 for an empty one); 0 when a dimension is negative or
// the product overflows 64 bits.
std::uint64_t shapeElementCount(std::span<const std::int64_t> shape);

}  // namespace kwb
