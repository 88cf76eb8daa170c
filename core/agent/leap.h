#pragma once
// LEAP, lean multi-turn loops (../shared/RESEARCH.md; arXiv 2608.01804), as pure functions:
//
// - Difficulty-Conditioned Pruning (DCP): after a group's first turn (G candidates for one
//   goal), N_fail, the number that failed, decides whether the failed ones get repair turns.
//   Fewer than `easyBelow` failures: the goal is easy, the group is done. More than
//   `hopelessAbove`: hopeless for now, the group stops spending. Otherwise the failed candidates
//   get feedback and further turns, up to `maxTurns` in all. The paper's best setting repairs only
//   groups where at least half failed: easyBelow = ceil(G / 2).
// - Rank-based reward: the attempts of a group are ordered (a success before a failure, an
//   earlier turn's success before a later one's, and among successes of the same turn a faster
//   kernel first); an attempt's reward is (peers it beats - peers that beat it) / (G - 1), in
//   [-1, 1]. A positive reward is passed back to the earlier turns of its line with a discount;
//   a negative one is the whole line's.
//
// No I/O, no Qt; the session (core/agent) records every decision with these numbers.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kwb::agent {

struct DcpSettings {
  // Thresholds on the first turn's failures; unset: easyBelow = ceil(G / 2), hopelessAbove = G
  // (no group is hopeless: with one turn of evidence, all-failed groups are where feedback helps
  // most, and pruning them costs solved tasks; tests/bench/results/*-dcp-simulation.txt).
  std::optional<std::size_t> easyBelow, hopelessAbove;
  std::size_t maxTurns = 3;  // turns in all, the first included (the paper's 3)
};

enum class DcpVerdict { Easy, Repair, Hopeless };
std::string_view dcpVerdictName(DcpVerdict verdict);  // "easy", "repair", "hopeless"

// What DCP decided for one group, with the numbers it decided on and the reason in words, as the
// session view shows it: "no repair: 7 of 8 correct — easy (fewer than 4 failed)".
struct DcpDecision {
  DcpVerdict verdict = DcpVerdict::Easy;
  std::size_t failures = 0, groupSize = 0;
  std::size_t easyBelow = 0, hopelessAbove = 0;  // the thresholds in effect
  std::size_t repairTurns = 0;                   // turns the failed candidates may still take
  std::string reason;
};

// `failures` of `groupSize` first-turn candidates failed; `success` names what counts as success
// in the reason ("correct", or "correct and faster" once a correct kernel exists). Throws
// std::invalid_argument for an empty group, more failures than candidates, or maxTurns 0.
DcpDecision decideRepair(std::size_t failures, std::size_t groupSize, const DcpSettings &settings,
                         std::string_view success = "correct");

// One line of work's outcome within its group.
struct Attempt {
  bool success = false;
  std::size_t turn = 1;       // the turn it succeeded at (a failure's turn does not matter)
  std::optional<double> ms;   // a success's measured time: faster ranks higher within its turn
};

// -1 when `a` ranks below `b`, 0 when they tie, 1 when `a` ranks above. Times within
// `timeTolerance` of each other (relative, default 1%: timing noise) tie; a success without a
// time ties with any success of its turn.
int compareAttempts(const Attempt &a, const Attempt &b, double timeTolerance = 0.01);

// Each attempt's rank-based reward in its group, in the group's order. A group of one gets 0.
std::vector<double> rankRewards(const std::vector<Attempt> &group, double timeTolerance = 0.01);

// The reward of each turn of a line that ended at turn `turns` with `reward`, turn 1 first: a
// positive reward is passed back discounted (turn k gets reward · discount^(turns - k)); a zero
// or negative one is every turn's. Throws std::invalid_argument for a discount outside [0, 1].
std::vector<double> turnCredits(double reward, std::size_t turns, double discount);

}  // namespace kwb::agent
