#pragma once
// How the tuner walks a search space: exhaustively when the budget covers the space, else random
// samples first (a quarter of the budget) and then a best-first local search (the unvisited
// neighbours of the best point found so far, then of the next best, ...; a fresh random point when
// every known neighbourhood is explored). Points are proposed one at a time and their scores
// (lower is better; none for a rejected point) come back in any order, so several evaluations
// can be in flight. Deterministic for a seed and an order of reports. No Qt, not thread-safe.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/tune/search_space.h"

namespace kwb::tune {

enum class Strategy { Auto, Exhaustive, RandomLocal };
const char *toString(Strategy s);  // "auto", "exhaustive", "random-local"
std::optional<Strategy> parseStrategy(const std::string &s);

inline constexpr std::uint64_t kDefaultBudget = 64;

class Search {
 public:
  // budget 0 means kDefaultBudget. Auto is exhaustive when the space has at most `budget` points.
  Search(const SearchSpace &space, Strategy strategy, std::uint64_t budget, std::uint64_t seed);

  Strategy strategy() const { return strategy_; }  // resolved: never Auto
  std::uint64_t budget() const { return budget_; }  // at most the space's size

  // The next point to evaluate, or nullopt: either the search is over (done()), or it waits for
  // scores of points in flight before it can choose.
  std::optional<Coords> next();
  // The outcome of a proposed point: its score, or nullopt when it was rejected.
  void report(const Coords &c, std::optional<double> score);
  // Points that next() is likely to propose soon, for compiling ahead (never one proposed already).
  std::vector<Coords> lookahead(std::size_t n) const;

  bool done() const;  // nothing in flight and nothing more will be proposed
  std::size_t proposed() const { return proposed_.size(); }
  std::size_t pending() const { return pending_.size(); }
  // The best scored point so far.
  std::optional<std::pair<Coords, double>> best() const;

 private:
  std::optional<std::uint64_t> localCandidate() const;
  std::optional<std::uint64_t> freshRandom();
  void propose(std::uint64_t index);

  const SearchSpace &space_;
  Strategy strategy_;
  std::uint64_t budget_;
  std::mt19937_64 rng_;
  std::set<std::uint64_t> proposed_, pending_;
  std::map<std::uint64_t, double> scores_;
  std::vector<std::uint64_t> randomPhase_;  // drawn up front: the first quarter of the budget
  std::size_t randomNext_ = 0;
  std::uint64_t exhaustiveNext_ = 0;
  bool spaceExhausted_ = false;
};

}  // namespace kwb::tune
