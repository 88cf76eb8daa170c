#include "core/tune/search_space.h"

#include <limits>
#include <stdexcept>

namespace kwb::tune {

SearchSpace::SearchSpace(std::vector<Tunable> dims) : dims_(std::move(dims)) {
  for (const auto &d : dims_) {
    if (d.values.empty()) throw std::invalid_argument("tunable '" + d.name + "' lists no values");
    const std::uint64_t n = d.values.size();
    size_ = size_ > std::numeric_limits<std::uint64_t>::max() / n ? std::numeric_limits<std::uint64_t>::max() : size_ * n;
  }
}

Point SearchSpace::point(const Coords &c) const {
  Point p;
  for (std::size_t i = 0; i < dims_.size(); ++i) p[dims_[i].name] = dims_[i].values.at(c.at(i));
  return p;
}

std::optional<Coords> SearchSpace::coords(const Point &p) const {
  if (p.size() != dims_.size()) return std::nullopt;
  Coords c(dims_.size());
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    const auto it = p.find(dims_[i].name);
    if (it == p.end()) return std::nullopt;
    bool found = false;
    for (std::size_t k = 0; k < dims_[i].values.size() && !found; ++k)
      if (dims_[i].values[k] == it->second) {
        c[i] = k;
        found = true;
      }
    if (!found) return std::nullopt;
  }
  return c;
}

Coords SearchSpace::at(std::uint64_t index) const {
  Coords c(dims_.size());
  for (std::size_t i = dims_.size(); i-- > 0;) {
    const std::uint64_t n = dims_[i].values.size();
    c[i] = static_cast<std::size_t>(index % n);
    index /= n;
  }
  return c;
}

std::uint64_t SearchSpace::index(const Coords &c) const {
  std::uint64_t index = 0;
  for (std::size_t i = 0; i < dims_.size(); ++i) index = index * dims_[i].values.size() + c.at(i);
  return index;
}

std::vector<Coords> SearchSpace::neighbours(const Coords &c) const {
  std::vector<Coords> out;
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (c[i] > 0) {
      Coords n = c;
      --n[i];
      out.push_back(std::move(n));
    }
    if (c[i] + 1 < dims_[i].values.size()) {
      Coords n = c;
      ++n[i];
      out.push_back(std::move(n));
    }
  }
  return out;
}

Coords SearchSpace::random(std::mt19937_64 &rng) const {
  Coords c(dims_.size());
  for (std::size_t i = 0; i < dims_.size(); ++i)
    c[i] = std::uniform_int_distribution<std::size_t>(0, dims_[i].values.size() - 1)(rng);
  return c;
}

std::string SearchSpace::describe(const Coords &c) const {
  if (dims_.empty()) return "(no tunables)";
  std::string s;
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ' ';
    s += dims_[i].name + '=' + std::to_string(dims_[i].values.at(c.at(i)));
  }
  return s;
}

}  // namespace kwb::tune
