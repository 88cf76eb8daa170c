#pragma once
// The space a tuner searches: every combination of a task's tunable parameters, each taking one
// of its listed values. A point is addressed by its coordinates (the position of each value in
// its list, in the task's tunable order) or by its values by name. No Qt.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/task/task.h"

namespace kwb::tune {

using Point = std::map<std::string, std::int64_t>;
using Coords = std::vector<std::size_t>;

class SearchSpace {
 public:
  explicit SearchSpace(std::vector<Tunable> dims);

  const std::vector<Tunable> &dims() const { return dims_; }
  // The number of points; saturates at UINT64_MAX. A task without tunables has one point.
  std::uint64_t size() const { return size_; }

  Point point(const Coords &c) const;
  // nullopt when a name or a value is not in the space (or a tunable is missing).
  std::optional<Coords> coords(const Point &p) const;
  // The index-th point in mixed-radix order, the last tunable varying fastest.
  Coords at(std::uint64_t index) const;
  std::uint64_t index(const Coords &c) const;
  // The points one step away along one tunable (its previous or next listed value).
  std::vector<Coords> neighbours(const Coords &c) const;
  Coords random(std::mt19937_64 &rng) const;

  // "BX=32 BY=8" (tunable order); "(no tunables)" for the single point of an empty space.
  std::string describe(const Coords &c) const;

 private:
  std::vector<Tunable> dims_;
  std::uint64_t size_ = 1;
};

}  // namespace kwb::tune
