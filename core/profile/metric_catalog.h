#pragma once
// A chip's metric catalogue, from CUPTI's Profiler Host API (no GPU needed): its base metrics
// and their sub-metrics, a metric's properties, checking metric names (an unknown one is named
// with the closest known names), and the configuration a list of metrics makes: CUPTI's
// config image and the number of replay passes it needs.
//
// Metric names are Nsight Compute's: base "dram__throughput" + sub-metric
// ".avg.pct_of_peak_sustained_elapsed". Some base names hold dots themselves
// ("SM_C.TriageCompute.smsp__warps_issue_stalled_long_scoreboard").
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/profile/cupti_profiler.h"

namespace kwb::profile {

// The chip of an H100 or H200: the catalogue used when no device says otherwise.
inline constexpr const char *kDefaultChip = "GH100";

struct MetricConfiguration {
  std::string chip;
  std::vector<std::string> metrics;
  std::vector<std::uint8_t> configImage;  // CUPTI's, for cuptiRangeProfilerSetConfig
  std::size_t passes = 0;                 // replays of the work needed to collect them all
};

struct BaseMetric {
  std::string name;
  MetricType type = MetricType::Counter;
};

class MetricCatalog {
 public:
  // Throws ProfileError ("unknown-chip" naming the supported chips, "cupti-error").
  explicit MetricCatalog(std::shared_ptr<const CuptiProfilerLibrary> library, const std::string &chip = kDefaultChip,
                         std::vector<std::uint8_t> counterAvailability = {});
  ~MetricCatalog();
  MetricCatalog(const MetricCatalog &) = delete;
  MetricCatalog &operator=(const MetricCatalog &) = delete;

  const std::string &chip() const { return chip_; }
  const std::shared_ptr<const CuptiProfilerLibrary> &library() const { return library_; }

  // Every base metric of the chip, all three types, sorted by name (read once).
  const std::vector<BaseMetric> &baseMetrics() const;
  // A base metric's sub-metric suffixes (".sum", ".avg.pct_of_peak_sustained_elapsed", ".pct",
  // ...); empty when the chip has no such base metric.
  std::vector<std::string> subMetrics(const std::string &baseMetric) const;
  // A metric's properties (base or full name); nullopt when the chip does not know it.
  std::optional<MetricProperties> properties(const std::string &name) const;
  // A full metric name the chip can collect: a base name alone is not one (CUPTI refuses it).
  bool exists(const std::string &name) const;
  bool isBaseMetric(const std::string &name) const;

  // Up to `count` known full metric names closest to `name` (edit distance), best first: the
  // base name is matched first, then the sub-metric.
  std::vector<std::string> suggestions(const std::string &name, std::size_t count = 3) const;
  // Throws ProfileError ("unknown-metric") naming every unknown metric with suggestions, or
  // for an empty list or a duplicate.
  void validate(const std::vector<std::string> &names) const;
  // Validates, then builds the config image and counts its passes (a fresh host object per
  // call: configurations do not mix).
  MetricConfiguration configure(const std::vector<std::string> &names) const;

 private:
  std::shared_ptr<const CuptiProfilerLibrary> library_;
  std::string chip_;
  std::vector<std::uint8_t> counterAvailability_;
  std::unique_ptr<ProfilerHost> host_;
  mutable std::vector<BaseMetric> bases_;
  mutable bool basesRead_ = false;
};

// Levenshtein distance (insert, delete, substitute: 1 each).
std::size_t editDistance(const std::string &a, const std::string &b);

}  // namespace kwb::profile
