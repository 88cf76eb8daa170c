#include "core/eval/timing_statistics.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/text/json_fields.h"

namespace kwb {

double quantileSorted(const std::vector<double> &sorted, double p) {
  if (sorted.empty()) return 0.0;
  p = std::clamp(p, 0.0, 1.0);
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

SampleStats summarizeSamples(std::vector<double> samples) {
  samples.erase(std::remove_if(samples.begin(), samples.end(), [](double v) { return !std::isfinite(v); }),
                samples.end());
  SampleStats s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantileSorted(samples, 0.5);
  s.q1 = quantileSorted(samples, 0.25);
  s.q3 = quantileSorted(samples, 0.75);
  s.iqr = s.q3 - s.q1;
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / static_cast<double>(samples.size());
  s.relativeSpread = s.median > 0 ? s.iqr / s.median : 0.0;
  const double n = static_cast<double>(samples.size());
  const double reach = 0.98 * std::sqrt(n);  // 1.96 standard deviations of the binomial rank, halved
  const auto lo = static_cast<std::size_t>(std::clamp(std::floor(n / 2 - reach), 1.0, n));
  const auto hi = static_cast<std::size_t>(std::clamp(std::ceil(n / 2 + reach), 1.0, n));
  if (s.median > 0) s.medianUncertainty = (samples[hi - 1] - samples[lo - 1]) / 2 / s.median;
  return s;
}

const char *toString(StopReason reason) {
  switch (reason) {
    case StopReason::Continue: return "continue";
    case StopReason::Converged: return "converged";
    case StopReason::TimeCap: return "time-cap";
    case StopReason::MaxSamples: return "max-samples";
  }
  return "continue";
}

StopReason shouldStopSampling(const SampleStats &candidate, const SampleStats &reference, double elapsedSeconds,
                              const StopRule &rule) {
  const std::size_t minimum = std::max<std::size_t>(rule.minSamples, 1);
  if (candidate.count < minimum || reference.count < minimum) return StopReason::Continue;
  auto settled = [&](const SampleStats &s) {
    return s.relativeSpread < rule.targetSpread || s.medianUncertainty < rule.targetSpread / 2;
  };
  if (settled(candidate) && settled(reference)) return StopReason::Converged;
  if (candidate.count >= rule.maxSamples || reference.count >= rule.maxSamples) return StopReason::MaxSamples;
  if (elapsedSeconds >= rule.timeCapSeconds) return StopReason::TimeCap;
  return StopReason::Continue;
}

RooflineBound rooflineBound(double flops, double bytes, double bytesPerS, double flopsPerS,
                            const std::string &compute) {
  RooflineBound r;
  if (bytes > 0 && bytesPerS > 0) r = {bytes / bytesPerS, "memory"};
  if (flops > 0 && flopsPerS > 0 && flops / flopsPerS > r.seconds) r = {flops / flopsPerS, compute + " compute"};
  return r;
}

double rooflineSlack(const std::string &bound) {
  if (bound == "memory") return 1.25;
  if (bound == "tensor-core compute") return 1.6;
  return 1.15;
}

RooflineBound rooflineFloor(double flops, double bytes, double bytesPerS, double flopsPerS, const std::string &compute) {
  // Each side over its own slack, then the larger: the floor's bound may differ from the
  // roofline's where the two sides are close.
  const RooflineBound memory = rooflineBound(0, bytes, bytesPerS * rooflineSlack("memory"), 0, compute);
  const RooflineBound work =
      rooflineBound(flops, 0, 0, flopsPerS * rooflineSlack(compute + " compute"), compute);
  return work.seconds > memory.seconds ? work : memory;
}

namespace {

using json_fields::field;

constexpr auto kSampleStatsFields = std::tuple{
    field("median_ms", &SampleStats::median), field("q1_ms", &SampleStats::q1),
    field("q3_ms", &SampleStats::q3),         field("iqr_ms", &SampleStats::iqr),
    field("min_ms", &SampleStats::min),       field("max_ms", &SampleStats::max),
    field("mean_ms", &SampleStats::mean),     field("samples", &SampleStats::count),
    field("relative_spread", &SampleStats::relativeSpread),
    field("median_uncertainty", &SampleStats::medianUncertainty)};

}  // namespace

void to_json(nlohmann::json &j, const SampleStats &v) { json_fields::writeFields(j, v, kSampleStatsFields); }
void from_json(const nlohmann::json &j, SampleStats &v) { json_fields::readFields(j, v, kSampleStatsFields); }

}  // namespace kwb
