#include "core/profile/metric_sets.h"

#include <map>

#include "core/profile/metric_catalog.h"

namespace kwb::profile {

namespace {

constexpr const char *kStallPrefix = "smsp__warps_issue_stalled_";
constexpr const char *kStallSuffix = ".avg.per_cycle_active";

const std::map<std::string, MetricDisplay> &knownDisplays() {
  static const std::map<std::string, MetricDisplay> known = {
      {"gpu__time_duration.sum", {"Duration", "ns"}},
      {"dram__throughput.avg.pct_of_peak_sustained_elapsed", {"DRAM throughput", "%"}},
      {"sm__warps_active.avg.pct_of_peak_sustained_active", {"Achieved occupancy", "%"}},
      {"l1tex__t_sector_hit_rate.pct", {"L1 hit rate", "%"}},
      {"lts__t_sector_hit_rate.pct", {"L2 hit rate", "%"}},
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", {"SM throughput", "%"}},
  };
  return known;
}

// "long_scoreboard" → "long scoreboard"
std::string words(std::string s) {
  for (auto &c : s)
    if (c == '_') c = ' ';
  return s;
}

bool endsWith(const std::string &s, const std::string &end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

const std::vector<std::string> &warpStallReasons() {
  // Every smsp__warps_issue_stalled_* base metric in CUDA 13.0's GH100 catalogue.
  static const std::vector<std::string> reasons = {
      "long_scoreboard", "short_scoreboard", "barrier",    "membar",         "mio_throttle",
      "lg_throttle",     "math_pipe_throttle", "tex_throttle", "wait",        "not_selected",
      "selected",        "no_instruction",  "branch_resolving", "dispatch_stall", "drain",
      "imc_miss",        "sleeping",        "misc",       "gmma"};
  return reasons;
}

const std::vector<std::string> &defaultMetricSet() {
  static const std::vector<std::string> set = {
      "gpu__time_duration.sum",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
      "l1tex__t_sector_hit_rate.pct",
      "lts__t_sector_hit_rate.pct",
  };
  return set;
}

const std::vector<std::string> &detailedMetricSet() {
  static const std::vector<std::string> set = [] {
    auto s = defaultMetricSet();
    s.emplace_back("sm__throughput.avg.pct_of_peak_sustained_elapsed");
    for (const auto &reason : warpStallReasons()) s.push_back(kStallPrefix + reason + kStallSuffix);
    return s;
  }();
  return set;
}

std::vector<std::string> metricSetNames() { return {"default", "detailed"}; }

std::optional<std::vector<std::string>> metricSet(const std::string &name) {
  if (name == "default") return defaultMetricSet();
  if (name == "detailed") return detailedMetricSet();
  return std::nullopt;
}

std::optional<std::vector<std::string>> metricSet(const std::string &name, const MetricCatalog &catalog) {
  auto set = metricSet(name);
  if (!set) return set;
  std::vector<std::string> kept;
  for (auto &m : *set)
    if (m.rfind(kStallPrefix, 0) != 0 || catalog.exists(m)) kept.push_back(std::move(m));
  return kept;
}

MetricDisplay metricDisplay(const std::string &name, const MetricCatalog *catalog) {
  if (auto it = knownDisplays().find(name); it != knownDisplays().end()) return it->second;
  const std::string prefix = kStallPrefix;
  if (name.rfind(prefix, 0) == 0 && endsWith(name, kStallSuffix))
    return {"Stall: " + words(name.substr(prefix.size(), name.size() - prefix.size() - std::string(kStallSuffix).size())),
            "warps/cycle"};
  // Made from the name: the base's unit-less part, and the unit from the sub-metric.
  const auto unitEnd = name.rfind("__");
  const auto dot = name.find('.', unitEnd == std::string::npos ? 0 : unitEnd);
  const std::string base = name.substr(0, dot);
  const std::string sub = dot == std::string::npos ? "" : name.substr(dot);
  MetricDisplay d{words(unitEnd == std::string::npos ? base : base.substr(unitEnd + 2)), ""};
  if (endsWith(sub, ".pct") || sub.find("pct_of_peak") != std::string::npos) d.unit = "%";
  else if (endsWith(sub, ".ratio")) d.unit = "ratio";
  else if (endsWith(sub, ".per_second")) d.unit = "/s";
  else if (endsWith(sub, ".per_cycle_active") || endsWith(sub, ".per_cycle_elapsed")) d.unit = "/cycle";
  else if (catalog)
    if (const auto p = catalog->properties(base)) {
      if (p->dimensionUnit == "nanosecond") d.unit = "ns";
      else if (p->dimensionUnit == "byte") d.unit = "bytes";
      else if (p->dimensionUnit == "percent") d.unit = "%";
      else d.unit = p->dimensionUnit;
    }
  return d;
}

std::vector<double> combineRanges(const std::vector<std::string> &metrics, const std::vector<std::vector<double>> &ranges) {
  if (ranges.empty()) return std::vector<double>(metrics.size(), 0.0);
  if (ranges.size() == 1) return ranges.front();
  std::ptrdiff_t duration = -1;
  for (std::size_t i = 0; i < metrics.size(); ++i)
    if (metrics[i] == "gpu__time_duration.sum") duration = static_cast<std::ptrdiff_t>(i);
  std::vector<double> out(metrics.size(), 0.0);
  double weights = 0;
  for (const auto &r : ranges) weights += duration >= 0 ? r[static_cast<std::size_t>(duration)] : 1.0;
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const bool sum = metrics[i].size() > 4 && metrics[i].compare(metrics[i].size() - 4, 4, ".sum") == 0;
    for (const auto &r : ranges) {
      const double w = duration >= 0 ? r[static_cast<std::size_t>(duration)] : 1.0;
      out[i] += sum ? r[i] : (weights > 0 ? r[i] * w / weights : 0.0);
    }
  }
  return out;
}

}  // namespace kwb::profile
