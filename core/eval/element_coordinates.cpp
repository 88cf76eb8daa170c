#include "core/eval/element_coordinates.h"

namespace kwb {

std::uint64_t shapeElementCount(std::span<const std::int64_t> shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return 0;
    if (d != 0 && n > UINT64_MAX / std::uint64_t(d)) return 0;
    n *= std::uint64_t(d);
  }
  return n;
}

std::vector<std::int64_t> elementCoordinates(std::uint64_t index, std::span<const std::int64_t> shape) {
  if (shape.empty() || index >= shapeElementCount(shape)) return {std::int64_t(index)};
  std::vector<std::int64_t> out(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto extent = std::uint64_t(shape[d]);
    out[d] = std::int64_t(index % extent);
    index /= extent;
  }
  return out;
}

std::string formatCoordinates(std::span<const std::int64_t> coordinates) {
  std::string out = "[";
  for (std::size_t i = 0; i < coordinates.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(coordinates[i]);
  }
  return out + "]";
}

}  // namespace kwb
