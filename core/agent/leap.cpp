#include "core/agent/leap.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kwb::agent {

std::string_view dcpVerdictName(DcpVerdict verdict) {
  switch (verdict) {
    case DcpVerdict::Easy: return "easy";
    case DcpVerdict::Repair: return "repair";
    case DcpVerdict::Hopeless: return "hopeless";
  }
  return "easy";
}

DcpDecision decideRepair(std::size_t failures, std::size_t groupSize, const DcpSettings &settings,
                         std::string_view success) {
  if (groupSize == 0) throw std::invalid_argument("a group has at least one candidate");
  if (failures > groupSize)
    throw std::invalid_argument(std::to_string(failures) + " failures in a group of " + std::to_string(groupSize));
  if (settings.maxTurns == 0) throw std::invalid_argument("a session has at least one turn");
  DcpDecision d;
  d.failures = failures;
  d.groupSize = groupSize;
  d.easyBelow = settings.easyBelow.value_or((groupSize + 1) / 2);
  d.hopelessAbove = settings.hopelessAbove.value_or(groupSize);
  const std::string of = std::to_string(groupSize);
  if (failures < d.easyBelow) {
    d.verdict = DcpVerdict::Easy;
    d.reason = "no repair: " + std::to_string(groupSize - failures) + " of " + of + " " + std::string(success) +
               " \u2014 easy (fewer than " + std::to_string(d.easyBelow) + " failed)";
  } else if (failures > d.hopelessAbove) {
    d.verdict = DcpVerdict::Hopeless;
    d.reason = "no repair: " + std::to_string(failures) + " of " + of + " failed \u2014 hopeless for now (more than " +
               std::to_string(d.hopelessAbove) + " failed)";
  } else if (settings.maxTurns < 2) {
    d.verdict = DcpVerdict::Repair;
    d.reason = "no repair: " + std::to_string(failures) + " of " + of + " failed, but the session has one turn";
  } else {
    d.verdict = DcpVerdict::Repair;
    d.repairTurns = settings.maxTurns - 1;
    d.reason = "repair: " + std::to_string(failures) + " of " + of + " failed \u2014 up to " +
               std::to_string(d.repairTurns) + " more turn" + (d.repairTurns == 1 ? "" : "s") +
               " for the failed ones";
  }
  return d;
}

int compareAttempts(const Attempt &a, const Attempt &b, double timeTolerance) {
  if (a.success != b.success) return a.success ? 1 : -1;
  if (!a.success) return 0;
  if (a.turn != b.turn) return a.turn < b.turn ? 1 : -1;
  if (!a.ms || !b.ms || !std::isfinite(*a.ms) || !std::isfinite(*b.ms)) return 0;
  const double fast = std::min(*a.ms, *b.ms), slow = std::max(*a.ms, *b.ms);
  if (slow <= fast * (1.0 + timeTolerance)) return 0;
  return *a.ms < *b.ms ? 1 : -1;
}

std::vector<double> rankRewards(const std::vector<Attempt> &group, double timeTolerance) {
  std::vector<double> rewards(group.size(), 0.0);
  if (group.size() < 2) return rewards;
  const double peers = static_cast<double>(group.size() - 1);
  for (std::size_t i = 0; i < group.size(); ++i) {
    int net = 0;
    for (std::size_t j = 0; j < group.size(); ++j)
      if (i != j) net += compareAttempts(group[i], group[j], timeTolerance);
    rewards[i] = net / peers;
  }
  return rewards;
}

std::vector<double> turnCredits(double reward, std::size_t turns, double discount) {
  if (!(discount >= 0.0 && discount <= 1.0)) throw std::invalid_argument("the discount must be within [0, 1]");
  std::vector<double> credits(turns, reward);
  if (reward <= 0.0) return credits;
  for (std::size_t k = 0; k < turns; ++k) credits[k] = reward * std::pow(discount, static_cast<double>(turns - 1 - k));
  return credits;
}

}  // namespace kwb::agent
