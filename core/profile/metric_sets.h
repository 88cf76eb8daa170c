#pragma once
// The named metric sets `kwb profile` and the worker's `profile` command offer, and the short
// label and unit each metric is shown with. Names are Nsight Compute's.
//
// Pass counts, measured with the Profiler Host API (cuptiProfilerHostGetNumOfPasses, CUDA 13.0's
// CUPTI, chip GH100 = H100/H200, full catalogue, no counter-availability image) on 2026-11-30:
//   default  (5 metrics)  2 passes. Each alone: gpu__time_duration.sum 1,
//            dram__throughput.avg.pct_of_peak_sustained_elapsed 1,
//            sm__warps_active.avg.pct_of_peak_sustained_active 1, l1tex__t_sector_hit_rate.pct 1,
//            lts__t_sector_hit_rate.pct 2 (the one that makes it two).
//   detailed (25 metrics) 14 passes: the default set, sm__throughput.avg.pct_of_peak_sustained_elapsed
//            (8 passes alone) and the 19 warp-stall reasons the GH100 catalogue has, as
//            smsp__warps_issue_stalled_<reason>.avg.per_cycle_active (1 pass each alone, 6 all
//            together): the average number of warps stalled for that reason per active cycle,
//            so the reasons add up to the warps resident per cycle. The catalogue has no
//            smsp__average_warp_latency_issue_stalled_* metrics (those are Nsight Compute's own
//            derived ones) and no smsp__pcsamp_* ones outside PC sampling.
// On other chips the detailed set leaves out the stall reasons the chip lacks (metricSet(name,
// catalog)): GA100 24 metrics 11 passes, AD102 24/11, TU102 24/10, GB100 23/14, GB202 23/13; the
// default set is 2 passes on each of them.
// tests/unit/tst_profile_catalog.cpp checks the GH100 numbers.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kwb::profile {

class MetricCatalog;

inline constexpr std::size_t kDefaultSetPassesGH100 = 2;
inline constexpr std::size_t kDetailedSetPassesGH100 = 14;

// The names of the sets: "default", "detailed".
std::vector<std::string> metricSetNames();
// A set's metrics, in display order (the detailed set as on GH100); nullopt for an unknown
// set name.
std::optional<std::vector<std::string>> metricSet(const std::string &name);
// The same for the catalogue's chip: warp-stall reasons the chip does not have are left out
// (gmma is Hopper's own; the GB100 catalogue has no imc_miss). Every other metric is kept, so a
// chip that lacks one is still told (MetricCatalog::validate).
std::optional<std::vector<std::string>> metricSet(const std::string &name, const MetricCatalog &catalog);
const std::vector<std::string> &defaultMetricSet();
const std::vector<std::string> &detailedMetricSet();
// The stall reasons of the detailed set ("long_scoreboard", ...).
const std::vector<std::string> &warpStallReasons();

struct MetricDisplay {
  std::string label;  // "DRAM throughput"
  std::string unit;   // "%", "ns", "warps/cycle", "" (a plain count)
};
// The label and unit for a metric: from the known list, else made from the name (its base,
// underscores as spaces) and the unit from the sub-metric or, given a catalogue, the metric's
// dimension unit.
MetricDisplay metricDisplay(const std::string &name, const MetricCatalog *catalog = nullptr);

// Several ranges (one per kernel of a launch) as one value per metric: `.sum` metrics add up;
// every other metric is weighted by each range's gpu__time_duration.sum when that is among the
// metrics, else averaged. One range is returned as it is.
std::vector<double> combineRanges(const std::vector<std::string> &metrics, const std::vector<std::vector<double>> &ranges);

}  // namespace kwb::profile
