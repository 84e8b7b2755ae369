#include "doctor/noise.h"

#include <cmath>
#include <cstdio>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {
Sample summarize(std::span<const double> values) {
  DDP_CHECK_GE(values.size(), 2u, "a standard error needs two values or more");
  double sum = 0;
  for (const double v : values) {
    DDP_CHECK(std::isfinite(v) && v > 0, "a time must be finite and positive");
    sum += v;
  }
  const double n = static_cast<double>(values.size());
  const double mean = sum / n;
  double squares = 0;
  for (const double v : values) squares += (v - mean) * (v - mean);
  return {.mean = mean, .standard_error = std::sqrt(squares / (n - 1)) / std::sqrt(n)};
}

namespace {

// The run's relative error is its mean epoch's.
Sample scaled_to_the_run(double wall_seconds, const Sample& epoch) {
  DDP_CHECK(std::isfinite(wall_seconds) && wall_seconds > 0, "a time must be finite and positive");
  return {.mean = wall_seconds, .standard_error = wall_seconds * epoch.standard_error / epoch.mean};
}

}  // namespace

Sample run_with_epoch_spread(double wall_seconds, std::span<const double> epoch_seconds) {
  return scaled_to_the_run(wall_seconds, summarize(epoch_seconds));
}

Sample run_with_epoch_spread(double wall_seconds, const EpochSpread& epochs) {
  DDP_CHECK_GE(epochs.count, int64_t{2}, "a standard error needs two values or more");
  DDP_CHECK(std::isfinite(epochs.mean_seconds) && epochs.mean_seconds > 0 && std::isfinite(epochs.sd_seconds) &&
                epochs.sd_seconds >= 0,
            "an epoch spread must be finite, its mean positive");
  const double n = static_cast<double>(epochs.count);
  return scaled_to_the_run(wall_seconds,
                           {.mean = epochs.mean_seconds, .standard_error = epochs.sd_seconds / std::sqrt(n)});
}

Effect effect_of(const Sample& baseline, const Sample& ablation) {
  DDP_CHECK(baseline.mean > 0 && ablation.mean > 0, "a time must be positive");
  const double ratio = ablation.mean / baseline.mean;
  const double a = ablation.standard_error / ablation.mean;
  const double b = baseline.standard_error / baseline.mean;
  return {.relative = ratio - 1, .uncertainty = kNormal95 * ratio * std::sqrt(a * a + b * b)};
}

bool measurable(const Effect& effect) { return std::abs(effect.relative) > effect.uncertainty; }

std::string describe(const Effect& effect) {
  char text[96];
  if (!measurable(effect)) {
    std::snprintf(text, sizeof(text), "no measurable effect (±%.1f %%)", 100 * effect.uncertainty);
  } else {
    std::snprintf(text, sizeof(text), "%.1f %% %s (±%.1f %%)", 100 * std::abs(effect.relative),
                  effect.relative > 0 ? "slower" : "faster", 100 * effect.uncertainty);
  }
  return text;
}

}  // namespace ddp
