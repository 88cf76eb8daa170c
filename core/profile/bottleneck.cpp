#include "core/profile/bottleneck.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <vector>

namespace kwb::profile {

namespace {

constexpr const char *kStallPrefix = "smsp__warps_issue_stalled_";
constexpr const char *kStallSuffix = ".avg.per_cycle_active";

std::optional<double> metric(const ProfileResult &r, const std::string &name) {
  for (const auto &m : r.metrics)
    if (m.name == name) return m.value;
  return std::nullopt;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", v);
  return buf;
}

std::string words(std::string s) {
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

const char *advice(Limiter limiter) {
  switch (limiter) {
    case Limiter::Memory:
      return "What helps: move fewer bytes (fuse passes, keep reused data in registers or shared memory, "
             "avoid re-reading the input) and make every access count (coalesced, 16-byte vector loads).";
    case Limiter::Compute:
      return "What helps: fewer or cheaper instructions per element (tensor cores where the dtype allows, "
             "fast math intrinsics, less index arithmetic), and no redundant work across threads.";
    case Limiter::Latency:
      return "What helps: more work in flight (more warps or more independent loads per thread, "
             "unrolling, double buffering), fewer barriers, and enough blocks to fill every SM.";
    case Limiter::Balanced:
      return "What helps: look at the stall reasons; neither memory nor compute is saturated yet.";
    case Limiter::Unknown:
      break;
  }
  return "";
}

}  // namespace

std::string toString(Limiter limiter) {
  switch (limiter) {
    case Limiter::Memory: return "memory-bound";
    case Limiter::Compute: return "compute-bound";
    case Limiter::Latency: return "latency-bound";
    case Limiter::Balanced: return "balanced";
    case Limiter::Unknown: break;
  }
  return "unknown";
}

Limiter limiterOf(const ProfileResult &r) {
  if (r.outcome != Outcome::Profiled) return Limiter::Unknown;
  const auto dram = metric(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  const auto sm = metric(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  if (!dram && !sm) return Limiter::Unknown;
  const double d = dram.value_or(0), s = sm.value_or(0);
  if (d >= kBusyPercent && d > s) return Limiter::Memory;
  if (s >= kBusyPercent && s >= d) return Limiter::Compute;
  // Without the SM figure (the default set) a kernel far from DRAM's peak is only called
  // latency-bound when the DRAM figure is low; otherwise it is not known to be either.
  if (d < kIdlePercent && (sm ? s < kIdlePercent : true)) return Limiter::Latency;
  return Limiter::Balanced;
}

std::string bottleneckSummary(const ProfileResult &r) {
  std::ostringstream s;
  s << "Profile";
  if (!r.config.empty() || r.passes) {
    s << " (";
    if (!r.config.empty()) s << r.config;
    if (!r.config.empty() && r.passes) s << ", ";
    if (r.passes) s << r.passes << " passes";
    s << ")";
  }
  s << ": ";
  if (r.outcome != Outcome::Profiled) {
    s << "not profiled: " << toString(r.outcome);
    if (!r.reason.empty()) s << " (" << r.reason << ")";
    if (!r.message.empty()) s << " \u2014 " << r.message;
    s << "\n";
    return s.str();
  }
  const Limiter limiter = limiterOf(r);
  s << toString(limiter);
  const auto dram = metric(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed");
  const auto sm = metric(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  std::vector<std::string> parts;
  if (dram) parts.push_back("DRAM at " + percent(*dram) + " of peak");
  if (sm) parts.push_back("SM at " + percent(*sm) + " of peak");
  if (auto occ = metric(r, "sm__warps_active.avg.pct_of_peak_sustained_active"))
    parts.push_back("achieved occupancy " + percent(*occ));
  const auto l1 = metric(r, "l1tex__t_sector_hit_rate.pct");
  const auto l2 = metric(r, "lts__t_sector_hit_rate.pct");
  if (l1 || l2) {
    std::string hits;
    if (l1) hits = "L1 hit " + percent(*l1);
    if (l2) hits += (hits.empty() ? "" : ", ") + std::string("L2 hit ") + percent(*l2);
    parts.push_back(hits);
  }
  for (std::size_t i = 0; i < parts.size(); ++i) s << (i == 0 ? ": " : "; ") << parts[i];

  // The stall reasons holding the most warps per active cycle ("selected" is a warp issuing).
  std::vector<std::pair<double, std::string>> stalls;
  double total = 0;
  for (const auto &m : r.metrics) {
    const std::string &n = m.name;
    const std::string prefix = kStallPrefix, suffix = kStallSuffix;
    if (n.size() <= prefix.size() + suffix.size() || n.compare(0, prefix.size(), prefix) != 0 ||
        n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string reason = n.substr(prefix.size(), n.size() - prefix.size() - suffix.size());
    total += m.value;
    if (reason != "selected" && m.value > 0) stalls.emplace_back(m.value, reason);
  }
  std::sort(stalls.begin(), stalls.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  if (!stalls.empty() && total > 0) {
    s << "; warps mostly stalled on ";
    for (std::size_t i = 0; i < std::min<std::size_t>(3, stalls.size()); ++i) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%s%s (%.0f%% of warp cycles)", i ? ", " : "", words(stalls[i].second).c_str(),
                    100.0 * stalls[i].first / total);
      s << buf;
    }
  }
  s << "\n";
  if (const char *a = advice(limiter); *a) s << a << "\n";
  return s.str();
}

}  // namespace kwb::profile
