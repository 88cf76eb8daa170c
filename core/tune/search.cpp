#include "core/tune/search.h"

#include <algorithm>

namespace kwb::tune {

const char *toString(Strategy s) {
  switch (s) {
    case Strategy::Auto: return "auto";
    case Strategy::Exhaustive: return "exhaustive";
    case Strategy::RandomLocal: return "random-local";
  }
  return "auto";
}

std::optional<Strategy> parseStrategy(const std::string &s) {
  if (s == "auto") return Strategy::Auto;
  if (s == "exhaustive") return Strategy::Exhaustive;
  if (s == "random-local" || s == "random") return Strategy::RandomLocal;
  return std::nullopt;
}

Search::Search(const SearchSpace &space, Strategy strategy, std::uint64_t budget, std::uint64_t seed)
    : space_(space), rng_(seed) {
  if (budget == 0) budget = kDefaultBudget;
  if (strategy == Strategy::Auto) strategy = space.size() <= budget ? Strategy::Exhaustive : Strategy::RandomLocal;
  strategy_ = strategy;
  budget_ = std::min(budget, space.size());
  if (strategy_ == Strategy::RandomLocal) {
    // Distinct random points; in a small space, rejection sampling would spin, so draw from a
    // shuffled list of all indices there instead.
    const std::uint64_t count = std::max<std::uint64_t>(1, budget_ / 4);
    if (space.size() <= 4 * count + 64) {
      std::vector<std::uint64_t> all(space.size());
      for (std::uint64_t i = 0; i < all.size(); ++i) all[i] = i;
      std::shuffle(all.begin(), all.end(), rng_);
      randomPhase_.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count));
    } else {
      std::set<std::uint64_t> seen;
      while (randomPhase_.size() < count) {
        const auto i = space.index(space.random(rng_));
        if (seen.insert(i).second) randomPhase_.push_back(i);
      }
    }
  }
}

void Search::propose(std::uint64_t index) {
  proposed_.insert(index);
  pending_.insert(index);
}

std::optional<std::uint64_t> Search::localCandidate() const {
  // Scored points, best first; the first unvisited neighbour of the best one that has any.
  std::vector<std::pair<double, std::uint64_t>> order;
  order.reserve(scores_.size());
  for (const auto &[i, s] : scores_) order.emplace_back(s, i);
  std::sort(order.begin(), order.end());
  for (const auto &[score, i] : order)
    for (const auto &n : space_.neighbours(space_.at(i))) {
      const auto ni = space_.index(n);
      if (!proposed_.count(ni)) return ni;
    }
  return std::nullopt;
}

std::optional<std::uint64_t> Search::freshRandom() {
  if (proposed_.size() >= space_.size()) return std::nullopt;
  // Mostly unvisited in the spaces this runs on (budget < size); bounded, then a linear scan.
  for (int attempt = 0; attempt < 256; ++attempt) {
    const auto i = space_.index(space_.random(rng_));
    if (!proposed_.count(i)) return i;
  }
  for (std::uint64_t i = 0; i < space_.size(); ++i)
    if (!proposed_.count(i)) return i;
  return std::nullopt;
}

std::optional<Coords> Search::next() {
  if (proposed_.size() >= budget_) return std::nullopt;
  if (strategy_ == Strategy::Exhaustive) {
    if (exhaustiveNext_ >= space_.size()) return std::nullopt;
    propose(exhaustiveNext_);
    return space_.at(exhaustiveNext_++);
  }
  while (randomNext_ < randomPhase_.size()) {
    const auto i = randomPhase_[randomNext_++];
    if (proposed_.count(i)) continue;
    propose(i);
    return space_.at(i);
  }
  if (const auto i = localCandidate()) {
    propose(*i);
    return space_.at(*i);
  }
  // Every known neighbourhood is explored. Points in flight may open new ones: wait for them.
  if (!pending_.empty()) return std::nullopt;
  if (const auto i = freshRandom()) {
    propose(*i);
    return space_.at(*i);
  }
  spaceExhausted_ = true;
  return std::nullopt;
}

void Search::report(const Coords &c, std::optional<double> score) {
  const auto i = space_.index(c);
  pending_.erase(i);
  if (score) scores_[i] = *score;
}

std::vector<Coords> Search::lookahead(std::size_t n) const {
  std::vector<Coords> out;
  std::set<std::uint64_t> taken;
  auto add = [&](std::uint64_t i) {
    if (out.size() < n && !proposed_.count(i) && taken.insert(i).second) out.push_back(space_.at(i));
  };
  const std::uint64_t left = budget_ > proposed_.size() ? budget_ - proposed_.size() : 0;
  n = static_cast<std::size_t>(std::min<std::uint64_t>(n, left));
  if (strategy_ == Strategy::Exhaustive) {
    for (std::uint64_t i = exhaustiveNext_; i < space_.size() && out.size() < n; ++i) add(i);
    return out;
  }
  for (std::size_t k = randomNext_; k < randomPhase_.size() && out.size() < n; ++k) add(randomPhase_[k]);
  std::vector<std::pair<double, std::uint64_t>> order;
  for (const auto &[i, s] : scores_) order.emplace_back(s, i);
  std::sort(order.begin(), order.end());
  for (const auto &[score, i] : order) {
    if (out.size() >= n) break;
    for (const auto &nb : space_.neighbours(space_.at(i))) add(space_.index(nb));
  }
  return out;
}

bool Search::done() const {
  if (!pending_.empty()) return false;
  if (proposed_.size() >= budget_ || spaceExhausted_) return true;
  return strategy_ == Strategy::Exhaustive && exhaustiveNext_ >= space_.size();
}

std::optional<std::pair<Coords, double>> Search::best() const {
  std::optional<std::pair<Coords, double>> out;
  for (const auto &[i, s] : scores_)
    if (!out || s < out->second) out = std::make_pair(space_.at(i), s);
  return out;
}

}  // namespace kwb::tune
