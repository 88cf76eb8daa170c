#include "core/profile/metric_catalog.h"

#include <algorithm>
#include <set>
#include <utility>

namespace kwb::profile {

std::size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

MetricCatalog::MetricCatalog(std::shared_ptr<const CuptiProfilerLibrary> library, const std::string &chip,
                             std::vector<std::uint8_t> counterAvailability)
    : library_(std::move(library)), chip_(chip), counterAvailability_(std::move(counterAvailability)) {
  host_ = std::make_unique<ProfilerHost>(library_, chip_, counterAvailability_);
}

MetricCatalog::~MetricCatalog() = default;

const std::vector<BaseMetric> &MetricCatalog::baseMetrics() const {
  if (!basesRead_) {
    for (auto type : {MetricType::Counter, MetricType::Ratio, MetricType::Throughput})
      for (auto &name : host_->baseMetrics(type)) bases_.push_back({std::move(name), type});
    std::sort(bases_.begin(), bases_.end(), [](const auto &x, const auto &y) { return x.name < y.name; });
    basesRead_ = true;
  }
  return bases_;
}

namespace {

const BaseMetric *findBase(const std::vector<BaseMetric> &bases, const std::string &name) {
  auto it = std::lower_bound(bases.begin(), bases.end(), name, [](const BaseMetric &b, const std::string &n) {
    return b.name < n;
  });
  return it != bases.end() && it->name == name ? &*it : nullptr;
}

// The part of a full metric name that should be its base: up to the first '.' after the last
// "__" (base names may hold dots before it: "SM_C.TriageCompute.smsp__..."), else up to the
// first '.'.
std::pair<std::string, std::string> splitGuess(const std::string &name) {
  const auto unit = name.rfind("__");
  const auto dot = name.find('.', unit == std::string::npos ? 0 : unit);
  if (dot == std::string::npos) return {name, ""};
  return {name.substr(0, dot), name.substr(dot)};
}

}  // namespace

std::vector<std::string> MetricCatalog::subMetrics(const std::string &baseMetric) const {
  const auto *base = findBase(baseMetrics(), baseMetric);
  if (!base) return {};
  return host_->subMetrics(base->name, base->type);
}

std::optional<MetricProperties> MetricCatalog::properties(const std::string &name) const {
  if (name.empty()) return std::nullopt;
  return host_->properties(name);
}

bool MetricCatalog::isBaseMetric(const std::string &name) const { return findBase(baseMetrics(), name) != nullptr; }

bool MetricCatalog::exists(const std::string &name) const { return !isBaseMetric(name) && properties(name).has_value(); }

std::vector<std::string> MetricCatalog::suggestions(const std::string &name, std::size_t count) const {
  const auto &bases = baseMetrics();
  // The known base the name starts with (longest), when there is one: only its sub-metric is wrong.
  const BaseMetric *known = nullptr;
  for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
    if (const auto *b = findBase(bases, name.substr(0, dot))) known = b;
  if (!known) known = findBase(bases, name);

  std::vector<std::pair<std::size_t, std::string>> ranked;
  auto rankSubMetrics = [&](const BaseMetric &base, const std::string &suffix, std::size_t baseCost) {
    for (const auto &sub : host_->subMetrics(base.name, base.type))
      ranked.emplace_back(baseCost + editDistance(suffix, sub), base.name + sub);
  };
  if (known) {
    rankSubMetrics(*known, name.substr(known->name.size()), 0);
  } else {
    const auto [baseGuess, suffix] = splitGuess(name);
    std::vector<std::pair<std::size_t, const BaseMetric *>> near;
    for (const auto &b : bases) near.emplace_back(editDistance(baseGuess, b.name), &b);
    const std::size_t keep = std::min<std::size_t>(near.size(), std::max<std::size_t>(count, 5));
    std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(keep), near.end(),
                      [](const auto &x, const auto &y) { return x.first < y.first || (x.first == y.first && x.second->name < y.second->name); });
    for (std::size_t i = 0; i < keep; ++i) {
      const auto &[cost, base] = near[i];
      // The closest sub-metric of each close base (the suffix as given when it fits).
      std::vector<std::pair<std::size_t, std::string>> subs;
      for (const auto &sub : host_->subMetrics(base->name, base->type)) subs.emplace_back(editDistance(suffix, sub), sub);
      if (subs.empty()) {
        ranked.emplace_back(cost + suffix.size(), base->name);
        continue;
      }
      const auto best = std::min_element(subs.begin(), subs.end());
      ranked.emplace_back(cost + best->first, base->name + best->second);
    }
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (const auto &[cost, full] : ranked) {
    if (out.size() >= count) break;
    if (std::find(out.begin(), out.end(), full) == out.end()) out.push_back(full);
  }
  return out;
}

void MetricCatalog::validate(const std::vector<std::string> &names) const {
  if (names.empty()) throw ProfileError("unknown-metric", "no metrics given: name at least one (or a set: default, detailed)");
  std::set<std::string> seen;
  std::string problems;
  for (const auto &name : names) {
    if (!seen.insert(name).second) {
      problems += (problems.empty() ? "" : "; ") + ("metric '" + name + "' is listed twice");
      continue;
    }
    if (exists(name)) continue;
    std::string line = isBaseMetric(name)
                           ? "metric '" + name + "' is a base metric of chip " + chip_ + ": add a sub-metric"
                           : "unknown metric '" + name + "' for chip " + chip_;
    const auto close = suggestions(name);
    if (!close.empty()) {
      line += " (did you mean ";
      for (std::size_t i = 0; i < close.size(); ++i)
        line += (i ? (i + 1 == close.size() ? " or " : ", ") : "") + ("'" + close[i] + "'");
      line += "?)";
    }
    problems += (problems.empty() ? "" : "; ") + line;
  }
  if (!problems.empty())
    throw ProfileError("unknown-metric", problems + "; 'kwb profile --list-metrics --chip " + chip_ + "' lists them");
}

MetricConfiguration MetricCatalog::configure(const std::vector<std::string> &names) const {
  validate(names);
  ProfilerHost host(library_, chip_, counterAvailability_);
  host.addMetrics(names);
  MetricConfiguration c;
  c.chip = chip_;
  c.metrics = names;
  c.configImage = host.configImage();
  c.passes = library_->passes(c.configImage);
  return c;
}

}  // namespace kwb::profile
