#pragma once
// Pure statistics for kernel timing (core/worker/server/time_command.cpp, core/eval/evaluator.h): a
// summary of samples (median, quartiles, IQR, min, mean, relative spread = IQR / median), the
// adaptive stop rule, and the roofline floor below which a timed median fails the verdict.
// No GPU, no I/O: tested in tests/unit/tst_evaluator.cpp.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kwb {

struct SampleStats {
  std::size_t count = 0;
  double median = 0, q1 = 0, q3 = 0, iqr = 0, min = 0, max = 0, mean = 0;
  double relativeSpread = 0;  // iqr / median; 0 when there are no samples or the median is 0
  // How well the median itself is known: half the width of its distribution-free ~95%
  // confidence interval (order statistics n/2 ± 0.98·√n), relative to the median. Unlike the
  // IQR it shrinks as samples are added. 0 when there are no samples or the median is 0.
  double medianUncertainty = 0;
};

// Quartiles by linear interpolation between order statistics (R type 7 / numpy "linear").
// Non-finite samples are ignored. An empty input gives a zero summary with count 0.
// In milliseconds on the wire: median_ms, q1_ms, ... max_ms, samples, relative_spread.
void to_json(nlohmann::json &j, const SampleStats &v);
void from_json(const nlohmann::json &j, SampleStats &v);

SampleStats summarizeSamples(std::vector<double> samples);

// The p-quantile (0 ≤ p ≤ 1) of sorted, non-empty `sorted` (linear interpolation).
double quantileSorted(const std::vector<double> &sorted, double p);

struct StopRule {
  std::size_t minSamples = 10;     // per kernel, always taken
  std::size_t maxSamples = 1000;   // per kernel
  double targetSpread = 0.01;      // relative IQR / median for both kernels
  double timeCapSeconds = 3.0;     // wall-clock seconds of sampling
};

enum class StopReason { Continue, Converged, TimeCap, MaxSamples };
const char *toString(StopReason reason);  // "continue", "converged", "time-cap", "max-samples"

// Whether to stop sampling, given the summaries so far of both kernels and the seconds spent.
// Below minSamples it always continues; then: converged when each kernel is settled (its
// relative spread < target, or — for a kernel whose times spread wider, such as a tiny one —
// its median known to within target / 2), max samples (either kernel at maxSamples), time cap
// (elapsed ≥ cap), else continue.
StopReason shouldStopSampling(const SampleStats &candidate, const SampleStats &reference, double elapsedSeconds,
                              const StopRule &rule);

// The least time a kernel can take on a roofline of `bytesPerS` (memory) and `flopsPerS`
// (compute): max(bytes / bytesPerS, flops / flopsPerS), and which side set it. `compute` names the
// compute ceiling ("f32" or "tensor-core"). A ceiling <= 0 contributes nothing; bound is empty
// when neither side gives a time.
struct RooflineBound {
  double seconds = 0;
  std::string bound;  // "memory", "f32 compute", "tensor-core compute", or ""
};
RooflineBound rooflineBound(double flops, double bytes, double bytesPerS, double flopsPerS,
                            const std::string &compute);

// How far below a measured ceiling an honest kernel can still land, per bound (the verdict's
// floor is the bound divided by this). Memory: the ceiling is a device-to-device copy, and
// read-mostly kernels beat it (the H200 suite's reduce-sum reaches 1.06x). f32: the FMA ceiling
// is within 4% of the clock-rate peak. Tensor cores: the ceiling is mma.sync's, and Hopper's wgmma
// reaches about 1.5x that (989 against 641 TFLOP/s on an H200).
double rooflineSlack(const std::string &bound);

// The floor below which a timed median is a failed verdict ("below-roofline"): the roofline bound
// over its slack.
RooflineBound rooflineFloor(double flops, double bytes, double bytesPerS, double flopsPerS, const std::string &compute);

}  // namespace kwb
